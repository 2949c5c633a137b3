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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, NamedTuple, Protocol, TypeVar

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "SCALAR",
    "ArrayOps",
    "ItemColumns",
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

    def zeros(self) -> C:
        """A column of zeros."""
        ...

    def to_float(self, index: Ix) -> C:
        """An index column as floats."""
        ...

    def lookup(self, table: Sequence[float], index: Ix) -> C:
        """``table[index]`` per item (a threshold per group, read at each item's group)."""
        ...

    def one_hot(self, judge: Ix, n_labels: int) -> list[C]:
        """K columns: 1.0 in the column of the judge's score index, 0.0 elsewhere."""
        ...

    def order(self, columns: Sequence[C]) -> list[Ix]:
        """Label indices per item, most probable first; equal probabilities put the lower label first."""
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

    def zeros(self) -> float:
        """0.0."""
        return 0.0

    def to_float(self, index: int) -> float:
        """The index as a float."""
        return float(index)

    def lookup(self, table: Sequence[float], index: int) -> float:
        """``table[index]``."""
        return table[index]

    def one_hot(self, judge: int, n_labels: int) -> list[float]:
        """1.0 at the judge's score index, 0.0 elsewhere."""
        return [1.0 if k == judge else 0.0 for k in range(n_labels)]

    def order(self, columns: Sequence[float]) -> list[int]:
        """Label indices, most probable first (lower label first among equals)."""
        return sorted(range(len(columns)), key=lambda k: (-columns[k], k))

    def first_max(self, columns: Sequence[float]) -> int:
        """Index of the largest value, the lowest among equals."""
        return max(range(len(columns)), key=lambda k: (columns[k], -k))


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

    def zeros(self) -> FloatArray:
        """A column of zeros."""
        return np.zeros(self.n_items)

    def to_float(self, index: IndexArray) -> FloatArray:
        """An index column as floats."""
        return index.astype(float)

    def lookup(self, table: Sequence[float], index: IndexArray) -> FloatArray:
        """``table[index]`` per item."""
        return np.asarray(table, dtype=float)[index]

    def one_hot(self, judge: IndexArray, n_labels: int) -> list[FloatArray]:
        """K columns: 1.0 in the column of the judge's score index, 0.0 elsewhere."""
        return [(judge == k).astype(float) for k in range(n_labels)]

    def order(self, columns: Sequence[FloatArray]) -> list[IndexArray]:
        """Label indices per item, most probable first; a stable sort keeps the lower label first among equals."""
        ranked = np.argsort(-np.column_stack(columns), axis=1, kind="stable")
        return [ranked[:, r] for r in range(len(columns))]

    def first_max(self, columns: Sequence[FloatArray]) -> IndexArray:
        """Index of the largest column per item (``argmax`` returns the first maximum)."""
        return np.asarray(np.column_stack(columns).argmax(axis=1), dtype=np.int64)


class ItemColumns(NamedTuple, Generic[C, Ix]):
    """The judge's output for one item (floats) or n items (arrays), as the kernels read it.

    ``judge`` is the judge's score index (score - 1), ``probabilities`` the K columns of its renormalised
    distribution, ``uniform`` the tie-breaking draw of a randomised score (zeros otherwise), ``learned`` the
    learned table ``M[s][y]`` of the learned scores.
    """

    n_labels: int
    judge: Ix | None
    probabilities: Sequence[C] | None
    uniform: C
    learned: Sequence[Sequence[float]] | None


def residual(x: ItemColumns[C, Ix], ops: Ops[C, Ix]) -> list[C]:
    """``|s - y|`` on the judge's integer score s."""
    assert x.judge is not None
    judge = ops.to_float(x.judge)
    return [abs(judge - y) for y in range(x.n_labels)]


def residual_expected(x: ItemColumns[C, Ix], ops: Ops[C, Ix]) -> list[C]:
    """``|E_p[score] - y|``: the expected score under the judge's distribution, summed in label order."""
    assert x.probabilities is not None
    expected = ops.zeros()
    for k, p in enumerate(x.probabilities):
        expected = expected + p * (k + 1)
    return [abs(expected - (y + 1)) for y in range(x.n_labels)]


def lac(x: ItemColumns[C, Ix], ops: Ops[C, Ix]) -> list[C]:
    """``1 - p(y)`` (least ambiguous set-valued classifier)."""
    assert x.probabilities is not None
    return [1.0 - p for p in x.probabilities]


def aps(x: ItemColumns[C, Ix], ops: Ops[C, Ix]) -> list[C]:
    """Mass of the labels at least as probable as y, y included, minus ``uniform * p(y)`` (0 unless randomised)."""
    assert x.probabilities is not None
    scores = [ops.zeros() for _ in range(x.n_labels)]
    mass = ops.zeros()
    for index in ops.order(x.probabilities):
        mass = mass + ops.take(x.probabilities, index, 0.0)
        scores = ops.put(scores, index, mass)
    return [score - x.uniform * p for score, p in zip(scores, x.probabilities, strict=True)]


def ordinal(x: ItemColumns[C, Ix], ops: Ops[C, Ix]) -> list[C]:
    """Grow an interval from the mode, each step adding the more probable neighbour (the lower label on ties);
    a label's score is the interval's mass when it joins."""
    probabilities = x.probabilities
    assert probabilities is not None
    low = high = ops.first_max(probabilities)
    mass = ops.take(probabilities, low, 0.0)
    scores = ops.put([ops.zeros() for _ in range(x.n_labels)], low, mass)
    for _ in range(x.n_labels - 1):
        go_left = ops.take(probabilities, low - 1, -1.0) >= ops.take(probabilities, high + 1, -1.0)
        joining = ops.choose(go_left, low - 1, high + 1)
        mass = mass + ops.take(probabilities, joining, 0.0)
        scores = ops.put(scores, joining, mass)
        low = ops.choose(go_left, joining, low)
        high = ops.choose(go_left, high, joining)
    return scores


def learned_lac(x: ItemColumns[C, Ix], ops: Ops[C, Ix]) -> list[C]:
    """``1 - P(y | judge)`` with ``P(y | judge) = sum_s w_s M[s][y]`` summed in s order; ``w`` the judge's
    distribution, or a one-hot of its score when there is none."""
    assert x.learned is not None
    if x.probabilities is not None:
        weights = list(x.probabilities)
    else:
        assert x.judge is not None
        weights = ops.one_hot(x.judge, x.n_labels)
    scores = []
    for y in range(x.n_labels):
        total = weights[0] * x.learned[0][y]
        for s in range(1, x.n_labels):
            total = total + weights[s] * x.learned[s][y]
        scores.append(1.0 - total)
    return scores
