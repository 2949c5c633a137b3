"""Percentile bootstrap intervals with the sampled unit (a document, a question, an input) resampled whole.

A figure of the offline studies is a statistic of per-unit sums: each unit ``u`` contributes a numerator
``a[u, j]`` and a denominator ``b[u, j]`` to each of ``k`` columns, and the figure is

    mean over columns j of  sum_u a[u, j] / sum_u b[u, j]

One column covers the usual cases: a mean of per-unit values (``a`` = the value, ``b`` = 1), a pooled share of
items nested in units (``a`` = items that count, ``b`` = items: pairs consistent in a document, set sizes of a
document's items). Several columns cover a mean of per-split means over the same units (a held-out figure
averaged over splits, ``b[u, j]`` = 0 where unit ``u`` was not in split ``j``'s test side).

Rules, stated once:

* **Resampling** (``cluster_bootstrap_interval``): ``n_resamples`` draws of ``n`` units with replacement,
  ``numpy.random.default_rng(seed).integers(0, n, (n_resamples, n))`` (the draw ``scipy.stats.bootstrap`` makes
  with the same generator); each draw weights unit ``u`` by how often it was drawn. Items of a unit move together,
  so the interval accounts for their correlation (an item-level interval would not).
* **Statistic per draw**: the figure above on the weighted sums; a column whose weighted denominator is 0 in a
  draw is left out of that draw's mean over columns; a draw with no column left is dropped (``n_dropped``).
* **Interval**: the percentile interval, numpy's linear quantiles at ``alpha / 2`` and ``1 - alpha / 2`` of the
  draws' statistics (``scipy.stats.bootstrap(..., method="percentile")``).
* **Shares with one 0/1 observation per unit** use the exact Clopper-Pearson interval instead
  (:func:`calibration.estimates.intervals.clopper_pearson`); no resampling there.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import numpy as np

from calibration.errors import CalibrationError, EmptyCalibrationError
from calibration.estimates.intervals import check_alpha

__all__ = [
    "DEFAULT_RESAMPLES",
    "UnitInterval",
    "cluster_bootstrap_interval",
    "mean_interval",
    "ratio_interval",
    "split_mean_interval",
    "unit_draw_weights",
]

DEFAULT_RESAMPLES = 2000


class UnitInterval(msgspec.Struct, frozen=True, kw_only=True):
    """A percentile bootstrap interval over units: the figure, its bounds, and how it was drawn."""

    estimate: float
    low: float
    high: float
    n_units: int
    n_resamples: int
    n_dropped: int
    seed: int

    @property
    def bounds(self) -> list[float]:
        """``[low, high]``, the form the study reports write."""
        return [self.low, self.high]


def unit_draw_weights(n: int, n_resamples: int, seed: int) -> np.ndarray:
    """The draws of the module's resampling rule as weights: row r counts how often draw r took each of the n units
    (``default_rng(seed).integers(0, n, (n_resamples, n))``), shape (n_resamples, n), floats."""
    draws = np.random.default_rng(seed).integers(0, n, (n_resamples, n))
    flat = (np.arange(n_resamples)[:, None] * n + draws).ravel()
    return np.bincount(flat, minlength=n_resamples * n).reshape(n_resamples, n).astype(float)


def _statistic(numerators: np.ndarray, denominators: np.ndarray) -> np.ndarray:
    """Per row of weighted sums (rows, k): mean over columns with a positive denominator (NaN when none)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(denominators > 0, numerators / np.where(denominators > 0, denominators, 1.0), np.nan)
    defined = ~np.isnan(ratios)
    counts = defined.sum(axis=1)
    totals = np.where(defined, ratios, 0.0).sum(axis=1)
    return np.where(counts > 0, totals / np.maximum(counts, 1), np.nan)


