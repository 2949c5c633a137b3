"""Per-label evidence of a decision rule's accept rows, never pooled.

Rules, stated once: for every label 1..K, its CERTIFY item count and document count, the share of its items in
the row's accepted bins and the error rate among them; ``certifiable`` iff the label has >= ``MIN_LABEL_ITEMS``
CERTIFY items (fewer: listed, never pooled away). The row's mode is carried over.
"""

from __future__ import annotations

import numpy as np

from calibration.decisions.rule import Certification, LabelRow

__all__ = ["MIN_LABEL_ITEMS", "label_rows"]

MIN_LABEL_ITEMS = 20


def label_rows(
    bins: np.ndarray, labels: np.ndarray, group_index: np.ndarray, bad: np.ndarray, row: Certification, n_labels: int
) -> list[LabelRow]:
    """Every label 1..K of the CERTIFY part (module rules) for one accept row."""
    accepted = np.isin(bins, row.accepted_bins)
    rows = []
    for label in range(1, n_labels + 1):
        mine = labels == label
        n = int(mine.sum())
        taken = accepted & mine
        rows.append(
            LabelRow(
                label=label,
                n_items=n,
                n_groups=int(np.unique(group_index[mine]).size),
                tolerance=row.tolerance,
                accept_alpha=row.accept_alpha,
                accept_share=float(taken.sum() / n) if n else None,
                error_among_accepted=float(bad[taken].mean()) if taken.any() else None,
                certifiable=n >= MIN_LABEL_ITEMS,
                mode=row.mode,
            )
        )
    return rows
