"""Wire types of ``POST /v1/estimates`` and ``POST /v1/rankings``.

Frozen, keyword-only msgspec Structs with their constraints in the types (request types forbid unknown fields).
Every number a request carries is finite and bounded by its type (JSON has no NaN; a value out of range, such as
``1e999``, is a 422). The hard list lengths below bound what one body may hold; the settings ``MAX_ESTIMATE_VALUES``,
``MAX_RANKING_BATTLES`` and ``MAX_RANKING_MODELS`` (``service/config/limits.py``) are lower and checked by the
domain functions (``service.estimating``).

``POST /v1/estimates`` has one body type with three forms (msgspec cannot decode an untagged union of Structs, so
the form is told by which fields are present and checked in ``service.estimating.estimate_request``): one system
(``labelled`` and ``unlabelled``), a difference (``a`` and ``b``, each ``{labelled, unlabelled}``), or a batch
(``systems``: name -> one system's body, the top-level options its defaults). Wherever a system's samples go, a
job may stand in for them (``service.estimating.job_samples``): ``job`` and ``labelled`` items ``{id, human}``, the
judge's values read from the job's results, its other scored items the unlabelled sample.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import msgspec
from msgspec import Meta

from service.wire.common import Problem
from service.wire.estimate_rules import estimate_request_rules, labelled_item_rules, ranking_battles_rules
from service.wire.schema import SchemaRules

__all__ = [
    "HARD_MAX_ESTIMATE_SYSTEMS",
    "HARD_MAX_MIN_LABELLED",
    "HARD_MAX_RANKING_BATTLES",
    "HARD_MAX_SAMPLE_VALUES",
    "Battle",
    "EstimateBatchResponse",
    "EstimateRequest",
    "EstimateResult",
    "IgnoredBattle",
    "JobSampleUse",
    "LabelBudgetAnswer",
    "LabelledItem",
    "ModelRanking",
    "RankingRequest",
    "RankingResponse",
    "SeparablePair",
    "SystemEstimate",
    "SystemEstimateRequest",
    "SystemFailure",
    "SystemSamples",
    "UnlabelledItem",
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
Alpha = Annotated[
    float,
    Meta(
        ge=1e-6, lt=1, description="miscoverage level in [1e-6, 1): the interval covers with probability >= 1 - alpha"
    ),
]
Value = Annotated[
    float,
    Meta(
        ge=0,
        le=10,
        description="a score on the scale scale_min..scale_max (the judge's score "
        "or expected score; mean, pass_rate), or a pairwise outcome "
        "1 / 0.5 / 0 (win_rate)",
    ),
]
SystemName = Annotated[str, Meta(min_length=1, max_length=200)]
SCALE_MIN_BOUNDS = (0, 9)
SCALE_MIN_DEFAULT, SCALE_MAX_DEFAULT = 1, 5
ScaleMin = Annotated[
    int, Meta(ge=SCALE_MIN_BOUNDS[0], le=SCALE_MIN_BOUNDS[1], description="lowest score of the scale (mean, pass_rate)")
]
ScaleMax = Annotated[int, Meta(ge=1, le=10, description="highest score K of the scale 1..K")]
Threshold = Annotated[float, Meta(ge=0, le=10, description="pass_rate: an item passes when its score is >= threshold")]
HalfWidth = Annotated[
    float,
    Meta(
        ge=1e-6, le=10, description="the label budget's target half-width W (default: half of today's PPI++ half-width)"
    ),
]
Bounds = tuple[float, float]
JobId = Annotated[
    str,
    Meta(
        pattern="^[0-9a-f]{32}$",
        description="a job's id (POST /v1/jobs): its results give the judge's values; the caller must be allowed "
        "to read the job",
    ),
]
ItemId = Annotated[str, Meta(min_length=1, max_length=200, description="the item_id of an item of the job")]
JudgeValue = Literal["expected_score", "label", "judge_score"]
JobCriterion = Annotated[
    str,
    Meta(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,63}$", description="only the job's items of this criterion"),
]


class LabelledItem(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A labelled item: the human label and the judge's verdict on it (``judge``), or, with a ``job``, the human
    label and the item's ``id`` in the job (the judge's value is then read from the job's results)."""

    human: Value
    judge: Value | None = None  # required without a job, refused with one (service.estimating.estimates)
    id: ItemId | None = None  # required with a job, refused without one

    JSON_SCHEMA_RULES: ClassVar[SchemaRules] = labelled_item_rules()


