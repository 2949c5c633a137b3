"""The pairwise certified-decisions study's result types: one decision row per setting, the simulation rows, and
the summary that holds them.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = [
    "DecisionRow",
    "ModeRow",
    "PairwiseDecisionSummary",
    "SimulationRow",
]


class DecisionRow(msgspec.Struct, frozen=True, kw_only=True):
    """Held-out figures of one (dataset, ties, bound, alpha, source) over the splits."""

    dataset: str
    source: str
    ties: str
    bound: str
    alpha: float
    delta: float
    n_splits: int
    accept_share: float
    accept_share_min: float
    accept_share_max: float
    agreement: float | None  # pooled over splits: agreeing / accepted held-out (counted) pairs
    agreement_mean: float | None  # mean over splits that accepted a counted pair
    n_splits_error_above_alpha: int
    n_splits_nothing_accepted: int
    thresholds: dict[str, int]  # threshold ("none" = nothing certified) -> splits
    # Uncertified reference on the same held-out pairs: accept every pair with a preferred side.
    all_decisive_accept_share: float
    all_decisive_agreement: float | None
    n_test_pairs_mean: float


class ModeRow(msgspec.Struct, frozen=True, kw_only=True):
    """Held-out figures of one (dataset, source, mode, alpha) over the splits, human ties excluded
    (rules: :mod:`offline.studies.pairwise_decisions.modes`)."""

    dataset: str
    source: str
    mode: str  # "expected" | "pac"
    alpha: float
    unit: str  # the expected rule's unit ("question" | "battle"); "group" for pac (the study's groups)
    n_splits: int
    accept_share: float  # mean over splits, over all held-out pairs
    accept_share_min: float
    accept_share_max: float
    disagreement_mean: float  # mean over splits of the disagreement among accepted (nothing accepted: 0)
    disagreement_max: float
    share_nothing_accepted: float  # share of calibrations whose threshold is null
    thresholds: dict[str, int]  # threshold ("none" = abstain always) -> splits


class SimulationRow(msgspec.Struct, frozen=True, kw_only=True):
    """Group-resampling check of one bound: share of draws whose certified threshold breaks alpha."""

    dataset: str
    source: str
    ties: str
    bound: str
    alpha: float
    delta: float
    n_draws: int
    n_groups_per_draw: int
    failures: int
    failure_rate: float
    mc_se: float
    within_delta: bool  # failure_rate <= delta + 2 mc_se
    accept_share_mean: float


class PairwiseDecisionSummary(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the study reports; written as ``pairwise_decisions/summary.json``."""

    rules: dict[str, str]
    seed: int
    split_seeds: list[list[int]]
    n_splits: int
    cal_fraction: float
    delta: float
    alphas: list[float]
    levels: list[float]
    datasets: dict[str, dict[str, Any]]
    rows: list[DecisionRow]
    simulation: list[SimulationRow]
    done_when: dict[str, Any]
    modes: list[ModeRow] = msgspec.field(default_factory=list)  # the expected and pac modes side by side
