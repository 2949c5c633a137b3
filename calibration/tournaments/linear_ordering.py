"""The minimum feedback arc set as a linear ordering integer program (CBC, bundled with PuLP).

Over a margins matrix ``m[i, j]`` (the majority margin of i over j, 0 when i holds no majority): binary
``x_ij = "i above j"`` for i < j, transitivity ``0 <= x_ij + x_jk - x_ik <= 1`` on every triple, cost the total
margin of the reversed majorities. ``solve_linear_ordering`` gives the canonical optimal order (the tie-break of
``calibration.tournaments.ranking.rank_mfas_ilp``); ``swappable_neighbours`` tells which neighbours of that order
another optimal order swaps (the ties ``rank_mfas_ilp`` reports).
"""

from __future__ import annotations

import itertools
import os

import msgspec
import numpy as np
import pulp

from calibration.errors import ConvergenceError

__all__ = ["LinearOrder", "solve_linear_ordering", "swappable_neighbours"]


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


class LinearOrder(msgspec.Struct, frozen=True, kw_only=True):
    """Positions (0 = best) of the canonical optimal order, and whether it is the only optimal order."""

    positions: np.ndarray
    unique: bool


def solve_linear_ordering(margins: np.ndarray) -> LinearOrder:
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
        return LinearOrder(positions=positions, unique=True)

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
    return LinearOrder(positions=positions, unique=False)


def swappable_neighbours(margins: np.ndarray, solved: LinearOrder) -> list[bool]:
    """Per place p >= 1 of the order: whether an order of the same minimum feedback weight puts the candidate at
    place p above the one at place p - 1 (one constrained solve per neighbour pair; none when the optimum is
    unique)."""
    positions = solved.positions
    order = np.argsort(positions)
    optimum = int(margins[positions[None, :] < positions[:, None]].sum())
    if solved.unique:
        return [False] * (order.size - 1)
    swappable = []
    for p in range(1, order.size):
        model = _LinearOrdering(margins)
        model.problem += model.cost <= optimum
        model.problem += model.above(int(order[p]), int(order[p - 1])) == 1
        swappable.append(model.solve(model.cost) is not None)
    return swappable
