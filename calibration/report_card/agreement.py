"""Judge-versus-human agreement from contingency tables, with documents resampled whole.

Every figure here is a function of one K x K table ``T[j, h]`` = items with judge label ``j + 1`` and human label
``h + 1`` (labels 1..K). A cell's table is the sum of its documents' tables, so a bootstrap draw (documents drawn with
replacement, :mod:`calibration.unit_bootstrap`'s draw: ``default_rng(seed).integers(0, n, (n_resamples, n))``) is
the documents' tables weighted by how often each was drawn, and every figure of every draw is computed at once.

Rules, stated once:

* **Quadratic weighted kappa** (Cohen 1968): ``1 - sum w O / sum w E`` with disagreement weights
  ``w[j, h] = (j - h)^2`` and ``E`` the outer product of the margins over the total (``sklearn``'s
  ``cohen_kappa_score(..., weights="quadratic")``). A constant answer has kappa 0; undefined (NaN) when
  ``sum w E`` is 0 (both sides on one and the same label).
* **Spearman's rho** of the table: each label's midrank from its margin (ties share the average rank), then the
  Pearson correlation of the midranks weighted by the table (``scipy.stats.spearmanr`` of the expanded pairs).
  Undefined when either side holds one label.
* **Agreement within tolerance t**: the share of items with ``|judge - human| < t`` (t = 1: exact agreement), the
  error rule of the certified decisions (an error is ``|human - point| >= tolerance``).
* **Intervals**: percentile, numpy's linear quantiles at ``alpha / 2`` and ``1 - alpha / 2`` of the draws whose
  figure is defined (``n_dropped`` counts the others), as :func:`calibration.unit_bootstrap.cluster_bootstrap_interval`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from calibration.errors import CalibrationError, EmptyCalibrationError
from calibration.estimates.intervals import check_alpha
from calibration.unit_bootstrap import DEFAULT_RESAMPLES, UnitInterval, unit_draw_weights

__all__ = [
    "TableFigure",
    "agreement_within",
    "document_tables",
    "quadratic_kappa",
    "spearman_of_tables",
    "table_interval",
]

TableFigure = Callable[[np.ndarray], np.ndarray]  # (..., K, K) tables -> (...) figures


def document_tables(
    judge_labels: np.ndarray | Sequence[int],
    human_labels: np.ndarray | Sequence[int],
    groups: Sequence[object] | np.ndarray,
    n_labels: int,
) -> np.ndarray:
    """(documents, K, K) counts: ``[d, j - 1, h - 1]`` = items of document d with judge label j and human label h
    (documents in order of first appearance)."""
    judge, human = np.asarray(judge_labels, dtype=np.int64), np.asarray(human_labels, dtype=np.int64)
    if judge.shape != human.shape or judge.ndim != 1 or len(groups) != judge.size:
        raise CalibrationError("judge labels, human labels and groups must be 1-D and of one length")
    if judge.size == 0:
        raise EmptyCalibrationError("no items")
    if judge.min() < 1 or human.min() < 1 or judge.max() > n_labels or human.max() > n_labels:
        raise CalibrationError(f"labels must lie in 1..{n_labels}")
    _, codes = np.unique(np.asarray(groups, dtype=object).astype(str), return_inverse=True)
    order = {code: index for index, code in enumerate(dict.fromkeys(codes.tolist()))}
    documents = np.array([order[c] for c in codes.tolist()], dtype=np.int64)
    flat = (documents * n_labels + (judge - 1)) * n_labels + (human - 1)
    counts = np.bincount(flat, minlength=len(order) * n_labels * n_labels)
    return counts.reshape(len(order), n_labels, n_labels).astype(float)


def _labels(tables: np.ndarray) -> np.ndarray:
    return np.arange(tables.shape[-1], dtype=float)


def quadratic_kappa(tables: np.ndarray) -> np.ndarray:
    """Quadratic weighted kappa of each table (module rules); NaN where undefined."""
    t = np.asarray(tables, dtype=float)
    k = _labels(t)
    weights = (k[:, None] - k[None, :]) ** 2
    total = t.sum(axis=(-2, -1))
    rows, columns = t.sum(axis=-1), t.sum(axis=-2)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = rows[..., :, None] * columns[..., None, :] / total[..., None, None]
        observed_disagreement = (weights * t).sum(axis=(-2, -1))
        expected_disagreement = (weights * expected).sum(axis=(-2, -1))
        kappa = 1.0 - observed_disagreement / expected_disagreement
    return np.where(expected_disagreement > 0, kappa, np.nan)


def _midranks(margin: np.ndarray) -> np.ndarray:
    """The average rank of each label from its count (ranks 1..n; labels in order)."""
    before: np.ndarray = np.cumsum(margin, axis=-1) - margin
    return before + (margin + 1.0) / 2.0


def spearman_of_tables(tables: np.ndarray) -> np.ndarray:
    """Spearman's rho of each table (module rules); NaN where undefined."""
    t = np.asarray(tables, dtype=float)
    total = t.sum(axis=(-2, -1))
    rows, columns = t.sum(axis=-1), t.sum(axis=-2)
    judge_rank, human_rank = _midranks(rows), _midranks(columns)
    with np.errstate(divide="ignore", invalid="ignore"):
        judge_mean = (rows * judge_rank).sum(axis=-1) / total
        human_mean = (columns * human_rank).sum(axis=-1) / total
        dj = judge_rank - judge_mean[..., None]
        dh = human_rank - human_mean[..., None]
        covariance = (t * dj[..., :, None] * dh[..., None, :]).sum(axis=(-2, -1))
        variance_j = (rows * dj**2).sum(axis=-1)
        variance_h = (columns * dh**2).sum(axis=-1)
        rho = covariance / np.sqrt(variance_j * variance_h)
    return np.where((variance_j > 0) & (variance_h > 0), rho, np.nan)


