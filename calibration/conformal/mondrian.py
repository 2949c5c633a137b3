"""Mondrian groupings (categorizers): which calibration items share a threshold, and which threshold a label meets.

A method is a nonconformity score with a grouping (:mod:`calibration.conformal.methods`):

============= ================= ==========================================================================
grouping      ``name``          one threshold for
============= ================= ==========================================================================
``MARGINAL``  ``None``          all items (plain split conformal)
``BY_JUDGE``  ``judge_score``   each judge score: an item meets the threshold of its judge's score
``BY_LABEL``  ``label``         each human label: candidate label y meets the threshold of label y
============= ================= ==========================================================================

A threshold table lists the thresholds by group (index 0 unused for the grouped ones; the marginal table has one
entry); ``+inf`` stands for a ``None`` threshold or a group absent from calibration, so such a group's labels are
always in the set (:mod:`calibration.conformal.fit`, group fallback). ``limits`` is written once for one item and
for n items (:mod:`calibration.conformal.kernels`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calibration.conformal.kernels import C, Ix, Ops

__all__ = [
    "BY_JUDGE",
    "BY_LABEL",
    "MARGINAL",
    "Grouping",
]


def _grouped_table(group_thresholds: Mapping[int, float | None] | None, n_labels: int) -> list[float]:
    """Thresholds indexed by group value 1..K (index 0 unused), +inf for a missing or too-small group."""
    assert group_thresholds is not None
    table = [math.inf] * (n_labels + 1)
    for group, threshold in group_thresholds.items():
        if threshold is not None:
            table[int(group)] = threshold
    return table


@dataclass(frozen=True)
class Grouping:
    """The marginal grouping: one threshold for all items. Subclasses group by judge score or by human label."""

    name: str | None = None  # recorded in FittedConformal.grouping
    reads_judge: bool = False  # an item's limits depend on its judge score

    def keys(self, labels: NDArray[np.int64], judge_scores: NDArray[np.int64] | None) -> NDArray[np.int64] | None:
        """The group of each calibration item (None: no groups)."""
        return None

    def table(
        self, threshold: float | None, group_thresholds: Mapping[int, float | None] | None, n_labels: int
    ) -> list[float]:
        """A fitted predictor's thresholds as a table (module rules)."""
        return [math.inf if threshold is None else threshold]

    def limits(self, table: Sequence[float], judge: Ix | None, n_labels: int, ops: Ops[C, Ix]) -> list[C | float]:
        """The threshold that each candidate label's score is compared with, per item."""
        return [table[0]] * n_labels


@dataclass(frozen=True)
class _ByJudgeScore(Grouping):
    """One threshold per judge score; an item meets the threshold of its judge's score."""

    name: str | None = "judge_score"
    reads_judge: bool = True

    def keys(self, labels: NDArray[np.int64], judge_scores: NDArray[np.int64] | None) -> NDArray[np.int64] | None:
        """The judge's score of each calibration item."""
        assert judge_scores is not None
        return judge_scores

    def table(
        self, threshold: float | None, group_thresholds: Mapping[int, float | None] | None, n_labels: int
    ) -> list[float]:
        """Thresholds by judge score 1..K (module rules)."""
        return _grouped_table(group_thresholds, n_labels)

    def limits(self, table: Sequence[float], judge: Ix | None, n_labels: int, ops: Ops[C, Ix]) -> list[C | float]:
        """Every label meets the threshold of the item's judge score."""
        assert judge is not None
        return [ops.lookup(table, judge + 1)] * n_labels


@dataclass(frozen=True)
class _ByLabel(Grouping):
    """One threshold per human label (class-conditional); candidate label y meets the threshold of label y."""

    name: str | None = "label"

    def keys(self, labels: NDArray[np.int64], judge_scores: NDArray[np.int64] | None) -> NDArray[np.int64] | None:
        """The human label of each calibration item."""
        return labels

    def table(
        self, threshold: float | None, group_thresholds: Mapping[int, float | None] | None, n_labels: int
    ) -> list[float]:
        """Thresholds by human label 1..K (module rules)."""
        return _grouped_table(group_thresholds, n_labels)

    def limits(self, table: Sequence[float], judge: Ix | None, n_labels: int, ops: Ops[C, Ix]) -> list[C | float]:
        """Label y meets the threshold of label y."""
        return list(table[1 : n_labels + 1])


MARGINAL = Grouping()
BY_JUDGE = _ByJudgeScore()
BY_LABEL = _ByLabel()
