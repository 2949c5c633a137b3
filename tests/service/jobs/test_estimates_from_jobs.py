"""POST /v1/estimates reading a system from a finished job (``job`` + ``labelled: [{id, human}]``), end to end
through HTTP against real Redis: the job's live items are judged by the HTTP judge stand-in and its chunks run
in-process by the worker's runner.

Covered: the answer equals the explicit shape posted with the numbers read from GET /v1/jobs/{id}/results (for each
``judge_value``, pass_rate, a difference of two jobs, the batch form); failed items left out and counted; unknown,
repeated and misplaced ids a 422 naming them; several criteria; a value off the scale; an unfinished or cancelled
job a 409; another tenant's job a 404 (missing and wrong key 401, the admin key sees it); 503 without Redis and
with a Redis that does not answer; MAX_ESTIMATE_VALUES counting the job's items.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from service.config.limits import LimitSettings
from service.config.settings import Settings
from service.estimating.job_samples import _judge_value, _Panel, _Result
from tests.fakes.judge_server import JudgeServer, ScriptedReply, peaked_logprobs
from tests.service.conftest import STAND_IN, AppHarness
from tests.service.jobs.conftest import run_chunks
from tests.service.jobs.test_api import NDJSON, ndjson, results

pytestmark = pytest.mark.redis

N_ITEMS = 64
CHUNK = 16
KEY_1, KEY_2, ADMIN = "estimates-tenant-one-3b9e", "estimates-tenant-two-77c1", "estimates-admin-key-0d4a"
_ITEM = re.compile(r"ITEM(\d+)X")
_FIELDS = (
    "estimate",
    "interval",
    "method",
    "human_only_interval",
    "effective_sample_gain",
    "n_labelled",
    "n_unlabelled",
    "lam",
    "label_budget",
    "ppi_interval",
    "betting_interval",
    "classical_interval",
)


def judge_score_of(index: int) -> int:
    """The stand-in's score of item ``index``: every score 1..5 occurs."""
    return 1 + (index * 7) % 5


def respond(body: dict[str, Any]) -> ScriptedReply | str:
    """The stand-in's reply: item i (read from its document) gets judge_score_of(i), log-probs peaked there."""
    text = "\n".join(str(message.get("content", "")) for message in body.get("messages", []))
    found = _ITEM.search(text)
    score = judge_score_of(int(found.group(1))) if found else 3
    return ScriptedReply(str(score), peaked_logprobs(score, sharpness=1.0))


def item(index: int, run: str, criterion: str = "coherence") -> dict[str, Any]:
    """A live item for the stand-in (texts unique to this run: no answer comes from the Redis cache)."""
    return {"item_id": f"item-{index}", "criterion": criterion, "document": f"D{run} ITEM{index}X", "summary": "S"}


def human_of(index: int) -> float:
    """A human label near the judge's score (so the judge helps), on 1..5."""
    return float(min(5, max(1, judge_score_of(index) + (index % 3) - 1)))


@pytest.fixture
def judge_settings(jobs_settings: Callable[..., Settings], judge_server: JudgeServer, tmp_path: Path) -> Callable:
    """Settings whose judge ``stand-in`` is the stand-in server answering ``respond``; keywords as jobs_settings."""
    judge_server.responder = respond
    judges_file = tmp_path / "judges.json"
    judges_file.write_bytes(msgspec.json.encode([judge_server.judge_config(name=STAND_IN, max_retries=0)]))

    def make(settings_overrides: dict[str, Any] | None = None, **job_overrides: Any) -> Settings:
        overrides = {"judges_file": judges_file, **(settings_overrides or {})}
        return jobs_settings(overrides, chunk_size=CHUNK, **job_overrides)

    return make


