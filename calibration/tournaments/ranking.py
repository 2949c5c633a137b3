"""Rankings of one input's candidates from its Tournament: win rate, Bradley-Terry, Schulze, MFAS.

Each ranker returns a :class:`Ranking` (``order`` best first, ``scores`` higher = better, ``ranks`` 1 = best with
tied candidates sharing a rank: a tie is shown as a tie, not as the order the tie-break happened to give). All of them
read the repetition counts of the tournament (``Tournament.wins_matrix``; "tie" verdicts are half a win for
each side where a method counts games, and abstain where it counts preferences) and break remaining ties
by the candidate's position in the input order (earlier first), so equal inputs always give equal output.

==============================  =================================================================
call                            rule
==============================  =================================================================
``rank_win_rate(t)``            (wins + 0.5 * tie verdicts) / repetitions played
``rank_bradley_terry(t)``       MAP log-strengths with L2 penalty ``l2 * sum(theta**2)``
``rank_schulze(t)``             strongest (widest) beatpaths over winning votes, full ranking
``rank_mfas_ilp(t)``            exact minimum feedback arc set (linear ordering ILP, CBC)
``rank_mfas_copeland(t)``       Copeland: majority wins minus majority losses
``rank_all(t)``                 all five, keyed by method name
==============================  =================================================================

Ties in ``ranks`` (competition ranks: "1, 1, 3"): a candidate shares the rank of the one before it in ``order``
when the method does not separate them. Win rate, Bradley-Terry, Copeland: their scores differ by at most
``_TIE_TOLERANCE`` (1e-7). Schulze: the one before does not beat it (equal strongest paths both ways). MFAS: an
order of the same minimum feedback weight puts it above the one before (acyclic majority graph: no majority path
joins them; otherwise one constrained ILP solve per neighbour pair, none when the optimum is unique). So a
perfect 3-cycle ranks every candidate 1 under all five methods.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec
import numpy as np
from numpy.typing import NDArray

from calibration.errors import CalibrationError, ConvergenceError
from calibration.tournaments.linear_ordering import solve_linear_ordering, swappable_neighbours
from calibration.tournaments.tournament import Tournament

__all__ = [
    "Ranking",
    "feedback_weight",
    "rank_all",
    "rank_bradley_terry",
    "rank_mfas_copeland",
    "rank_mfas_ilp",
    "rank_schulze",
    "rank_win_rate",
    "ranks_of",
    "schulze_strongest_paths",
    "tied_ranks",
]

# Scores closer than this are treated as equal when ordering, so float noise cannot reorder candidates.
_SCORE_DECIMALS = 9
# Scores within this of each other are a tie in ``ranks`` (win rates and Copeland scores are exact ratios and
# integers; Bradley-Terry's log-strengths converge to 1e-10, so equal strengths land well within it).
_TIE_TOLERANCE = 1e-7


class Ranking(msgspec.Struct, frozen=True, kw_only=True):
    """A full ranking: ``order`` best first; ``scores`` per candidate, higher = better (method-specific);
    ``ranks`` per candidate, 1 = best, equal for tied candidates (see ``tied_ranks``; empty: no tie stated, each
    candidate's rank is its place in ``order``, as ``ranks_of`` answers)."""

    method: str
    order: tuple[str, ...]
    scores: dict[str, float]
    ranks: dict[str, int] = msgspec.field(default_factory=dict)


def tied_ranks(order: Sequence[str], tied_with_previous: Sequence[bool]) -> dict[str, int]:
    """Competition ranks ("1, 1, 3") of ``order``: a candidate tied with the one before it shares its rank,
    otherwise its rank is its place (1-based). ``tied_with_previous[p]`` for the candidate at place p (p >= 1)."""
    ranks: dict[str, int] = {}
    for place, name in enumerate(order):
        tied = place > 0 and bool(tied_with_previous[place])
        ranks[name] = ranks[order[place - 1]] if tied else place + 1
    return ranks


def ranks_of(ranking: Ranking) -> dict[str, int]:
    """The ranking's tied ranks, or each candidate's place in the order when it states none."""
    return ranking.ranks or {name: place + 1 for place, name in enumerate(ranking.order)}


def _ranking(method: str, t: Tournament, scores: np.ndarray, tolerance: float = _TIE_TOLERANCE) -> Ranking:
    # Descending score, then input position: a stable sort on the rounded negated scores.
    keys = np.round(-np.asarray(scores, dtype=float), _SCORE_DECIMALS)
    positions = sorted(range(t.n_candidates), key=lambda i: (keys[i], i))
    order = tuple(t.candidates[i] for i in positions)
    values = np.asarray(scores, dtype=float)[positions]
    # tied: the score of the one before is not larger by more than the tolerance (equal scores are a tie)
    tied = [False, *(bool(values[p - 1] - values[p] <= tolerance) for p in range(1, len(order)))]
    return Ranking(
        method=method,
        order=order,
        scores={name: float(score) for name, score in zip(t.candidates, scores, strict=True)},
        ranks=tied_ranks(order, tied),
    )


def rank_win_rate(t: Tournament) -> Ranking:
    """Score = (repetitions won + 0.5 * tie verdicts) / repetitions played; order by score, then input position.

    A candidate that was never judged scores 0.5 (no evidence either way).
    """
    wins = t.wins_matrix()
    ties = t.ties_matrix()
    played = wins.sum(axis=1) + wins.sum(axis=0) + ties.sum(axis=1)
    earned = wins.sum(axis=1) + 0.5 * ties.sum(axis=1)
    scores = np.divide(earned, played, out=np.full(t.n_candidates, 0.5), where=played > 0)
    return _ranking("win_rate", t, scores)


def rank_bradley_terry(t: Tournament, *, l2: float = 0.01, max_iter: int = 100, tol: float = 1e-10) -> Ranking:
    """Bradley-Terry MAP log-strengths (L2 penalty ``l2 * sum(theta**2)``); order by theta, then input position.

    theta maximises sum_ij w_ij log sigmoid(theta_i - theta_j) - l2 * sum(theta**2), where w_ij = repetitions
    i won against j + 0.5 * tie verdicts between them (a tie is half a win each way); solved by damped
    Newton steps. The L2 penalty (a Gaussian prior with variance 1/(2 * l2) on each theta) makes the
    maximiser unique and finite even when the comparison graph is not strongly connected (a candidate that
    never lost); it also centres the solution (sum(theta) = 0). The same estimate is
    ``choix.opt_pairwise(n, data, alpha=2 * l2)`` when every win is entered twice and every tie once in each
    direction (choix's objective is then twice ours). Scores are theta; order: theta descending (compared
    after rounding to 1e-9), then input position.

    Raises
    ------
    CalibrationError
        ``l2`` is not a finite number > 0.
    ConvergenceError
        The Newton step's max-norm (the change in theta) is not below ``tol`` within ``max_iter`` steps.
    """
    if not (isinstance(l2, int | float) and math.isfinite(l2) and l2 > 0):
        raise CalibrationError(f"Bradley-Terry l2 must be a finite number > 0, got {l2!r}")
    weights = t.wins_matrix() + 0.5 * t.ties_matrix()
    games = weights + weights.T
    theta = np.zeros(t.n_candidates)
    objective = _bt_objective(theta, weights, l2)
    step_size = math.inf
    for _ in range(max_iter):
        p = _sigmoid(theta[:, None] - theta[None, :])
        gradient = (games * p - weights).sum(axis=1) + 2.0 * l2 * theta
        curvature = games * p * (1.0 - p)
        hessian = np.diag(curvature.sum(axis=1) + 2.0 * l2) - curvature
        step = np.linalg.solve(hessian, gradient)
        step_size = float(np.max(np.abs(step)))
        if step_size < tol:
            return _ranking("bradley_terry", t, theta - step)
        # Damped Newton: halve the step until the (strictly convex) objective does not rise beyond
        # rounding; full steps are taken near the optimum, where Newton converges quadratically.
        slack = 1e-12 * (1.0 + abs(objective))
        scale = 1.0
        while True:
            candidate = theta - scale * step
            candidate_objective = _bt_objective(candidate, weights, l2)
            if candidate_objective <= objective + slack or scale < 1e-8:
                break
            scale *= 0.5
        theta, objective = candidate, candidate_objective
    raise ConvergenceError(
        f"Bradley-Terry did not converge in max_iter={max_iter} Newton steps: last step max-norm "
        f"{step_size:.3g} >= tol={tol}"
    )


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _bt_objective(theta: np.ndarray, weights: np.ndarray, l2: float) -> float:
    # sum_ij w_ij * softplus(-(theta_i - theta_j)) + l2 * |theta|^2 ; logaddexp is overflow-safe.
    diff = theta[:, None] - theta[None, :]
    return float((weights * np.logaddexp(0.0, -diff)).sum() + l2 * theta @ theta)


def schulze_strongest_paths(d: np.ndarray) -> np.ndarray:
    """Schulze strongest-path strengths p[i, j] from pairwise-preference counts d[i, j] (winning votes).

    A link i->j has strength d[i, j] when d[i, j] > d[j, i], else none (0); a path is as strong as its
    weakest link; p is the strongest path (Floyd-Warshall widest paths, O(n^3)); the diagonal is 0.
    """
    d = np.asarray(d, dtype=float)
    strength = np.where(d > d.T, d, 0.0)
    np.fill_diagonal(strength, 0.0)
    for k in range(strength.shape[0]):
        strength = np.maximum(strength, np.minimum(strength[:, k : k + 1], strength[k : k + 1, :]))
    np.fill_diagonal(strength, 0.0)
    return strength


def rank_schulze(t: Tournament) -> Ranking:
    """Schulze (beatpath, winning votes) full ranking over d[i, j] = repetitions i won against j; ties abstain.

    Score = number of candidates j with p[i, j] > p[j, i] (Schulze "better"). That relation is transitive, so
    ordering by score is a linear extension of the Schulze order; candidates it leaves unordered keep input
    order.
    """
    strength = schulze_strongest_paths(t.wins_matrix())
    scores = (strength > strength.T).sum(axis=1).astype(float)
    ranking = _ranking("schulze", t, scores)
    index = t.index()
    places = [index[name] for name in ranking.order]
    # tied: the one before does not beat it (p[prev, this] == p[this, prev])
    tied = [False, *(bool(strength[places[p - 1], places[p]] <= strength[places[p], places[p - 1]])
                     for p in range(1, len(places)))]  # fmt: skip
    return msgspec.structs.replace(ranking, ranks=tied_ranks(ranking.order, tied))


def rank_mfas_copeland(t: Tournament) -> Ranking:
    """Copeland score = majority wins - majority losses (tied/missing pairs 0); order by score, then input position.

    The fast approximation of the minimum feedback arc set order (sorting a tournament by wins is within a
    constant factor of the optimum, Coppersmith, Fleischer & Rudra 2010).
    """
    adjacency = t.adjacency()
    scores = adjacency.sum(axis=1).astype(float) - adjacency.sum(axis=0)
    return _ranking("mfas_copeland", t, scores)


def _margins(t: Tournament) -> np.ndarray:
    """(n, n) int: m[i, j] = wins_i - wins_j when i holds the majority over j, else 0."""
    wins = t.wins_matrix()
    margins: NDArray[np.int64] = np.maximum(wins - wins.T, 0.0).round().astype(np.int64)
    return margins


def feedback_weight(t: Tournament, order: Sequence[str]) -> float:
    """Total majority margin (wins_winner - wins_loser) of the pairs whose majority ``order`` (best first) reverses.

    Ties and missing pairs cost 0; this is the objective ``rank_mfas_ilp`` minimises.

    Raises
    ------
    CalibrationError
        ``order`` is not a permutation of ``t.candidates``.
    """
    index = t.index()
    if sorted(order) != sorted(t.candidates):
        raise CalibrationError(f"order {list(order)!r} is not a permutation of the candidates {list(t.candidates)!r}")
    position = np.empty(t.n_candidates, dtype=np.int64)
    position[[index[name] for name in order]] = np.arange(t.n_candidates)
    margins = _margins(t)
    return float(margins[position[:, None] > position[None, :]].sum())


def rank_mfas_ilp(t: Tournament) -> Ranking:
    """Exact minimum feedback arc set: the order minimising the total majority margin of reversed majorities.

    The weight of reversing a pair is its majority margin wins_winner - wins_loser in repetitions (1 or 3 for
    k = 3 without ties); tied and missing pairs cost 0. Solved exactly as a linear ordering integer program
    (binary x_ij = "i above j" for i < j; transitivity 0 <= x_ij + x_jk - x_ik <= 1 on every triple) with the
    CBC binary bundled with PuLP.

    Tie-break (deterministic and solver-independent): among all optimal orders, the one whose position
    vector is lexicographically smallest in input order, i.e. the first input candidate as high as
    optimality allows, then the second, and so on. One solve finds the optimum, a second (with that order
    cut off) proves it unique; otherwise positions are fixed candidate by candidate (at most n - 1 more
    solves). An acyclic majority graph has optimum 0 and is ordered by the same rule without the solver.
    Score = number of candidates ranked below. Cost: milliseconds for near-transitive inputs; random
    tournaments with unit margins at n = 20 can take seconds (the problem is NP-hard).

    Raises
    ------
    ConvergenceError
        CBC does not report an optimal solution.
    """
    n = t.n_candidates
    margins = _margins(t)
    if _is_acyclic(margins > 0):
        positions = _lexicographic_topological_positions(margins > 0)
        reach = _reachability(margins > 0)
        order = np.argsort(positions)
        # a topological order may put the next one above the previous one unless a majority path joins them
        tied = [False, *(not reach[order[p - 1], order[p]] for p in range(1, n))]
    else:
        solved = solve_linear_ordering(margins)
        positions = solved.positions
        order = np.argsort(positions)
        tied = [False, *swappable_neighbours(margins, solved)]
    scores = (n - 1 - positions).astype(float)
    names = tuple(t.candidates[i] for i in order)
    return Ranking(
        method="mfas_ilp",
        order=names,
        scores={name: float(score) for name, score in zip(t.candidates, scores, strict=True)},
        ranks=tied_ranks(names, tied),
    )


def _reachability(edges: np.ndarray) -> np.ndarray:
    """reach[i, j]: a directed path of majority edges leads from i to j (Warshall's transitive closure)."""
    reach = edges.astype(bool).copy()
    for k in range(reach.shape[0]):
        reach |= reach[:, k : k + 1] & reach[k : k + 1, :]
    return reach


def _is_acyclic(edges: np.ndarray) -> bool:
    remaining = np.ones(edges.shape[0], dtype=bool)
    while remaining.any():
        indegree = edges[np.ix_(remaining, remaining)].sum(axis=0)
        if not (indegree == 0).any():
            return False
        remaining[np.flatnonzero(remaining)[indegree == 0]] = False
    return True


def _lexicographic_topological_positions(edges: np.ndarray) -> np.ndarray:
    """Topological order minimising the position of candidate 0, then 1, ...: repeatedly place, at the
    *last* free slot, the highest-index candidate with no remaining successor (edges[i, j] = i above j)."""
    n = edges.shape[0]
    positions = np.full(n, -1, dtype=np.int64)  # every slot is written below; -1 would show one that is not
    remaining = np.ones(n, dtype=bool)
    for slot in range(n - 1, -1, -1):
        outdegree = edges[:, remaining].sum(axis=1)
        sinks = np.flatnonzero(remaining & (outdegree == 0))
        chosen = sinks[-1]
        positions[chosen] = slot
        remaining[chosen] = False
    return positions


def rank_all(t: Tournament) -> dict[str, Ranking]:
    """All five rankings with default settings, keyed win_rate, bradley_terry, schulze, mfas_ilp, mfas_copeland."""
    return {
        "win_rate": rank_win_rate(t),
        "bradley_terry": rank_bradley_terry(t),
        "schulze": rank_schulze(t),
        "mfas_ilp": rank_mfas_ilp(t),
        "mfas_copeland": rank_mfas_copeland(t),
    }