class UnlabelledItem(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An unlabelled item: the judge's verdict only."""

    judge: Value


Labelled = Annotated[list[LabelledItem], Meta(min_length=2, max_length=HARD_MAX_SAMPLE_VALUES)]
Unlabelled = Annotated[list[UnlabelledItem], Meta(min_length=2, max_length=HARD_MAX_SAMPLE_VALUES)]


class SystemSamples(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One system of a ``difference`` (``a`` or ``b``): its labelled and unlabelled items, or a ``job`` and the
    labelled items ``{id, human}`` of it (its other scored items are the unlabelled ones)."""

    labelled: Labelled
    unlabelled: Unlabelled | None = None  # required without a job, refused with one
    job: JobId | None = None


class SystemEstimateRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One system of a batch: a single or difference body; an option left out takes the batch's value."""

    labelled: Labelled | None = None
    unlabelled: Unlabelled | None = None
    a: SystemSamples | None = None
    b: SystemSamples | None = None
    job: JobId | None = None
    metric: Metric | None = None
    of: BaseMetric | None = None
    alpha: Alpha | None = None
    scale_min: ScaleMin | None = None
    scale_max: ScaleMax | None = None
    threshold: Threshold | None = None
    target_half_width: HalfWidth | None = None
    judge_value: JudgeValue | None = None
    criterion: JobCriterion | None = None


class EstimateRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Exactly one form: ``labelled`` + ``unlabelled`` (one system), ``a`` + ``b`` (a difference, metric
    ``difference``), or ``systems`` (a batch: name -> a system's body, these options its defaults)."""

    metric: Metric | None = None  # required, here or (batch) in every system
    alpha: Alpha = 0.05
    labelled: Labelled | None = None
    unlabelled: Unlabelled | None = None
    a: SystemSamples | None = None
    b: SystemSamples | None = None
    systems: (
        Annotated[dict[SystemName, SystemEstimateRequest], Meta(min_length=1, max_length=HARD_MAX_ESTIMATE_SYSTEMS)]
        | None
    ) = None
    of: BaseMetric | None = None  # difference only: the metric whose difference is estimated (default mean)
    scale_min: ScaleMin = SCALE_MIN_DEFAULT
    scale_max: ScaleMax = SCALE_MAX_DEFAULT
    threshold: Threshold | None = None
    target_half_width: HalfWidth | None = None
    job: JobId | None = None  # one system read from a job: with ``labelled`` items {id, human}, no ``unlabelled``
    # with a job: which of the item's calibrated outputs is the judge's value (default expected_score)
    judge_value: JudgeValue | None = None
    criterion: JobCriterion | None = None  # with a job: only its items of this criterion (required when it has many)

    JSON_SCHEMA_RULES: ClassVar[SchemaRules] = estimate_request_rules(
        (*SCALE_MIN_BOUNDS, SCALE_MIN_DEFAULT), SCALE_MAX_DEFAULT
    )


class LabelBudgetAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """Labels needed for a half-width W under PPI++ (and with humans only), and how many more than today."""

    target_half_width: float
    labels_needed: int | None  # never more than labels_needed_human_only (lambda = 0 is the classical interval)
    more_labels: int | None
    labels_needed_human_only: int | None


class JobSampleUse(msgspec.Struct, frozen=True, kw_only=True):
    """How a job's results became a system's samples: what was read, used and left out."""

    job_id: str
    system: Literal["a", "b"] | None  # which system of a difference (None: the one system)
    judge_value: JudgeValue
    criterion: str | None  # the criterion of the items used
    n_items: int  # the job's items
    n_failed: int  # items whose result is an error: in neither sample
    n_other_criteria: int  # scored items of another criterion than ``criterion``: in neither sample
    n_labelled: int  # labelled ids used (their items scored)
    n_unlabelled: int  # the job's other scored items: the unlabelled sample
    labelled_failed: list[str]  # labelled ids whose item failed: left out of the labelled sample


class EstimateResult(msgspec.Struct, frozen=True, kw_only=True):
    """A system's estimate, its interval valid at the n given, and what the judge was worth."""

    estimate: float
    interval: Bounds
    method: str  # ppi++ or betting (difference: ppi++ or union of per-system intervals)
    human_only_interval: Bounds
    effective_sample_gain: float | None  # var(classical) / var(PPI++): human labels each label is worth
    n_labelled: int
    n_unlabelled: int
    metric: str
    of: str | None  # the base metric of a difference
    alpha: float
    switch_reason: str | None  # why this method (the switching rule with this sample's numbers)
    switch_rule: str
    human_only_method: str
    lam: float | None  # the PPI++ tuning weight (None for a difference)
    label_budget: LabelBudgetAnswer | None  # None for a difference
    ppi_interval: Bounds | None
    betting_interval: Bounds | None
    classical_interval: Bounds | None
    jobs: list[JobSampleUse] | None = None  # the jobs the samples were read from (None: given in the request)
    # (human-only width / served width)^2: what one label with the judge is worth in the intervals served
    served_gain: float | None = None
    gain_note: str | None = None  # which intervals effective_sample_gain and label_budget describe, and why


# A batch answers each system with its estimate or its problem; the two are told apart by ``outcome`` (msgspec,
# and so the spec generator, needs a tag to type a union of two objects).
class SystemEstimate(EstimateResult, frozen=True, kw_only=True, tag_field="outcome", tag="estimate"):
    """A batch system answered: ``outcome: "estimate"`` and the fields of a single answer."""


class SystemFailure(msgspec.Struct, frozen=True, kw_only=True, tag_field="outcome", tag="error"):
    """A batch system refused on its own: ``outcome: "error"`` and its problem (the others are still answered)."""

    error: Problem


class EstimateBatchResponse(msgspec.Struct, frozen=True, kw_only=True):
    """One answer per system of the batch, by name (in the request's order)."""

    systems: dict[str, SystemEstimate | SystemFailure]


# -------------------------------------------------------------------------------------------- /v1/rankings

Outcome = Literal["a", "b", "tie"]
ModelName = Annotated[str, Meta(min_length=1, max_length=200)]
HARD_MAX_MIN_LABELLED = 10_000
MinLabelled = Annotated[
    int,
    Meta(
        ge=0,
        le=HARD_MAX_MIN_LABELLED,
        description="a model with fewer labelled battles is unknown: its rank set is [1, k], its interval [0, 1] and "
        "no pair involving it is separable (default: the MIN_LABELLED_BATTLES_PER_MODEL setting; 0: no guard)",
    ),
]


class Battle(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One battle judged by the judge; ``human`` is the human verdict when this battle was labelled. A battle of a
    model against itself is no comparison: it is left out of every figure and listed in ``ignored_battles``."""

    model_a: ModelName
    model_b: ModelName
    judge: Outcome
    human: Outcome | None = None


class RankingRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Battles with the judge's verdict, a uniform random subset of them also with a human verdict."""

    battles: Annotated[
        list[Battle],
        Meta(min_length=2, max_length=HARD_MAX_RANKING_BATTLES, extra_json_schema=ranking_battles_rules()),
    ]
    alpha: Alpha = 0.05
    construction: Literal["ellipsoid", "bonferroni"] = "ellipsoid"
    ties: Literal["zero", "half"] = "zero"  # a tie counts 0 for both sides (the paper's convention) or 1/2
    min_labelled_battles: MinLabelled | None = None


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
    under_labelled: bool  # fewer than min_labelled_battles labelled battles: unknown ([1, k], interval [0, 1])


class IgnoredBattle(msgspec.Struct, frozen=True, kw_only=True):
    """A battle left out of the ranking (a model against itself), by its index in ``battles``."""

    index: int
    reason: str


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
    min_labelled_battles: int  # the guard used: models with fewer labelled battles are unknown
    models: list[ModelRanking]  # best first by win rate (models without an estimate last)
    separable: list[SeparablePair]
    human_only_separable: list[SeparablePair]
    ignored_battles: list[IgnoredBattle] = msgspec.field(default_factory=list)
