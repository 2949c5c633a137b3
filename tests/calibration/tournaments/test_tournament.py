"""Tournament aggregation, directed 3-cycles (cross-checked with networkx), violation rates, position
consistency and bad input."""

from __future__ import annotations

import itertools
import math
import statistics

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

import calibration.tournaments.tournament as tournament_module
from calibration.errors import (
    CalibrationError,
    EmptyCalibrationError,
    SelfComparisonError,
    UnknownCandidateError,
)
from calibration.tournaments.position_consistency import position_consistency
from calibration.tournaments.tournament import (
    RANDOM_TOURNAMENT_VIOLATION_RATE,
    PairwiseVerdict,
    Tournament,
    build_tournament,
    count_three_cycles,
    summarize_violation_rates,
    three_cycles,
    violation_rate,
)

HYPOTHESIS = settings(database=None, deadline=None, max_examples=40)


def verdict(first: str, second: str, outcome: str) -> PairwiseVerdict:
    return PairwiseVerdict(first=first, second=second, outcome=outcome)


def random_verdicts(
    rng: np.random.Generator,
    names: list[str],
    *,
    k: int = 3,
    p_missing: float = 0.0,
    p_tie: float = 0.0,
) -> list[PairwiseVerdict]:
    """k repetitions per pair in random presentation orders; each pair has its own bias."""
    verdicts = []
    for a, b in itertools.combinations(names, 2):
        if rng.random() < p_missing:
            continue
        p_a = rng.random()
        for _ in range(k):
            u = rng.random()
            winner = None if u < p_tie else a if rng.random() < p_a else b
            first, second = (a, b) if rng.random() < 0.5 else (b, a)
            outcome = "tie" if winner is None else "first" if winner == first else "second"
            verdicts.append(verdict(first, second, outcome))
    return verdicts


def networkx_cycles(t: Tournament) -> set[frozenset[str]]:
    graph = nx.DiGraph()
    graph.add_nodes_from(t.candidates)
    for pair in t.pairs:
        if pair.winner is not None:
            graph.add_edge(pair.winner, pair.b if pair.winner == pair.a else pair.a)
    return {frozenset(cycle) for cycle in nx.simple_cycles(graph, length_bound=3) if len(cycle) == 3}


def test_build_tournament_counts_majority_ties_and_win_share() -> None:
    verdicts = [
        verdict("A", "B", "first"),
        verdict("B", "A", "second"),
        verdict("B", "A", "first"),  # A 2 : 1 B
        verdict("A", "C", "tie"),
        verdict("C", "A", "tie"),
        verdict("C", "A", "second"),  # A 1 : 0 C, 2 ties
        verdict("B", "C", "first"),
        verdict("B", "C", "second"),  # B 1 : 1 C -> tie
    ]
    t = build_tournament(["C", "A", "B"], verdicts)
    assert t.candidates == ("C", "A", "B")
    assert [(p.a, p.b) for p in t.pairs] == [("C", "A"), ("C", "B"), ("A", "B")]
    ca, cb, ab = t.pairs
    assert (ab.wins_a, ab.wins_b, ab.ties, ab.n, ab.winner) == (2, 1, 0, 3, "A")
    assert ab.win_share == pytest.approx(2 / 3)
    assert (ca.wins_a, ca.wins_b, ca.ties, ca.n, ca.winner) == (0, 1, 2, 3, "A")
    assert ca.win_share == pytest.approx(1 / 3)
    assert (cb.wins_a, cb.wins_b, cb.ties, cb.winner, cb.win_share) == (1, 1, 0, None, 0.5)
    assert t.n_tied_pairs == 1 and t.n_missing_pairs == 0 and not t.is_complete
    assert t.pair("B", "A") == ab
    adjacency = t.adjacency()
    assert adjacency.tolist() == [[False, False, False], [True, False, True], [False, False, False]]


def test_all_tie_pair_is_kept_as_tie_and_never_an_edge() -> None:
    t = build_tournament(["A", "B", "C"], [verdict("A", "B", "tie")] * 3)
    (pair,) = t.pairs
    assert pair.winner is None and pair.ties == 3 and pair.win_share == 0.0
    assert not t.adjacency().any()
    assert t.n_tied_pairs == 1 and t.n_missing_pairs == 2
    assert t.pair("A", "C") is None


def test_three_cycle_is_listed_once_in_canonical_rotation() -> None:
    verdicts = [verdict("A", "B", "first"), verdict("B", "C", "first"), verdict("A", "C", "second")]
    t = build_tournament(["C", "A", "B", "D"], verdicts)  # A>B, B>C, C>A; D never judged
    assert three_cycles(t) == [("C", "A", "B")]
    assert count_three_cycles(t) == 1
    assert violation_rate(t) == pytest.approx(1 / 4)