def _matrix(values: np.ndarray | Sequence[float] | Sequence[Sequence[float]], name: str) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] == 0:
        raise EmptyCalibrationError(f"{name} must hold at least one unit and one column, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise CalibrationError(f"{name} holds a value that is not a finite number")
    return array


def cluster_bootstrap_interval(
    numerators: np.ndarray | Sequence[float] | Sequence[Sequence[float]],
    denominators: np.ndarray | Sequence[float] | Sequence[Sequence[float]],
    *,
    alpha: float = 0.05,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> UnitInterval:
    """The (1 - alpha) percentile interval of ``mean_j sum_u a[u, j] / sum_u b[u, j]`` over units (module rules).

    ``numerators`` and ``denominators``: one row per unit, one column per ratio (1-D = one column). Denominators
    must be >= 0, and the figure must be defined on the data (some column with a positive denominator)."""
    check_alpha(alpha)
    a, b = _matrix(numerators, "numerators"), _matrix(denominators, "denominators")
    if a.shape != b.shape:
        raise CalibrationError(f"numerators and denominators differ in shape: {a.shape} and {b.shape}")
    if np.any(b < 0):
        raise CalibrationError("denominators must be >= 0")
    if n_resamples < 1:
        raise CalibrationError(f"n_resamples must be >= 1, got {n_resamples}")
    estimate = float(_statistic(a.sum(axis=0)[None, :], b.sum(axis=0)[None, :])[0])
    if np.isnan(estimate):
        raise EmptyCalibrationError("every denominator is 0: the figure is undefined")
    n = a.shape[0]
    weights = unit_draw_weights(n, n_resamples, seed)
    statistics = _statistic(weights @ a, weights @ b)
    kept = statistics[~np.isnan(statistics)]
    low, high = np.quantile(kept, [alpha / 2, 1 - alpha / 2])
    return UnitInterval(
        estimate=estimate,
        low=float(low),
        high=float(high),
        n_units=n,
        n_resamples=n_resamples,
        n_dropped=int(n_resamples - kept.size),
        seed=seed,
    )


def mean_interval(
    values: np.ndarray | Sequence[float], *, alpha: float = 0.05, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> UnitInterval:
    """The percentile interval of a mean of one value per unit (``b`` = 1)."""
    a = np.asarray(values, dtype=float)
    return cluster_bootstrap_interval(a, np.ones_like(a), alpha=alpha, n_resamples=n_resamples, seed=seed)


def ratio_interval(
    counts: np.ndarray | Sequence[float],
    totals: np.ndarray | Sequence[float],
    *,
    alpha: float = 0.05,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> UnitInterval:
    """The percentile interval of a pooled share ``sum counts / sum totals`` with units resampled whole."""
    return cluster_bootstrap_interval(counts, totals, alpha=alpha, n_resamples=n_resamples, seed=seed)


def split_mean_interval(
    units: np.ndarray | Sequence[int],
    test_indices: Sequence[np.ndarray],
    values: Sequence[np.ndarray],
    *,
    alpha: float = 0.05,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> UnitInterval:
    """The percentile interval of a mean over splits of each split's mean item value on its test side, units
    resampled whole: ``units`` gives every item's unit (integer codes), ``test_indices[j]`` split ``j``'s test
    items and ``values[j]`` their values (the point figure is ``mean_j mean(values[j])``). Units on no split's test
    side are not units of the figure and are not resampled."""
    codes = np.asarray(units)
    if len(test_indices) != len(values) or not test_indices:
        raise EmptyCalibrationError("need one array of values per split and at least one split")
    n_units = int(codes.max()) + 1 if codes.size else 0
    a = np.zeros((n_units, len(values)))
    b = np.zeros((n_units, len(values)))
    for column, (index, value) in enumerate(zip(test_indices, values, strict=True)):
        owner = codes[np.asarray(index, dtype=int)]
        a[:, column] = np.bincount(owner, weights=np.asarray(value, dtype=float), minlength=n_units)
        b[:, column] = np.bincount(owner, minlength=n_units)
    present = b.sum(axis=1) > 0
    return cluster_bootstrap_interval(a[present], b[present], alpha=alpha, n_resamples=n_resamples, seed=seed)
