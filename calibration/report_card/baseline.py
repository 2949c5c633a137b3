"""What a judge is measured against: the no-information baseline and, where items have several annotators, the
human-human ceiling.

Rules, stated once:

* **No-information baseline**: the human-label distribution alone. Its exact agreement is the share of the most
  frequent label; its within-tolerance agreement is that of the best constant point ``c`` (the largest share of
  items with ``|human - c| < tolerance``; ties: the smaller label); its weighted kappa is 0 (any constant answer).
* **Ceiling**: each item's annotations (0 = missing), every ordered pair of two different annotators of the item
  one row of a table "annotator a x annotator b", so the table is symmetric and each unordered pair counts twice;
  the figures of :mod:`calibration.report_card.agreement` on it, documents resampled whole.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from calibration.errors import CalibrationError, EmptyCalibrationError
from calibration.report_card.agreement import (
    agreement_within,
    document_tables,
    quadratic_kappa,
    table_interval,
)
from calibration.report_card.card import Baseline, Ceiling
from calibration.unit_bootstrap import DEFAULT_RESAMPLES, UnitInterval

__all__ = ["no_information_baseline", "human_ceiling"]


def no_information_baseline(human_labels: np.ndarray | Sequence[int], n_labels: int, tolerance: int) -> Baseline:
    """The baseline of the human labels 1..K (module rules)."""
    labels = np.asarray(human_labels, dtype=np.int64)
    if labels.size == 0:
        raise EmptyCalibrationError("no items")
    counts = np.bincount(labels - 1, minlength=n_labels)[:n_labels]
    k = np.arange(n_labels)
    within = np.array([counts[np.abs(k - c) < tolerance].sum() for c in k]) / labels.size
    best = int(np.argmax(within))  # argmax returns the first maximum: the smaller label
    return Baseline(
        label_counts=[int(c) for c in counts],
        point=best + 1,
        exact_agreement=float(counts.max() / labels.size),
        within_tolerance=float(within[best]),
    )


def _optional(tables: np.ndarray, seed: int, n_resamples: int, alpha: float) -> UnitInterval | None:
    try:
        return table_interval(tables, quadratic_kappa, alpha=alpha, n_resamples=n_resamples, seed=seed)
    except EmptyCalibrationError:
        return None


def human_ceiling(
    annotations: np.ndarray,
    groups: Sequence[object] | np.ndarray,
    n_labels: int,
    tolerance: int,
    *,
    alpha: float = 0.05,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> Ceiling | None:
    """The ceiling of (items, annotators) integer labels 1..K, 0 = missing (module rules); None when no item has two
    annotators."""
    marks = np.asarray(annotations, dtype=np.int64)
    if marks.ndim != 2 or marks.shape[0] != len(groups):
        raise CalibrationError("annotations must be (items, annotators), one row per group entry")
    rows_a, rows_b, row_groups = [], [], []
    group_array = np.asarray(groups, dtype=object)
    for a in range(marks.shape[1]):
        for b in range(marks.shape[1]):
            if a == b:
                continue
            both = (marks[:, a] > 0) & (marks[:, b] > 0)
            rows_a.append(marks[both, a])
            rows_b.append(marks[both, b])
            row_groups.append(group_array[both])
    if not rows_a or sum(r.size for r in rows_a) == 0:
        return None
    tables = document_tables(np.concatenate(rows_a), np.concatenate(rows_b), np.concatenate(row_groups), n_labels)
    n_items = int(((marks > 0).sum(axis=1) >= 2).sum())
    return Ceiling(
        n_annotators=int(marks.shape[1]),
        n_items=n_items,
        weighted_kappa=_optional(tables, seed, n_resamples, alpha),
        exact_agreement=table_interval(tables, agreement_within(1), alpha=alpha, n_resamples=n_resamples, seed=seed),
        within_tolerance=table_interval(
            tables, agreement_within(tolerance), alpha=alpha, n_resamples=n_resamples, seed=seed
        ),
    )