def test_transitive_and_small_tournaments_have_no_violation() -> None:
    names = ["A", "B", "C", "D"]
    transitive = [verdict(a, b, "first") for a, b in itertools.combinations(names, 2)]
    assert count_three_cycles(build_tournament(names, transitive)) == 0
    two = build_tournament(["A", "B"], [verdict("A", "B", "first")])
    assert violation_rate(two) == 0.0 and three_cycles(two) == []


def test_ties_and_missing_pairs_break_cycles() -> None:
    names = ["A", "B", "C"]
    cycle = [verdict("A", "B", "first"), verdict("B", "C", "first")]
    tied = build_tournament(names, [*cycle, verdict("C", "A", "tie")])
    split = build_tournament(names, [*cycle, verdict("C", "A", "first"), verdict("C", "A", "second")])
    missing = build_tournament(names, cycle)
    for t in (tied, split, missing):
        assert count_three_cycles(t) == 0 and three_cycles(t) == []


@pytest.mark.parametrize("seed", range(12))
def test_cycles_match_networkx_on_random_tournaments(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 16))
    names = [f"s{i}" for i in range(n)]
    p_missing, p_tie = (0.0, 0.0) if seed % 2 == 0 else (0.2, 0.25)
    t = build_tournament(
        names, random_verdicts(rng, names, k=int(rng.integers(1, 5)), p_missing=p_missing, p_tie=p_tie)
    )
    cycles = three_cycles(t)
    assert {frozenset(c) for c in cycles} == networkx_cycles(t)
    assert len(cycles) == len(set(cycles)) == count_three_cycles(t)
    assert violation_rate(t) == pytest.approx(len(cycles) / math.comb(n, 3))


@HYPOTHESIS
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 12),
    k=st.integers(1, 4),
    p_missing=st.sampled_from([0.0, 0.1, 0.4]),
    p_tie=st.sampled_from([0.0, 0.2, 0.5]),
)
def test_cycles_match_networkx_property(seed: int, n: int, k: int, p_missing: float, p_tie: float) -> None:
    rng = np.random.default_rng(seed)
    names = [f"s{i}" for i in range(n)]
    t = build_tournament(names, random_verdicts(rng, names, k=k, p_missing=p_missing, p_tie=p_tie))
    cycles = three_cycles(t)
    assert {frozenset(c) for c in cycles} == networkx_cycles(t)
    assert count_three_cycles(t) == len(cycles)
    position = t.index()
    adjacency = t.adjacency()
    for a, b, c in cycles:  # canonical rotation and a genuine directed cycle
        assert position[a] < position[b] and position[a] < position[c]
        assert adjacency[position[a], position[b]] and adjacency[position[b], position[c]]
        assert adjacency[position[c], position[a]]


@pytest.mark.parametrize("seed", range(8))
def test_closed_form_equals_enumeration_on_complete_tournaments(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(3, 40))
    names = [f"c{i}" for i in range(n)]
    t = build_tournament(names, random_verdicts(rng, names, k=1))  # odd k without ties: complete
    assert t.is_complete
    adjacency = t.adjacency()
    closed = tournament_module._count_closed_form(adjacency)
    enumerated = tournament_module._count_by_enumeration(adjacency)
    assert closed == enumerated == count_three_cycles(t) == len(three_cycles(t))


def test_random_tournaments_average_a_quarter() -> None:
    rng = np.random.default_rng(7)
    names = [f"c{i}" for i in range(30)]
    rates = [violation_rate(build_tournament(names, random_verdicts(rng, names, k=1))) for _ in range(40)]
    # Pairs have random biases but a single verdict each, so every edge is a fair coin: E[rho] = 1/4.
    assert statistics.fmean(rates) == pytest.approx(RANDOM_TOURNAMENT_VIOLATION_RATE, abs=0.01)


@HYPOTHESIS
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 10), p_missing=st.sampled_from([0.0, 0.3]))
def test_cycle_counts_survive_relabelling(seed: int, n: int, p_missing: float) -> None:
    rng = np.random.default_rng(seed)
    names = [f"s{i}" for i in range(n)]
    verdicts = random_verdicts(rng, names, k=3, p_missing=p_missing, p_tie=0.2)
    permutation = rng.permutation(n)
    rename = {name: f"new-{int(permutation[i])}" for i, name in enumerate(names)}
    relabelled_candidates = [names[i] for i in rng.permutation(n)]  # new input order too
    relabelled = build_tournament(
        [rename[name] for name in relabelled_candidates],
        [verdict(rename[v.first], rename[v.second], v.outcome) for v in verdicts],
    )
    original = build_tournament(names, verdicts)
    assert count_three_cycles(relabelled) == count_three_cycles(original)
    assert violation_rate(relabelled) == violation_rate(original)
    renamed = {frozenset(rename[x] for x in cycle) for cycle in three_cycles(original)}
    assert {frozenset(cycle) for cycle in three_cycles(relabelled)} == renamed