def agreement_within(tolerance: int) -> TableFigure:
    """The figure 'share of items with |judge - human| < tolerance' (tolerance 1: exact agreement)."""
    if tolerance < 1:
        raise CalibrationError(f"tolerance must be >= 1, got {tolerance}")

    def figure(tables: np.ndarray) -> np.ndarray:
        t = np.asarray(tables, dtype=float)
        k = _labels(t)
        near = np.abs(k[:, None] - k[None, :]) < tolerance
        with np.errstate(divide="ignore", invalid="ignore"):
            shares: np.ndarray = (t * near).sum(axis=(-2, -1)) / t.sum(axis=(-2, -1))
        return shares

    return figure


def table_interval(
    tables: np.ndarray,
    figure: TableFigure,
    *,
    alpha: float = 0.05,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> UnitInterval:
    """``figure`` of the summed table with its percentile interval, documents (the first axis) resampled whole
    (module rules); EmptyCalibrationError when the figure is undefined on the data."""
    check_alpha(alpha)
    t = np.asarray(tables, dtype=float)
    if t.ndim != 3 or t.shape[0] == 0 or t.shape[1] != t.shape[2]:
        raise EmptyCalibrationError(f"need (documents, K, K) tables, got shape {t.shape}")
    if n_resamples < 1:
        raise CalibrationError(f"n_resamples must be >= 1, got {n_resamples}")
    estimate = float(figure(t.sum(axis=0)))
    if np.isnan(estimate):
        raise EmptyCalibrationError("the figure is undefined on these items (a side holds one label alone)")
    n = t.shape[0]
    weights = unit_draw_weights(n, n_resamples, seed)
    statistics = figure(np.tensordot(weights, t, axes=1))
    kept = statistics[~np.isnan(statistics)]
    low, high = np.quantile(kept, [alpha / 2, 1 - alpha / 2]) if kept.size else (np.nan, np.nan)
    return UnitInterval(
        estimate=estimate,
        low=float(low),
        high=float(high),
        n_units=n,
        n_resamples=n_resamples,
        n_dropped=int(n_resamples - kept.size),
        seed=seed,
    )
