"""Rank and linear correlations, and partial correlation controlling for categorical covariates.

Every function takes two equally long 1-D sequences of numbers and returns a :class:`Correlation`.

=====================================================  ==========================================
call                                                    what it computes
=====================================================  ==========================================
``kendall_tau_b(x, y)``                                 Kendall's tau-b and its p-value (scipy)
``spearman(x, y)``                                      Spearman's rho and its p-value (scipy)
``pearson(x, y)``                                       Pearson's r and its p-value (scipy)
``partial_correlation(x, y, [system])``                 Pearson r of x and y after removing system
``partial_correlation(x, y, [system], "spearman")``     Spearman rho of the same residuals
=====================================================  ==========================================

Rules shared by all functions:

* **Missing values.** A row where ``x`` or ``y`` is NaN is dropped (pairwise deletion), together with its
  covariate labels; ``Correlation.n`` is the number of rows actually used. Infinite values are refused.
* **Refused input** (raising a :class:`calibration.errors.CalibrationError`): sequences of different
  lengths or fewer than 3 usable rows (:class:`EmptyCalibrationError`); a constant ``x`` or ``y``, or, for a
  partial correlation, residuals that are all zero because the covariates explain the variable completely,
  or no degrees of freedom left (:class:`CalibrationError`: the correlation is undefined there).

Partial correlation rule (FRANK, Pagnoni et al. NAACL 2021, and its released ``evaluate.py``): build the
design matrix ``[1 | onehot(c_1) | ... | onehot(c_m)]`` with **every** level of every categorical covariate,
fit ``x`` and ``y`` on it by least squares (``numpy.linalg.lstsq``, minimum-norm solution), and correlate the
residuals. Keeping all levels makes the design rank-deficient, but the residuals are the projection onto the
orthogonal complement of the design's column space, which does not depend on the parametrisation; so the
result equals the drop-one-level encoding, does not depend on how levels are labelled, and nested
covariates (system within dataset) can be given together without harm. ``"spearman"`` ranks the residuals
(raw values are residualised first, then ranked), as FRANK's evaluation does; before ranking, residuals are
rounded to 12 significant digits of the largest one, so that residuals equal in exact arithmetic tie
whatever the floating-point noise of the fit (otherwise the level labels could change the ranks of ties).

p-value of a partial correlation (Pearson and Spearman alike; for Spearman it is the usual large-sample
approximation, the one scipy uses): two-sided t-test ``t = r * sqrt(df / (1 - r**2))`` with
``df = n - 2 - k``, where ``k = rank(design) - 1`` is the number of independent covariate columns (for one
covariate with L levels present, ``k = L - 1``). With no covariates this is exactly scipy's Pearson p-value;
FRANK's own script reports scipy's p-value on the residuals (``df = n - 2``), which ignores the ``k``
fitted columns and is slightly too small.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Literal

import msgspec
import numpy as np
from numpy.typing import NDArray
from scipy import stats as _scipy_stats

from calibration.errors import CalibrationError, EmptyCalibrationError, UnknownMethodError

__all__ = [
    "Correlation",
    "kendall_tau_b",
    "kendall_tau_b_statistic",
    "partial_correlation",
    "pearson",
    "spearman",
]

_MIN_ROWS = 3
# Residuals smaller than this share of the centred variable's norm count as "explained completely".
_RELATIVE_ZERO = 1e-10


class Correlation(msgspec.Struct, frozen=True, kw_only=True):
    """A correlation coefficient, its two-sided p-value, the rows used and the method's name.

    ``method`` is one of ``"kendall_tau_b"``, ``"spearman"``, ``"pearson"``, ``"partial_pearson"``,
    ``"partial_spearman"``.
    """

    statistic: float
    p_value: float
    n: int
    method: str


def _as_vector(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise CalibrationError(f"{name} must be a sequence of numbers; got {values!r:.80}") from exc
    if array.ndim != 1:
        raise CalibrationError(f"{name} must be one-dimensional; got shape {array.shape}")
    if np.isinf(array).any():
        position = int(np.flatnonzero(np.isinf(array))[0])
        raise CalibrationError(f"{name} holds an infinite value {array[position]} at row {position}")
    return array


def _paired(
    x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate two vectors; return them without NaN rows, and the mask of kept rows."""
    xs, ys = _as_vector(x, "x"), _as_vector(y, "y")
    if xs.shape != ys.shape:
        raise EmptyCalibrationError(f"x and y must have the same length; got {xs.size} and {ys.size}")
    keep = ~(np.isnan(xs) | np.isnan(ys))
    n = int(keep.sum())
    if n < _MIN_ROWS:
        raise EmptyCalibrationError(
            f"a correlation needs at least {_MIN_ROWS} rows where x and y are both present; got n={n} "
            f"(of {xs.size} rows)"
        )
    xs, ys = xs[keep], ys[keep]
    for name, array in (("x", xs), ("y", ys)):
        if np.all(array == array[0]):
            raise CalibrationError(f"{name} is constant (every value = {array[0]}): correlation undefined")
    return xs, ys, keep


