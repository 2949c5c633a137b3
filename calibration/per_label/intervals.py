"""Per-label acceptance intervals of the judge's feature, and the prediction set they make.

Rules, stated once (K labels, level alpha, the feature f of a verdict: the integer score, the expected score or a
mean of samples):

* **Sides.** Label 1 is bounded above only, at level alpha; label K below only, at alpha; every other label on both
  sides at alpha / 2 each (a union bound), so P(f outside label y's interval | human label y) <= alpha.
* **One side** (:func:`calibration.conformal.document_crc.document_crc_thresholds`, documents as the unit): over
  the items of label y's evidence group (:mod:`calibration.per_label.support`), the upper bound is the document-level
  conformal risk control threshold of the scores f, the lower bound minus that of the scores -f. A side that cannot
  qualify (alpha (n + 1) < 1 with n documents, or a label with no evidence) is unbounded.
* **Projected** (``document_weight`` w, the planner's projection, :mod:`calibration.report_card.planner`): every
  document counts w times in each side's conformal risk control (:mod:`calibration.conformal.document_crc`).
* **Monotone and without gaps.** The raw intervals [a_y, b_y] are widened, never narrowed: a_y <- min over y' >= y
  of a_y', then b_y <- max over y' <= y of b_y', then b_y <- max(b_y, a_(y+1)). Widening keeps every promise. After it
  both ends are non-decreasing in y, a_1 = -inf and b_K = +inf.
* **Set** (:func:`label_set`): the labels whose interval holds f (a_y - 1e-12 <= f <= b_y + 1e-12, the membership
  tolerance of the conformal sets). With the widening the set is an interval [low, high] of labels, never empty, and
  both ends are non-decreasing in f.
* **Promise** (for every label y with a group of its own; for a pooled label, for its group): on average over the
  calibration documents and a new document, the share of the new document's label-y items whose label is in the set
  is >= 1 - alpha. Proof sketch: each side is conformal risk control over the documents holding label y (exchangeable
  given that they hold it), loss = the share of the document's label-y items beyond the bound; the two sides' losses
  add up to at most alpha; widening only lowers the losses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec
import numpy as np

from calibration.conformal.document_crc import document_crc_thresholds
from calibration.conformal.methods import MEMBERSHIP_TOLERANCE

__all__ = ["LabelIntervals", "fit_label_intervals", "label_set"]


class LabelIntervals(msgspec.Struct, frozen=True, kw_only=True):
    """At one level: each label's interval of the feature (index 0 = label 1); None = unbounded on that side."""

    alpha: float
    lower: list[float | None]
    upper: list[float | None]


def _side_levels(label: int, n_labels: int, alpha: float) -> tuple[float, float]:
    """(lower-side level, upper-side level) of one label (module rules); 0 = that side is not bounded."""
    if label == 1:
        return 0.0, alpha
    if label == n_labels:
        return alpha, 0.0
    return alpha / 2, alpha / 2


def _widened(lower: list[float], upper: list[float]) -> tuple[list[float], list[float]]:
    n = len(lower)
    low, high = list(lower), list(upper)
    for y in range(n - 2, -1, -1):
        low[y] = min(low[y], low[y + 1])
    for y in range(1, n):
        high[y] = max(high[y], high[y - 1])
    for y in range(n - 1):
        high[y] = max(high[y], low[y + 1])
    return low, high


def fit_label_intervals(
    features: object,
    labels: object,
    documents: object,
    groups: Sequence[tuple[int, ...]],
    alphas: Sequence[float],
    *,
    supported: Sequence[bool],
    document_weight: float = 1.0,
) -> list[LabelIntervals]:
    """The widened intervals at each alpha (module rules); ``groups[y-1]`` is label y's evidence group and
    ``supported[y-1]`` whether it has any evidence."""
    f = np.asarray(features, dtype=float)
    y = np.asarray(labels, dtype=np.int64)
    docs = np.asarray(documents)
    n_labels, weight = len(groups), document_weight
    raw_low = [[-math.inf] * n_labels for _ in alphas]
    raw_high = [[math.inf] * n_labels for _ in alphas]
    for label in range(1, n_labels + 1):
        if not supported[label - 1]:
            continue
        inside = np.isin(y, groups[label - 1])
        sides = [_side_levels(label, n_labels, float(alpha)) for alpha in alphas]
        # one document-level CRC curve per side, read at every level (document_crc_thresholds takes them all)
        if sides and sides[0][1] > 0:
            highs = document_crc_thresholds(f[inside], docs[inside], [h for _, h in sides], document_weight=weight)
            for position, bound in enumerate(highs):
                raw_high[position][label - 1] = math.inf if bound is None else bound
        if sides and sides[0][0] > 0:
            lows = document_crc_thresholds(-f[inside], docs[inside], [lo for lo, _ in sides], document_weight=weight)
            for position, bound in enumerate(lows):
                raw_low[position][label - 1] = -math.inf if bound is None else -bound
    result = []
    for position, alpha in enumerate(alphas):
        low, high = _widened(raw_low[position], raw_high[position])
        result.append(
            LabelIntervals(
                alpha=float(alpha),
                lower=[None if math.isinf(v) else float(v) for v in low],
                upper=[None if math.isinf(v) else float(v) for v in high],
            )
        )
    return result


def label_set(intervals: LabelIntervals, feature: float) -> tuple[int, int]:
    """The set's ends (lowest label, highest label) at ``feature`` (module rules)."""
    tol = MEMBERSHIP_TOLERANCE
    inside = [
        label
        for label, (low, high) in enumerate(zip(intervals.lower, intervals.upper, strict=True), start=1)
        if (low is None or feature >= low - tol) and (high is None or feature <= high + tol)
    ]
    if not inside:  # impossible for widened intervals; an artifact edited by hand gets the full scale
        return 1, len(intervals.lower)
    return inside[0], inside[-1]
