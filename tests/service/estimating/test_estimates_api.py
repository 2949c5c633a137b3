"""POST /v1/estimates over the HTTP test client, in the issue's fixed shape (``labelled: [{human, judge}]``,
``unlabelled: [{judge}]``; ``a`` and ``b`` for a difference; ``systems: {name: body}`` for the batch): the answers are
calibration.estimates.system' on the same numbers, the served interval covers a known truth in a seeded simulation, bad
input is a 422 (or 400 / 413) problem naming the field, one form per request, the size cap holds, and the routes
need the key when API_KEYS is set under every spelling tried."""

from __future__ import annotations

import math
import time
from typing import Any

import msgspec
import numpy as np
import pytest

from calibration.estimates.system import (
    EstimateAnswer,
    Sample,
    estimate_difference,
    estimate_mean,
    estimate_pass_rate,
    estimate_win_rate,
)
from service.config.limits import LimitSettings

PROBLEM = "application/problem+json"


def population(rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Human scores on 1..5 in thirds (like SummEval's expert means) and a biased, noisy judge clipped to [1, 5]."""
    human = np.round(np.clip(rng.normal(3.3, 0.8, size), 1, 5) * 3) / 3
    judge = np.clip(0.8 * human + 0.5 + rng.normal(0, 0.5, size), 1, 5)
    return human, judge


def body(human: np.ndarray, judge: np.ndarray, unlabelled: np.ndarray, **options: Any) -> dict[str, Any]:
    """A /v1/estimates body (or an ``a``/``b`` object, or a batch system) from arrays (values as JSON numbers)."""
    labelled = [{"human": h, "judge": j} for h, j in zip(human.tolist(), judge.tolist(), strict=True)]
    return {"labelled": labelled, "unlabelled": [{"judge": j} for j in unlabelled.tolist()], **options}


def sample_of(payload: dict[str, Any]) -> Sample:
    """The calibration Sample of a body's (or an a/b object's) items."""
    return Sample(
        human=[item["human"] for item in payload["labelled"]],
        judge=[item["judge"] for item in payload["labelled"]],
        judge_unlabelled=[item["judge"] for item in payload["unlabelled"]],
    )


def samples(payload: dict[str, Any]) -> dict[str, Any]:
    """Only the data of a body: what an ``a``/``b`` object holds."""
    return {key: payload[key] for key in ("labelled", "unlabelled")}


def assert_same(reply: dict[str, Any], answer: EstimateAnswer) -> None:
    """The HTTP answer carries exactly the calibration answer's numbers."""
    assert reply["estimate"] == answer.estimate
    assert tuple(reply["interval"]) == answer.interval
    assert reply["method"] == answer.method and reply["switch_reason"] == answer.switch_reason
    assert tuple(reply["human_only_interval"]) == answer.human_only_interval
    assert reply["human_only_method"] == answer.human_only_method
    assert reply["effective_sample_gain"] == answer.effective_sample_gain and "gain" not in reply
    assert (reply["n_labelled"], reply["n_unlabelled"]) == (answer.n_labelled, answer.n_unlabelled)
    for field in ("ppi_interval", "betting_interval", "classical_interval"):
        expected = getattr(answer, field)
        assert (None if reply[field] is None else tuple(reply[field])) == expected
    if answer.label_budget is None:
        assert reply["label_budget"] is None
    else:
        assert reply["label_budget"] == msgspec.structs.asdict(answer.label_budget)
        assert reply["lam"] == answer.lam


@pytest.fixture(scope="module")
def data() -> dict[str, np.ndarray]:
    """A seeded population split into labelled and unlabelled items for two systems."""
    rng = np.random.default_rng(2024)
    human, judge = population(rng, 1200)
    other_human, other_judge = population(rng, 1200)
    return {
        "human": human,
        "judge": judge,
        "other_human": other_human - 0.3 * (other_human > 1.5),
        "other_judge": other_judge,
    }


@pytest.mark.parametrize(("n", "method"), [(20, "betting"), (150, "ppi++")])
def test_mean_is_calibrations_answer(app, data, n: int, method: str) -> None:
    payload = body(data["human"][:n], data["judge"][:n], data["judge"][n:], metric="mean", alpha=0.1)
    reply = app.client.post("/v1/estimates", json=payload)
    assert reply.status_code == 200, reply.text
    answer = estimate_mean(sample_of(payload), 0.1, scale_min=1, scale_max=5)
    assert answer.method == method
    assert_same(reply.json(), answer)
    assert reply.json()["metric"] == "mean" and reply.json()["alpha"] == 0.1


def test_the_label_budget_answers_the_requested_half_width(app, data) -> None:
    payload = body(data["human"][:100], data["judge"][:100], data["judge"][100:], metric="mean", target_half_width=0.05)
    reply = app.client.post("/v1/estimates", json=payload).json()
    answer = estimate_mean(sample_of(payload), 0.05, target_half_width=0.05)
    assert_same(reply, answer)
    budget = reply["label_budget"]
    assert budget["target_half_width"] == 0.05 and budget["labels_needed"] > 100
    assert budget["more_labels"] == budget["labels_needed"] - 100


def test_pass_rate_and_win_rate_are_calibrations_answers(app, data) -> None:
    payload = body(data["human"][:80], data["judge"][:80], data["judge"][80:], metric="pass_rate", threshold=4)
    reply = app.client.post("/v1/estimates", json=payload)
    assert reply.status_code == 200, reply.text
    assert_same(reply.json(), estimate_pass_rate(sample_of(payload), 0.05, 4.0))
    # win rates: 1 where the system's human score beats a fixed opponent's 3.5, 0.5 on a tie, else 0
    wins = np.where(data["human"] > 3.5, 1.0, np.where(data["human"] == 3.5, 0.5, 0.0))
    judged = np.where(data["judge"] > 3.5, 1.0, np.where(np.abs(data["judge"] - 3.5) < 0.1, 0.5, 0.0))
    payload = body(wins[:60], judged[:60], judged[60:], metric="win_rate")
    reply = app.client.post("/v1/estimates", json=payload)
    assert reply.status_code == 200, reply.text
    assert_same(reply.json(), estimate_win_rate(sample_of(payload), 0.05))


def test_difference_is_calibrations_answer_at_half_alpha_each(app, data) -> None:
    a = body(data["human"][:100], data["judge"][:100], data["judge"][100:])
    b = body(data["other_human"][:100], data["other_judge"][:100], data["other_judge"][100:])
    reply = app.client.post("/v1/estimates", json={"metric": "difference", "alpha": 0.1, "a": a, "b": b})
    assert reply.status_code == 200, reply.text
    expected = estimate_difference(estimate_mean(sample_of(a), 0.05), estimate_mean(sample_of(b), 0.05))
    result = reply.json()
    assert_same(result, expected)
    assert (result["metric"], result["of"], result["alpha"]) == ("difference", "mean", 0.1)
    assert result["lam"] is None and result["label_budget"] is None
    # of: pass_rate, the difference of the two pass rates (each at alpha / 2)
    reply = app.client.post(
        "/v1/estimates", json={"metric": "difference", "of": "pass_rate", "threshold": 4, "a": a, "b": b}
    )
    assert reply.status_code == 200, reply.text
    expected = estimate_difference(
        estimate_pass_rate(sample_of(a), 0.025, 4.0), estimate_pass_rate(sample_of(b), 0.025, 4.0)
    )
    assert_same(reply.json(), expected)
    assert reply.json()["of"] == "pass_rate"


def test_the_issues_example_shape_answers_its_fields(app) -> None:
    """The issue's body, field for field, answers at least the issue's fields with the issue's types."""
    rng = np.random.default_rng(11)
    human, judge = population(rng, 100)
    payload = {
        "metric": "mean",
        "alpha": 0.05,
        "labelled": [{"human": round(h, 2), "judge": round(j, 1)} for h, j in zip(human[:10], judge[:10], strict=True)],
        "unlabelled": [{"judge": round(j, 1)} for j in judge[10:]],
    }
    reply = app.client.post("/v1/estimates", json=payload)
    assert reply.status_code == 200, reply.text
    result = reply.json()
    assert isinstance(result["estimate"], float) and isinstance(result["method"], str)
    assert result["interval"][0] <= result["estimate"] <= result["interval"][1]
    assert len(result["human_only_interval"]) == 2 and result["effective_sample_gain"] > 0
    assert (result["n_labelled"], result["n_unlabelled"]) == (10, 90)
    assert_same(result, estimate_mean(sample_of(payload), 0.05))


def test_the_served_interval_covers_the_truth_in_a_seeded_simulation(app) -> None:
    """60 resamples at n = 20 (betting) and 60 at n = 100 (mostly PPI++), through the batch form, alpha = 0.1."""
    rng = np.random.default_rng(7)
    human, judge = population(rng, 5000)
    truth = float(human.mean())
    for n in (20, 100):
        systems = []
        for _ in range(60):
            labelled = rng.integers(0, human.size, n)
            unlabelled = rng.integers(0, human.size, 400)
            systems.append(body(human[labelled], judge[labelled], judge[unlabelled]))
        named = {f"resample-{i}": system for i, system in enumerate(systems)}
        reply = app.client.post("/v1/estimates", json={"metric": "mean", "alpha": 0.1, "systems": named})
        assert reply.status_code == 200, reply.text
        results = list(reply.json()["systems"].values())
        assert list(reply.json()["systems"]) == list(named)
        assert {r["outcome"] for r in results} == {"estimate"}
        covered = [r["interval"][0] <= truth <= r["interval"][1] for r in results]
        assert np.mean(covered) >= 0.9 - 3 * math.sqrt(0.9 * 0.1 / 60)
        methods = {r["method"] for r in results}
        assert (methods == {"betting"}) if n == 20 else ("ppi++" in methods)


def test_a_batch_answers_every_system_and_a_bad_one_fails_alone(app, data) -> None:
    good = body(data["human"][:60], data["judge"][:60], data["judge"][60:])
    off_scale = {**good, "labelled": [{"human": 6.0, "judge": 3.0}, *good["labelled"][1:]]}
    systems = {
        "good": good,
        "off/scale": off_scale,
        "no-threshold": {**good, "metric": "pass_rate"},
        "passes": {**good, "metric": "pass_rate", "threshold": 4},
        "difference": {"metric": "difference", "a": samples(good), "b": samples(good)},
        "mixed": {**good, "a": samples(good)},
        "empty": {},
    }
    reply = app.client.post("/v1/estimates", json={"metric": "mean", "systems": systems})
    assert reply.status_code == 200, reply.text
    answer = reply.json()["systems"]
    assert list(answer) == list(systems)  # one answer per system, in the request's order
    assert [answer[name]["outcome"] for name in systems] == [
        "estimate",
        "error",
        "error",
        "estimate",
        "estimate",
        "error",
        "error",
    ]
    for name in ("off/scale", "no-threshold", "mixed", "empty"):
        error = answer[name]["error"]
        pointer = name.replace("/", "~1")
        assert error["status"] == 422 and error["instance"] == f"/v1/estimates#/systems/{pointer}", error
    assert "labelled[0].human = 6" in answer["off/scale"]["error"]["detail"]
    assert "threshold" in answer["no-threshold"]["error"]["detail"]
    assert "labelled, unlabelled, a" in answer["mixed"]["error"]["detail"]
    assert "labelled and unlabelled" in answer["empty"]["error"]["detail"]
    single = app.client.post("/v1/estimates", json={**good, "metric": "mean"}).json()
    assert {k: v for k, v in answer["good"].items() if k != "outcome"} == single
    assert_same(answer["passes"], estimate_pass_rate(sample_of(good), 0.05, 4.0))
    sample = sample_of(good)
    expected = estimate_difference(estimate_mean(sample, 0.025), estimate_mean(sample, 0.025))
    assert_same(answer["difference"], expected)


def _labelled(human: list[float], judge: list[float]) -> list[dict[str, float]]:
    return [{"human": h, "judge": j} for h, j in zip(human, judge, strict=True)]


def _unlabelled(judge: list[float]) -> list[dict[str, float]]:
    return [{"judge": j} for j in judge]


def _valid() -> dict[str, Any]:
    """4 labelled items (8 values) and 5 unlabelled ones: 13 values."""
    return {
        "metric": "mean",
        "labelled": _labelled([3, 4, 5, 2], [3, 4, 4, 2]),
        "unlabelled": _unlabelled([3, 4, 5, 4, 2]),
    }


_PAIR = {"labelled": _labelled([3, 4], [3, 4]), "unlabelled": _unlabelled([3, 4])}


@pytest.mark.parametrize(
    ("change", "detail"),
    [
        ({"labelled": _labelled([3, 4, 6, 2], [3, 4, 4, 2])}, "labelled[2].human = 6"),  # off the 1..5 scale
        ({"unlabelled": _unlabelled([3, 0, 5])}, "unlabelled[1].judge = 0"),
        ({"scale_min": 3}, "labelled[3].human = 2"),  # off the 3..5 scale
        ({"labelled": []}, "labelled"),  # empty sample
        ({"unlabelled": _unlabelled([3])}, "unlabelled"),
        ({"labelled": [{"human": 3}, {"human": 4}]}, "judge"),  # a labelled item without its judge verdict
        ({"labelled": [{"human": 3, "judge": 3, "weight": 1}] * 2}, "weight"),  # unknown field in an item
        ({"unlabelled": [{"judge": 3, "human": 3}] * 2}, "human"),  # an unlabelled item has no human label
        ({"labelled": [3, 4]}, "labelled"),  # the old flat lists
        ({"unlabelled": [[3], [4]]}, "unlabelled"),
        ({"alpha": 0}, "alpha"),
        ({"alpha": 5e-324}, "alpha"),
        ({"alpha": 1}, "alpha"),
        ({"alpha": -0.1}, "alpha"),
        ({"alpha": 1.5}, "alpha"),
        ({"alpha": "0.1"}, "alpha"),
        ({"metric": "median"}, "metric"),  # unknown metric
        ({"metric": None}, "'metric' is required"),
        ({"metric": "pass_rate"}, "threshold"),
        ({"metric": "pass_rate", "threshold": 1}, "threshold"),
        ({"threshold": 4}, "threshold"),
        ({"of": "pass_rate"}, "difference"),
        ({"metric": "difference"}, "needs 'a' and 'b'"),
        ({"a": _PAIR, "b": _PAIR}, "give exactly one form"),  # two forms at once
        ({"systems": {"x": _PAIR}}, "give exactly one form"),
        ({"labelled": None}, "'unlabelled' needs 'labelled'"),
        ({"unlabelled": None}, "'labelled' needs 'unlabelled'"),
        ({"labelled": None, "unlabelled": None}, "give the data as"),  # no form at all
        ({"labelled": None, "unlabelled": None, "a": _PAIR}, "'a' needs 'b'"),
        ({"labelled": None, "unlabelled": None, "a": _PAIR, "b": _PAIR}, "two systems of a difference"),
        ({"labelled": None, "unlabelled": None, "metric": "difference", "a": _PAIR, "b": {**_PAIR, "x": 1}}, "x"),
        ({"labelled": None, "unlabelled": None, "systems": {}}, "systems"),
        ({"labelled": None, "unlabelled": None, "systems": {"": _PAIR}}, "systems"),  # an empty name
        ({"labelled": None, "unlabelled": None, "systems": {"x": {**_PAIR, "systems": {}}}}, "systems"),
        ({"metric": "win_rate"}, "1 (win), 0.5 (tie) or 0"),
        ({"scale_min": 5, "scale_max": 5}, "scale_min"),
        ({"alpah": 0.1}, "alpah"),  # unknown field
        ({"human": [3, 4], "judge": [3, 4], "judge_unlabelled": [3, 4]}, "human"),  # the old shape's fields
        ({"target_half_width": 0}, "target_half_width"),
    ],
)
def test_bad_input_is_a_422_problem(app, change: dict[str, Any], detail: str) -> None:
    payload = {**_valid(), **change}
    reply = app.client.post("/v1/estimates", json=payload)
    assert reply.status_code == 422, reply.text
    assert reply.headers["content-type"].startswith(PROBLEM)
    problem = reply.json()
    assert problem["status"] == 422 and detail in problem["detail"] + str(problem.get("errors", ""))


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity", b"1e999", b"-1e999", b"1e308"])
@pytest.mark.parametrize("where", ["labelled.human", "labelled.judge", "unlabelled", "a", "systems"])
def test_nan_and_infinity_are_refused(app, literal: bytes, where: str) -> None:
    """The literal in one value of each place a value can stand: the single form, a difference, a batch system."""
    human, judge, unlabelled = (
        literal if where == field else b"3" for field in ("labelled.human", "labelled.judge", "unlabelled")
    )
    if where in ("a", "systems"):
        judge = literal
    sample = (
        b'{"labelled": [{"human": %s, "judge": %s}, {"human": 4, "judge": 4}], '
        b'"unlabelled": [{"judge": %s}, {"judge": 5}]}' % (human, judge, unlabelled)
    )
    text = {
        "a": b'{"metric": "difference", "a": %s, "b": %s}' % (sample, sample.replace(literal, b"3")),
        "systems": b'{"metric": "mean", "systems": {"x": %s}}' % sample,
    }.get(where, b'{"metric": "mean", ' + sample[1:])
    assert text.count(literal) == 1
    reply = app.client.post("/v1/estimates", content=text, headers={"Content-Type": "application/json"})
    assert reply.status_code in (400, 422) and reply.headers["content-type"].startswith(PROBLEM), reply.text


def test_the_value_cap_refuses_before_any_work(start_app, make_settings) -> None:
    harness = start_app(make_settings(limits=LimitSettings(max_estimate_values=13)))
    assert harness.client.post("/v1/estimates", json=_valid()).status_code == 200  # 2 x 4 + 5 = 13 values
    reply = harness.client.post("/v1/estimates", json={**_valid(), "unlabelled": _unlabelled([3, 4, 5, 4, 2, 1])})
    assert reply.status_code == 422 and "MAX_ESTIMATE_VALUES=13" in reply.json()["detail"]
    one_more_label = {**_valid(), "labelled": _labelled([3, 4, 5, 2, 3], [3, 4, 4, 2, 3])}  # 10 + 5: a label counts 2
    reply = harness.client.post("/v1/estimates", json=one_more_label)
    assert reply.status_code == 422 and "holds 15 values" in reply.json()["detail"]
    systems = {"x": samples(_valid()), "y": samples(_valid())}  # 26 values over two systems, each within the cap
    reply = harness.client.post("/v1/estimates", json={"metric": "mean", "systems": systems})
    assert reply.status_code == 422 and "holds 26 values" in reply.json()["detail"]
    difference = {"metric": "difference", "a": samples(_valid()), "b": samples(_valid())}
    reply = harness.client.post("/v1/estimates", json=difference)
    assert reply.status_code == 422 and "MAX_ESTIMATE_VALUES" in reply.json()["detail"]
    batch_of_differences = {
        "metric": "difference",
        "systems": {"d": {"a": _PAIR, "b": _PAIR}, "e": {"a": _PAIR, "b": _PAIR}},
    }
    reply = harness.client.post("/v1/estimates", json=batch_of_differences)  # 2 x (6 + 6) = 24 values
    assert reply.status_code == 422 and "holds 24 values" in reply.json()["detail"]


def test_a_body_over_max_body_bytes_is_413_and_too_many_systems_422(start_app, make_settings, app) -> None:
    harness = start_app(make_settings(max_body_bytes=2048))
    big = {**_valid(), "unlabelled": _unlabelled([3] * 500)}
    reply = harness.client.post("/v1/estimates", json=big)
    assert reply.status_code == 413 and reply.headers["content-type"].startswith(PROBLEM)
    systems = {f"s{i}": samples(_valid()) for i in range(101)}
    reply = app.client.post("/v1/estimates", json={"metric": "mean", "systems": systems})
    assert reply.status_code == 422 and "systems" in reply.text
    systems.pop("s100")  # 100 systems: the most a batch holds
    reply = app.client.post("/v1/estimates", json={"metric": "mean", "systems": systems})
    assert reply.status_code == 200 and len(reply.json()["systems"]) == 100


def test_a_huge_n_at_the_default_cap_is_answered_and_one_more_value_refused(app) -> None:
    rng = np.random.default_rng(3)
    human, judge = population(rng, 200_000)
    n = 10_000
    payload = body(human[:n], judge[:n], judge[n:190_000], metric="mean")  # 200,000 values: MAX_ESTIMATE_VALUES
    started = time.perf_counter()
    reply = app.client.post("/v1/estimates", json=payload)
    assert reply.status_code == 200, reply.text
    assert time.perf_counter() - started < 60  # about 2-4 s measured on a shared 2-core box
    result = reply.json()
    assert result["method"] == "ppi++" and result["n_labelled"] == n and result["n_unlabelled"] == 180_000
    assert result["interval"][0] <= human.mean() <= result["interval"][1]
    payload["unlabelled"].append({"judge": 3.0})
    reply = app.client.post("/v1/estimates", json=payload)
    assert reply.status_code == 422 and "MAX_ESTIMATE_VALUES=200000" in reply.json()["detail"]


def test_the_batch_route_is_gone(app) -> None:
    """One endpoint, one shape: the batch is the ``systems`` form of /v1/estimates."""
    reply = app.client.post("/v1/estimates/batch", json={"metric": "mean", "systems": {"x": samples(_valid())}})
    assert reply.status_code in (404, 405) and reply.headers["content-type"].startswith(PROBLEM)


_BATCH = {"metric": "mean", "systems": {"x": {"labelled": _valid()["labelled"], "unlabelled": _valid()["unlabelled"]}}}
_BATTLES = {
    "battles": [
        {"model_a": "x", "model_b": "y", "judge": "a", "human": "a"},
        {"model_a": "x", "model_b": "y", "judge": "b"},
    ]
}


@pytest.mark.parametrize(
    ("path", "payload"), [("/v1/estimates", _valid()), ("/v1/estimates", _BATCH), ("/v1/rankings", _BATTLES)]
)
def test_the_routes_need_the_key_under_every_spelling(
    start_app, make_settings, path: str, payload: dict[str, Any]
) -> None:
    harness = start_app(make_settings(api_keys=("k1",)))
    for spelling in (path, path + "/", path.upper(), path.replace("v1", "V1"), path + "?x=1", path + "//"):
        reply = harness.client.post(spelling, json=payload)
        assert reply.status_code in (401, 404), (spelling, reply.status_code)
        assert reply.status_code != 200
    assert harness.client.post(path, json=payload).status_code == 401
    reply = harness.client.post(path, json=payload, headers={"Authorization": "Bearer k1"})
    assert reply.status_code == 200, reply.text