def run_job(client: Any, settings: Settings, items: list[Any], headers: dict[str, str] | None = None) -> str:
    """Submit the items as a job, run every chunk in-process, check it finished; its id."""
    response = client.post("/v1/jobs", content=ndjson(items), headers={**NDJSON, **(headers or {})})
    assert response.status_code == 202, response.text
    job_id = response.json()["job_id"]
    chunks = list(range(-(-len(items) // CHUNK)))
    assert run_chunks(settings, job_id, chunks) == ["written"] * len(chunks)
    # finished: "failed" when some item failed (its results are complete and the estimate reads them)
    assert client.get(f"/v1/jobs/{job_id}", headers=headers).json()["status"] in ("succeeded", "failed")
    return job_id


def expected_score(result: dict[str, Any]) -> float:
    """sum_k k p_k of the result's probabilities (the test's own spelling of the rule)."""
    return float(np.dot(np.arange(1, 6), np.asarray(result["probabilities"], dtype=float)))


def explicit(lines: list[dict[str, Any]], humans: dict[str, float], value: Callable[[dict[str, Any]], float]) -> dict:
    """The explicit ``{labelled, unlabelled}`` of a job's result lines: labelled ids in the order of ``humans``."""
    by_id = {line["item_id"]: line for line in lines if line["ok"]}
    labelled = [{"human": h, "judge": value(by_id[i]["result"])} for i, h in humans.items() if i in by_id]
    unlabelled = [{"judge": value(line["result"])} for line in lines if line["ok"] and line["item_id"] not in humans]
    return {"labelled": labelled, "unlabelled": unlabelled}


def same_numbers(by_job: dict[str, Any], by_value: dict[str, Any]) -> None:
    for field in _FIELDS:
        assert by_job[field] == by_value[field], field


def by_ids(humans: dict[str, float]) -> list[dict[str, Any]]:
    return [{"id": key, "human": value} for key, value in humans.items()]


def test_an_estimate_from_a_job_equals_the_explicit_shape_on_the_same_numbers(
    start_app: Callable[[Settings], AppHarness], judge_settings: Callable[..., Settings]
) -> None:
    settings = judge_settings()
    client = start_app(settings).client
    run = uuid.uuid4().hex
    items: list[Any] = [item(i, run) for i in range(N_ITEMS)]
    items[5] = {"item_id": "item-5", "criterion": "coherence", "judge": STAND_IN, "judge_score": 9}  # fails
    items[9] = {"item_id": "item-9", "criterion": "coherence", "judge": STAND_IN, "judge_score": 7}  # fails
    items[11] = {**item(11, run), "item_id": None}  # no id: unlabelled only
    job_id = run_job(client, settings, items)
    lines = results(client, job_id)
    rng = np.random.default_rng(20261201)
    chosen = sorted(int(i) for i in rng.choice([i for i in range(N_ITEMS) if i != 11], size=24, replace=False))
    if 5 not in chosen:
        chosen[0] = 5  # a labelled item whose scoring failed
    humans = {f"item-{i}": human_of(i) for i in chosen}
    failed = [f"item-{i}" for i in chosen if i in (5, 9)]

    for judge_value, value in (
        ("expected_score", expected_score),
        ("label", lambda result: float(result["point"])),
        ("judge_score", lambda result: float(result["judge_score"])),
    ):
        response = client.post(
            "/v1/estimates",
            json={
                "metric": "mean",
                "alpha": 0.1,
                "job": job_id,
                "judge_value": judge_value,
                "labelled": by_ids(humans),
            },
        )
        assert response.status_code == 200, response.text
        answer = response.json()
        reference = client.post(
            "/v1/estimates", json={"metric": "mean", "alpha": 0.1, **explicit(lines, humans, value)}
        )
        assert reference.status_code == 200, reference.text
        same_numbers(answer, reference.json())
        assert reference.json()["jobs"] is None
        (use,) = answer["jobs"]
        assert use == {
            "job_id": job_id,
            "system": None,
            "judge_value": judge_value,
            "criterion": "coherence",
            "n_items": N_ITEMS,
            "n_failed": 2,
            "n_other_criteria": 0,
            "n_labelled": len(humans) - len(failed),
            "n_unlabelled": N_ITEMS - 2 - (len(humans) - len(failed)),
            "labelled_failed": failed,
        }
        assert answer["n_labelled"] == len(humans) - len(failed) and answer["n_unlabelled"] == use["n_unlabelled"]
    default = client.post(
        "/v1/estimates", json={"metric": "mean", "alpha": 0.1, "job": job_id, "labelled": by_ids(humans)}
    ).json()
    assert default["jobs"][0]["judge_value"] == "expected_score"
    assert (
        default["estimate"]
        != client.post(
            "/v1/estimates",
            json={"metric": "mean", "alpha": 0.1, "job": job_id, "judge_value": "label", "labelled": by_ids(humans)},
        ).json()["estimate"]
    )  # the choice matters

    # pass_rate: the threshold applies to the human labels and to the judge's values read from the job
    pass_rate = client.post(
        "/v1/estimates", json={"metric": "pass_rate", "threshold": 3.5, "job": job_id, "labelled": by_ids(humans)}
    )
    reference = client.post(
        "/v1/estimates", json={"metric": "pass_rate", "threshold": 3.5, **explicit(lines, humans, expected_score)}
    )
    assert pass_rate.status_code == 200, pass_rate.text
    same_numbers(pass_rate.json(), reference.json())


def test_a_difference_of_two_jobs_and_the_batch_form(
    start_app: Callable[[Settings], AppHarness], judge_settings: Callable[..., Settings]
) -> None:
    settings = judge_settings()
    client = start_app(settings).client
    run_a, run_b = uuid.uuid4().hex, uuid.uuid4().hex
    job_a = run_job(client, settings, [item(i, run_a) for i in range(N_ITEMS)])
    job_b = run_job(client, settings, [item(i + 3, run_b) | {"item_id": f"item-{i}"} for i in range(40)])
    humans_a = {f"item-{i}": human_of(i) for i in range(0, N_ITEMS, 3)}
    humans_b = {f"item-{i}": human_of(i + 3) for i in range(1, 40, 4)}
    lines_a, lines_b = results(client, job_a), results(client, job_b)

    difference = client.post(
        "/v1/estimates",
        json={
            "metric": "difference",
            "alpha": 0.1,
            "judge_value": "label",
            "a": {"job": job_a, "labelled": by_ids(humans_a)},
            "b": {"job": job_b, "labelled": by_ids(humans_b)},
        },
    )
    assert difference.status_code == 200, difference.text
    point = lambda result: float(result["point"])  # noqa: E731
    reference = client.post(
        "/v1/estimates",
        json={
            "metric": "difference",
            "alpha": 0.1,
            "a": explicit(lines_a, humans_a, point),
            "b": explicit(lines_b, humans_b, point),
        },
    )
    assert reference.status_code == 200, reference.text
    for field in ("estimate", "interval", "human_only_interval", "n_labelled", "n_unlabelled", "switch_reason"):
        assert difference.json()[field] == reference.json()[field], field
    assert [(use["system"], use["job_id"]) for use in difference.json()["jobs"]] == [("a", job_a), ("b", job_b)]

    # a job on one side, the explicit samples on the other
    mixed = client.post(
        "/v1/estimates",
        json={
            "metric": "difference",
            "alpha": 0.1,
            "judge_value": "label",
            "a": {"job": job_a, "labelled": by_ids(humans_a)},
            "b": explicit(lines_b, humans_b, point),
        },
    )
    assert mixed.status_code == 200 and mixed.json()["estimate"] == reference.json()["estimate"]
    assert [use["system"] for use in mixed.json()["jobs"]] == ["a"]

    batch = client.post(
        "/v1/estimates",
        json={
            "metric": "mean",
            "alpha": 0.1,
            "systems": {
                "model-a": {"job": job_a, "labelled": by_ids(humans_a)},
                "model-b": {"job": job_b, "labelled": by_ids(humans_b), "judge_value": "label"},
                "model-c": {"job": job_b, "labelled": [{"id": "item-1", "human": 3}, {"id": "nope", "human": 2}]},
                "model-d": {"job": "0" * 32, "labelled": by_ids(humans_b)},
                "explicit": explicit(lines_a, humans_a, expected_score),
            },
        },
    )
    assert batch.status_code == 200, batch.text
    systems = batch.json()["systems"]
    assert list(systems) == ["model-a", "model-b", "model-c", "model-d", "explicit"]
    same_numbers(systems["model-a"], systems["explicit"])
    one = client.post(
        "/v1/estimates",
        json={"metric": "mean", "alpha": 0.1, "job": job_b, "judge_value": "label", "labelled": by_ids(humans_b)},
    ).json()
    same_numbers(systems["model-b"], one)
    assert systems["model-c"]["outcome"] == "error" and "'nope'" in systems["model-c"]["error"]["detail"]
    assert systems["model-c"]["error"]["instance"] == "/v1/estimates#/systems/model-c"
    assert systems["model-d"]["error"]["status"] == 404 and systems["model-d"]["error"]["type"].endswith(
        "job-not-found"
    )


def test_bad_ids_and_options_are_422_naming_them(
    start_app: Callable[[Settings], AppHarness], judge_settings: Callable[..., Settings]
) -> None:
    settings = judge_settings()
    client = start_app(settings).client
    run = uuid.uuid4().hex
    items = [item(i, run) for i in range(20)] + [item(20, run) | {"item_id": "item-3"}]  # item-3 twice
    items += [item(i, run, criterion="relevance") | {"item_id": f"rel-{i}"} for i in range(21, 26)]
    job_id = run_job(client, settings, items)
    two = [{"id": "item-1", "human": 3}, {"id": "item-2", "human": 4}]

    def refused(body: dict[str, Any], *fragments: str) -> None:
        response = client.post("/v1/estimates", json={"metric": "mean", **body})
        assert response.status_code == 422, response.text
        assert response.headers["content-type"] == "application/problem+json"
        for fragment in fragments:
            assert fragment in response.json()["detail"], (fragment, response.json()["detail"])

    coherence = {"job": job_id, "criterion": "coherence"}
    unknown = [*two, *({"id": f"missing-{i}", "human": 2} for i in range(25))]
    refused(
        {**coherence, "labelled": unknown}, "labelled ids not among the items of job", "'missing-0'", "(and 5 more)"
    )
    refused(
        {**coherence, "labelled": [*two, {"id": "item-1", "human": 5}]}, "labelled[2].id 'item-1' repeats labelled[0]"
    )
    refused({**coherence, "labelled": [*two, {"id": "item-3", "human": 5}]}, "'item-3'", "more than one item")
    refused({**coherence, "labelled": [*two, {"id": "rel-22", "human": 5}]}, "'rel-22'", "another criterion")
    refused({**coherence, "labelled": [two[0], {"human": 4}]}, "labelled[1].id is required with 'job'")
    refused({**coherence, "labelled": [two[0], {"id": "item-2", "human": 4, "judge": 3}]}, "labelled[1].judge")
    refused({"job": job_id, "labelled": two}, "criteria coherence, relevance", "give 'criterion'")
    refused({**coherence, "labelled": two, "unlabelled": [{"judge": 3}, {"judge": 4}]}, "exclude each other")
    refused({**coherence, "labelled": two, "scale_max": 3}, "off the scale 1..3", "of job")
    refused({**coherence, "labelled": two, "metric": "win_rate"}, "win_rate takes pairwise outcomes")
    refused(
        {
            "labelled": [{"id": "item-1", "human": 3, "judge": 3}, {"human": 2, "judge": 2}],
            "unlabelled": [{"judge": 3}, {"judge": 4}],
        },
        "labelled[0].id names an item of a job",
    )
    refused(
        {"labelled": [{"human": 3}, {"human": 2, "judge": 2}], "unlabelled": [{"judge": 3}, {"judge": 4}]},
        "labelled[0].judge is required",
    )
    refused(
        {
            "judge_value": "label",
            "labelled": [{"human": 3, "judge": 3}, {"human": 2, "judge": 2}],
            "unlabelled": [{"judge": 3}, {"judge": 4}],
        },
        "'judge_value' tells how a job's results are read",
    )
    batch = {
        "systems": {
            "x": {
                "labelled": [{"human": 3, "judge": 3}, {"human": 2, "judge": 2}],
                "unlabelled": [{"judge": 3}, {"judge": 4}],
            }
        }
    }
    refused({"criterion": "coherence", **batch}, "'criterion' tells how a job's results are read")
    malformed = client.post("/v1/estimates", json={"metric": "mean", "job": "not-a-job", "labelled": two})
    assert malformed.status_code == 422 and "job" in malformed.json()["detail"]
    relevance = client.post(
        "/v1/estimates",
        json={
            "metric": "mean",
            "job": job_id,
            "criterion": "relevance",
            "labelled": [{"id": "rel-21", "human": 3}, {"id": "rel-22", "human": 4}],
        },
    )
    assert relevance.status_code == 200, relevance.text
    use = relevance.json()["jobs"][0]
    assert (use["criterion"], use["n_other_criteria"], use["n_unlabelled"]) == ("relevance", 21, 3)


def test_unfinished_and_cancelled_jobs_are_409(
    start_app: Callable[[Settings], AppHarness], judge_settings: Callable[..., Settings]
) -> None:
    settings = judge_settings()
    client = start_app(settings).client
    run = uuid.uuid4().hex
    job_id = client.post("/v1/jobs", content=ndjson([item(i, run) for i in range(40)]), headers=NDJSON).json()["job_id"]
    body = {"metric": "mean", "job": job_id, "labelled": [{"id": "item-1", "human": 3}, {"id": "item-2", "human": 4}]}
    queued = client.post("/v1/estimates", json=body)
    assert queued.status_code == 409 and queued.json()["type"].endswith("job-not-finished")
    assert "is queued (0 of 40 items done)" in queued.json()["detail"]
    run_chunks(settings, job_id, [0])
    running = client.post("/v1/estimates", json=body).json()
    assert running["status"] == 409 and "is running (16 of 40 items done)" in running["detail"]
    assert client.delete(f"/v1/jobs/{job_id}").json()["status"] == "cancelled"
    cancelled = client.post("/v1/estimates", json=body)
    assert cancelled.status_code == 409 and "was cancelled" in cancelled.json()["detail"]

    # status failed (a chunk abandoned after lost workers): finished; its items are failed items, left out
    partly = client.post("/v1/jobs", content=ndjson([item(i, run) for i in range(40)]), headers=NDJSON).json()
    run_chunks(settings, partly["job_id"], [0, 1])
    assert run_chunks(settings, partly["job_id"], [2], attempt=settings.jobs.chunk_attempts + 1) == ["abandoned"]
    assert client.get(f"/v1/jobs/{partly['job_id']}").json()["status"] == "failed"
    labelled = [{"id": "item-1", "human": 3}, {"id": "item-2", "human": 4}, {"id": "item-39", "human": 2}]
    answer = client.post("/v1/estimates", json={**body, "job": partly["job_id"], "labelled": labelled})
    assert answer.status_code == 200, answer.text
    use = answer.json()["jobs"][0]
    assert (use["n_failed"], use["labelled_failed"], use["n_labelled"], use["n_unlabelled"]) == (8, ["item-39"], 2, 30)


def test_tenancy_and_keys(start_app: Callable[[Settings], AppHarness], judge_settings: Callable[..., Settings]) -> None:
    settings = judge_settings({"api_keys": (KEY_1, KEY_2), "admin_api_key": ADMIN})
    client = start_app(settings).client
    own = {"authorization": f"Bearer {KEY_1}"}
    job_id = run_job(client, settings, [item(i, uuid.uuid4().hex) for i in range(20)], headers=own)
    body = {"metric": "mean", "job": job_id, "labelled": [{"id": "item-1", "human": 3}, {"id": "item-2", "human": 4}]}
    assert client.post("/v1/estimates", json=body, headers=own).status_code == 200
    assert client.post("/v1/estimates", json=body).status_code == 401
    assert client.post("/v1/estimates", json=body, headers={"authorization": "Bearer wrong"}).status_code == 401
    other = client.post("/v1/estimates", json=body, headers={"authorization": f"Bearer {KEY_2}"})
    assert other.status_code == 404 and other.json()["type"].endswith("job-not-found")
    missing = client.post("/v1/estimates", json={**body, "job": "0" * 32}, headers={"authorization": f"Bearer {KEY_2}"})
    assert other.json()["detail"].replace(job_id, "0" * 32) == missing.json()["detail"]  # tells nothing more
    assert client.post("/v1/estimates", json=body, headers={"authorization": f"Bearer {ADMIN}"}).status_code == 200


def test_size_cap_counts_the_jobs_items(
    start_app: Callable[[Settings], AppHarness], judge_settings: Callable[..., Settings]
) -> None:
    settings = judge_settings({"limits": LimitSettings(max_estimate_values=24)})
    client = start_app(settings).client
    job_id = run_job(client, settings, [item(i, uuid.uuid4().hex) for i in range(20)])
    labelled = [{"id": f"item-{i}", "human": 3} for i in range(3)]
    refused = client.post("/v1/estimates", json={"metric": "mean", "job": job_id, "labelled": labelled})
    assert refused.status_code == 422
    assert "holds 26 values" in refused.json()["detail"] and "MAX_ESTIMATE_VALUES=24" in refused.json()["detail"]
    fits = client.post("/v1/estimates", json={"metric": "mean", "job": job_id, "labelled": labelled[:2]})
    assert fits.status_code == 200, fits.text


def test_503_without_redis_and_with_a_redis_that_does_not_answer(
    app: AppHarness,
    start_app: Callable[[Settings], AppHarness],
    judge_settings: Callable[..., Settings],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    body = {"metric": "mean", "job": "0" * 32, "labelled": [{"id": "a", "human": 3}, {"id": "b", "human": 4}]}
    response = app.client.post("/v1/estimates", json=body)
    assert response.status_code == 503 and response.json()["type"].endswith("jobs-unavailable")
    assert "REDIS_URL" in response.json()["detail"]
    mixed = app.client.post("/v1/estimates", json={**body, "unlabelled": [{"judge": 3}, {"judge": 4}]})
    assert mixed.status_code == 422 and "exclude each other" in mixed.json()["detail"]  # the body's own 422 first
    explicit_body = {
        "metric": "mean",
        "labelled": [{"human": 3, "judge": 3}, {"human": 4, "judge": 4}],
        "unlabelled": [{"judge": 3}, {"judge": 5}],
    }
    assert app.client.post("/v1/estimates", json=explicit_body).status_code == 200  # without a job: no Redis needed

    settings = judge_settings(retry_after_s=4)
    harness = start_app(settings)
    job_id = run_job(harness.client, settings, [item(i, uuid.uuid4().hex) for i in range(20)])

    async def refused(*_: Any, **__: Any) -> Any:
        raise RedisConnectionError("Connection refused")

    monkeypatch.setattr(harness.services.jobs.store.redis, "hmget", refused)  # fails between record and results
    down = harness.client.post("/v1/estimates", json={**body, "job": job_id})
    assert down.status_code == 503 and down.headers["retry-after"] == "4"
    assert "Redis does not answer" in down.json()["detail"]


def test_the_judge_value_rule() -> None:
    probabilities = [0.1, 0.2, 0.3, 0.2, 0.2]
    plain = _Result(criterion="c", judge_score=3, point=4, probabilities=probabilities)
    assert _judge_value(plain, "expected_score") == pytest.approx(3.2)
    assert (_judge_value(plain, "label"), _judge_value(plain, "judge_score")) == (4.0, 3.0)
    assert _judge_value(_Result(criterion="c", judge_score=3, point=4), "expected_score") == 3.0
    panel = _Result(criterion="c", judge_score=3, point=4, panel=_Panel(mean=3.4))
    assert _judge_value(panel, "expected_score") == 3.4  # a panel's verdict is its members' mean
    assert json.loads(msgspec.json.encode(plain))["point"] == 4
