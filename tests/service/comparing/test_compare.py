"""POST /v1/compare: results equal the calibration core's; live judging, swap, repetitions, failures."""

from __future__ import annotations

import itertools
import math
import re

import pytest

from calibration.tournaments.position_consistency import position_consistency
from calibration.tournaments.ranking import rank_all
from calibration.tournaments.tournament import (
    PairwiseVerdict,
    build_tournament,
    three_cycles,
    violation_rate,
)
from tests.fakes.judge_server import JudgeServer
from tests.service.conftest import STAND_IN, AppHarness

RANKINGS = ("win_rate", "bradley_terry", "schulze", "mfas_ilp", "mfas_copeland")


def _core(ids: list[str], verdicts: list[PairwiseVerdict]) -> dict:
    tournament = build_tournament(ids, verdicts)
    return {
        "cycles": [list(cycle) for cycle in three_cycles(tournament)],
        "violation_rate": violation_rate(tournament),
        "rankings": {name: list(r.order) for name, r in rank_all(tournament).items()},
        "scores": rank_all(tournament),
        "pairs": tournament.pairs,
    }


PREFERENCES = [
    {"winner": "a", "loser": "b"},
    {"winner": "b", "loser": "c"},
    {"winner": "c", "loser": "a"},  # a > b > c > a: one 3-cycle
    {"winner": "a", "loser": "d"},
    {"winner": "b", "loser": "d"},
    {"winner": "c", "loser": "d"},
    {"winner": "a", "loser": "b"},
    {"winner": "d", "loser": "c", "tie": True},
]


def test_caller_preferences_equal_the_core(app: AppHarness):
    reply = app.client.post("/v1/compare", json={"criterion": "coherence", "preferences": PREFERENCES})
    assert reply.status_code == 200, reply.text
    data = reply.json()
    verdicts = [
        PairwiseVerdict(first=p["winner"], second=p["loser"], outcome="tie" if p.get("tie") else "first")
        for p in PREFERENCES
    ]
    core = _core(["a", "b", "c", "d"], verdicts)
    assert data["candidates"] == ["a", "b", "c", "d"]
    assert (data["n_candidates"], data["n_triples"], data["n_verdicts"]) == (4, 4, 8)
    assert data["cycles"] == core["cycles"] == [["a", "b", "c"]]
    assert data["n_cycles"] == 1 and data["violation_rate"] == pytest.approx(core["violation_rate"]) == 0.25
    assert data["flagged"] is True and "3-cycle" in data["reason"]
    assert data["position_consistency"] is None and data["source"] == "caller"
    assert data["rankings"] == core["rankings"]
    for name in RANKINGS:
        assert data["scores"][name] == pytest.approx(core["scores"][name].scores)
    pair_ab = next(p for p in data["pairs"] if (p["a"], p["b"]) == ("a", "b"))
    assert (pair_ab["wins_a"], pair_ab["wins_b"], pair_ab["n"], pair_ab["winner"]) == (2, 0, 2, "a")
    pair_cd = next(p for p in data["pairs"] if (p["a"], p["b"]) == ("c", "d"))
    assert pair_cd["ties"] == 1
    assert data["complete"] is True and data["failed_calls"] == []


def test_transitive_preferences_are_not_flagged(app: AppHarness):
    preferences = [{"winner": a, "loser": b} for a, b in itertools.combinations("abcde", 2)]
    data = app.client.post("/v1/compare", json={"criterion": "relevance", "preferences": preferences}).json()
    assert (data["n_cycles"], data["flagged"], data["violation_rate"]) == (0, False, 0.0)
    assert all(order == list("abcde") for order in data["rankings"].values())
    assert data["n_triples"] == math.comb(5, 3)


def _quality(text: str, label: str) -> int:
    return int(re.search(rf"Summary {label}:\s*<<<SUMMARY {label}>>>\s*Q(\d+)", text).group(1))


def _by_quality(body: dict) -> str:
    text = body["messages"][-1]["content"]
    return "A" if _quality(text, "A") > _quality(text, "B") else "B"


CANDIDATES = [{"id": f"s{k}", "text": f"Q{q} summary number {k}."} for k, q in enumerate((3, 9, 1, 7))]


