"""The certified-decisions study's result types: one row per setting, the label and gate tables, headlines,
resampling, and the study that holds them.
"""

from __future__ import annotations

import msgspec

__all__ = [
    "DecisionStudy",
    "GateRow",
    "Headline",
    "LabelTableRow",
    "ResamplingRow",
    "Row",
]


class Row(msgspec.Struct, frozen=True, kw_only=True):
    """One (cell, kind, bound, signal, cal_fraction, tolerance, accept_alpha) over the splits."""

    judge: str
    prompt_family: str
    criterion: str
    kind: str
    headline: bool
    bound: str
    signal: str
    cal_fraction: float
    tolerance: int
    accept_alpha: float
    mean_accept_share: float
    mean_error: float | None
    pooled_error: float | None
    share_ok: float
    splits_accepting: int
    mean_certified_error: float | None
    failed_splits: int
    reasons: list[str]


class LabelTableRow(msgspec.Struct, frozen=True, kw_only=True):
    """One human label of one (cell, kind, bound, tolerance, accept_alpha), pooled over the served parts."""

    judge: str
    criterion: str
    kind: str
    bound: str
    tolerance: int
    accept_alpha: float
    label: int
    items_per_split: float
    accept_share: float | None
    error_among_accepted: float | None
    certifiable: bool


class GateRow(msgspec.Struct, frozen=True, kw_only=True):
    """Quality gate tau of one (cell, kind, bound, accept_alpha) over the splits."""

    judge: str
    criterion: str
    kind: str
    bound: str
    pass_threshold: int
    accept_alpha: float
    mean_pass_share: float
    pooled_false_pass: float | None
    mean_certified_false_pass: float | None
    failed_splits: int
    reasons: list[str]


class Headline(msgspec.Struct, frozen=True, kw_only=True):
    """The headline figures (the targets the study checks) for one (bound, cal_fraction, tolerance, accept_alpha)."""

    bound: str
    cal_fraction: float
    tolerance: int
    accept_alpha: float
    logprob_mean_accept_share: float
    all_mean_accept_share: float
    cells_mean_error_ok: int  # cells whose mean error among accepted <= alpha (or that never accept)
    cells_share_ok: int  # cells with share_ok >= 0.95
    n_cells: int


class ResamplingRow(msgspec.Struct, frozen=True, kw_only=True):
    """Document-resampling check of one (cell, kind, bound, tolerance, accept_alpha): how often the rule fitted on
    ``n_docs`` documents drawn with replacement accepts bins whose error on the whole cell exceeds accept_alpha."""

    judge: str
    criterion: str
    kind: str
    bound: str
    n_docs: int
    tolerance: int
    accept_alpha: float
    draws: int
    failure_rate: float
    mc_limit: float  # delta + 2 x the Monte-Carlo standard error at delta
    mean_accept_share: float


class DecisionStudy(msgspec.Struct, frozen=True, kw_only=True):
    """The whole study: settings, rules, rows, per-label and gate tables, and the headline figures."""

    seed: int
    n_splits: int
    delta: float
    rules: dict[str, str]
    rows: list[Row]
    labels: list[LabelTableRow]
    gates: list[GateRow]
    headlines: list[Headline]
    resampling: list[ResamplingRow] = []
