"""Closed-form intervals for a mean or a correlation: classical (human only), PPI++, Clopper-Pearson, Fisher z.

The estimand and the data are those of ``calibration.estimates.system``: the mean human score ``theta = E[Y]`` from
``n`` labelled items (human label ``Y``, judge verdict ``f``) and ``N`` unlabelled items (judge verdict only). The
``*_intervals`` functions take 2-D arrays (one row per resample, shape ``(B, n)``) so that a simulation runs in one
call.

Rules:


* **Classical.** ``mean(y) +- z_{1-alpha/2} sd(y) / sqrt(n)`` with ``sd`` the population standard deviation
  (``ddof=0``), exactly as ``ppi_py.classical_mean_ci``.
* **PPI++** (Angelopoulos, Duchi, Zrnic 2024, "PPI++: Efficient prediction-powered inference"), mean estimation,
  exactly as ``ppi_py.ppi_mean_ci`` with ``lam=None``: ``lambda = cov0(Y, f) / ((1 + n/N) var1(f_all))`` where
  ``cov0`` is the labelled sample covariance (``ddof=0``) and ``var1`` the variance (``ddof=1``) of the judge over
  labelled and unlabelled items together, **clipped to [0, 1]** (the package's ``clip=True``; the paper's optimum
  is unclipped, clipping keeps the estimator between the classical one (0) and plain PPI (1)). Estimate
* **Clopper-Pearson.** ``beta.ppf(alpha/2, k, n-k+1)``, ``beta.ppf(1-alpha/2, k+1, n-k)`` (0 and 1 at the ends).
* **Fisher z** (``fisher_z_interval``): ``tanh(atanh(r) -+ z_{1-alpha/2} / sqrt(n - k - 3))`` for a (partial)
  correlation controlling ``k`` covariate columns.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec
import numpy as np
from numpy.typing import NDArray
from scipy import stats

from calibration.errors import CalibrationError, EmptyCalibrationError, InvalidAlphaError

__all__ = [
    "Intervals",
    "as_rows",
    "check_alpha",
    "classical_intervals",
    "clopper_pearson",
    "fisher_z_interval",
    "two_sided_z",
    "ppi_intervals",
    "ppi_lambda",
]


def check_alpha(alpha: float) -> None:
    """Raise InvalidAlphaError unless ``alpha`` is a number strictly between 0 and 1."""
    if not (isinstance(alpha, int | float) and math.isfinite(alpha) and 0 < alpha < 1):
        raise InvalidAlphaError(f"alpha must be a number strictly between 0 and 1, got {alpha!r}")


def as_rows(values: np.ndarray | Sequence[float] | None, name: str) -> np.ndarray:
    """``values`` as finite rows (B, n); None (no values) raises EmptyCalibrationError like an empty row."""
    array = np.asarray(values, dtype=float)
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2 or array.shape[1] == 0:
        raise EmptyCalibrationError(f"{name} must hold at least one value per row, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise CalibrationError(f"{name} holds a value that is not a finite number")
    return array


def two_sided_z(alpha: float) -> float:
    """The standard normal quantile ``z_{1-alpha/2}``."""
    return float(stats.norm.ppf(1 - alpha / 2))


class Intervals(msgspec.Struct, frozen=True, kw_only=True):
    """One method's answer per resample row: point estimates, bounds, standard errors (NaN for betting)."""

    method: str
    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    se: np.ndarray
    lam: np.ndarray

    @property
    def width(self) -> np.ndarray:
        """high - low per row."""
        widths: NDArray[np.float64] = self.high - self.low
        return widths

    def covers(self, truth: float) -> np.ndarray:
        """Boolean per row: low <= truth <= high."""
        return (self.low <= truth) & (truth <= self.high)


def classical_intervals(y: np.ndarray | Sequence[float], alpha: float) -> Intervals:
    """Human-only CLT interval per row of ``y`` (shape (B, n) or (n,)): mean +- z sd0 / sqrt(n)."""
    check_alpha(alpha)
    y = as_rows(y, "human")
    n = y.shape[1]
    mean = y.mean(axis=1)
    se = y.std(axis=1) / math.sqrt(n)
    z = two_sided_z(alpha)
    return Intervals(
        method="classical", estimate=mean, low=mean - z * se, high=mean + z * se, se=se, lam=np.zeros_like(mean)
    )


