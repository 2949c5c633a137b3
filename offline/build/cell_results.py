"""The figures of one fitted (judge, prompt family, criterion, method, level) cell on held-out items, and the
default method chosen from them: the types the item-level study and the faithfulness fits share."""

from __future__ import annotations

import msgspec

__all__ = [
    "BinCoverage",
    "CellResult",
    "CorrelationResult",
    "DefaultChoice",
    "ReliabilityBin",
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
