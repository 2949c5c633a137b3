"""The MFAS local-search heuristic: never worse than Copeland, optimal-or-close on small cases (brute force)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from calibration.tournaments.mfas_heuristic import rank_mfas_local_search
from calibration.tournaments.ranking import feedback_weight, rank_mfas_copeland
from calibration.tournaments.tournament import PairwiseVerdict, Tournament, build_tournament


def random_tournament(n: int, seed: int, repetitions: int = 1) -> Tournament:
    """A complete random tournament on c0..c{n-1} (each repetition a fair coin), reproducible from seed."""
    rng = np.random.default_rng(seed)
    ids = [f"c{i}" for i in range(n)]
    verdicts = [
        PairwiseVerdict(first=a, second=b, outcome="first" if rng.random() < 0.5 else "second")
        for a, b in itertools.combinations(ids, 2)
        for _ in range(repetitions)
    ]
    return build_tournament(ids, verdicts)


@pytest.mark.parametrize("seed", range(20))
def test_never_worse_than_copeland_and_locally_optimal(seed: int):
    t = random_tournament(12, seed, repetitions=3)
    ranking = rank_mfas_local_search(t)
    weight = feedback_weight(t, ranking.order)
    assert sorted(ranking.order) == sorted(t.candidates)
    assert weight <= feedback_weight(t, rank_mfas_copeland(t).order)
    order = list(ranking.order)
    for candidate in order:  # no single move lowers the weight
        rest = [c for c in order if c != candidate]
        for slot in range(len(order)):
            assert feedback_weight(t, rest[:slot] + [candidate] + rest[slot:]) >= weight


@pytest.mark.parametrize("seed", range(10))
def test_close_to_the_brute_force_optimum_on_small_tournaments(seed: int):
    t = random_tournament(6, seed)
    optimum = min(feedback_weight(t, order) for order in itertools.permutations(t.candidates))
    weight = feedback_weight(t, rank_mfas_local_search(t).order)
    assert optimum <= weight <= optimum + 2


def test_a_transitive_tournament_is_ordered_exactly():
    ids = ["e", "b", "d", "a", "c"]
    strength = {"a": 5, "b": 4, "c": 3, "d": 2, "e": 1}
    verdicts = [
        PairwiseVerdict(first=x, second=y, outcome="first" if strength[x] > strength[y] else "second")
        for x, y in itertools.combinations(ids, 2)
    ]
    ranking = rank_mfas_local_search(build_tournament(ids, verdicts))
    assert ranking.order == ("a", "b", "c", "d", "e")
    assert ranking.scores == {"a": 4.0, "b": 3.0, "c": 2.0, "d": 1.0, "e": 0.0}


def _reference_local_search(t: Tournament) -> list[str]:
    """The module's rule written out by brute force over ``feedback_weight``: from the Copeland order, sweep the
    candidates in the current order, move each to the insertion slot of lowest weight (the earliest on equal
    weights) when that strictly lowers the weight; stop after a sweep without a move."""
    order = list(rank_mfas_copeland(t).order)
    moved = True
    while moved:
        moved = False
        for candidate in list(order):
            rest = [c for c in order if c != candidate]
            weights = [feedback_weight(t, rest[:slot] + [candidate] + rest[slot:]) for slot in range(len(order))]
            best = weights.index(min(weights))
            if weights[best] < feedback_weight(t, order):
                order = rest[:best] + [candidate] + rest[best:]
                moved = True
    return order


@pytest.mark.parametrize(
    ("n", "seed", "repetitions"), [(5, 0, 1), (6, 1, 1), (7, 2, 3), (8, 3, 3), (9, 4, 1), (7, 5, 2), (8, 6, 2)]
)
def test_the_order_and_scores_are_the_stated_rule_step_by_step(n: int, seed: int, repetitions: int):
    # repetitions 2: even splits leave tied pairs (margin 0); 3: margins 1 and 3
    t = random_tournament(n, seed, repetitions)
    ranking = rank_mfas_local_search(t)
    expected = _reference_local_search(t)
    assert ranking.method == "mfas_local_search"
    assert list(ranking.order) == expected
    assert ranking.scores == {name: float(n - 1 - expected.index(name)) for name in t.candidates}


def test_a_three_cycle_keeps_the_copeland_order():
    # a > b > c > a with equal margins: every order reverses one pair, no move strictly lowers the weight
    verdicts = [
        PairwiseVerdict(first="a", second="b", outcome="first"),
        PairwiseVerdict(first="b", second="c", outcome="first"),
        PairwiseVerdict(first="c", second="a", outcome="first"),
    ]
    ranking = rank_mfas_local_search(build_tournament(["a", "b", "c"], verdicts))
    assert ranking.order == ("a", "b", "c") and ranking.scores == {"a": 2.0, "b": 1.0, "c": 0.0}


def test_a_strong_majority_is_restored_from_the_copeland_order():
    # Copeland ties a, b, c (one majority win each) and keeps input order a, b, c, which reverses c > a (margin 3);
    # the first move puts a at the bottom (b, c, a: only a > b, margin 1, reversed); from there moving b (weights 1,
    # 2, 1) or c (2, 1, 4) lowers nothing strictly
    verdicts = (
        [PairwiseVerdict(first="a", second="b", outcome="first")]
        + [PairwiseVerdict(first="b", second="c", outcome="first")]
        + [PairwiseVerdict(first="c", second="a", outcome="first")] * 3
    )
    t = build_tournament(["a", "b", "c"], verdicts)
    assert rank_mfas_copeland(t).order == ("a", "b", "c")
    ranking = rank_mfas_local_search(t)
    assert ranking.order == ("b", "c", "a") and feedback_weight(t, ranking.order) == 1.0
    assert ranking.scores == {"a": 0.0, "b": 2.0, "c": 1.0}