def test_summarize_violation_rates() -> None:
    summary = summarize_violation_rates([0.0, 0.0, 0.1, 0.3])
    assert summary.mean == pytest.approx(0.1)
    assert summary.share_with_cycle == 0.5
    assert summary.max == 0.3 and summary.median == pytest.approx(0.05) and summary.n_inputs == 4


def test_summary_intervals_are_over_inputs() -> None:
    rates = [0.0, 0.0, 0.1, 0.3, 0.0, 0.2, 0.0, 0.1, 0.0, 0.4]
    summary = summarize_violation_rates(rates, seed=3)
    exact = scipy_stats.binomtest(5, 10).proportion_ci(confidence_level=0.95, method="exact")
    assert summary.n_with_cycle == 5
    assert summary.share_with_cycle_ci == [pytest.approx(exact.low), pytest.approx(exact.high)]
    boot = scipy_stats.bootstrap(
        (np.array(rates),), np.mean, n_resamples=2000, method="percentile", rng=np.random.default_rng(3)
    ).confidence_interval
    assert summary.mean_ci == [pytest.approx(boot.low), pytest.approx(boot.high)]
    assert summary.mean_ci[0] <= summary.mean <= summary.mean_ci[1]
    more = summarize_violation_rates(rates * 10, seed=3)
    assert more.mean_ci[1] - more.mean_ci[0] < summary.mean_ci[1] - summary.mean_ci[0]
    assert more.share_with_cycle_ci[1] - more.share_with_cycle_ci[0] < exact.high - exact.low


@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan")])
def test_summarize_rejects_rates_outside_unit_interval(bad: float) -> None:
    with pytest.raises(CalibrationError, match=repr(bad)):
        summarize_violation_rates([0.1, bad])


def test_summarize_rejects_empty() -> None:
    with pytest.raises(EmptyCalibrationError, match="none"):
        summarize_violation_rates([])


def test_position_consistency_per_order_majorities() -> None:
    verdicts = [
        # A-B: A wins when shown first (2:1) and when shown second (1:0) -> consistent
        verdict("A", "B", "first"),
        verdict("A", "B", "first"),
        verdict("A", "B", "second"),
        verdict("B", "A", "second"),
        # A-C: the first-shown candidate always wins -> inconsistent
        verdict("A", "C", "first"),
        verdict("C", "A", "first"),
        # B-C: tie in both orders (a tie verdict; an even split) -> consistent
        verdict("B", "C", "tie"),
        verdict("C", "B", "first"),
        verdict("C", "B", "second"),
        # C-D: judged in one order only -> not in the rate
        verdict("C", "D", "first"),
    ]
    result = position_consistency(verdicts)
    assert result.n_pairs == 4
    assert result.n_pairs_both_orders == 3
    assert result.n_consistent == 2
    assert result.rate == pytest.approx(2 / 3)
    assert result.n_verdicts == 10 and result.n_ties == 1 and result.tie_rate == pytest.approx(0.1)
    assert result.first_win_rate == pytest.approx(6 / 9)


def test_position_consistency_tie_against_winner_is_inconsistent() -> None:
    result = position_consistency([verdict("A", "B", "tie"), verdict("B", "A", "first")])
    assert (result.n_pairs_both_orders, result.n_consistent, result.rate) == (1, 0, 0.0)


def test_position_consistency_without_both_orders() -> None:
    empty = position_consistency([])
    assert empty.rate is None and empty.tie_rate is None and empty.first_win_rate is None
    one_order = position_consistency([verdict("A", "B", "tie")])
    assert one_order.rate is None and one_order.tie_rate == 1.0 and one_order.first_win_rate is None


def test_position_consistency_rejects_self_comparison() -> None:
    with pytest.raises(SelfComparisonError, match="'A'"):
        position_consistency([verdict("A", "A", "first")])


def test_unknown_candidate_is_named() -> None:
    with pytest.raises(UnknownCandidateError, match="'Z'"):
        build_tournament(["A", "B"], [verdict("A", "Z", "first")])


def test_self_comparison_is_named() -> None:
    with pytest.raises(SelfComparisonError, match="'B'"):
        build_tournament(["A", "B"], [verdict("B", "B", "tie")])


def test_duplicate_candidate_is_named() -> None:
    with pytest.raises(CalibrationError, match="duplicate candidate id 'A'"):
        build_tournament(["A", "B", "A"], [])


