"""The nonconformity scores, each written once for one item and for n items at a time.

A kernel reads the judge's output as columns, one value per candidate label 1..K, and returns the score of every
label as K columns. A column is one item's number (a ``float``; the service's single-item path) or the n items'
numbers (a 1-D array; calibration and evaluation). Arithmetic and comparisons read the same on both; the few
operations that do not (pick a label per item, set a label per item, the order of labels) are the primitives of
``Ops``, given twice: ``SCALAR`` for one item and ``ArrayOps`` for n items. So a score's rule is stated once, and
the two paths add the same floats in the same order: they agree to the last bit.

- **Label ties.** Where a kernel orders labels by probability, equal probabilities are ordered by the lower
  label first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate, repeat
from operator import mul, sub
from typing import Generic, NamedTuple, Protocol, TypeVar

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "SCALAR",
    "ArrayOps",
    "ItemColumns",
    "LearnedTable",
    "Ops",
    "aps",
    "lac",
    "learned_lac",
    "ordinal",
    "residual",
    "residual_expected",
]

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.int64]
C = TypeVar("C", float, FloatArray)  # one value per item: a float (one item) or an (n,) array (n items)
Ix = TypeVar("Ix", int, IndexArray)  # a label index 0..K-1 per item
Condition = bool | NDArray[np.bool_]


class Ops(Protocol[C, Ix]):
    """The primitives that differ between one item (floats, ints) and n items (arrays)."""

    def take(self, columns: Sequence[C], index: Ix, default: float) -> C:
        """The column at ``index`` per item (``default`` where index is outside 0..K-1)."""
        ...

    def put(self, columns: list[C], index: Ix, value: C) -> list[C]:
        """``columns`` with the entry at ``index`` replaced by ``value`` per item."""
        ...

    def choose(self, condition: Condition, if_true: Ix, if_false: Ix) -> Ix:
        """Per item, ``if_true`` where ``condition`` holds, else ``if_false``."""
        ...

    def choose_value(self, condition: Condition, if_true: C, if_false: C) -> C:
        """Per item, the value ``if_true`` where ``condition`` holds, else ``if_false``."""
        ...

    def zeros(self) -> C:
        """A column of zeros."""
        ...

    def to_float(self, index: Ix) -> C:
        """An index column as floats."""
        ...

    def lookup(self, table: Sequence[float], index: Ix) -> C:
        """``table[index]`` per item (a threshold per group, read at each item's group)."""
        ...

    def row(self, table: Sequence[Sequence[float]], index: Ix) -> Sequence[C]:
        """K columns: ``table[index][k]`` per item (a learned table's row, read at each item's judge score)."""
        ...

    def order(self, columns: Sequence[C]) -> list[Ix]:
        """Label indices per item, most probable first; equal probabilities put the lower label first."""
        ...

    def gather(self, columns: Sequence[C], indices: Sequence[Ix]) -> list[C]:
        """Per item, the columns read in the order ``indices`` gives (``columns[indices[r]]`` for r = 0..K-1)."""
        ...

    def scatter(self, indices: Sequence[Ix], values: Sequence[C]) -> list[C]:
        """K columns holding ``values[r]`` at ``indices[r]`` per item (``indices`` a permutation of 0..K-1)."""
        ...

    def first_max(self, columns: Sequence[C]) -> Ix:
        """Index of the largest column per item; the lowest index among equal maxima."""
        ...


class _ScalarOps:
    """The primitives for one item: floats and ints."""

    def take(self, columns: Sequence[float], index: int, default: float) -> float:
        """The column at ``index`` (``default`` outside 0..K-1)."""
        return columns[index] if 0 <= index < len(columns) else default

    def put(self, columns: list[float], index: int, value: float) -> list[float]:
        """``columns`` with entry ``index`` set to ``value`` (in place: the kernels own their lists)."""
        columns[index] = value
        return columns

    def choose(self, condition: Condition, if_true: int, if_false: int) -> int:
        """``if_true`` if ``condition`` else ``if_false``."""
        return if_true if condition else if_false

    def choose_value(self, condition: Condition, if_true: float, if_false: float) -> float:
        """``if_true`` if ``condition`` else ``if_false``."""
        return if_true if condition else if_false

    def zeros(self) -> float:
        """0.0."""
        return 0.0

    def to_float(self, index: int) -> float:
        """The index as a float."""
        return float(index)

    def lookup(self, table: Sequence[float], index: int) -> float:
        """``table[index]``."""
        return table[index]

    def row(self, table: Sequence[Sequence[float]], index: int) -> Sequence[float]:
        """``table[index]`` (read only: the kernels build new lists from it)."""
        return table[index]

    def order(self, columns: Sequence[float]) -> list[int]:
        """Label indices, most probable first (``sorted`` is stable with ``reverse`` too: lower label first among
        equals)."""
        return sorted(range(len(columns)), key=columns.__getitem__, reverse=True)

    def gather(self, columns: Sequence[float], indices: Sequence[int]) -> list[float]:
        """The values in the order ``indices`` gives."""
        return [columns[index] for index in indices]

    def scatter(self, indices: Sequence[int], values: Sequence[float]) -> list[float]:
        """``values[r]`` placed at ``indices[r]``."""
        placed = [0.0] * len(indices)
        for index, value in zip(indices, values, strict=True):
            placed[index] = value
        return placed

    def first_max(self, columns: Sequence[float]) -> int:
        """Index of the largest value (``max`` returns the first maximum: the lowest among equals)."""
        return max(range(len(columns)), key=columns.__getitem__)


SCALAR = _ScalarOps()


@dataclass(frozen=True)
class ArrayOps:
    """The primitives for ``n_items`` items at once: (n,) arrays."""

    n_items: int

    def take(self, columns: Sequence[FloatArray], index: IndexArray, default: float) -> FloatArray:
        """The column at ``index`` per item (``default`` where index is outside 0..K-1)."""
        stacked = np.column_stack(columns)
        inside = (index >= 0) & (index < len(columns))
        picked = stacked[np.arange(self.n_items), np.clip(index, 0, len(columns) - 1)]
        return np.where(inside, picked, default)

    def put(self, columns: list[FloatArray], index: IndexArray, value: FloatArray) -> list[FloatArray]:
        """``columns`` with the entry at ``index`` set to ``value`` per item."""
        return [np.where(index == k, value, column) for k, column in enumerate(columns)]

    def choose(self, condition: Condition, if_true: IndexArray, if_false: IndexArray) -> IndexArray:
        """Per item, ``if_true`` where ``condition`` holds, else ``if_false``."""
        return np.where(condition, if_true, if_false)

    def choose_value(self, condition: Condition, if_true: FloatArray, if_false: FloatArray) -> FloatArray:
        """Per item, the value ``if_true`` where ``condition`` holds, else ``if_false``."""
        return np.where(condition, if_true, if_false)

    def zeros(self) -> FloatArray:
        """A column of zeros."""
        return np.zeros(self.n_items)

    def to_float(self, index: IndexArray) -> FloatArray:
        """An index column as floats."""
        return index.astype(float)

    def lookup(self, table: Sequence[float], index: IndexArray) -> FloatArray:
        """``table[index]`` per item."""
        return np.asarray(table, dtype=float)[index]

    def row(self, table: Sequence[Sequence[float]], index: IndexArray) -> list[FloatArray]:
        """K columns: ``table[index][k]`` per item."""
        picked = np.asarray(table, dtype=float)[index]
        return [picked[:, k] for k in range(picked.shape[1])]

    def order(self, columns: Sequence[FloatArray]) -> list[IndexArray]:
        """Label indices per item, most probable first; a stable sort keeps the lower label first among equals."""
        ranked = np.argsort(-np.column_stack(columns), axis=1, kind="stable")
        return [ranked[:, r] for r in range(len(columns))]

    def gather(self, columns: Sequence[FloatArray], indices: Sequence[IndexArray]) -> list[FloatArray]:
        """Per item, the columns read in the order ``indices`` gives."""
        picked = np.take_along_axis(np.column_stack(columns), np.column_stack(indices), axis=1)
        return [picked[:, r] for r in range(len(indices))]

    def scatter(self, indices: Sequence[IndexArray], values: Sequence[FloatArray]) -> list[FloatArray]:
        """K columns holding ``values[r]`` at ``indices[r]`` per item."""
        placed = np.empty((self.n_items, len(indices)))
        np.put_along_axis(placed, np.column_stack(indices), np.column_stack(values), axis=1)
        return [placed[:, k] for k in range(len(indices))]

    def first_max(self, columns: Sequence[FloatArray]) -> IndexArray:
        """Index of the largest column per item (``argmax`` returns the first maximum)."""
        return np.asarray(np.column_stack(columns).argmax(axis=1), dtype=np.int64)


@dataclass(frozen=True, slots=True)
class LearnedTable:
    """A learned table ``M[s][y]`` read both ways: ``rows[s]`` (the row at a judge score) and ``columns[y]`` (the
    column of a label, for the sum over scores). Built once from the fitted matrix (:meth:`of`)."""

    rows: tuple[tuple[float, ...], ...]
    columns: tuple[tuple[float, ...], ...]

    @classmethod
    def of(cls, matrix: Iterable[Iterable[float]]) -> LearnedTable:
        """The table of a fitted matrix (floats, rows by judge score)."""
        rows = tuple(tuple(map(float, row)) for row in matrix)
        return cls(rows=rows, columns=tuple(zip(*rows, strict=True)))


class ItemColumns(NamedTuple, Generic[C, Ix]):
    """The judge's output for one item (floats) or n items (arrays), as the kernels read it.

    ``judge`` is the judge's score index (score - 1), ``probabilities`` the K columns of its renormalised
    distribution, ``uniform`` the tie-breaking draw of a randomised score (None otherwise), ``learned`` the
    learned table ``M[s][y]`` of the learned scores.
    """

    n_labels: int
    judge: Ix | None
    probabilities: Sequence[C] | None
    uniform: C | None
    learned: LearnedTable | None


def residual(x: ItemColumns[C, Ix], ops: Ops[C, Ix]) -> list[C]:
    """``|s - y|`` on the judge's integer score s."""
    assert x.judge is not None
    # map rather than a comprehension: C speed on one item (floats), the same arithmetic on arrays
    return list(map(abs, map(sub, repeat(ops.to_float(x.judge)), range(x.n_labels))))


def residual_expected(x: ItemColumns[C, Ix], ops: Ops[C, Ix]) -> list[C]:
    """``|E_p[score] - y|``: the expected score under the judge's distribution, summed in label order."""
    assert x.probabilities is not None
    expected = sum(map(mul, x.probabilities, range(1, x.n_labels + 1)), ops.zeros())
    return list(map(abs, map(sub, repeat(expected), range(1, x.n_labels + 1))))


def lac(x: ItemColumns[C, Ix], ops: Ops[C, Ix]) -> list[C]:
    """``1 - p(y)`` (least ambiguous set-valued classifier)."""
    assert x.probabilities is not None
    return list(map(sub, repeat(1.0), x.probabilities))


def aps(x: ItemColumns[C, Ix], ops: Ops[C, Ix]) -> list[C]:
    """Mass of the labels at least as probable as y, y included (summed most probable first), minus
    ``uniform * p(y)`` when randomised."""
    assert x.probabilities is not None
    order = ops.order(x.probabilities)
    scores = ops.scatter(order, list(accumulate(ops.gather(x.probabilities, order))))
    if x.uniform is None:
        return scores
    return [score - x.uniform * p for score, p in zip(scores, x.probabilities, strict=True)]


def ordinal(x: ItemColumns[C, Ix], ops: Ops[C, Ix]) -> list[C]:
    """Grow an interval from the mode, each step adding the more probable neighbour (the lower label on ties);
    a label's score is the interval's mass when it joins."""
    probabilities = x.probabilities
    assert probabilities is not None
    low = high = ops.first_max(probabilities)
    mass = ops.take(probabilities, low, 0.0)
    scores = ops.put([ops.zeros()] * x.n_labels, low, mass)
    for _ in range(x.n_labels - 1):
        left = ops.take(probabilities, low - 1, -1.0)  # -1: no label there (a probability is never below 0)
        right = ops.take(probabilities, high + 1, -1.0)
        go_left = left >= right
        joining = ops.choose(go_left, low - 1, high + 1)
        # the joining label's probability: the side chosen always holds a label (both sides empty only once the
        # interval is the whole scale, after the K - 1 steps), so this is left or right itself
        mass = mass + ops.choose_value(go_left, left, right)
        scores = ops.put(scores, joining, mass)
        low = ops.choose(go_left, joining, low)
        high = ops.choose(go_left, high, joining)
    return scores


def learned_lac(x: ItemColumns[C, Ix], ops: Ops[C, Ix]) -> list[C]:
    """``1 - P(y | judge)`` with ``P(y | judge) = sum_s w_s M[s][y]`` summed in s order, ``w`` the judge's
    distribution; with no distribution, ``P(y | judge) = M[s][y]`` at the judge's score s (the same sum with
    one-hot weights, whose zero terms add nothing)."""
    assert x.learned is not None
    if x.probabilities is None:
        assert x.judge is not None
        return [1.0 - value for value in ops.row(x.learned.rows, x.judge)]
    weights = x.probabilities
    return [1.0 - sum(map(mul, weights, column)) for column in x.learned.columns]
