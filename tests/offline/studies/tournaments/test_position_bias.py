"""Position consistency on the shipped pairwise chain, computed two independent ways."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from judges.parsing.reply import parse_preference
from offline.build.inputs.pairwise import load_pairwise
from offline.studies.tournaments.position_bias import PairwiseAnswer, run_position_bias


@pytest.fixture(scope="module")
def summary(recorded_pairwise):
    """The study's way: ingest into the answer store, read back (tests/recorded_fixtures.py: one ingest per session),
    calibration.tournaments.position_consistency.position_consistency."""
    return run_position_bias(list(recorded_pairwise), source="shipped")


def _independent(data_dir: Path) -> dict[str, tuple[float, int, float]]:
    """Straight from the files: per criterion, (consistency, pairs in both orders, tie rate)."""
    (judge,) = load_pairwise(data_dir)
    winners: dict[tuple[str, str, frozenset], dict[bool, str]] = defaultdict(dict)
    ties = defaultdict(int)
    totals = defaultdict(int)
    for row in judge.rows:
        outcome = parse_preference(row.response)
        assert outcome is not None
        totals[row.criterion] += 1
        ties[row.criterion] += outcome == "tie"
        winner = {"first": row.first, "second": row.second, "tie": "tie"}[outcome]
        winners[row.criterion, row.doc_id, frozenset((row.first, row.second))][row.first < row.second] = winner
    result = {}
    for criterion in totals:
        pairs = [w for (c, _, _), w in winners.items() if c == criterion and len(w) == 2]
        same = sum(w[True] == w[False] for w in pairs)
        result[criterion] = (same / len(pairs), len(pairs), ties[criterion] / totals[criterion])
    return result


def test_consistency_agrees_with_an_independent_count(summary, data_dir: Path) -> None:
    expected = _independent(data_dir)
    rows = {r.criterion: r for r in summary.rows}
    assert set(expected) == {"coherence", "consistency", "fluency", "relevance"}
    for criterion, (rate, n_pairs, tie_rate) in expected.items():
        row = rows[criterion]
        assert row.n_pairs_both_orders == n_pairs == 1100
        assert row.consistency == pytest.approx(rate)
        assert row.tie_rate == pytest.approx(tie_rate)
        assert row.n_unparsed == 0
    pooled = rows["all"]
    assert pooled.n_pairs_both_orders == 4400
    assert pooled.consistency == pytest.approx(sum(r.n_consistent for c, r in rows.items() if c != "all") / 4400)


def test_consistency_rule_on_a_small_case() -> None:
    def answer(doc: str, first: str, second: str, outcome: str | None) -> PairwiseAnswer:
        return PairwiseAnswer(
            judge="j", prompt_family="p", criterion="coherence", doc_id=doc, first=first, second=second, outcome=outcome
        )

    answers = [
        answer("d1", "A", "B", "first"),
        answer("d1", "B", "A", "second"),  # A both times: consistent
        answer("d2", "A", "B", "first"),
        answer("d2", "B", "A", "first"),  # position wins: inconsistent
        answer("d3", "A", "B", "tie"),
        answer("d3", "B", "A", None),  # unreadable: one order only
    ]
    summary = run_position_bias(answers, source="test")
    row = summary.rows[0]
    assert (row.consistency, row.n_pairs_both_orders, row.n_unparsed) == (0.5, 2, 1)
    assert row.tie_rate == pytest.approx(1 / 5)
    assert row.first_win_rate == pytest.approx(3 / 4)


def _per_document(data_dir: Path, criterion: str | None) -> tuple[np.ndarray, np.ndarray]:
    """Straight from the files: per document (sorted ids), pairs consistent and pairs in both orders
    (``criterion`` None: every criterion of the document together)."""
    (judge,) = load_pairwise(data_dir)
    winners: dict[tuple[str, str, frozenset], dict[bool, str]] = defaultdict(dict)
    for row in judge.rows:
        if criterion is not None and row.criterion != criterion:
            continue
        outcome = parse_preference(row.response)
        winner = {"first": row.first, "second": row.second, "tie": "tie"}[outcome]
        winners[row.doc_id, row.criterion, frozenset((row.first, row.second))][row.first < row.second] = winner
    same: dict[str, int] = defaultdict(int)
    pairs: dict[str, int] = defaultdict(int)
    for (doc, _, _), w in winners.items():
        if len(w) == 2:
            pairs[doc] += 1
            same[doc] += w[True] == w[False]
    docs = sorted(pairs)
    return np.array([same[d] for d in docs], dtype=float), np.array([pairs[d] for d in docs], dtype=float)


@pytest.mark.parametrize("criterion", ["coherence", "all"])
def test_consistency_interval_is_a_bootstrap_over_documents(summary, data_dir: Path, criterion: str) -> None:
    row = next(r for r in summary.rows if r.criterion == criterion)
    consistent, pairs = _per_document(data_dir, None if criterion == "all" else criterion)
    assert row.n_documents == consistent.size == 100
    expected = stats.bootstrap(
        (consistent, pairs),
        lambda a, b, axis=-1: a.sum(axis=axis) / b.sum(axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=2000,
        method="percentile",
        rng=np.random.default_rng(0),
    ).confidence_interval
    assert row.consistency_ci == [pytest.approx(expected.low), pytest.approx(expected.high)]
    assert row.consistency_ci[0] <= row.consistency <= row.consistency_ci[1]
    assert row.first_win_rate_ci is not None
    assert row.first_win_rate_ci[0] <= row.first_win_rate <= row.first_win_rate_ci[1]


def test_intervals_narrow_with_more_documents() -> None:
    rng = np.random.default_rng(0)

    def answers(n_docs: int) -> list[PairwiseAnswer]:
        out = []
        for d in range(n_docs):
            for first, second in (("A", "B"), ("A", "C"), ("B", "C")):
                for shown in ((first, second), (second, first)):
                    outcome = "first" if rng.random() < 0.6 else "second"
                    out.append(
                        PairwiseAnswer(
                            judge="j",
                            prompt_family="p",
                            criterion="coherence",
                            doc_id=f"d{d:03d}",
                            first=shown[0],
                            second=shown[1],
                            outcome=outcome,
                        )
                    )
        return out

    small = run_position_bias(answers(20), source="t").rows[0]
    large = run_position_bias(answers(400), source="t").rows[0]
    for row in (small, large):
        assert row.consistency_ci is not None and row.consistency_ci[0] <= row.consistency <= row.consistency_ci[1]
    assert large.consistency_ci[1] - large.consistency_ci[0] < small.consistency_ci[1] - small.consistency_ci[0]