@pytest.mark.parametrize("candidates", [[], ["only"]])
def test_fewer_than_two_candidates(candidates: list[str]) -> None:
    with pytest.raises(EmptyCalibrationError, match=f"at least 2 candidates, got {len(candidates)}"):
        build_tournament(candidates, [])


def test_unknown_outcome_is_named() -> None:
    with pytest.raises(CalibrationError, match="'draw'"):
        build_tournament(["A", "B"], [verdict("A", "B", "draw")])
    with pytest.raises(CalibrationError, match="'draw'"):
        position_consistency([verdict("A", "B", "draw")])


def test_all_lists_the_public_names() -> None:
    public = {
        name
        for name, value in vars(tournament_module).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == tournament_module.__name__
    }
    assert public <= set(tournament_module.__all__)
    assert tournament_module.__all__ == sorted(tournament_module.__all__)
    assert all(hasattr(tournament_module, name) for name in tournament_module.__all__)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda: build_tournament(["A"], []),
            EmptyCalibrationError,
            "a tournament needs at least 2 candidates, got 1: ['A']",
        ),
        (
            lambda: build_tournament(["A", 3], []),
            CalibrationError,
            "candidate ids must be strings, got 3 at position 1",
        ),
        (
            lambda: build_tournament(["A", "B", "A"], []),
            CalibrationError,
            "duplicate candidate id 'A' at positions 0 and 2; candidate ids must be unique",
        ),
        (
            lambda: build_tournament(["A", "B"], [verdict("A", "B", "first"), verdict("A", "Z", "first")]),
            UnknownCandidateError,
            "verdict 1 names unknown candidate 'Z'; known candidates: ['A', 'B']",
        ),
        (
            lambda: build_tournament(["A", "B"], [verdict("Z", "A", "first")]),
            UnknownCandidateError,
            "verdict 0 names unknown candidate 'Z'; known candidates: ['A', 'B']",
        ),
        (
            lambda: build_tournament(["A", "B"], [verdict("A", "B", "tie"), verdict("B", "B", "first")]),
            SelfComparisonError,
            "verdict 1 compares candidate 'B' with itself; a pairwise verdict needs two different candidates",
        ),
        (
            lambda: build_tournament(["A", "B"], [verdict("A", "B", "draw")]),
            CalibrationError,
            "verdict 0 has outcome 'draw'; it must be one of 'first', 'second', 'tie'",
        ),
        (
            lambda: position_consistency([verdict("A", "B", "first"), verdict("A", "A", "first")]),
            SelfComparisonError,
            "verdict 1 compares candidate 'A' with itself; a pairwise verdict needs two different candidates",
        ),
        (
            lambda: position_consistency([verdict("A", "B", "first"), verdict("A", "B", "draw")]),
            CalibrationError,
            "verdict 1 has outcome 'draw'; it must be one of 'first', 'second', 'tie'",
        ),
        (
            lambda: summarize_violation_rates([0.1, 1.5]),
            CalibrationError,
            "violation rate 1.5 at position 1 is not in [0, 1]",
        ),
        (
            lambda: summarize_violation_rates([]),
            EmptyCalibrationError,
            "summarize_violation_rates needs at least one violation rate, got none",
        ),
    ],
)
def test_refusals_read_exactly(call, error, message) -> None:
    with pytest.raises(error) as caught:
        call()
    assert str(caught.value) == message and type(caught.value) is error


def test_rate_edges_and_summary_fields() -> None:
    summary = summarize_violation_rates([0.0, 1.0, 0.25, 0.5])
    assert (summary.mean, summary.share_with_cycle, summary.max, summary.median, summary.n_inputs) == (
        0.4375,
        0.75,
        1.0,
        0.375,
        4,
    )
    assert summarize_violation_rates([0.0]).share_with_cycle == 0.0


def test_position_consistency_counts_every_tie_and_every_second_shown_win() -> None:
    verdicts = [
        verdict("A", "B", "second"),
        verdict("A", "B", "second"),
        verdict("A", "B", "first"),
        verdict("B", "A", "first"),
        verdict("B", "A", "first"),
        verdict("A", "C", "tie"),
        verdict("A", "C", "tie"),
        verdict("C", "A", "tie"),
    ]
    result = position_consistency(verdicts)
    # (A, B): B wins 2 of 3 shown second; (B, A): B wins shown first -> consistent; A-C: ties both ways -> consistent
    assert (result.n_pairs, result.n_pairs_both_orders, result.n_consistent, result.rate) == (2, 2, 2, 1.0)
    assert (result.n_verdicts, result.n_ties, result.tie_rate) == (8, 3, 3 / 8)
    assert result.first_win_rate == 3 / 5
