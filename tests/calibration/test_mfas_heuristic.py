"""The MFAS local-search heuristic: never worse than Copeland, optimal-or-close on small cases (brute force)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from calibration.mfas_heuristic import rank_mfas_local_search
from calibration.ranking import feedback_weight, rank_mfas_copeland
from calibration.tournament import PairwiseVerdict, Tournament, build_tournament


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
