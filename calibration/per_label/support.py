"""Which calibration evidence speaks for each human label: its own items, or a group pooled toward the scale's centre.

Rules, stated once: a set of labels is **supported** when the calibration holds at least ``MIN_LABEL_ITEMS`` items
and ``MIN_LABEL_DOCUMENTS`` documents whose human label is in it. Label y's evidence group starts as {y}; while it is
not supported and is not the whole scale it grows by one neighbour toward the centre (K + 1) / 2 of the scale (a
group whose mean label is below the centre takes the next label above, above the centre the next below; at the
centre, the neighbour with more items, the upper one on a tie). A label whose group is its own label has a promise of
its own; a pooled label's promise holds for its group taken together (the answer names the group). A group equal to
the whole scale that is still unsupported has no evidence at all: the label is always in the set.
The grouping reads only the calibration labels and documents, never the judge's verdicts.
With ``document_weight`` w (the planner's projection to a file of w times as many documents like these,
:mod:`calibration.report_card.planner`) every item and document counts w times: w items >= ``MIN_LABEL_ITEMS``
and w documents >= ``MIN_LABEL_DOCUMENTS``, each with 1e-9 of slack; w = 1 is the rule above.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MIN_LABEL_DOCUMENTS", "MIN_LABEL_ITEMS", "evidence_groups", "is_supported"]

MIN_LABEL_ITEMS = 20
MIN_LABEL_DOCUMENTS = 10
_SLACK = 1e-9  # a weighted count within rounding of a minimum reaches it


def is_supported(
    labels: np.ndarray, documents: np.ndarray, group: tuple[int, ...], *, document_weight: float = 1.0
) -> bool:
    """Whether the items whose label is in ``group`` reach both minimums (module rules)."""
    inside = np.isin(labels, group)
    items, documents_in = int(inside.sum()), int(np.unique(documents[inside]).size)
    return (
        document_weight * items >= MIN_LABEL_ITEMS - _SLACK
        and document_weight * documents_in >= MIN_LABEL_DOCUMENTS - _SLACK
    )


def _grown(group: list[int], labels: np.ndarray, n_labels: int) -> list[int]:
    low, high = group[0], group[-1]
    centre = (n_labels + 1) / 2
    mean = sum(group) / len(group)
    if high < n_labels and (mean < centre or low == 1):
        return [*group, high + 1]
    if low > 1 and (mean > centre or high == n_labels):
        return [low - 1, *group]
    above, below = int((labels == high + 1).sum()), int((labels == low - 1).sum())
    return [*group, high + 1] if above >= below else [low - 1, *group]


def evidence_groups(
    labels: object, documents: object, n_labels: int, *, document_weight: float = 1.0
) -> list[tuple[int, ...]]:
    """Label y's evidence group for y = 1..n_labels (module rules)."""
    label_array = np.asarray(labels, dtype=np.int64)
    document_array = np.asarray(documents)
    groups: list[tuple[int, ...]] = []
    for label in range(1, n_labels + 1):
        group = [label]
        while (
            not is_supported(label_array, document_array, tuple(group), document_weight=document_weight)
            and len(group) < n_labels
        ):
            group = _grown(group, label_array, n_labels)
        groups.append(tuple(group))
    return groups
