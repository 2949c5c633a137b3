"""POST /v1/compare: each pair's certified decision (accept with the preferred candidate, or abstain with why),
pac mode (``guarantee: "pac"``; the default expected mode is tested in test_compare_modes.py)."""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from pathlib import Path

import pytest

from artifact.pairwise import (
    DEFAULT_PATH,
    FORMAT_VERSION,
    PairwiseArtifact,
    PairwiseEntry,
    PairwiseIndex,
    load_pairwise_artifact,
)
from tests.fakes.judge_server import JudgeServer
from tests.service.conftest import STAND_IN, AppHarness
from tests.vicuna80_study import vicuna80_study


def _entry(judge: str, alpha: float, threshold: float | None, dataset: str = "vicuna80") -> PairwiseEntry:
    return PairwiseEntry(
        judge=judge,
        dataset=dataset,
        alpha=alpha,
        threshold=threshold,
        n_pairs=685,
        n_groups=80,
        n_accepted=300,
        n_errors=30,
        verdicts_per_pair=2,
    )


def _index(*entries: PairwiseEntry) -> PairwiseIndex:
    return PairwiseIndex(
        PairwiseArtifact(
            format_version=FORMAT_VERSION,
            delta=0.1,
            bound="pair_binomial",
            ties="exclude",
            signal="vote share",
            source="test",
            entries=list(entries),
        )
    )


# a beats b twice; b vs c split 1-1; c vs a one a-win and one tie (share 0.5); d vs a tied.
PREFERENCES = [
    {"first": "a", "second": "b", "verdict": "first"},
    {"first": "b", "second": "a", "verdict": "second"},
    {"first": "b", "second": "c", "verdict": "first"},
    {"first": "c", "second": "b", "verdict": "first"},
    {"first": "c", "second": "a", "verdict": "second"},
    {"first": "a", "second": "c", "verdict": "tie"},
    {"first": "a", "second": "d", "verdict": "tie"},
]


def _pairs(app: AppHarness, **extra: object) -> dict[tuple[str, str], dict]:
    reply = app.client.post("/v1/compare", json={"preferences": PREFERENCES, "guarantee": "pac", **extra})
    assert reply.status_code == 200, reply.text
    return {(p["a"], p["b"]): p for p in reply.json()["pairs"]}


def test_a_calibrated_judge_accepts_only_pairs_at_its_certified_threshold(app: AppHarness):
    app.services.calibration.pairwise = _index(_entry("gpt-4", 0.2, 0.5), _entry("gpt-4", 0.1, 1.0))
    pairs = _pairs(app, judge="gpt-4", accept_alpha=0.2)
    assert (pairs["a", "b"]["decision"], pairs["a", "b"]["preferred"]) == ("accept", "a")
    assert "P(human disagrees | accepted) <= 0.2" in pairs["a", "b"]["reason"]
    assert "confidence 0.9" in pairs["a", "b"]["reason"] and "vicuna80" in pairs["a", "b"]["reason"]
    assert (pairs["a", "c"]["decision"], pairs["a", "c"]["preferred"]) == ("accept", "a")  # share 0.5 >= 0.5
    assert (pairs["b", "c"]["decision"], pairs["b", "c"]["preferred"]) == ("abstain", None)
    assert "no preferred side" in pairs["b", "c"]["reason"]
    assert pairs["a", "d"]["decision"] == "abstain"
    # At alpha 0.1 the threshold is 1.0: only the unanimous pair is accepted; a share of 0.5 abstains, saying so.
    strict = _pairs(app, judge="gpt-4", accept_alpha=0.1)
    assert [k for k, p in strict.items() if p["decision"] == "accept"] == [("a", "b")]
    assert "0.500 of the verdicts prefer 'a', below the certified threshold 1.00" in strict["a", "c"]["reason"]


def test_default_accept_alpha_is_0_1(app: AppHarness):
    app.services.calibration.pairwise = _index(_entry("gpt-4", 0.1, 1.0))
    pairs = _pairs(app, judge="gpt-4")
    assert pairs["a", "b"]["decision"] == "accept" and pairs["a", "c"]["decision"] == "abstain"


@pytest.mark.parametrize(
    ("judge", "alpha", "needle"),
    [
        (None, 0.1, "no judge named"),
        ("unknown-judge", 0.1, "never calibrated"),
        ("gpt-4", 0.3, "no certificate at accept_alpha 0.3 (calibrated: 0.1, 0.2)"),
        ("bard", 0.1, "no confidence level of judge 'bard' was certified at accept_alpha 0.1 on vicuna80"),
    ],
)
def test_anything_uncalibrated_abstains_with_the_reason(app: AppHarness, judge, alpha, needle):
    app.services.calibration.pairwise = _index(
        _entry("gpt-4", 0.1, 1.0), _entry("gpt-4", 0.2, 0.5), _entry("bard", 0.1, None)
    )
    extra = {"accept_alpha": alpha} if judge is None else {"judge": judge, "accept_alpha": alpha}
    pairs = _pairs(app, **extra)
    assert all(p["decision"] == "abstain" and p["preferred"] is None for p in pairs.values())
    assert all(needle in p["reason"] for p in pairs.values())


