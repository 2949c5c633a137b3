"""/v1/compare on the caller's verdicts as shown (first, second, verdict): the Vicuna80 study's figures per question,
ties and presentation order accepted, criterion optional; mixed or partial forms refused."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from offline.studies.vicuna80.rankings import RANKING_METHODS
from tests.service.conftest import AppHarness
from tests.vicuna80_study import vicuna80_study


@pytest.mark.parametrize("judge", ["claude-v1", "gpt-3.5-turbo"])
def test_compare_gives_the_studys_both_orders_figures(app: AppHarness, data_dir: Path, judge: str) -> None:
    """Every question's verdicts of one judge (both orders, all repetitions) -> n_cycles, violation_rate and the five
    rankings of the study's both_orders tournament; position consistency adds up to the study's per-judge row."""
    _, _, verdicts, summary = vicuna80_study(data_dir)
    inputs = {x.item_id: x for x in summary.inputs if x.judge == judge and x.aggregation == "both_orders"}
    orders = {q.item_id: q.orders for q in summary.question_rankings if q.judge == judge}
    mine = sorted(
        (v for v in verdicts if v.source == judge), key=lambda v: (v.item_id, v.first, v.second, v.repetition)
    )
    consistent = both = cycles_seen = 0
    for item_id, group in itertools.groupby(mine, key=lambda v: v.item_id):
        preferences = [{"first": v.first, "second": v.second, "verdict": v.outcome} for v in group]
        reply = app.client.post("/v1/compare", json={"preferences": preferences})
        assert reply.status_code == 200, reply.text
        body = reply.json()
        expected = inputs[item_id]
        assert body["criterion"] is None
        assert body["candidates"] == sorted(body["candidates"])  # first appearance = the study's candidate order
        assert body["n_cycles"] == expected.n_cycles, item_id
        assert body["cycles"] == expected.cycles, item_id
        assert body["violation_rate"] == pytest.approx(expected.violation_rate, abs=1e-15), item_id
        for method in RANKING_METHODS:
            assert body["rankings"][method] == orders[item_id][method], (item_id, method)
        position = body["position_consistency"]
        consistent += position["n_consistent"]
        both += position["n_pairs_both_orders"]
        cycles_seen += body["n_cycles"]
    row = next(p for p in summary.position_bias if p.judge == judge)
    assert (consistent, both) == (row.n_consistent, row.n_pairs_both_orders)
    assert cycles_seen == next(r for r in summary.rows if (r.judge, r.aggregation) == (judge, "both_orders")).n_cycles


def test_ties_and_presentation_order_give_position_consistency(app: AppHarness) -> None:
    preferences = [
        {"first": "a", "second": "b", "verdict": "first"},
        {"first": "b", "second": "a", "verdict": "second"},  # a wins in both orders: consistent
        {"first": "b", "second": "c", "verdict": "first"},
        {"first": "c", "second": "b", "verdict": "first"},  # the first-shown always wins: inconsistent
        {"first": "a", "second": "c", "verdict": "tie"},
        {"first": "c", "second": "a", "verdict": "tie"},  # tie in both orders: consistent
    ]
    reply = app.client.post("/v1/compare", json={"preferences": preferences, "criterion": "coherence"})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["criterion"] == "coherence"
    assert body["position_consistency"] == {"rate": pytest.approx(2 / 3), "n_pairs_both_orders": 3, "n_consistent": 2}
    pairs = {(p["a"], p["b"]): p for p in body["pairs"]}
    assert pairs["a", "c"]["ties"] == 2 and pairs["a", "c"]["winner"] is None
    assert pairs["b", "c"]["winner"] is None  # one win each: a tied pair, never an edge


def test_winner_loser_preferences_keep_a_null_position_consistency(app: AppHarness) -> None:
    preferences = [
        {"winner": "a", "loser": "b"},
        {"winner": "b", "loser": "c"},
        {"winner": "a", "loser": "c", "tie": True},
    ]
    reply = app.client.post("/v1/compare", json={"preferences": preferences})
    assert reply.status_code == 200, reply.text
    assert reply.json()["position_consistency"] is None


@pytest.mark.parametrize(
    "bad",
    [
        {"winner": "a", "loser": "b", "verdict": "first"},
        {"first": "a", "second": "b"},
        {"winner": "a"},
        {"first": "a", "second": "b", "verdict": "first", "tie": True},
    ],
)
def test_a_mixed_or_partial_preference_is_a_422_naming_it(app: AppHarness, bad: dict) -> None:
    preferences = [{"winner": "a", "loser": "b"}, {"winner": "b", "loser": "c"}, bad]
    reply = app.client.post("/v1/compare", json={"preferences": preferences})
    assert reply.status_code == 422, reply.text
    assert reply.headers["content-type"].startswith("application/problem+json")
    assert "preferences[2]" in reply.json()["detail"]


def test_a_live_comparison_still_needs_a_criterion(app: AppHarness) -> None:
    candidates = [{"id": k, "text": f"summary {k}"} for k in "abc"]
    reply = app.client.post("/v1/compare", json={"document": "text", "candidates": candidates})
    assert reply.status_code == 422, reply.text
    assert "criterion" in reply.json()["detail"]
