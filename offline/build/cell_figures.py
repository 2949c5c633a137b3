"""One fitted cell's held-out figures from a split study, and the default method among a cell's methods.

The item-level conformal study (:mod:`offline.studies.conformal.study`) and the faithfulness fits the artifact
carries (:mod:`offline.build.factuality.faithfulness`) share these rules: valid coverage (mean coverage >=
1 - alpha - ``COVERAGE_SLACK``), coverage within judge-score and human-label bins (bins with >= ``MIN_BIN_ITEMS``
test items count; kept when both minima are >= 1 - alpha - ``BIN_SLACK``), the width-error Spearman, and the
default method at ``HEADLINE_ALPHA`` (smallest mean set size among the methods that pass both, else
``PAPER_METHOD``). The slacks are the method selection's (:mod:`calibration.input_kinds.selection`), stated once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from calibration.conformal import METHODS, SplitStudy
from calibration.errors import CalibrationError
from calibration.input_kinds.selection import BIN_SLACK, COVERAGE_SLACK
from calibration.stats import spearman
from offline.build.cell_data import N_LABELS, JudgeCriterionData
from offline.build.cell_results import BinCoverage, CellResult, CorrelationResult, DefaultChoice, ReliabilityBin

__all__ = [
    "BIN_SLACK",
    "COVERAGE_SLACK",
    "HEADLINE_ALPHA",
    "MIN_BIN_ITEMS",
    "PAPER_METHOD",
    "WidthError",
    "cell_result",
    "choose_default",
    "correlate",
    "reliability_bins",
]

PAPER_METHOD = "residual"
HEADLINE_ALPHA = 0.10
MIN_BIN_ITEMS = 20


def correlate(x: np.ndarray, y: np.ndarray) -> CorrelationResult:
    """Spearman via calibration.stats; a constant input gives statistic None with the reason in ``note``."""
    try:
        result = spearman(x, y)
    except CalibrationError as error:
        return CorrelationResult(statistic=None, p_value=None, n=int(x.size), note=str(error))
    return CorrelationResult(statistic=result.statistic, p_value=result.p_value, n=result.n)


def reliability_bins(widths: np.ndarray, errors: np.ndarray, n_labels: int = N_LABELS) -> list[ReliabilityBin]:
    """Mean absolute error per prediction-set width 1..K (widths with no item left out)."""
    bins = []
    for width in range(1, n_labels + 1):
        chosen = errors[widths == width].astype(float)
        if chosen.size:
            sd = float(chosen.std(ddof=1)) if chosen.size > 1 else 0.0
            bins.append(
                ReliabilityBin(
                    width=width, n=int(chosen.size), mae=float(chosen.mean()), ci95=1.96 * sd / math.sqrt(chosen.size)
                )
            )
    return bins


def _bin_coverage(study: SplitStudy, groups: np.ndarray, n_labels: int = N_LABELS) -> list[BinCoverage]:
    """Coverage and set size per group value, averaged over the splits where the group has test items."""
    size = n_labels + 1
    counts = np.zeros((len(study.splits), size))
    covered = np.zeros_like(counts)
    sizes = np.zeros_like(counts)
    for row, split in enumerate(study.splits):
        g = groups[np.asarray(split.test_index)]
        counts[row] = np.bincount(g, minlength=size)
        covered[row] = np.bincount(g, weights=np.asarray(split.covered, dtype=float), minlength=size)
        sizes[row] = np.bincount(g, weights=np.asarray(split.set_sizes, dtype=float), minlength=size)
    bins = []
    for group in range(1, size):
        present = counts[:, group] > 0
        if not present.any():
            continue
        coverage = float((covered[present, group] / counts[present, group]).mean())
        set_size = float((sizes[present, group] / counts[present, group]).mean())
        n_mean = float(counts[:, group].mean())
        bins.append(
            BinCoverage(
                group=group, n_mean=n_mean, coverage=coverage, set_size=set_size, counted=n_mean >= MIN_BIN_ITEMS
            )
        )
    return bins


def _min_counted(bins: list[BinCoverage]) -> float | None:
    counted = [b.coverage for b in bins if b.counted]
    return min(counted) if counted else None


@dataclass(frozen=True)
class WidthError:
    """A cell's width-error observations: per item (for correlations) and split 0's test half (for diagrams)."""

    item_widths: np.ndarray
    item_errors: np.ndarray
    first_widths: np.ndarray
    first_errors: np.ndarray


def _first_split(study: SplitStudy, errors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Set sizes and errors on the test half of split 0: each item at most once, with integer widths."""
    first = study.splits[0]
    return np.asarray(first.set_sizes), errors[np.asarray(first.test_index)]