def test_live_judge_with_swap_and_repetitions(judge_app: AppHarness, stand_in: JudgeServer):
    stand_in.responder = _by_quality
    body = {"criterion": "coherence", "document": "The article.", "candidates": CANDIDATES, "repetitions": 2}
    reply = judge_app.client.post("/v1/compare", json=body)
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert stand_in.call_count == math.comb(4, 2) * 2 * 2  # pairs x repetitions x both orders
    assert data["n_verdicts"] == 24 and data["judge"] == STAND_IN and data["source"] == "judge"
    assert data["rankings"]["win_rate"] == ["s1", "s3", "s0", "s2"]
    assert data["position_consistency"] == {"rate": 1.0, "n_pairs_both_orders": 6, "n_consistent": 6}
    assert data["flagged"] is False and data["complete"] is True
    assert data["judge_calls"] == 24 and data["cached_calls"] == 0  # every verdict a live call
    again = judge_app.client.post("/v1/compare", json=body).json()
    assert again["cached_calls"] == 24 and stand_in.call_count == 24
    assert again["judge_calls"] == 0  # every verdict from the cache: no call paid for


def test_live_results_equal_the_core_on_the_same_verdicts(judge_app: AppHarness, stand_in: JudgeServer):
    beats = {("x", "y"), ("y", "z"), ("z", "x"), ("x", "w"), ("y", "w"), ("z", "w")}

    def cyclic(body: dict) -> str:
        text = body["messages"][-1]["content"]
        first = re.search(r"<<<SUMMARY A>>>\s*(\w)", text).group(1)
        second = re.search(r"<<<SUMMARY B>>>\s*(\w)", text).group(1)
        return "A" if (first, second) in beats else "B"

    stand_in.responder = cyclic
    candidates = [{"id": name, "text": f"{name} text"} for name in "xyzw"]
    body = {"criterion": "relevance", "document": "Doc.", "candidates": candidates, "repetitions": 1}
    data = judge_app.client.post("/v1/compare", json=body).json()
    verdicts = []
    for a, b in itertools.combinations("xyzw", 2):
        for first, second in ((a, b), (b, a)):
            outcome = "first" if (first, second) in beats else "second"
            verdicts.append(PairwiseVerdict(first=first, second=second, outcome=outcome))
    core = _core(list("xyzw"), verdicts)
    assert data["cycles"] == core["cycles"] == [["x", "y", "z"]]
    assert data["violation_rate"] == pytest.approx(core["violation_rate"])
    assert data["rankings"] == core["rankings"]
    assert data["position_consistency"]["rate"] == position_consistency(verdicts).rate == 1.0
    assert data["flagged"] is True


def test_position_bias_shows_in_position_consistency(judge_app: AppHarness, stand_in: JudgeServer):
    stand_in.responder = lambda body: "A"
    body = {"criterion": "coherence", "document": "Doc.", "candidates": CANDIDATES, "repetitions": 1}
    data = judge_app.client.post("/v1/compare", json=body).json()
    assert data["position_consistency"]["rate"] == 0.0
    assert all(pair["winner"] is None for pair in data["pairs"])  # one win per order: every pair tied


def test_without_swap_position_consistency_is_null(judge_app: AppHarness, stand_in: JudgeServer):
    stand_in.responder = _by_quality
    body = {"criterion": "coherence", "document": "Doc.", "candidates": CANDIDATES, "repetitions": 1, "swap": False}
    data = judge_app.client.post("/v1/compare", json=body).json()
    assert data["position_consistency"] is None and stand_in.call_count == 6


def test_failed_calls_are_listed_not_silent(judge_app: AppHarness, stand_in: JudgeServer):
    def flaky(body: dict) -> str:
        text = body["messages"][-1]["content"]
        if "<<<SUMMARY A>>>\nQ9" in text and "<<<SUMMARY B>>>\nQ1" in text:
            raise RuntimeError("scripted outage")
        return _by_quality(body)

    stand_in.responder = flaky
    body = {"criterion": "coherence", "document": "Doc.", "candidates": CANDIDATES, "repetitions": 1}
    data = judge_app.client.post("/v1/compare", json=body).json()
    assert data["complete"] is False and data["n_verdicts"] == 11
    (failed,) = data["failed_calls"]
    assert (failed["first"], failed["second"], failed["repetition"]) == ("s1", "s2", 0)
    assert failed["error"]["status"] == 502 and failed["error"]["type"].endswith("judge-call-failed")
    assert "1 of 12 judge calls failed" in data["reason"]


