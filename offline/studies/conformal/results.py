"""The conformal study's result types: per-cell figures, their aggregates and the summary written as JSON."""

from __future__ import annotations

import msgspec

__all__ = [
    "BinCoverage",
    "CellResult",
    "ConformalSummary",
    "CorrelationResult",
    "DefaultChoice",
    "Exclusion",
    "HeadlineRow",
    "InterJudgeAgreement",
    "MethodBinValidity",
    "PooledWidthError",
    "ReliabilityBin",
    "VarianceDecomposition",
]


class CorrelationResult(msgspec.Struct, frozen=True, kw_only=True):
    """A correlation with p-value and n; statistic None (with ``note``) when undefined (constant input)."""

    statistic: float | None
    p_value: float | None
    n: int
    method: str = "spearman"
    note: str = ""


class BinCoverage(msgspec.Struct, frozen=True, kw_only=True):
    """Coverage within one bin (judge score or human label), averaged over the splits where it has items."""

    group: int
    n_mean: float
    coverage: float
    set_size: float
    counted: bool


class ReliabilityBin(msgspec.Struct, frozen=True, kw_only=True):
    """Mean absolute error of the items whose prediction set has this width (95% normal CI half-width)."""

    width: int
    n: int
    mae: float
    ci95: float


class CellResult(msgspec.Struct, frozen=True, kw_only=True):
    """One judge x criterion x alpha x method cell of the study."""

    judge: str
    prompt_family: str
    criterion: str
    alpha: float
    method: str
    coverage: float
    coverage_std: float
    set_size: float
    set_size_std: float
    n_cal: int
    n_test: int
    n_items: int
    n_excluded: int
    n_splits: int
    seed: int
    spearman_width_error: float | None
    spearman_p_value: float | None
    spearman_n: int
    spearman_note: str
    valid_coverage: bool
    min_bin_coverage: float | None
    min_label_coverage: float | None
    keeps_bin_coverage: bool  # judge-score bins AND human-label bins (see the module rules)
    judge_score_bins: list[BinCoverage]
    human_label_bins: list[BinCoverage]
    reliability: list[ReliabilityBin]


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


class DefaultChoice(msgspec.Struct, frozen=True, kw_only=True):
    """The default method of one (judge, prompt family, criterion) and the evidence for it (alpha = 0.10).

    ``marginal_best_*``: the smallest-set method when only marginal coverage is required (for contrast).
    """

    judge: str
    prompt_family: str
    criterion: str
    method: str
    reason: str
    set_size: float
    coverage: float
    min_bin_coverage: float | None
    min_label_coverage: float | None
    paper_set_size: float
    qualifying_methods: list[str]
    marginal_best_method: str
    marginal_best_set_size: float
    marginal_best_min_label_coverage: float | None


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
