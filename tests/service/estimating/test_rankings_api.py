"""POST /v1/rankings over the HTTP test client: the answer is calibration.estimates.rank_sets' on the same battles, the
rank sets cover the population's ranking in a seeded simulation, and bad input is a 422 problem."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from calibration.estimates.rank_sets import Battles, ppr_win_rates, rank_sets, true_ranks, win_rates
from service.config.errors import SettingsError
from service.config.limits import LimitSettings
from service.config.settings import Settings

MODELS = ("m0", "m1", "m2", "m3")
STRENGTH = np.array([0.0, 0.3, 0.9, 1.6])
VERDICT = np.array(["a", "b", "tie"])


def battle_population(rng: np.random.Generator, size: int) -> dict[str, np.ndarray]:
    """Random pairs of the four models; the human's outcome by strength (10% ties); a judge that agrees 75%."""
    a = rng.integers(0, 4, size)
    b = (a + rng.integers(1, 4, size)) % 4
    p_a = 1 / (1 + np.exp(STRENGTH[b] - STRENGTH[a]))
    tie = rng.random(size) < 0.1
    human = np.where(tie, 2, np.where(rng.random(size) < p_a, 0, 1))
    judge = np.where(rng.random(size) < 0.75, human, rng.integers(0, 3, size))
    return {"a": a, "b": b, "human": human, "judge": judge}


def request_of(
    pop: dict[str, np.ndarray], labelled: np.ndarray, unlabelled: np.ndarray, **options: Any
) -> dict[str, Any]:
    """A /v1/rankings body: labelled battles carry the human verdict too."""
    battles = [
        {
            "model_a": MODELS[pop["a"][i]],
            "model_b": MODELS[pop["b"][i]],
            "judge": VERDICT[pop["judge"][i]],
            "human": VERDICT[pop["human"][i]],
        }
        for i in labelled
    ]
    battles += [
        {"model_a": MODELS[pop["a"][i]], "model_b": MODELS[pop["b"][i]], "judge": VERDICT[pop["judge"][i]]}
        for i in unlabelled
    ]
    return {"battles": battles, **options}


def as_battles(pop: dict[str, np.ndarray], index: np.ndarray, who: str, tie: float) -> Battles:
    """The calibration Battles of ``index`` with ``who``'s outcomes (model numbers = MODELS' order)."""
    verdict = pop[who][index]
    win_a = np.where(verdict == 0, 1.0, np.where(verdict == 2, tie, 0.0))
    win_b = np.where(verdict == 1, 1.0, np.where(verdict == 2, tie, 0.0))
    return Battles(model_a=pop["a"][index], model_b=pop["b"][index], win_a=win_a, win_b=win_b)


@pytest.mark.parametrize(("ties", "tie", "construction"), [("zero", 0.0, "ellipsoid"), ("half", 0.5, "bonferroni")])
def test_the_answer_is_rank_sets_on_the_same_battles(app, ties: str, tie: float, construction: str) -> None:
    rng = np.random.default_rng(5)
    pop = battle_population(rng, 3000)
    # the first battles name the models in MODELS' order, so the service numbers them as MODELS does
    order = np.r_[[np.flatnonzero((pop["a"] == m) & (pop["b"] == (m + 1) % 4))[0] for m in range(4)]]
    rest = np.setdiff1d(np.arange(3000), order)
    labelled, unlabelled = np.r_[order, rest[:296]], rest[296:]
    reply = app.client.post(
        "/v1/rankings", json=request_of(pop, labelled, unlabelled, alpha=0.1, ties=ties, construction=construction)
    )
    assert reply.status_code == 200, reply.text
    answer = reply.json()
    estimate = ppr_win_rates(
        as_battles(pop, labelled, "human", tie),
        as_battles(pop, labelled, "judge", tie),
        as_battles(pop, unlabelled, "judge", tie),
        4,
    )
    human_only = win_rates(as_battles(pop, labelled, "human", tie), 4)
    sets, human_sets = rank_sets(estimate, 0.1, construction), rank_sets(human_only, 0.1, construction)
    low, high = estimate.intervals(0.1)
    assert (answer["lam"], answer["n_labelled"], answer["n_unlabelled"]) == (estimate.lam, 300, 2700)
    assert answer["min_labelled_battles"] == 20 and estimate.counts.min() >= 20  # the guard is inactive here
    by_name = {m["model"]: m for m in answer["models"]}
    for i, name in enumerate(MODELS):
        model = by_name[name]
        assert model["win_rate"] == estimate.theta[i] and model["interval"] == [low[i], high[i]]
        assert model["rank_set"] == [sets.low[i], sets.high[i]]
        assert model["human_only_win_rate"] == human_only.theta[i]
        assert model["human_only_rank_set"] == [human_sets.low[i], human_sets.high[i]]
        assert model["battles_labelled"] == estimate.counts[i] and model["under_labelled"] is False
    rates = [m["win_rate"] for m in answer["models"]]
    assert rates == sorted(rates, reverse=True)  # best first
    separable = {(p["better"], p["worse"]) for p in answer["separable"]}
    assert separable == {(MODELS[j], MODELS[i]) for i in range(4) for j in range(4) if sets.above[i, j]}
    assert separable  # the strengths are far enough apart for the judge-assisted sets to separate something


