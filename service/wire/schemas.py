"""Wire types: frozen, keyword-only msgspec Structs with their constraints in the types.

These are the single source of the OpenAPI spec (``openapi/openapi.json``). Request types forbid unknown
fields, so a typo (``"alpah"``) is a 422 rather than a silently ignored default. Limits that settings can
lower (document length, batch size, candidates) are checked again by the domain functions.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from calibration.decision_rule import DecisionRule
from service.config.settings import HARD_MAX_BATCH_ITEMS, HARD_MAX_CANDIDATES

__all__ = [
    "CRITERIA",
    "MemberVerdict",
    "PanelAnswer",
    "PanelMemberVerdict",
    "ArtifactCell",
    "ArtifactInfo",
    "ArtifactName",
    "ArtifactSummary",
    "BatchItemResult",
    "CalibratedCell",
    "CalibrationJobInfo",
    "CalibrationSummary",
    "CascadeAnswer",
    "CascadeStage",
    "HeldoutLevel",
    "CalibrationEntryInfo",
    "CalibrationInfo",
    "Candidate",
    "CompareRequest",
    "CompareResponse",
    "Criterion",
    "DefaultMethodInfo",
    "FailedCall",
    "Guarantee",
    "IgnoredPreference",
    "HealthStatus",
    "JobAccepted",
    "JobItemResult",
    "JobStatus",
    "JudgeCalibration",
    "JudgeInfo",
    "JudgeLogprobs",
    "JudgesResponse",
    "PairResult",
    "PositionConsistencyInfo",
    "Preference",
    "Problem",
    "ProblemError",
    "QAEvidenceItem",
    "RankingOrders",
    "RankingScores",
    "ReadinessCheck",
    "ReloadRequest",
    "ReloadResponse",
    "ScoreBatchRequest",
    "ScoreBatchResponse",
    "ScoreRequest",
    "ScoreResponse",
    "SentenceCategory",
    "SentenceEvidenceItem",
    "SentenceVerdictItem",
]

CRITERIA = ("coherence", "consistency", "fluency", "relevance", "faithfulness")
Criterion = Annotated[
    str,
    Meta(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,63}$", description="a criterion the calibration covers or a rubric names "
         "(SummEval's coherence, consistency, fluency, relevance; faithfulness; yours from RUBRICS_FILE or your "
         "calibration); an unknown one is a 422 with the allowed names"),
]
# accept: use ``point`` as the label (certified); escalate: ask a human; second_opinion: ask the cascade's next judge
Decision = Literal["accept", "escalate", "second_opinion"]
Alpha = Annotated[float, Meta(gt=0, lt=1, description="miscoverage level; the target coverage is 1 - alpha")]
Text = Annotated[str, Meta(min_length=1)]
Name = Annotated[str, Meta(min_length=1, max_length=200)]
JudgeScore = Annotated[int, Meta(ge=1, le=10, description="the judge's score on the cell's scale 1..K (K <= 10)")]
MeanOfSamples = Annotated[
    float, Meta(ge=1, le=10, description="mean of several sampled judge scores (G-Eval style), on the scale 1..K")
]
LogProb = Annotated[float, Meta(le=0, description="natural log-probability of this score token")]
CandidateId = Annotated[str, Meta(min_length=1, max_length=200)]
Tolerance = Annotated[
    int, Meta(ge=1, le=10, description="an accepted point counts as wrong when |human - point| >= tolerance labels "
              "(1: exact match required; default 2: within one label)")
]
PassThreshold = Annotated[
    int, Meta(ge=2, le=10, description="quality-gate mode: pass iff label >= pass_threshold; accept only a certified "
              "pass (false-pass rate among items humans would fail <= accept_alpha)")
]
ItemIdText = Annotated[
    str, Meta(min_length=1, max_length=200, description="the caller's own id for this item, echoed in the result")
]

_REQUEST = {"frozen": True, "kw_only": True, "forbid_unknown_fields": True}
_RESPONSE = {"frozen": True, "kw_only": True}


class ProblemError(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One validation failure: what is wrong, and where (``key``: field path, ``source``: body/query/...)."""

    message: str
    key: str | None = None
    source: str | None = None


