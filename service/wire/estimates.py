"""Wire types of ``POST /v1/estimates``, ``POST /v1/estimates/batch`` and ``POST /v1/rankings``.

Frozen, keyword-only msgspec Structs with their constraints in the types (request types forbid unknown fields).
Every number a request carries is finite and bounded by its type (JSON has no NaN; a value out of range, such as
``1e999``, is a 422). The hard list lengths below bound what one body may hold; the settings ``MAX_ESTIMATE_VALUES``,
``MAX_RANKING_BATTLES`` and ``MAX_RANKING_MODELS`` (``service/config/limits.py``) are lower and checked by the
domain functions (``service.estimating``).
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from service.wire.common import Problem

__all__ = [
    "HARD_MAX_ESTIMATE_SYSTEMS",
    "HARD_MAX_RANKING_BATTLES",
    "HARD_MAX_SAMPLE_VALUES",
    "Battle",
    "EstimateBatchItem",
    "EstimateBatchRequest",
    "EstimateBatchResponse",
    "EstimateRequest",
    "EstimateResult",
    "LabelBudgetAnswer",
    "ModelRanking",
    "RankingRequest",
    "RankingResponse",
    "SeparablePair",
    "SystemSample",
    "VersusSample",
]

HARD_MAX_SAMPLE_VALUES = 1_000_000  # one list of one system
HARD_MAX_ESTIMATE_SYSTEMS = 100
HARD_MAX_RANKING_BATTLES = 1_000_000

# Requests: frozen, keyword-only, unknown fields refused; responses: frozen, keyword-only. Spelled out on each
# class (not as **options) so that type checkers see keyword-only fields.

Metric = Literal["mean", "pass_rate", "win_rate", "difference"]
BaseMetric = Literal["mean", "pass_rate", "win_rate"]
# at least 1e-6: below it the normal quantiles and the betting thresholds leave floating point (and no study
# could check such a level anyway)
Alpha = Annotated[float, Meta(ge=1e-6, lt=1, description="miscoverage level in [1e-6, 1): the interval covers with "
                                                         "probability >= 1 - alpha")]
Value = Annotated[float, Meta(ge=0, le=10, description="a score on the scale scale_min..scale_max (mean, pass_rate), "
                                                       "or a pairwise outcome 1 / 0.5 / 0 (win_rate)")]
Labels = Annotated[list[Value], Meta(min_length=2, max_length=HARD_MAX_SAMPLE_VALUES)]
SystemName = Annotated[str, Meta(min_length=1, max_length=200)]
Bounds = tuple[float, float]


class VersusSample(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The second system of a ``difference``: its labelled and unlabelled samples."""

    human: Labels
    judge: Labels
    judge_unlabelled: Labels