def test_rank_sets_cover_the_population_ranking_in_a_seeded_simulation(app) -> None:
    """40 resamples of 200 labelled + 2,000 unlabelled battles at alpha = 0.1; the truth is the population's
    human win rates (ties count zero)."""
    rng = np.random.default_rng(11)
    pop = battle_population(rng, 20_000)
    truth = true_ranks(win_rates(as_battles(pop, np.arange(20_000), "human", 0.0), 4).theta)
    assert sorted(truth.tolist()) == [1, 2, 3, 4]
    covered, sizes = [], []
    for _ in range(40):
        labelled, unlabelled = rng.integers(0, 20_000, 200), rng.integers(0, 20_000, 2000)
        reply = app.client.post("/v1/rankings", json=request_of(pop, labelled, unlabelled, alpha=0.1))
        assert reply.status_code == 200, reply.text
        ranks = {m["model"]: m["rank_set"] for m in reply.json()["models"]}
        covered.append(all(ranks[name][0] <= truth[i] <= ranks[name][1] for i, name in enumerate(MODELS)))
        sizes.append(np.mean([high - low + 1 for low, high in ranks.values()]))
    assert np.mean(covered) >= 0.9 - 3 * math.sqrt(0.9 * 0.1 / 40)
    assert np.mean(sizes) < 4  # informative: not every set is the full range


def _battles(*rows: tuple[str, str, str, str | None]) -> list[dict[str, Any]]:
    return [{"model_a": a, "model_b": b, "judge": j, **({} if h is None else {"human": h})} for a, b, j, h in rows]


_GOOD = _battles(("x", "y", "a", "a"), ("y", "z", "b", "tie"), ("x", "z", "a", None), ("y", "x", "tie", None))


@pytest.mark.parametrize(
    ("payload", "detail"),
    [
        ({"battles": _battles(("x", "y", "a", "a"), ("y", "x", "a", "b"))}, "judge's verdict only"),
        ({"battles": _battles(("x", "y", "a", None), ("y", "x", "a", None))}, "human verdict"),
        ({"battles": _GOOD[:1]}, "battles"),
        ({"battles": []}, "battles"),
        ({"battles": _GOOD, "alpha": 0}, "alpha"),
        ({"battles": _GOOD, "alpha": 1e-7}, "alpha"),
        ({"battles": _GOOD, "alpha": 1}, "alpha"),
        ({"battles": _GOOD, "construction": "box"}, "construction"),
        ({"battles": _GOOD, "ties": "third"}, "ties"),
        ({"battles": [{**_GOOD[0], "judge": "c"}, *_GOOD[1:]]}, "judge"),
        ({"battles": [{**_GOOD[0], "model_a": ""}, *_GOOD[1:]]}, "model_a"),
        ({"battles": [{**_GOOD[0], "winner": "a"}, *_GOOD[1:]]}, "winner"),
        ({"battles": _GOOD, "min_labelled_battles": -1}, "min_labelled_battles"),
        ({"battles": _GOOD, "min_labelled_battles": 10_001}, "min_labelled_battles"),
        ({"battles": _GOOD, "min_labelled_battles": 2.5}, "min_labelled_battles"),
        ({"battles": _GOOD, "min_labelled_battles": "20"}, "min_labelled_battles"),
    ],
)
def test_bad_input_is_a_422_problem(app, payload: dict[str, Any], detail: str) -> None:
    reply = app.client.post("/v1/rankings", json=payload)
    assert reply.status_code == 422, reply.text
    assert reply.headers["content-type"].startswith("application/problem+json")
    problem = reply.json()
    assert detail in problem["detail"] + str(problem.get("errors", ""))


