"""The conformal study's result types: its aggregates and the summary written as JSON (the per-cell figures are
:mod:`offline.build.cell_results`)."""

from __future__ import annotations

import msgspec

from offline.build.cell_results import CellResult, CorrelationResult, DefaultChoice, ReliabilityBin

__all__ = [
    "ConformalSummary",
    "Exclusion",
    "HeadlineRow",
    "InterJudgeAgreement",
    "MethodBinValidity",
    "PooledWidthError",
    "VarianceDecomposition",
]


class Exclusion(msgspec.Struct, frozen=True, kw_only=True):
    """Items of one (judge, criterion): answered, used, and excluded for a missing/unreadable score."""

    judge: str
    prompt_family: str
    criterion: str
    n_answered: int
    n_used: int
    n_excluded: int
    has_probabilities: bool


class PooledWidthError(msgspec.Struct, frozen=True, kw_only=True):
    """Width-error Spearman pooled over judges (criterion "all" = also over criteria), paper's method."""

    criterion: str
    correlation: CorrelationResult
    reliability: list[ReliabilityBin]


class InterJudgeAgreement(msgspec.Struct, frozen=True, kw_only=True):
    """Spearman between two judges' widths on the same test items (pooled over splits)."""

    criterion: str
    judge_a: str
    judge_b: str
    n_items: int
    correlation: CorrelationResult
    mean_split_statistic: float | None


class VarianceDecomposition(msgspec.Struct, frozen=True, kw_only=True):
    """How much of the variance of cell mean set sizes the criterion and the judge explain (eta^2)."""

    method: str
    alpha: float
    judges: list[str]
    criteria: list[str]
    eta2_criterion: float
    eta2_judge: float
    eta2_residual: float
    criterion_means: dict[str, float]
    judge_means: dict[str, float]


class HeadlineRow(msgspec.Struct, frozen=True, kw_only=True):
    """Per criterion at alpha=0.10, means over judges: the paper's method, the default method (valid coverage and
    within-bin coverage) and the smallest-set method with valid marginal coverage only; ratios to the paper's."""

    criterion: str
    alpha: float
    paper_set_size: float
    best_set_size: float
    ratio: float
    marginal_best_set_size: float
    marginal_ratio: float
    n_judges: int
    per_judge: list[DefaultChoice]


class MethodBinValidity(msgspec.Struct, frozen=True, kw_only=True):
    """For one method at one alpha: in how many cells it has valid coverage and keeps coverage within bins."""

    method: str
    alpha: float
    n_cells: int
    n_valid_coverage: int
    n_keeps_bins: int
    n_both: int
    mean_min_bin_coverage: float | None
    mean_min_label_coverage: float | None


class ConformalSummary(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the conformal study reports; written as ``conformal/summary.json``."""

    seed: int
    n_splits: int
    alphas: list[float]
    cal_fraction: float
    rules: dict[str, str]
    exclusions: list[Exclusion]
    cells: list[CellResult]
    pooled_width_error: list[PooledWidthError]
    inter_judge: list[InterJudgeAgreement]
    variance: list[VarianceDecomposition]
    default_methods: list[DefaultChoice]
    headline: list[HeadlineRow]
    method_bin_validity: list[MethodBinValidity]
    simulated: bool = False

    def cell(self, judge: str, criterion: str, method: str, alpha: float) -> CellResult | None:
        """The cell for these keys, or None."""
        for c in self.cells:
            if (c.judge, c.criterion, c.method) == (judge, criterion, method) and abs(c.alpha - alpha) < 1e-9:
                return c
        return None