def test_every_call_failing_is_502_naming_a_pair(judge_app: AppHarness, stand_in: JudgeServer):
    stand_in.responder = lambda body: "no idea"
    body = {"criterion": "coherence", "document": "Doc.", "candidates": CANDIDATES, "repetitions": 1}
    reply = judge_app.client.post("/v1/compare", json=body)
    assert reply.status_code == 502
    assert "pair (s0, s1)" in reply.json()["detail"]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"document": "D.", "candidates": CANDIDATES, "preferences": PREFERENCES}, "either"),
        ({}, "either"),
        ({"candidates": CANDIDATES}, "both document and candidates"),
        ({"document": "D.", "candidates": [CANDIDATES[0]] * 3}, "unique"),
    ],
)
def test_bad_compare_requests_are_422(judge_app: AppHarness, body: dict, fragment: str):
    reply = judge_app.client.post("/v1/compare", json={"criterion": "coherence", **body})
    assert reply.status_code == 422, reply.text
    assert fragment in reply.json()["detail"]


def test_two_candidates_fail_validation(app: AppHarness):
    reply = app.client.post(
        "/v1/compare", json={"criterion": "coherence", "document": "D.", "candidates": CANDIDATES[:2]}
    )
    assert reply.status_code == 422 and reply.json()["errors"]


def test_live_compare_without_judges_is_a_422_that_says_to_send_preferences(app: AppHarness):
    """Not a 503: nothing is temporarily down, a retry would get the same answer; preferences work without judges."""
    reply = app.client.post("/v1/compare", json={"criterion": "coherence", "document": "D.", "candidates": CANDIDATES})
    assert reply.status_code == 422 and "retry-after" not in reply.headers
    problem = reply.json()
    assert problem["type"].endswith("judge-not-configured")
    assert "JUDGES_FILE" in problem["detail"] and "preferences" in problem["detail"]


def test_two_candidates_from_preferences_are_compared(app: AppHarness):
    # schema-valid (the spec cannot count distinct ids), so answered: one pair, no triple, no cycle
    reply = app.client.post("/v1/compare", json={"preferences": [{"winner": "a", "loser": "b"}]})
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert data["candidates"] == ["a", "b"] and data["n_triples"] == 0 and data["n_cycles"] == 0
    assert data["rankings"]["win_rate"] == ["a", "b"] and data["ignored_preferences"] == []


def test_a_self_comparison_is_left_out_and_listed(app: AppHarness):
    prefs = [
        {"winner": "a", "loser": "a"},
        {"winner": "b", "loser": "c"},
        {"first": "c", "second": "c", "verdict": "tie"},
    ]
    data = app.client.post("/v1/compare", json={"preferences": prefs}).json()
    assert data["candidates"] == ["a", "b", "c"] and data["n_verdicts"] == 1
    assert [item["index"] for item in data["ignored_preferences"]] == [0, 2]
    assert "itself" in data["ignored_preferences"][0]["reason"]
    assert "2 self-comparison(s) left out" in data["reason"]
    assert data["pairs"] == [
        {
            "a": "b",
            "b": "c",
            "wins_a": 1,
            "wins_b": 0,
            "ties": 0,
            "n": 1,
            "winner": "b",
            "win_share": 1.0,
            "decision": "abstain",
            "preferred": None,
            "reason": "no judge named: only a calibrated judge's verdicts can be accepted",
        }
    ]


def test_only_self_comparisons_give_one_unranked_candidate(app: AppHarness):
    data = app.client.post("/v1/compare", json={"preferences": [{"winner": "a", "loser": "a"}]}).json()
    assert data["candidates"] == ["a"] and data["pairs"] == [] and data["n_verdicts"] == 0
    assert data["rankings"]["schulze"] == ["a"] and data["scores"]["bradley_terry"] == {"a": None}
    assert data["ignored_preferences"][0]["index"] == 0 and not data["flagged"]