def test_a_self_battle_is_left_out_and_listed(app) -> None:
    """The same answer as without it, plus its index in ignored_battles (its model is ranked by its other battles)."""
    plain = app.client.post("/v1/rankings", json={"battles": _GOOD, "min_labelled_battles": 0}).json()
    body = {"battles": [_GOOD[0], *_battles(("y", "y", "b", None)), *_GOOD[1:]], "min_labelled_battles": 0}
    reply = app.client.post("/v1/rankings", json=body)
    assert reply.status_code == 200, reply.text
    answer = reply.json()
    assert answer.pop("ignored_battles") == [{"index": 1, "reason": "a self-battle: model 'y' against itself is no "
                                                                   "comparison"}]  # fmt: skip
    assert plain.pop("ignored_battles") == []
    assert answer == plain


def test_a_model_seen_only_against_itself_is_not_ranked(app) -> None:
    body = {"battles": [*_GOOD, *_battles(("w", "w", "a", "a"))], "min_labelled_battles": 0}
    answer = app.client.post("/v1/rankings", json=body).json()
    assert sorted(m["model"] for m in answer["models"]) == ["x", "y", "z"]
    assert [ignored["index"] for ignored in answer["ignored_battles"]] == [4]


def test_when_every_battle_is_a_self_battle_nothing_is_ranked(app) -> None:
    reply = app.client.post("/v1/rankings", json={"battles": _battles(("x", "x", "a", "a"), ("y", "y", "b", None))})
    assert reply.status_code == 200, reply.text
    answer = reply.json()
    assert (answer["models"], answer["separable"], answer["human_only_separable"]) == ([], [], [])
    assert (answer["n_labelled"], answer["n_unlabelled"]) == (0, 0)
    assert [ignored["index"] for ignored in answer["ignored_battles"]] == [0, 1]


def test_with_no_labelled_battle_kept_no_model_has_an_estimate(app) -> None:
    """The only labelled battle is a self-battle: the judge's verdicts alone say nothing of the human ranking."""
    battles = _battles(("x", "x", "a", "a"), ("x", "y", "a", None), ("y", "z", "b", None))
    for floor in (0, 1):
        reply = app.client.post("/v1/rankings", json={"battles": battles, "min_labelled_battles": floor})
        assert reply.status_code == 200, reply.text
        answer = reply.json()
        assert (answer["n_labelled"], answer["n_unlabelled"], answer["separable"]) == (0, 2, [])
        for model in answer["models"]:
            assert model["win_rate"] is None and model["human_only_win_rate"] is None, model
            assert model["rank_set"] == model["human_only_rank_set"] == [1, 3]
            assert model["under_labelled"] is (floor == 1)


def test_with_no_unlabelled_battle_kept_the_answer_is_the_human_only_one(app) -> None:
    battles = [*_GOOD[:2], *_battles(("x", "z", "b", "b"), ("z", "z", "a", None))]
    reply = app.client.post("/v1/rankings", json={"battles": battles, "min_labelled_battles": 0})
    assert reply.status_code == 200, reply.text
    answer = reply.json()
    assert (answer["method"], answer["lam"], answer["n_labelled"], answer["n_unlabelled"]) == ("human only", 0.0, 3, 0)
    for model in answer["models"]:
        assert model["win_rate"] == model["human_only_win_rate"] is not None
        assert model["interval"] == model["human_only_interval"]
        assert model["rank_set"] == model["human_only_rank_set"]


def test_the_battle_and_model_caps(start_app, make_settings, app) -> None:
    assert app.client.post("/v1/rankings", json={"battles": _GOOD}).status_code == 200
    harness = start_app(make_settings(limits=LimitSettings(max_ranking_battles=4, max_ranking_models=3)))
    assert harness.client.post("/v1/rankings", json={"battles": _GOOD}).status_code == 200  # 4 battles, 3 models
    reply = harness.client.post("/v1/rankings", json={"battles": [*_GOOD, _GOOD[2]]})
    assert reply.status_code == 422 and "MAX_RANKING_BATTLES=4" in reply.json()["detail"]
    reply = harness.client.post("/v1/rankings", json={"battles": [*_GOOD[:3], *_battles(("x", "w", "a", None))]})
    assert reply.status_code == 422 and "MAX_RANKING_MODELS=3" in reply.json()["detail"]