def ppi_lambda(y: np.ndarray, f: np.ndarray, f_unlabelled: np.ndarray) -> np.ndarray:
    """PPI++ tuning weight per row, clipped to [0, 1]: cov0(Y, f) / ((1 + n/N) var1(f over all items))."""
    y, f = as_rows(y, "human"), as_rows(f, "judge")
    f_unl = np.asarray(f_unlabelled, dtype=float)
    n, big_n = y.shape[1], f_unl.size
    cov = ((y - y.mean(axis=1, keepdims=True)) * (f - f.mean(axis=1, keepdims=True))).mean(axis=1)
    total = n + big_n
    sum_all = f.sum(axis=1) + f_unl.sum()
    sq_all = (f * f).sum(axis=1) + float((f_unl * f_unl).sum())
    var_all = (sq_all - sum_all * sum_all / total) / (total - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = cov / ((1 + n / big_n) * var_all)
    lam = np.where(var_all > 1e-15, lam, 0.0)
    return np.clip(lam, 0.0, 1.0)


def ppi_intervals(
    y: np.ndarray | Sequence[float],
    f: np.ndarray | Sequence[float],
    f_unlabelled: np.ndarray | Sequence[float],
    alpha: float,
    lam: float | np.ndarray | None = None,
) -> Intervals:
    """PPI++ CLT interval per row (``lam`` None: power-tuned and clipped, as ``ppi_py.ppi_mean_ci``)."""
    check_alpha(alpha)
    y, f = as_rows(y, "human"), as_rows(f, "judge")
    f_unl = as_rows(f_unlabelled, "judge_unlabelled")[0]
    if y.shape != f.shape:
        raise EmptyCalibrationError(f"human and judge must have the same shape, got {y.shape} and {f.shape}")
    n, big_n = y.shape[1], f_unl.size
    weights = (
        ppi_lambda(y, f, f_unl) if lam is None else np.broadcast_to(np.asarray(lam, dtype=float), (y.shape[0],)).copy()
    )
    rect = y - weights[:, None] * f
    estimate = weights * f_unl.mean() + rect.mean(axis=1)
    se = np.sqrt(weights**2 * f_unl.var() / big_n + rect.var(axis=1) / n)
    z = two_sided_z(alpha)
    return Intervals(
        method="ppi++", estimate=estimate, low=estimate - z * se, high=estimate + z * se, se=se, lam=weights
    )


def clopper_pearson(successes: int, n: int, alpha: float) -> tuple[float, float]:
    """Exact two-sided (1 - alpha) binomial interval for ``successes`` of ``n`` (0 and 1 at the ends)."""
    check_alpha(alpha)
    if n < 1 or not 0 <= successes <= n:
        raise CalibrationError(f"need 0 <= successes <= n and n >= 1, got {successes} of {n}")
    low = 0.0 if successes == 0 else float(stats.beta.ppf(alpha / 2, successes, n - successes + 1))
    high = 1.0 if successes == n else float(stats.beta.ppf(1 - alpha / 2, successes + 1, n - successes))
    return low, high


def fisher_z_interval(r: float, n: int, k: int, alpha: float) -> tuple[float, float] | None:
    """(1 - alpha) interval of a (partial) correlation ``r`` from ``n`` rows controlling ``k`` covariate columns:
    Fisher z, ``tanh(atanh(r) -+ z_{1-alpha/2} / sqrt(n - k - 3))`` (the partial correlation's df ``n - 2 - k``
    minus one, as for the ordinary correlation where k = 0); None when ``n - k - 3 < 1`` or ``|r| = 1``."""
    check_alpha(alpha)
    if n - k - 3 < 1 or not math.isfinite(r) or abs(r) >= 1:
        return None
    centre, half = math.atanh(r), two_sided_z(alpha) / math.sqrt(n - k - 3)
    return math.tanh(centre - half), math.tanh(centre + half)
