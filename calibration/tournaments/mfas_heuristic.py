"""A fast minimum-feedback-arc-set order for when the exact ILP (``ranking.rank_mfas_ilp``) runs out of time.

Heuristic (stated, deterministic): start from the Copeland order (``rank_mfas_copeland``: majority wins minus
majority losses, ties by input position); then repeat sweeps over the candidates in the current order, moving
each one to the insertion position that lowers the feedback weight most (the earliest such position on equal
gains; no move unless the weight strictly drops), until a sweep moves none. The weight is the objective of the
exact method, ``ranking.feedback_weight``: the total majority margin of the pairs the order reverses. Every move
lowers an integer weight, so the search ends; the result is never worse than the Copeland order and is locally
optimal under single moves (not necessarily optimal: the problem is NP-hard).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from calibration.tournaments.ranking import Ranking, rank_mfas_copeland
from calibration.tournaments.tournament import Tournament

__all__ = ["rank_mfas_local_search"]


def _margins(t: Tournament) -> np.ndarray:
    wins = t.wins_matrix()
    margins: NDArray[np.int64] = np.maximum(wins - wins.T, 0.0).round().astype(np.int64)
    return margins


def rank_mfas_local_search(t: Tournament) -> Ranking:
    """Copeland order improved by single-candidate moves (module rule); score = candidates ranked below."""
    n = t.n_candidates
    index = t.index()
    margins = _margins(t)  # margins[i, j] > 0: i holds the majority over j by that many repetitions
    order = [index[name] for name in rank_mfas_copeland(t).order]
    improved = True
    while improved:
        improved = False
        for candidate in list(order):
            rest = [other for other in order if other != candidate]
            # Placing the candidate at slot q: the q above it cost margins[candidate, above] (its wins reversed),
            # the ones below cost margins[below, candidate]; prefix sums give every slot at once.
            above = np.concatenate(([0], np.cumsum(margins[candidate, rest])))
            below = np.concatenate((np.cumsum(margins[rest, candidate][::-1])[::-1], [0]))
            costs = above + below
            current = order.index(candidate)
            best = int(np.argmin(costs))
            if costs[best] < costs[current]:
                order = rest[:best] + [candidate] + rest[best:]
                improved = True
    positions = np.empty(n, dtype=np.int64)
    positions[order] = np.arange(n)
    return Ranking(
        method="mfas_local_search",
        order=tuple(t.candidates[i] for i in order),
        scores={name: float(n - 1 - positions[i]) for i, name in enumerate(t.candidates)},
    )