def test_without_an_artifact_every_pair_abstains(app: AppHarness):
    app.services.calibration.pairwise = None
    pairs = _pairs(app, judge="gpt-4")
    assert {p["decision"] for p in pairs.values()} == {"abstain"}
    assert all("no pairwise decisions artifact" in p["reason"] for p in pairs.values())


def test_a_judge_calibrated_twice_serves_its_most_conservative_certificate(app: AppHarness):
    app.services.calibration.pairwise = _index(
        _entry("gpt-3.5-turbo", 0.2, 0.5), _entry("gpt-3.5-turbo", 0.2, None, dataset="arena_ppr")
    )
    pairs = _pairs(app, judge="gpt-3.5-turbo", accept_alpha=0.2)
    assert {p["decision"] for p in pairs.values()} == {"abstain"}
    assert "arena_ppr" in pairs["a", "b"]["reason"]


@pytest.mark.parametrize("alpha", [0, 1, -0.1, 1.5])
def test_accept_alpha_outside_0_1_is_422(app: AppHarness, alpha):
    reply = app.client.post("/v1/compare", json={"preferences": PREFERENCES, "accept_alpha": alpha})
    assert reply.status_code == 422


def test_the_shipped_artifact_is_loaded_at_start_up(app: AppHarness):
    assert app.services.calibration.pairwise_error is None
    shipped = load_pairwise_artifact(DEFAULT_PATH)
    assert app.services.calibration.pairwise.artifact == shipped
    gpt4 = [e for e in shipped.entries if e.judge == "gpt-4"]
    assert {e.alpha for e in gpt4} == {0.1, 0.2, 0.3}


def _quality(text: str, label: str) -> int:
    found = re.search(rf"Summary {label}:\s*<<<SUMMARY {label}>>>\s*Q(\d+)", text)
    assert found is not None
    return int(found.group(1))


def test_live_judge_pairs_are_decided_from_both_orders(judge_app: AppHarness, stand_in: JudgeServer):
    # The stand-in prefers the higher quality in both orders, except that it always says "A" for the pair
    # (Q3, Q9): there it follows the position, so that pair's verdicts split and it abstains.
    def responder(body: dict) -> str:
        text = body["messages"][-1]["content"]
        qa, qb = _quality(text, "A"), _quality(text, "B")
        if {qa, qb} == {3, 9}:
            return "A"
        return "A" if qa > qb else "B"

    stand_in.responder = responder
    judge_app.services.calibration.pairwise = _index(_entry(STAND_IN, 0.1, 1.0))
    candidates = [{"id": f"s{k}", "text": f"Q{q} summary number {k}."} for k, q in enumerate((3, 9, 1))]
    reply = judge_app.client.post(
        "/v1/compare",
        json={
            "criterion": "coherence",
            "document": "The article.",
            "candidates": candidates,
            "repetitions": 1,
            "guarantee": "pac",
        },
    )
    assert reply.status_code == 200, reply.text
    pairs = {(p["a"], p["b"]): p for p in reply.json()["pairs"]}
    assert len(pairs) == math.comb(3, 2)
    assert (pairs["s0", "s2"]["decision"], pairs["s0", "s2"]["preferred"]) == ("accept", "s0")
    assert (pairs["s1", "s2"]["decision"], pairs["s1", "s2"]["preferred"]) == ("accept", "s1")
    assert (pairs["s0", "s1"]["decision"], pairs["s0", "s1"]["preferred"]) == ("abstain", None)


@pytest.mark.parametrize("alpha", [0.2, 0.3])
def test_vicuna80_verdicts_through_the_api_reproduce_the_shipped_certificate(
    app: AppHarness, data_dir: Path, alpha: float
) -> None:
    """gpt-4's Vicuna80 verdicts (both orders) posted question by question with judge gpt-4: the accepted pairs
    with a decisive human majority, and their disagreements, are exactly the artifact's calibration counts."""
    data, _, verdicts, _ = vicuna80_study(data_dir)
    votes: dict[tuple[str, frozenset[str]], Counter[str]] = {}
    for v in data.human:
        side = "tie" if v.vote == "tie" else (v.first if v.vote == "first" else v.second)
        votes.setdefault((v.item_id, frozenset((v.first, v.second))), Counter())[side] += 1
    entry = app.services.calibration.pairwise.entry("gpt-4", alpha)
    assert entry is not None and entry.dataset == "vicuna80"
    accepted = wrong = 0
    mine = sorted((v for v in verdicts if v.source == "gpt-4"), key=lambda v: v.item_id)
    for item_id, group in itertools.groupby(mine, key=lambda v: v.item_id):
        preferences = [{"first": v.first, "second": v.second, "verdict": v.outcome} for v in group]
        body = app.client.post(
            "/v1/compare",
            json={"preferences": preferences, "judge": "gpt-4", "accept_alpha": alpha, "guarantee": "pac"},
        ).json()
        for pair in body["pairs"]:
            count = votes[item_id, frozenset((pair["a"], pair["b"]))]
            top = max(count.values())
            leaders = [s for s, n in count.items() if n == top]
            if pair["decision"] != "accept" or len(leaders) > 1 or leaders[0] == "tie":
                continue  # human ties are left out of the certificate's counts
            accepted += 1
            wrong += pair["preferred"] != leaders[0]
    assert (accepted, wrong) == (entry.n_accepted, entry.n_errors)
