"""Rankings of one input's candidates from its Tournament: win rate, Bradley-Terry, Schulze, MFAS.

Each ranker returns a :class:`Ranking` (``order`` best first, ``scores`` higher = better). All of them
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
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Sequence

import msgspec
import numpy as np
import pulp
from numpy.typing import NDArray

from calibration.errors import CalibrationError, ConvergenceError
from calibration.tournament import Tournament

__all__ = [
    "Ranking",
    "feedback_weight",
    "rank_all",
    "rank_bradley_terry",
    "rank_mfas_copeland",
    "rank_mfas_ilp",
    "rank_schulze",
    "rank_win_rate",
    "schulze_strongest_paths",
]

# Scores closer than this are treated as equal when ordering, so float noise cannot reorder candidates.
_SCORE_DECIMALS = 9


class Ranking(msgspec.Struct, frozen=True, kw_only=True):
    """A full ranking: ``order`` best first; ``scores`` per candidate, higher = better (method-specific)."""

    method: str
    order: tuple[str, ...]
    scores: dict[str, float]


def _ranking(method: str, t: Tournament, scores: np.ndarray) -> Ranking:
    # Descending score, then input position: a stable sort on the rounded negated scores.
    keys = np.round(-np.asarray(scores, dtype=float), _SCORE_DECIMALS)
    positions = sorted(range(t.n_candidates), key=lambda i: (keys[i], i))
    return Ranking(
        method=method,
        order=tuple(t.candidates[i] for i in positions),
        scores={name: float(score) for name, score in zip(t.candidates, scores, strict=True)},
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
    return _ranking("schulze", t, scores)


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
    else:
        positions = _solve_linear_ordering(margins)
    order = np.argsort(positions)
    scores = (n - 1 - positions).astype(float)
    return Ranking(
        method="mfas_ilp",
        order=tuple(t.candidates[i] for i in order),
        scores={name: float(score) for name, score in zip(t.candidates, scores, strict=True)},
    )


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


def _cbc() -> pulp.LpSolver:
    # The CBC binary bundled with PuLP, driven through COIN_CMD: constructing PULP_CBC_CMD itself emits a
    # PuLP 4.0 DeprecationWarning (an error under our warning policy) for the very same binary.
    bundled = pulp.PULP_CBC_CMD.pulp_cbc_path
    return pulp.COIN_CMD(path=bundled, msg=False) if os.path.exists(bundled) else pulp.COIN_CMD(msg=False)


class _LinearOrdering:
    """One linear ordering model over n candidates: x[i, j] (i < j) = 1 iff i is ranked above j."""

    def __init__(self, margins: np.ndarray) -> None:
        n = margins.shape[0]
        self.n = n
        self.problem = pulp.LpProblem("mfas_linear_ordering", pulp.LpMinimize)
        self.x = {
            (i, j): self.problem.add_variable(f"x_{i}_{j}", 0, 1, cat=pulp.LpBinary)
            for i, j in itertools.combinations(range(n), 2)
        }
        for i, j, k in itertools.combinations(range(n), 3):
            triangle = self.x[i, j] + self.x[j, k] - self.x[i, k]
            self.problem += triangle >= 0
            self.problem += triangle <= 1
        self.cost = pulp.lpSum(
            int(margins[j, i]) * self.above(i, j) for i in range(n) for j in range(n) if margins[j, i]
        )
        self.position = [pulp.lpSum(self.above(j, i) for j in range(n) if j != i) for i in range(n)]

    def above(self, i: int, j: int) -> pulp.LpAffineExpression:
        return self.x[i, j] if i < j else 1 - self.x[j, i]

    def nudged(self, primary: pulp.LpAffineExpression, start: int) -> pulp.LpAffineExpression:
        """primary, then (never outweighing one unit of it) earlier candidates from ``start`` higher."""
        n = self.n
        bound = sum((n - c) * (n - 1) for c in range(start, n))
        return (bound + 1) * primary + pulp.lpSum((n - c) * self.position[c] for c in range(start, n))

    def solve(self, objective: pulp.LpAffineExpression) -> np.ndarray | None:
        """Positions (0 = best) of an optimal order, or None when the constraints admit none."""
        self.problem += objective
        status = pulp.LpStatus[self.problem.solve(_cbc())]
        if status == "Infeasible":
            return None
        if status != "Optimal":
            raise ConvergenceError(f"CBC did not solve the MFAS linear ordering problem: status {status!r}")
        value = {key: round(var.value() or 0.0) for key, var in self.x.items()}
        n = self.n
        return np.array([sum(value[j, i] if j < i else 1 - value[i, j] for j in range(n) if j != i) for i in range(n)])


def _solve_linear_ordering(margins: np.ndarray) -> np.ndarray:
    """Positions (0 = best) of the canonical optimal order; see ``rank_mfas_ilp``."""
    n = margins.shape[0]
    # Integer weights keep every combined objective exact; the secondary term only steers incumbents
    # towards the canonical order so that the fixing loop can often skip a solve.
    first = _LinearOrdering(margins)
    positions = first.solve(first.nudged(first.cost, 0))
    if positions is None:  # the linear ordering polytope is never empty
        raise ConvergenceError("CBC reported the MFAS linear ordering problem infeasible")
    optimum = int(margins[positions[None, :] < positions[:, None]].sum())

    def constrained(fixed: dict[int, int]) -> _LinearOrdering:
        model = _LinearOrdering(margins)
        model.problem += model.cost <= optimum
        for candidate, slot in fixed.items():
            model.problem += model.position[candidate] == slot
        return model

    # Unique optimum (the common case): one solve with the incumbent cut off proves it.
    check = constrained({})
    incumbent = positions
    check.problem += pulp.lpSum(1 - var if incumbent[i] < incumbent[j] else var for (i, j), var in check.x.items()) >= 1
    if check.solve(check.cost) is None:
        return positions

    # Otherwise: candidate 0 as high as an optimal order allows, then candidate 1, ...
    fixed: dict[int, int] = {}
    for c in range(n - 1):
        if positions[c] != min(set(range(n)) - set(fixed.values())):  # lowest free slot: already minimal
            model = constrained(fixed)
            solved = model.solve(model.nudged(model.position[c], c + 1))
            if solved is None:
                raise ConvergenceError("CBC lost a feasible MFAS order while fixing positions")
            positions = solved
        fixed[c] = int(positions[c])
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