def _per_item(study: SplitStudy, errors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each item's set size averaged over the splits that tested it, with its error (items never tested drop)."""
    totals = np.zeros(errors.size)
    counts = np.zeros(errors.size)
    for split in study.splits:
        index = np.asarray(split.test_index)
        np.add.at(totals, index, np.asarray(split.set_sizes, dtype=float))
        np.add.at(counts, index, 1.0)
    tested = counts > 0
    return totals[tested] / counts[tested], errors[tested]


def cell_result(data: JudgeCriterionData, study: SplitStudy, *, seed: int) -> tuple[CellResult, WidthError]:
    """One cell's figures (module rules: coverage, bins, width-error) from a split study on ``data``'s arrays;
    also its width-error observations. ``study.splits[i].test_index`` indexes ``data``'s arrays."""
    widths, errs = _first_split(study, data.errors)
    item_widths, item_errors = _per_item(study, data.errors)
    correlation = correlate(item_widths, item_errors)
    score_bins = _bin_coverage(study, data.judge_scores, data.n_labels)
    label_bins = _bin_coverage(study, data.labels, data.n_labels)
    min_bin, min_label = _min_counted(score_bins), _min_counted(label_bins)
    floor = 1 - study.alpha - BIN_SLACK
    result = CellResult(
        judge=data.judge,
        prompt_family=data.prompt_family,
        criterion=data.criterion,
        alpha=study.alpha,
        method=study.method,
        coverage=study.coverage,
        coverage_std=study.coverage_std,
        set_size=study.set_size,
        set_size_std=study.set_size_std,
        n_cal=study.n_cal,
        n_test=study.n_test,
        n_items=int(data.labels.size),
        n_excluded=data.n_excluded,
        n_splits=len(study.splits),
        seed=seed,
        spearman_width_error=correlation.statistic,
        spearman_p_value=correlation.p_value,
        spearman_n=correlation.n,
        spearman_note=correlation.note,
        valid_coverage=study.coverage >= 1 - study.alpha - COVERAGE_SLACK,
        min_bin_coverage=min_bin,
        min_label_coverage=min_label,
        keeps_bin_coverage=all(m is None or m >= floor - 1e-12 for m in (min_bin, min_label)),
        judge_score_bins=score_bins,
        human_label_bins=label_bins,
        reliability=reliability_bins(widths, errs, data.n_labels),
    )
    return result, WidthError(item_widths, item_errors, widths, errs)


def _smallest(cells: Sequence[CellResult]) -> CellResult:
    return min(cells, key=lambda c: (round(c.set_size, 9), METHODS.index(c.method)))


def choose_default(cells: Sequence[CellResult]) -> DefaultChoice:
    """Pick the default among one (judge, family, criterion)'s cells at HEADLINE_ALPHA (module rules; the
    cells must include PAPER_METHOD)."""
    by_method = {c.method: c for c in cells}
    paper = by_method[PAPER_METHOD]
    qualifying = [
        m for m in METHODS if m in by_method and by_method[m].valid_coverage and by_method[m].keeps_bin_coverage
    ]
    marginal = _smallest([c for c in cells if c.valid_coverage] or [paper])
    floor_cov = 1 - HEADLINE_ALPHA - COVERAGE_SLACK
    floor_bin = 1 - HEADLINE_ALPHA - BIN_SLACK
    rule = (
        f"mean coverage >= {floor_cov:.2f} and min coverage >= {floor_bin:.2f} within judge-score bins and "
        f"within human labels (bins with >= {MIN_BIN_ITEMS} test items) at alpha={HEADLINE_ALPHA}"
    )
    if qualifying:
        chosen = _smallest([by_method[m] for m in qualifying])
        reason = (
            f"smallest mean set size ({chosen.set_size:.2f}; {PAPER_METHOD} {paper.set_size:.2f}) among "
            f"{len(qualifying)} of {len(by_method)} methods with {rule} over {_splits(chosen.n_splits)}"
        )
        if marginal.method != chosen.method:
            reason += (
                f"; {marginal.method} has smaller sets ({marginal.set_size:.2f}) but fails within-bin "
                f"coverage (min human-label coverage {_fmt(marginal.min_label_coverage)}, min judge-score-bin "
                f"coverage {_fmt(marginal.min_bin_coverage)})"
            )
    else:
        chosen = paper
        reason = f"fallback to {PAPER_METHOD}: no method had {rule}"
    return DefaultChoice(
        judge=chosen.judge,
        prompt_family=chosen.prompt_family,
        criterion=chosen.criterion,
        method=chosen.method,
        reason=reason,
        set_size=chosen.set_size,
        coverage=chosen.coverage,
        min_bin_coverage=chosen.min_bin_coverage,
        min_label_coverage=chosen.min_label_coverage,
        paper_set_size=paper.set_size,
        qualifying_methods=qualifying,
        marginal_best_method=marginal.method,
        marginal_best_set_size=marginal.set_size,
        marginal_best_min_label_coverage=marginal.min_label_coverage,
    )


def _splits(n: int) -> str:
    return f"{n} split" if n == 1 else f"{n} splits"


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"
