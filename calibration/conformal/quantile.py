"""The conformal threshold: an order statistic of the calibration scores, over all items or per group.

Which order statistic is :mod:`calibration.order_statistics` (``threshold_rank``: the marginal split-conformal
rank, or the training-conditional PAC rank when ``delta`` is given); this module checks the scores and takes it.

- **Quantile.** ``q_hat`` is the ``ceil((1 - alpha)(n + 1))``-th smallest calibration score, computed with exact
  rational arithmetic (alpha is read as the nearest fraction with denominator <= 10**9, so 0.1 is 1/10). When
  that rank exceeds n, ``q_hat`` is ``None`` and every set is the full scale.
- **PAC.** With ``delta`` the rank is the PAC rank instead (coverage >= 1 - alpha with probability >= 1 - delta
  over the calibration data); alpha and delta are read as exact fractions in the same way.
- **Groups.** ``group_quantiles`` gives one threshold per group value 1..K, ``None`` where the group is empty or
  too small for a finite threshold (the group fallback of :mod:`calibration.conformal.fit`).
"""

from __future__ import annotations

import numpy as np

from calibration.conformal.inputs import check_alpha, check_delta
from calibration.errors import EmptyCalibrationError, InvalidProbabilitiesError
from calibration.order_statistics import threshold_rank

__all__ = [
    "conformal_quantile",
    "group_quantiles",
]


def conformal_quantile(scores: object, alpha: float, delta: float | None = None) -> float | None:
    """The k-th smallest score, or None when k exceeds n: k = ceil((1-alpha)(n+1)) (marginal, exact rational
    rank) when ``delta`` is None, else the PAC rank of :mod:`calibration.order_statistics` (coverage >= 1-alpha
    with probability >= 1-delta over the calibration data)."""
    level = check_alpha(alpha)
    confidence = check_delta(delta)
    values = np.asarray(scores, dtype=float).ravel()
    n = values.size
    if n == 0:
        raise EmptyCalibrationError("the calibration set is empty: a threshold needs at least one score")
    if not np.isfinite(values).all():
        raise InvalidProbabilitiesError("calibration scores hold NaN or infinity")
    rank = threshold_rank(n, level, confidence)
    if rank > n:
        return None
    return float(np.partition(values, rank - 1)[rank - 1])


def group_quantiles(
    true_scores: np.ndarray, groups: np.ndarray, n_labels: int, alpha: float, delta: float | None = None
) -> tuple[dict[int, float | None], dict[int, int]]:
    """One conformal threshold per group value 1..K (None where the group is empty or too small)."""
    thresholds: dict[int, float | None] = {}
    sizes: dict[int, int] = {}
    for group in range(1, n_labels + 1):
        members = groups == group
        sizes[group] = int(members.sum())
        thresholds[group] = conformal_quantile(true_scores[members], alpha, delta) if members.any() else None
    return thresholds, sizes