@pytest.mark.parametrize(("floor", "interval"), [(None, [0.0, 1.0]), (0, None)])
def test_a_model_never_labelled_gets_no_estimate_and_the_full_rank_range(app, floor, interval) -> None:
    """Under the guard (default) its interval is [0, 1]; without it (0) there is none."""
    battles = [*_GOOD, *_battles(("w", "x", "a", None))]  # w has unlabelled battles only
    options = {} if floor is None else {"min_labelled_battles": floor}
    reply = app.client.post("/v1/rankings", json={"battles": battles, **options})
    assert reply.status_code == 200, reply.text
    last = reply.json()["models"][-1]
    assert last["model"] == "w" and last["win_rate"] is None and last["interval"] == interval
    assert last["rank_set"] == [1, 4] and (last["battles_labelled"], last["battles_unlabelled"]) == (0, 1)
    assert last["under_labelled"] is (floor is None)


def _sparse_loser_request(rng: np.random.Generator, **options: Any) -> dict[str, Any]:
    """m0..m3 with 300 labelled battles among them; "rare" in 3 labelled battles, all lost (human and judge agree),
    and in 300 unlabelled ones where the judge gives it a win half of the time."""
    pop = battle_population(rng, 3000)
    keep = np.flatnonzero(pop["a"] != pop["b"])
    body = request_of(pop, keep[:300], keep[300:], **options)
    rare = [{"model_a": "rare", "model_b": m, "judge": "b", "human": "b"} for m in ("m1", "m2", "m3")]
    rare += [{"model_a": "rare", "model_b": MODELS[i % 4], "judge": "a" if i % 2 else "b"} for i in range(300)]
    return {**body, "battles": [*body["battles"][:300], *rare, *body["battles"][300:]]}


def test_a_model_with_three_equal_labelled_outcomes_is_not_separable_under_the_guard(app) -> None:
    """The bug reproduced with the guard off (the request's 0), then fixed by the default (20)."""
    rng = np.random.default_rng(21)
    bare = app.client.post("/v1/rankings", json=_sparse_loser_request(rng, min_labelled_battles=0)).json()
    rng = np.random.default_rng(21)
    guarded = app.client.post("/v1/rankings", json=_sparse_loser_request(rng)).json()
    assert (bare["min_labelled_battles"], guarded["min_labelled_battles"]) == (0, 20)
    for field in ("separable", "human_only_separable"):
        assert any("rare" in (p["better"], p["worse"]) for p in bare[field]), field  # claimed on 3 battles
        assert not any("rare" in (p["better"], p["worse"]) for p in guarded[field]), field
    rare = next(m for m in guarded["models"] if m["model"] == "rare")
    assert rare["battles_labelled"] == 3 and rare["under_labelled"] is True
    assert rare["rank_set"] == rare["human_only_rank_set"] == [1, 5]
    assert rare["interval"] == rare["human_only_interval"] == [0.0, 1.0]
    assert rare["win_rate"] == next(m for m in bare["models"] if m["model"] == "rare")["win_rate"]
    others = [m for m in guarded["models"] if m["model"] != "rare"]
    assert all(not m["under_labelled"] and m["battles_labelled"] >= 20 for m in others)
    assert all(0 < m["interval"][1] - m["interval"][0] < 1 for m in others)


def test_the_setting_sets_the_default_guard_and_a_request_overrides_it(start_app, make_settings) -> None:
    harness = start_app(make_settings(limits=LimitSettings(min_labelled_battles_per_model=2)))
    answer = harness.client.post("/v1/rankings", json={"battles": _GOOD}).json()
    assert answer["min_labelled_battles"] == 2
    # x and z have one labelled battle each, y two
    assert {m["model"]: m["under_labelled"] for m in answer["models"]} == {"x": True, "y": False, "z": True}
    answer = harness.client.post("/v1/rankings", json={"battles": _GOOD, "min_labelled_battles": 3}).json()
    assert answer["min_labelled_battles"] == 3 and all(m["under_labelled"] for m in answer["models"])
    assert all(m["rank_set"] == [1, 3] for m in answer["models"]) and answer["separable"] == []


def test_the_guard_setting_is_read_and_checked() -> None:
    assert Settings.from_env({}).limits.min_labelled_battles_per_model == 20
    assert Settings.from_env({"MIN_LABELLED_BATTLES_PER_MODEL": "0"}).limits.min_labelled_battles_per_model == 0
    for bad in ("-1", "many"):
        with pytest.raises(SettingsError, match="MIN_LABELLED_BATTLES_PER_MODEL"):
            Settings.from_env({"MIN_LABELLED_BATTLES_PER_MODEL": bad})
