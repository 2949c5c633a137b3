"""The estimates study's result types: coverage rows of the SummEval means, rank-set and win-rate interval rows of
the Arena study, and the study that holds them (:mod:`offline.studies.estimates.study`).
"""

from __future__ import annotations

import msgspec

__all__ = [
    "ArenaIntervalRow",
    "ArenaRow",
    "EstimatesStudy",
    "SummEvalRow",
]


class SummEvalRow(msgspec.Struct, frozen=True, kw_only=True):
    """Coverage and mean width of one method in one (judge, criterion, system, n)."""

    judge: str
    criterion: str
    system: str
    n: int
    method: str
    resamples: int
    coverage: float
    mean_width: float
    zero_variance_share: float  # resamples whose human labels are all equal


class ArenaRow(msgspec.Struct, frozen=True, kw_only=True):
    """Rank-set coverage and size of one method (``ppr`` with a judge, or ``human only``) at one (n, alpha)."""

    judge: str
    method: str
    construction: str
    n: int
    alpha: float
    iterations: int
    coverage: float
    mean_set_size: float


class ArenaIntervalRow(msgspec.Struct, frozen=True, kw_only=True):
    """Marginal win-rate intervals at INTERVAL_ALPHA: coverage (mean over models) and the effective gain."""

    judge: str
    n: int
    iterations: int
    ppr_coverage: float
    human_coverage: float
    ppr_mean_width: float
    human_mean_width: float
    effective_sample_gain: float
    mean_lambda: float


class EstimatesStudy(msgspec.Struct, frozen=True, kw_only=True):
    """Both studies, their settings and rules."""

    seed: int
    alpha: float
    rules: dict[str, str]
    summeval: list[SummEvalRow]
    summeval_resamples: int
    betting_resamples: int
    arena: list[ArenaRow]
    arena_intervals: list[ArenaIntervalRow]
    arena_iterations: int
    arena_truth: dict[str, float]
