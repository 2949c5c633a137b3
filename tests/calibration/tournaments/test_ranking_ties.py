"""Ties in rankings are shown as ties (``Ranking.ranks``), not as the order a tie-break gave.

Cross-check of the MFAS ties: brute force over every order of small tournaments (all orders of minimum feedback
weight), independently of the integer program.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from calibration.tournaments.ranking import feedback_weight, rank_all, rank_mfas_ilp, ranks_of, tied_ranks
from calibration.tournaments.tournament import PairwiseVerdict, build_tournament
from tests.calibration.tournaments.test_ranking import tournament_from_counts

METHODS = ("win_rate", "bradley_terry", "schulze", "mfas_ilp", "mfas_copeland")


def test_a_perfect_three_cycle_ranks_every_candidate_first_under_all_five_methods() -> None:
    """a > b, b > c, c > a, once each: every win rate is 0.5; all five rankings printed a, b, c as an order."""
    t = build_tournament(
        ["a", "b", "c"],
        [
            PairwiseVerdict(first="a", second="b", outcome="first"),
            PairwiseVerdict(first="b", second="c", outcome="first"),
            PairwiseVerdict(first="c", second="a", outcome="first"),
        ],
    )
    for method, ranking in rank_all(t).items():
        assert ranking.ranks == {"a": 1, "b": 1, "c": 1}, method


def test_a_strict_order_has_no_tie() -> None:
    wins = np.array([[0, 2, 2], [0, 0, 2], [0, 0, 0]])
    for method, ranking in rank_all(tournament_from_counts(["a", "b", "c"], wins)).items():
        assert ranking.ranks == {"a": 1, "b": 2, "c": 3}, method


def test_a_cycle_below_a_winner_shares_the_second_rank() -> None:
    """a beats everyone; b, c, d form a perfect cycle below it."""
    names = ["a", "b", "c", "d"]
    wins = np.zeros((4, 4), dtype=int)
    wins[0, 1:] = 1
    wins[1, 2] = wins[2, 3] = wins[3, 1] = 1
    for method, ranking in rank_all(tournament_from_counts(names, wins)).items():
        assert ranking.ranks == {"a": 1, "b": 2, "c": 2, "d": 2}, method


def test_every_tie_of_an_all_tied_input() -> None:
    ties = np.ones((3, 3), dtype=int)
    t = tournament_from_counts(["x", "y", "z"], np.zeros((3, 3), dtype=int), ties)
    for method, ranking in rank_all(t).items():
        assert set(ranking.ranks.values()) == {1}, method


@pytest.mark.parametrize("seed", range(8))
def test_mfas_ties_equal_the_brute_force_over_every_order(seed: int) -> None:
    """Neighbours of the ILP's order share a rank exactly when some minimum-weight order swaps them."""
    rng = np.random.default_rng(seed)
    k = 4 + seed % 2
    names = [f"c{i}" for i in range(k)]
    wins = np.zeros((k, k), dtype=int)
    for i, j in itertools.combinations(range(k), 2):
        a, b = rng.integers(0, 3, 2)
        wins[i, j], wins[j, i] = a, b
    t = tournament_from_counts(names, wins)
    ranking = rank_mfas_ilp(t)
    weights = {order: feedback_weight(t, order) for order in itertools.permutations(names)}
    best = min(weights.values())
    optimal = [order for order, weight in weights.items() if weight == best]
    assert tuple(ranking.order) in optimal
    tied = [False]
    for previous, current in itertools.pairwise(ranking.order):
        tied.append(any(order.index(current) < order.index(previous) for order in optimal))
    assert ranking.ranks == tied_ranks(ranking.order, tied)


def test_ranks_of_a_ranking_that_states_no_tie_are_its_places() -> None:
    from calibration.tournaments.ranking import Ranking

    assert ranks_of(Ranking(method="m", order=("b", "a"), scores={"a": 0.0, "b": 1.0})) == {"b": 1, "a": 2}
    assert tied_ranks(["p", "q", "r", "s"], [False, True, False, True]) == {"p": 1, "q": 1, "r": 3, "s": 3}


@pytest.mark.parametrize("method", METHODS)
def test_ranks_never_decrease_along_the_order(method: str) -> None:
    rng = np.random.default_rng(3)
    for _ in range(5):
        wins = rng.integers(0, 3, (5, 5))
        np.fill_diagonal(wins, 0)
        ranking = rank_all(tournament_from_counts([f"m{i}" for i in range(5)], wins))[method]
        ranks = [ranking.ranks[name] for name in ranking.order]
        assert ranks == sorted(ranks) and ranks[0] == 1