def kendall_tau_b(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> Correlation:
    """Kendall's tau-b of x and y (ties corrected) with scipy's two-sided p-value; NaN rows dropped."""
    xs, ys, _ = _paired(x, y)
    result = _scipy_stats.kendalltau(xs, ys, variant="b")
    return Correlation(
        statistic=float(result.statistic), p_value=float(result.pvalue), n=xs.size, method="kendall_tau_b"
    )


def spearman(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> Correlation:
    """Spearman's rho of x and y (average ranks for ties) with scipy's two-sided p-value; NaN rows dropped."""
    xs, ys, _ = _paired(x, y)
    result = _scipy_stats.spearmanr(xs, ys)
    return Correlation(statistic=float(result.statistic), p_value=float(result.pvalue), n=xs.size, method="spearman")


def pearson(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> Correlation:
    """Pearson's r of x and y with scipy's exact two-sided p-value; NaN rows dropped."""
    xs, ys, _ = _paired(x, y)
    result = _scipy_stats.pearsonr(xs, ys)
    return Correlation(statistic=float(result.statistic), p_value=float(result.pvalue), n=xs.size, method="pearson")


def _one_hot_design(covariates: Sequence[Sequence[Hashable]], n_rows: int) -> np.ndarray:
    """Intercept plus one indicator column per level of every covariate (no level dropped)."""
    if isinstance(covariates, str | bytes):
        raise CalibrationError("covariates must be a sequence of covariate columns, not a string")
    columns: list[NDArray[np.float64]] = [np.ones(n_rows)]
    for index, covariate in enumerate(covariates):
        if isinstance(covariate, str | bytes):
            raise CalibrationError(
                f"covariates[{index}] is a string ({covariate!r:.40}); pass a list of columns, "
                "e.g. [model_names] rather than model_names"
            )
        labels = list(covariate)
        if len(labels) != n_rows:
            raise EmptyCalibrationError(f"covariates[{index}] has {len(labels)} labels; x and y have {n_rows} rows")
        codes: dict[Hashable, int] = {}
        for row, label in enumerate(labels):
            if label is None or (isinstance(label, float) and math.isnan(label)):
                raise CalibrationError(f"covariates[{index}] has a missing label ({label!r}) at row {row}")
            codes.setdefault(label, len(codes))
        block = np.zeros((n_rows, len(codes)))
        block[np.arange(n_rows), [codes[label] for label in labels]] = 1.0
        columns.append(block)
    return np.column_stack(columns)


def _residualise(values: np.ndarray, design: np.ndarray, name: str) -> np.ndarray:
    coefficients, *_ = np.linalg.lstsq(design, values, rcond=None)
    residuals: NDArray[np.float64] = values - design @ coefficients
    spread = np.linalg.norm(values - values.mean())
    if np.linalg.norm(residuals) <= _RELATIVE_ZERO * spread:
        raise CalibrationError(
            f"{name} is fully explained by the covariates (all residuals are zero): partial correlation undefined"
        )
    return residuals


def _snap(residuals: np.ndarray) -> np.ndarray:
    """Round to 12 significant digits of the largest residual (restores exact ties before ranking)."""
    largest = float(np.max(np.abs(residuals)))
    decimals = 12 - math.ceil(math.log10(largest))
    return np.round(residuals, decimals)


def _t_test_p_value(r: float, df: int) -> float:
    if abs(r) >= 1.0:
        return 0.0
    t = r * math.sqrt(df / (1.0 - r * r))
    return float(2.0 * _scipy_stats.t.sf(abs(t), df))


def partial_correlation(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    covariates: Sequence[Sequence[Hashable]],
    method: Literal["pearson", "spearman"] = "pearson",
) -> Correlation:
    """Correlation of x and y after least-squares removal of intercept + one-hot categorical covariates.

    Parameters
    ----------
    x, y : sequences of float, shape (n,)
        NaN rows (in either) are dropped with their covariate labels; ``n`` in the result counts the rest.
    covariates : sequence of m label sequences, each of shape (n,)
        Categorical confounders (e.g. ``[model_names]``); hashable labels compared by equality; ``[]``
        means no control (plain correlation, with the t-test p-value).
    method : ``"pearson"`` or ``"spearman"``
        Correlation of the residuals.

    Returns
    -------
    Correlation with method ``"partial_pearson"`` or ``"partial_spearman"``; p-value from the t-test with
    ``n - 2 - k`` degrees of freedom, ``k = rank(design) - 1`` (see the module docstring).

    Raises
    ------
    UnknownMethodError
        ``method`` is neither ``"pearson"`` nor ``"spearman"``.
    EmptyCalibrationError
        Lengths differ, or fewer than 3 usable rows.
    CalibrationError
        Constant input, residuals all zero, a missing covariate label, or no degrees of freedom left.
    """
    if method not in ("pearson", "spearman"):
        raise UnknownMethodError(f"partial correlation method must be 'pearson' or 'spearman'; got {method!r}")
    xs_all, ys_all = _as_vector(x, "x"), _as_vector(y, "y")
    if xs_all.shape != ys_all.shape:
        raise EmptyCalibrationError(f"x and y must have the same length; got {xs_all.size} and {ys_all.size}")
    design_all = _one_hot_design(covariates, xs_all.size)
    xs, ys, keep = _paired(xs_all, ys_all)
    design = design_all[keep]
    k = int(np.linalg.matrix_rank(design)) - 1
    df = xs.size - 2 - k
    if df < 1:
        raise CalibrationError(
            f"no degrees of freedom left: n={xs.size} rows, k={k} covariate columns (need n - 2 - k >= 1)"
        )
    x_residuals = _residualise(xs, design, "x")
    y_residuals = _residualise(ys, design, "y")
    if method == "pearson":
        statistic = float(_scipy_stats.pearsonr(x_residuals, y_residuals).statistic)
    else:
        statistic = float(_scipy_stats.spearmanr(_snap(x_residuals), _snap(y_residuals)).statistic)
    statistic = min(1.0, max(-1.0, statistic))
    return Correlation(
        statistic=statistic, p_value=_t_test_p_value(statistic, df), n=xs.size, method=f"partial_{method}"
    )


def kendall_tau_b_statistic(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float | None:
    """Kendall's tau-b of two short equal-length vectors, statistic only (no NaN handling, no p-value).

    tau_b = (concordant - discordant) / sqrt((n0 - ties_x) (n0 - ties_y)) over the n0 = n(n-1)/2 pairs, the same
    number as :func:`kendall_tau_b`; None when x or y is constant (undefined). For the many small rankings of a
    study, where scipy's per-call overhead dominates; O(n^2) memory.

    Raises
    ------
    CalibrationError
        x and y differ in length or hold fewer than 2 values.
    """
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if xs.shape != ys.shape or xs.ndim != 1 or xs.size < 2:
        raise CalibrationError(f"x and y must be 1-D of equal length >= 2, got shapes {xs.shape} and {ys.shape}")
    upper = np.triu_indices(xs.size, k=1)
    dx = np.sign(xs[:, None] - xs[None, :])[upper]
    dy = np.sign(ys[:, None] - ys[None, :])[upper]
    untied_x, untied_y = np.count_nonzero(dx), np.count_nonzero(dy)
    if untied_x == 0 or untied_y == 0:
        return None
    return float(np.sum(dx * dy) / np.sqrt(float(untied_x) * float(untied_y)))