class ReadinessCheck(msgspec.Struct, **_RESPONSE):
    """One readiness check: its name, whether it passed, and why."""

    name: str
    ok: bool
    detail: str


class Problem(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """An RFC 9457 problem object (media type application/problem+json) with this service's extensions."""

    type: str
    title: str
    status: int
    detail: str
    instance: str | None = None
    errors: list[ProblemError] | None = None  # validation failures
    allowed: list[str] | None = None  # the accepted values when a name or level was unknown
    raw_reply: str | None = None  # the judge's unreadable reply, shortened
    checks: list[ReadinessCheck] | None = None  # /readyz


# ---------------------------------------------------------------------------------------------- /v1/score


class JudgeLogprobs(msgspec.Struct, **_REQUEST):
    """Log-probabilities of the score tokens "1".."K" (K <= 10, the cell's scale; a token above K is a 422); a missing
    token is read as ln(1e-5) (-11.5129).

    That fill is the convention of the recorded calibration data (tokens outside the judge's top-k).
    """

    p1: LogProb | None = msgspec.field(default=None, name="1")
    p2: LogProb | None = msgspec.field(default=None, name="2")
    p3: LogProb | None = msgspec.field(default=None, name="3")
    p4: LogProb | None = msgspec.field(default=None, name="4")
    p5: LogProb | None = msgspec.field(default=None, name="5")
    p6: LogProb | None = msgspec.field(default=None, name="6")
    p7: LogProb | None = msgspec.field(default=None, name="7")
    p8: LogProb | None = msgspec.field(default=None, name="8")
    p9: LogProb | None = msgspec.field(default=None, name="9")
    p10: LogProb | None = msgspec.field(default=None, name="10")

    def values(self, n_labels: int = 5) -> list[float | None]:
        """The log-probabilities of "1".."n_labels" in score order, None where the caller gave none."""
        every = [self.p1, self.p2, self.p3, self.p4, self.p5, self.p6, self.p7, self.p8, self.p9, self.p10]
        return every[:n_labels]

    def highest_token(self) -> int:
        """The highest score token given (0 when none)."""
        every = [self.p1, self.p2, self.p3, self.p4, self.p5, self.p6, self.p7, self.p8, self.p9, self.p10]
        return max((k for k, value in enumerate(every, start=1) if value is not None), default=0)


SentenceCategory = Literal[
    "no error", "predicate error", "entity error", "circumstantial error", "coreference error", "linking error",
    "out-of-context error", "grammatical error", "other error",
]  # FRANK's error types written out (judges.sentence_parse.CATEGORIES)


class SentenceVerdictItem(msgspec.Struct, **_REQUEST):
    """One summary sentence's fact-check verdict that the caller got from its own judge (in sentence order)."""

    sentence: Annotated[str, Meta(min_length=1, max_length=5000)]
    category: SentenceCategory
    reason: Annotated[str, Meta(max_length=2000)] = ""


class MemberVerdict(msgspec.Struct, **_REQUEST):
    """One panel member's verdict, sent by the caller: ``judge`` and at least one of ``judge_score``,
    ``judge_logprobs``, ``mean_of_samples`` (its expected score: calibration.panels)."""

    judge: Name
    judge_score: JudgeScore | None = None
    judge_logprobs: JudgeLogprobs | None = None
    mean_of_samples: MeanOfSamples | None = None


class ScoreRequest(msgspec.Struct, **_REQUEST):
    """Score one summary, or calibrate the caller's own verdict (``judge_score`` / ``judge_logprobs``).

    With none of ``judge_score``, ``judge_logprobs``, ``mean_of_samples`` the service calls ``judge`` (default
    DEFAULT_JUDGE) and needs ``document`` and ``summary``. ``alpha`` defaults to DEFAULT_ALPHA (0.10); a level
    between calibrated ones is served at the next smaller one (said in ``reason``); ``method`` defaults to the
    artifact's default for the (judge, prompt family, criterion) and the input kind the verdict carries
    (``score``, ``probabilities`` from ``judge_logprobs``, ``mean`` from ``mean_of_samples``; thresholds fitted
    on one kind never serve another). ``factuality_method`` and ``n_questions`` apply to ``criterion:
    "faithfulness"`` only (with the caller's own verdict, ``factuality_method`` only picks the default prompt
    family; see service.scoring.score). ``tolerance`` (default 2), ``accept_alpha`` (default: ``alpha``) and
    ``pass_threshold`` (quality-gate mode) set what the certified decision guarantees (service.scoring.policy).
    """

    criterion: Criterion
    document: Text | None = None
    summary: Text | None = None
    judge: Name | None = None
    prompt_family: Name | None = None
    alpha: Alpha | None = None
    method: Name | None = None
    judge_score: JudgeScore | None = None
    judge_logprobs: JudgeLogprobs | None = None
    mean_of_samples: MeanOfSamples | None = None
    factuality_method: Literal["direct", "qa", "sentences"] = "direct"
    n_questions: Annotated[int, Meta(ge=1, le=20)] = 5
    # The caller's own sentence-level verdicts (faithfulness, factuality_method "sentences"; see service.scoring.score).
    sentence_verdicts: Annotated[list[SentenceVerdictItem], Meta(min_length=1, max_length=100)] | None = None
    item_id: ItemIdText | None = None
    # The certified decision (service.scoring.policy): the error an accepted point may carry, and at what rate.
    tolerance: Tolerance = 2
    accept_alpha: Alpha | None = None  # default: the request's alpha (itself DEFAULT_ALPHA)
    pass_threshold: PassThreshold | None = None
    # A judge panel (service.scoring.panels): the members' own verdicts, or the name of a panel of PANELS_FILE whose
    # members the service calls; either answers one set from the panel's calibrated cell.
    verdicts: Annotated[list[MemberVerdict], Meta(min_length=2, max_length=16)] | None = None
    panel: Name | None = None
    # A cascade of CASCADES_FILE (service.scoring.cascades): cheap judge -> stronger judge -> human, each stage
    # certified
    # on its own rule at accept_alpha / (number of judge stages).
    cascade: Name | None = None


class QAEvidenceItem(msgspec.Struct, tag="qa", tag_field="kind", **_RESPONSE):
    """One question of the QA factuality check, with both answers and their token-F1 similarity."""

    question: str
    summary_answer: str
    article_answer: str | None
    similarity: float
    exact_match: float


class SentenceEvidenceItem(msgspec.Struct, tag="sentence", tag_field="kind", **_RESPONSE):
    """One summary sentence of the sentence-level fact-check: error or not, its FRANK category, the reason."""

    sentence: str
    error: bool
    category: SentenceCategory
    reason: str


class PanelMemberVerdict(msgspec.Struct, **_RESPONSE):
    """One member's verdict in a panel answer; ``error`` says why a live member gave none (it is then left out)."""

    judge: str
    source: Literal["judge", "caller"]
    prompt_family: str | None = None
    judge_score: int | None = None
    probabilities: list[float] | None = None
    mean_of_samples: float | None = None
    expected_score: float | None = None  # the member's expected score (calibration.panels rule)
    cached: bool = False
    error: str | None = None


class PanelAnswer(msgspec.Struct, **_RESPONSE):
    """The panel behind a set: its members, the cell that served (a sub-panel when members are missing), the
    members' verdicts and how far they disagree (spread = max - min of expected scores; std, population)."""

    name: str | None  # the configured panel's name (``panel``), None for the caller's verdicts
    members: list[str]
    served_by: str | None  # the calibrated panel cell used, None when no cell could serve
    mean: float | None  # the panel's verdict: mean of the answering members' expected scores
    spread: float | None
    std: float | None
    verdicts: list[PanelMemberVerdict]


class Guarantee(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One guarantee behind an answer (service.scoring.policy), valid over calibration documents with ``confidence``.

    ``set_coverage``: P(human label in prediction_set) >= 1 - alpha (confidence null: on average over calibration
    draws, the split-conformal guarantee). ``accept_error``: among accepted verdicts, P(|human - point| >=
    tolerance) <= alpha, ``bound`` its certified upper bound. ``quality_gate``: among accepted passes,
    P(human < pass_threshold) <= alpha, ``bound`` its certified upper bound.
    """

    kind: Literal["set_coverage", "accept_error", "quality_gate"]
    alpha: float
    confidence: float | None
    tolerance: int | None = None
    pass_threshold: int | None = None
    bound: float | None = None


class CascadeStage(msgspec.Struct, **_RESPONSE):
    """One stage of a cascade that was called (or whose verdict the caller sent), with its own decision."""

    judge: str
    prompt_family: str | None
    source: Literal["judge", "caller"]
    judge_score: int
    probabilities: list[float] | None
    point: int
    decision: Decision  # this stage's: accept, or escalate (the next stage is asked)
    rule_failed: bool
    guarantees: list[Guarantee]  # this stage's, at the stage's share of accept_alpha
    reason: str
    cached: bool


class CascadeAnswer(msgspec.Struct, **_RESPONSE):
    """The cascade behind an answer: its stages in order, the ones called, and the split of accept_alpha."""

    name: str
    stages: list[str]  # the judge stages in order; a human follows the last
    stage_alpha: float  # accept_alpha / len(stages): each stage is certified at this level (Bonferroni)
    called: list[CascadeStage]
    judge_calls: int  # judge calls the service made for this item (a caller's verdict costs none)


class ScoreResponse(msgspec.Struct, **_RESPONSE):
    """A verdict with its conformal prediction set, its calibrated point and the certified decision."""

    criterion: str
    judge: str
    prompt_family: str | None
    source: Literal["judge", "caller"]
    judge_score: int
    probabilities: list[float] | None
    prediction_set: list[int]
    set_size: int
    alpha: float
    coverage_target: float
    method: str | None
    calibrated: bool
    input_kind: Literal["score", "probabilities", "mean"] | None  # the kind of verdict the thresholds were fit on
    decision: Decision  # accept only when the cell's certified rule accepts this verdict (service.scoring.policy)
    escalate: bool  # decision == "escalate"
    point: int  # the calibrated label (most likely human label given the verdict); the judge's score without a rule
    guarantees: list[Guarantee]  # what holds for this answer; empty when nothing is certified
    rule_failed: bool  # the cell's method-selection rule or certification failed: never accept, reason says which
    reason: str
    calibration_id: str | None
    n_cal: int | None
    heldout_coverage: float | None
    cached: bool
    raw_reply: str | None
    factuality_method: Literal["direct", "qa", "sentences"] | None = None
    qa_score: float | None = None
    qa_exact_match: float | None = None
    sentence_score: float | None = None  # share of sentences judged "no error" (factuality_method "sentences")
    evidence: list[QAEvidenceItem | SentenceEvidenceItem] | None = None  # "kind" tells which
    item_id: str | None = None  # the request's item_id, echoed
    # "possible_prompt_injection": a text the judge read tries to steer it (service.judging.injection); decision
    # escalate
    flags: list[str] = msgspec.field(default_factory=list)
    panel: PanelAnswer | None = None  # a panel request: members' verdicts and their disagreement
    cascade: CascadeAnswer | None = None  # a cascade request: the stages called and their verdicts


class ScoreBatchRequest(msgspec.Struct, **_REQUEST):
    """Up to 1,000 /v1/score bodies; each item is validated on its own, so one bad item fails alone."""

    items: Annotated[list[Any], Meta(max_length=HARD_MAX_BATCH_ITEMS)]


class BatchItemResult(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One batch item: ``{index, ok: true, result}`` or ``{index, ok: false, error}`` (+ the item's ``item_id``)."""

    index: int
    item_id: str | None = None  # the item's own item_id, echoed (also on a failed item when it was a string)
    ok: bool
    result: ScoreResponse | None = None
    error: Problem | None = None


class ScoreBatchResponse(msgspec.Struct, **_RESPONSE):
    """Per-item outcomes in input order."""

    results: list[BatchItemResult]
    n_ok: int
    n_failed: int


# -------------------------------------------------------------------------------------------- /v1/compare


class Candidate(msgspec.Struct, **_REQUEST):
    """One candidate text to be compared pairwise."""

    id: CandidateId
    text: Text


class Preference(msgspec.Struct, **_REQUEST):
    """The caller's own verdict on one pair, in one of two forms: ``winner`` beat ``loser`` (with ``tie: true``
    neither), or as it was shown to a judge: ``first`` and ``second`` with ``verdict`` "first" | "second" | "tie"
    (then position consistency is computed when every preference gives its order)."""

    winner: CandidateId | None = None
    loser: CandidateId | None = None
    tie: bool = False
    first: CandidateId | None = None
    second: CandidateId | None = None
    verdict: Literal["first", "second", "tie"] | None = None


class CompareRequest(msgspec.Struct, **_REQUEST):
    """Either ``document`` + ``candidates`` (judged live; ``criterion`` required) or ``preferences`` (the caller's
    verdicts; ``criterion`` optional, echoed)."""

    criterion: Criterion | None = None
    document: Text | None = None
    candidates: Annotated[list[Candidate], Meta(min_length=3, max_length=HARD_MAX_CANDIDATES)] | None = None
    preferences: Annotated[list[Preference], Meta(min_length=1, max_length=20_000)] | None = None
    judge: Name | None = None
    prompt_family: Name | None = None
    repetitions: Annotated[int, Meta(ge=1, le=10)] = 3
    swap: bool = True
    # Level of each pair's certified decision: P(human disagrees | accepted) <= accept_alpha
    # (service.comparing.compare).
    accept_alpha: Annotated[float, Meta(gt=0, lt=1)] = 0.10


class PairResult(msgspec.Struct, **_RESPONSE):
    """One unordered pair: wins of each side, ties, the majority side and its share of the verdicts, and the
    certified decision: ``accept`` (``preferred`` names the candidate) or ``abstain`` (``preferred`` null), with
    the reason (rules: ``service.comparing.compare``)."""

    a: str
    b: str
    wins_a: int
    wins_b: int
    ties: int
    n: int
    winner: str | None
    win_share: float
    decision: Literal["accept", "abstain"]
    preferred: str | None
    reason: str


class PositionConsistencyInfo(msgspec.Struct, **_RESPONSE):
    """How often a verdict survives swapping the presentation order."""

    rate: float | None
    n_pairs_both_orders: int
    n_consistent: int


class RankingOrders(msgspec.Struct, **_RESPONSE):
    """Candidate ids, best first, by each ranking method."""

    win_rate: list[str]
    bradley_terry: list[str]
    schulze: list[str]
    mfas_ilp: list[str]
    mfas_copeland: list[str]


class RankingScores(msgspec.Struct, **_RESPONSE):
    """Each method's score per candidate id (null where a method gives no finite score)."""

    win_rate: dict[str, float | None]
    bradley_terry: dict[str, float | None]
    schulze: dict[str, float | None]
    mfas_ilp: dict[str, float | None]
    mfas_copeland: dict[str, float | None]


class FailedCall(msgspec.Struct, **_RESPONSE):
    """A pairwise judge call that failed after the client's retries; its verdict is missing."""

    first: str
    second: str
    repetition: int
    error: Problem


class IgnoredPreference(msgspec.Struct, **_RESPONSE):
    """A preference left out of the tournament (a self-comparison), by its index in ``preferences``."""

    index: int
    reason: str


class CompareResponse(msgspec.Struct, **_RESPONSE):
    """Tournament diagnostics: 3-cycles, violation rate, position consistency, pairs and rankings."""

    criterion: str | None
    judge: str | None
    source: Literal["judge", "caller"]
    candidates: list[str]
    n_candidates: int
    n_triples: int
    n_verdicts: int
    cycles: list[list[str]]
    n_cycles: int
    violation_rate: float
    flagged: bool
    reason: str
    position_consistency: PositionConsistencyInfo | None
    pairs: list[PairResult]
    rankings: RankingOrders
    scores: RankingScores
    complete: bool
    failed_calls: list[FailedCall]
    cached_calls: int
    # False when the exact MFAS ranking hit MFAS_TIME_LIMIT_S: rankings.mfas_ilp then holds the heuristic order
    # (Copeland improved by single-candidate moves); every other figure is exact.
    exact: bool = True
    # "possible_prompt_injection": the document or a candidate tries to steer the judge (service.judging.injection)
    flags: list[str] = msgspec.field(default_factory=list)
    # self-comparisons among the caller's preferences: left out of every figure, listed here (service.comparing.compare)
    ignored_preferences: list[IgnoredPreference] = msgspec.field(default_factory=list)


# ---------------------------------------------------------------------------------------- /v1/calibration


class CalibrationEntryInfo(msgspec.Struct, **_RESPONSE):
    """One calibrated cell and level, with the offline study's held-out figures."""

    judge: str
    prompt_family: str
    criterion: str
    method: str
    alpha: float
    coverage_target: float
    n_cal: int
    heldout_coverage: float | None
    heldout_coverage_std: float | None
    heldout_set_size: float | None
    n_splits: int
    is_default: bool
    artifact: str = "primary"  # the artifact that owns this cell
    n_labels: int = 5  # K of the cell's scale 1..K
    input_kind: str = "score"  # the kind of verdict the entry serves: score | probabilities | mean
    heldout_coverage_p5: float | None = None  # 5th percentile over the splits by document
    empty_share: float | None = None
    # What a pipeline should expect on unseen documents (held out by document), under the former set-size rule
    # (ACCEPT_MAX_SET_SIZE / ESCALATE_MIN_SET_SIZE); /v1/score now decides by ``decision_rules``
    # (service.scoring.policy):
    accept_share: float | None = None
    review_share: float | None = None
    escalate_share: float | None = None
    accept_accuracy: float | None = None  # share of accepted verdicts whose human label is in the set


class DefaultMethodInfo(msgspec.Struct, **_RESPONSE):
    """The method used for a (judge, prompt family, criterion) when a request names none."""

    judge: str
    prompt_family: str
    criterion: str
    method: str
    reason: str
    input_kind: str = "score"  # the kind of verdict this default applies to
    # no method met the selection rule (the default is its fallback): /v1/score escalates this cell with rule_failed
    rule_failed: bool = False


class CalibrationInfo(msgspec.Struct, **_RESPONSE):
    """What calibration is loaded: coverage, provenance and every entry."""

    calibration_id: str
    path: str
    loaded_at: str
    format_version: int
    created_at: str
    code_version: str
    data_hash: str
    source: str
    label_scale: list[int]
    judges: list[str]
    prompt_families: list[str]
    criteria: list[str]
    methods: list[str]
    levels: list[float]
    n_entries: int
    entries: list[CalibrationEntryInfo]
    default_methods: list[DefaultMethodInfo]
    artifacts: list[ArtifactInfo] = []  # the artifacts merged into this calibration, each with the cells it owns
    # The certified decision rules (calibration.decision_rule, as in the artifact): per cell and input kind, the
    # bins, calibrated points, certifications per (tolerance, accept_alpha), quality gates and per-label rows
    decision_rules: list[DecisionRule] = []


class ArtifactCell(msgspec.Struct, **_RESPONSE):
    """A cell (judge, prompt family, criterion) an artifact owns, with its scale, methods and levels."""

    judge: str
    prompt_family: str
    criterion: str
    n_labels: int
    methods: list[str]
    levels: list[float]
    default_method: str | None  # for score-only verdicts (see default_methods for every input kind)
    default_methods: dict[str, str] = {}  # input kind -> default method


class ArtifactInfo(msgspec.Struct, **_RESPONSE):
    """One loaded artifact: its name, content id, provenance and the cells it owns."""

    name: str
    calibration_id: str
    path: str
    loaded_at: str
    created_at: str
    code_version: str
    data_hash: str
    source: str
    label_scale: list[int]
    n_entries: int
    cells: list[ArtifactCell]


class ArtifactSummary(msgspec.Struct, **_RESPONSE):
    """One loaded artifact in a short summary: name, id, where it came from, how many cells and entries."""

    name: str
    calibration_id: str
    path: str
    n_cells: int
    n_entries: int


class CalibrationSummary(msgspec.Struct, **_RESPONSE):
    """What is loaded, in short (GET /v1/calibration has every entry)."""

    calibration_id: str
    path: str
    loaded_at: str
    created_at: str
    code_version: str
    data_hash: str
    source: str
    label_scale: list[int]
    n_entries: int
    artifacts: list[ArtifactSummary]


ArtifactName = Annotated[
    str, Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$", description="artifact name: letters, digits, _ - .")
]


class ReloadRequest(msgspec.Struct, **_REQUEST):
    """Reload the primary artifact from ``path`` (default: the path currently loaded, i.e. THRESHOLDS_PATH), or,
    with ``name``, load ``path`` as the artifact of that name beside the others (it adds or replaces the cells it
    owns; a cell another artifact owns is a 409)."""

    path: Annotated[str, Meta(min_length=1, max_length=4096)] | None = None
    name: ArtifactName | None = None


class ReloadResponse(msgspec.Struct, **_RESPONSE):
    """The swap that happened, in short: the previous id, the artifact loaded, its cells (new, taken over from its
    previous version, and dropped: its previous version's cells it no longer has), what is loaded now."""

    previous_calibration_id: str | None
    artifact: str
    cells_added: int
    cells_replaced: int
    calibration: CalibrationSummary
    cells_removed: int = 0


# ------------------------------------------------------------------------------------------ /v1/calibrations


class HeldoutLevel(msgspec.Struct, **_RESPONSE):
    """A new cell's default method at one alpha, held out by group: what a pipeline should expect."""

    alpha: float
    coverage_target: float
    coverage: float
    coverage_p5: float  # 5th percentile over the splits by group
    set_size: float
    share_accept: float
    share_review: float
    share_escalate: float
    accept_accuracy: float | None  # share of accepted items whose human label lies in the set
    share_full_scale: float


class CalibratedCell(msgspec.Struct, **_RESPONSE):
    """One (cell, input kind) a calibration job fitted: scale, size, default method, its held-out figures per alpha."""

    judge: str
    prompt_family: str
    criterion: str
    input_kind: str  # the kind of verdict these thresholds serve: score | probabilities | mean
    n_labels: int
    n_items: int
    n_groups: int
    default_method: str
    reason: str
    heldout: list[HeldoutLevel]
    full_scale_flag: bool  # at the default level the sets are (almost) always the whole scale


class CalibrationJobInfo(msgspec.Struct, **_RESPONSE):
    """A calibration job: progress, and when done the new cells with their held-out coverage."""

    id: str
    status: Literal["queued", "running", "done", "failed"]
    artifact_name: str
    created_at: str
    finished_at: str | None
    n_rows: int
    progress: float  # 0..1
    levels: list[float]
    warnings: list[str]
    error: str | None
    activated: bool
    cells: list[CalibratedCell]


# --------------------------------------------------------------------------------------------- /v1/judges


class JudgeCalibration(msgspec.Struct, **_RESPONSE):
    """A (prompt family, criterion) a judge is calibrated for, with its methods and levels."""

    prompt_family: str
    criterion: str
    methods: list[str]
    levels: list[float]
    default_method: str | None


class JudgeInfo(msgspec.Struct, **_RESPONSE):
    """A judge: configured for live calls and/or present in the calibration."""

    name: str
    configured: bool
    model: str | None
    prompt_family: str | None
    logprobs: bool | None
    calibrated_criteria: list[str]
    calibrations: list[JudgeCalibration]


class JudgesResponse(msgspec.Struct, **_RESPONSE):
    """Configured judges first (in JUDGES_FILE order), then judges known only from the calibration."""

    default_judge: str | None
    judges: list[JudgeInfo]


# --------------------------------------------------------------------------------------------- /health


class HealthStatus(msgspec.Struct, **_RESPONSE):
    """Liveness or readiness with the checks behind it."""

    status: Literal["ok", "ready"]
    checks: list[ReadinessCheck]
    # Soft dependencies that are down while the service still answers (readiness ignores them):
    # "redis" (the cache falls back to memory), "judge:<name>" (its circuit breaker is open).
    degraded: list[str] = msgspec.field(default_factory=list)


# --------------------------------------------------------------------------------------------- /v1/jobs

JobState = Literal["queued", "running", "succeeded", "failed", "cancelled"]


class JobAccepted(msgspec.Struct, **_RESPONSE):
    """A job taken: where to poll its status and read its results."""

    job_id: str
    status: JobState
    n_items: int
    status_url: str
    results_url: str


class JobStatus(msgspec.Struct, **_RESPONSE):
    """A job's progress: ``n_done`` items have a result line (``n_failed`` of them an error)."""

    job_id: str
    status: JobState
    n_items: int
    n_done: int
    n_failed: int
    created_at: str
    started_at: str | None
    finished_at: str | None
    items_per_second: float | None
    eta_s: float | None
    status_url: str
    results_url: str


class JobItemResult(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One line of a job's results: the batch endpoint's item, with ``item_id`` always present (null if none)."""

    index: int
    item_id: str | None
    ok: bool
    result: ScoreResponse | None = None
    error: Problem | None = None