class _Options(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What to estimate and at which level; shared by the single and the batch form."""

    metric: Metric
    of: BaseMetric | None = None  # difference only: the metric whose difference is estimated (default mean)
    alpha: Alpha = 0.05
    scale_min: Annotated[int, Meta(ge=0, le=9, description="lowest score of the scale (mean, pass_rate)")] = 1
    scale_max: Annotated[int, Meta(ge=1, le=10, description="highest score K of the scale 1..K")] = 5
    threshold: Annotated[float, Meta(ge=0, le=10, description="pass_rate: an item passes when its score is "
                                                              ">= threshold")] | None = None
    target_half_width: Annotated[float, Meta(ge=1e-6, le=10, description="the label budget's target half-width W "
                                             "(default: half of today's PPI++ half-width)")] | None = None


class EstimateRequest(_Options, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One system: human labels and judge verdicts of the same labelled items (aligned lists), the judge's verdicts
    on the unlabelled items, and for ``difference`` the other system as ``versus``."""

    name: SystemName | None = None
    human: Labels
    judge: Labels
    judge_unlabelled: Labels
    versus: VersusSample | None = None


class SystemSample(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One system of a batch: as ``EstimateRequest``'s samples."""

    name: SystemName | None = None
    human: Labels
    judge: Labels
    judge_unlabelled: Labels
    versus: VersusSample | None = None


class EstimateBatchRequest(_Options, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Many systems estimated with the same options; each is answered or fails on its own."""

    systems: Annotated[list[SystemSample], Meta(min_length=1, max_length=HARD_MAX_ESTIMATE_SYSTEMS)]


class LabelBudgetAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """Labels needed for a half-width W under PPI++ (and with humans only), and how many more than today."""

    target_half_width: float
    labels_needed: int | None  # None: the unlabelled sample alone is too small for W
    more_labels: int | None
    labels_needed_human_only: int | None


class EstimateResult(msgspec.Struct, frozen=True, kw_only=True):
    """A system's estimate, its interval valid at the n given, and what the judge was worth."""

    name: str | None
    metric: str
    of: str | None  # the base metric of a difference
    alpha: float
    estimate: float
    interval: Bounds
    method: str  # ppi++ or betting (difference: ppi++ or union of per-system intervals)
    switch_reason: str | None  # why this method (the switching rule with this sample's numbers)
    switch_rule: str
    human_only_interval: Bounds
    human_only_method: str
    gain: float | None  # effective sample gain: var(classical) / var(PPI++), human labels each label is worth
    n_labelled: int
    n_unlabelled: int
    lam: float | None  # the PPI++ tuning weight (None for a difference)
    label_budget: LabelBudgetAnswer | None  # None for a difference
    ppi_interval: Bounds | None
    betting_interval: Bounds | None
    classical_interval: Bounds | None


class EstimateBatchItem(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One system of a batch: ``{index, ok: true, result}`` or ``{index, ok: false, error}`` (+ its name)."""

    index: int
    name: str | None = None
    ok: bool
    result: EstimateResult | None = None
    error: Problem | None = None


class EstimateBatchResponse(msgspec.Struct, frozen=True, kw_only=True):
    """Per-system outcomes in input order."""

    results: list[EstimateBatchItem]
    n_ok: int
    n_failed: int


# -------------------------------------------------------------------------------------------- /v1/rankings

Outcome = Literal["a", "b", "tie"]
ModelName = Annotated[str, Meta(min_length=1, max_length=200)]


class Battle(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One battle judged by the judge; ``human`` is the human verdict when this battle was labelled."""

    model_a: ModelName
    model_b: ModelName
    judge: Outcome
    human: Outcome | None = None


class RankingRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Battles with the judge's verdict, a uniform random subset of them also with a human verdict."""

    battles: Annotated[list[Battle], Meta(min_length=2, max_length=HARD_MAX_RANKING_BATTLES)]
    alpha: Alpha = 0.05
    construction: Literal["ellipsoid", "bonferroni"] = "ellipsoid"
    ties: Literal["zero", "half"] = "zero"  # a tie counts 0 for both sides (the paper's convention) or 1/2


class ModelRanking(msgspec.Struct, frozen=True, kw_only=True):
    """One model: win rate with its marginal (1 - alpha) interval and its rank set (1 = best)."""

    model: str
    win_rate: float | None  # None: no battle of this model is labelled or judged
    interval: Bounds | None
    rank_set: tuple[int, int]
    human_only_win_rate: float | None
    human_only_interval: Bounds | None
    human_only_rank_set: tuple[int, int]
    battles_labelled: int
    battles_unlabelled: int


class SeparablePair(msgspec.Struct, frozen=True, kw_only=True):
    """``better`` is ranked above ``worse`` in every ranking the joint region allows."""

    better: str
    worse: str


class RankingResponse(msgspec.Struct, frozen=True, kw_only=True):
    """Per-model win rates and rank sets (jointly covering the human ranking with probability >= 1 - alpha)."""

    alpha: float
    construction: str
    ties: str
    method: str
    lam: float | None  # the power-tuning weight of the judge (0: the judge was not used)
    n_labelled: int
    n_unlabelled: int
    models: list[ModelRanking]  # best first by win rate (models without an estimate last)
    separable: list[SeparablePair]
    human_only_separable: list[SeparablePair]
