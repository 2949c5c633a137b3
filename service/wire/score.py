"""POST /v1/score and /v1/score/batch: requests, answers, evidence, guarantees, panels, cascades."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

import msgspec
from msgspec import Meta

from service.config.settings import HARD_MAX_BATCH_ITEMS
from service.wire.common import (
    REQUEST_STRUCT,
    RESPONSE_STRUCT,
    Alpha,
    Confidence,
    Criterion,
    Decision,
    GuaranteeMode,
    ItemIdText,
    JudgeScore,
    LogProb,
    MeanOfSamples,
    Name,
    PassThreshold,
    Problem,
    Text,
    Tolerance,
    pac_confidence,
)
from service.wire.schema import SchemaRules, absent, implies, present

__all__ = [
    "OWN_VERDICT_FIELDS",
    "BatchItemResult",
    "CascadeAnswer",
    "CascadeStage",
    "Guarantee",
    "JudgeLogprobs",
    "MemberVerdict",
    "PanelAnswer",
    "PanelMemberVerdict",
    "QAEvidenceItem",
    "ScoreBatchRequest",
    "ScoreBatchResponse",
    "ScoreRequest",
    "ScoreResponse",
    "SentenceCategory",
    "SentenceEvidenceItem",
    "SentenceVerdictItem",
    "score_branches",
]

# The fields that carry the caller's own verdict, with their JSON types (service.scoring.verdict).
OWN_VERDICT_FIELDS = {
    "judge_score": "integer",
    "judge_logprobs": "object",
    "mean_of_samples": "number",
    "sentence_verdicts": "array",
}
_SINGLE_JUDGE_FIELDS = (
    "judge",
    "judge_score",
    "judge_logprobs",
    "mean_of_samples",
    "sentence_verdicts",
    "prompt_family",
)


# ---------------------------------------------------------------------------------------------- /v1/score


class JudgeLogprobs(msgspec.Struct, **REQUEST_STRUCT):
    """Log-probabilities of the score tokens "1".."K" (K <= 10, the cell's scale; a token above K is a 422).

    A token not sent ranks below every token sent: it is read as ln(1e-5) (-11.5129, the recorded calibration
    data's fill for tokens outside the judge's top-k) when every value sent is above that, else as the lowest value
    sent + ln(1e-5). So the most probable token sent stays the most probable (ties: the lower token).
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

    # "holds no token" is a 422: at least one token with a number (service.scoring.verdict)
    JSON_SCHEMA_RULES: ClassVar[SchemaRules] = {"anyOf": [present({str(k): "number"}) for k in range(1, 11)]}

    def values(self, n_labels: int = 5) -> list[float | None]:
        """The log-probabilities of "1".."n_labels" in score order, None where the caller gave none."""
        every = [self.p1, self.p2, self.p3, self.p4, self.p5, self.p6, self.p7, self.p8, self.p9, self.p10]
        return every[:n_labels]

    def highest_token(self) -> int:
        """The highest score token given (0 when none)."""
        every = [self.p1, self.p2, self.p3, self.p4, self.p5, self.p6, self.p7, self.p8, self.p9, self.p10]
        return max((k for k, value in enumerate(every, start=1) if value is not None), default=0)


SentenceCategory = Literal[
    "no error",
    "predicate error",
    "entity error",
    "circumstantial error",
    "coreference error",
    "linking error",
    "out-of-context error",
    "grammatical error",
    "other error",
]  # FRANK's error types written out (judges.factuality.sentence_parse.CATEGORIES)


class SentenceVerdictItem(msgspec.Struct, **REQUEST_STRUCT):
    """One summary sentence's fact-check verdict that the caller got from its own judge (in sentence order)."""

    sentence: Annotated[str, Meta(min_length=1, max_length=5000)]
    category: SentenceCategory
    reason: Annotated[str, Meta(max_length=2000)] = ""


class MemberVerdict(msgspec.Struct, **REQUEST_STRUCT):
    """One panel member's verdict, sent by the caller: ``judge`` and at least one of ``judge_score``,
    ``judge_logprobs``, ``mean_of_samples`` (its expected score: calibration.input_kinds.mean_panel)."""

    # calibration.input_kinds.mean_panel.panel_name: a member's judge has no "+" and is not itself a panel
    judge: Annotated[
        str, Meta(min_length=1, max_length=200, extra_json_schema={"pattern": "^[^+]*$", "not": {"pattern": "^panel:"}})
    ]
    judge_score: JudgeScore | None = None
    judge_logprobs: JudgeLogprobs | None = None
    mean_of_samples: MeanOfSamples | None = None

    # service.scoring.panel_members.caller_member: a member carries something to read
    JSON_SCHEMA_RULES: ClassVar[SchemaRules] = {
        "anyOf": [present({name: kind}) for name, kind in OWN_VERDICT_FIELDS.items() if name != "sentence_verdicts"]
    }


def score_branches(*, judge_required: bool) -> list[dict[str, Any]]:
    """ScoreRequest's ``anyOf``: live texts, the caller's verdict (with ``judge`` unless a default judge exists), a
    panel (each branch's fields required and not null)."""
    judge = {"judge": "string"} if judge_required else {}
    own = [present({**judge, name: kind}) for name, kind in OWN_VERDICT_FIELDS.items()]
    panel = [present({"verdicts": "array"}), present({"panel": "string", "document": "string", "summary": "string"})]
    return [present({"document": "string", "summary": "string"}), *own, *panel]


class ScoreRequest(msgspec.Struct, **REQUEST_STRUCT):
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
    # Which promise every guarantee of the answer keeps: "per_label" (the default: for every human label, on average
    # over the calibration documents), "expected" (all labels together, on average over them) or "pac" (all labels
    # together, with probability >= confidence over them; confidence only with pac, default the calibrated 0.95).
    guarantee: GuaranteeMode = "per_label"
    confidence: Confidence | None = None
    # A judge panel (service.scoring.panels): the members' own verdicts, or the name of a panel of PANELS_FILE whose
    # members the service calls; either answers one set from the panel's calibrated cell.
    verdicts: Annotated[list[MemberVerdict], Meta(min_length=2, max_length=16)] | None = None
    panel: Name | None = None
    # A cascade of CASCADES_FILE (service.scoring.cascades): cheap judge -> stronger judge -> human, each stage
    # certified
    # on its own rule at accept_alpha / (number of judge stages).
    cascade: Name | None = None

    JSON_SCHEMA_RULES: ClassVar[SchemaRules] = {
        # a live call, the caller's own verdict (naming its judge: the deployment's values say when a default judge
        # makes it optional, service.http.spec_values) or a panel
        "anyOf": score_branches(judge_required=True),
        "allOf": [
            implies(  # service.scoring.verdict.own_sentence_verdict
                present({"sentence_verdicts": "array"}),
                {
                    "allOf": [absent("judge_score", "judge_logprobs", "mean_of_samples")],
                    "required": ["factuality_method"],
                    "properties": {"criterion": {"const": "faithfulness"}, "factuality_method": {"const": "sentences"}},
                },
            ),
            # service.scoring.panels: verdicts or panel, not both; a panel request has no single-judge field and is
            # not about faithfulness
            {"not": present({"verdicts": "array", "panel": "string"})},
            implies(
                {"anyOf": [present({"verdicts": "array"}), present({"panel": "string"})]},
                {
                    "allOf": [absent(*_SINGLE_JUDGE_FIELDS)],
                    "properties": {"criterion": {"not": {"const": "faithfulness"}}},
                },
            ),
            pac_confidence(),
        ],
    }


class QAEvidenceItem(msgspec.Struct, tag="qa", tag_field="kind", **RESPONSE_STRUCT):
    """One question of the QA factuality check, with both answers and their token-F1 similarity."""

    question: str
    summary_answer: str
    article_answer: str | None
    similarity: float
    exact_match: float


class SentenceEvidenceItem(msgspec.Struct, tag="sentence", tag_field="kind", **RESPONSE_STRUCT):
    """One summary sentence of the sentence-level fact-check: error or not, its FRANK category, the reason."""

    sentence: str
    error: bool
    category: SentenceCategory
    reason: str


class PanelMemberVerdict(msgspec.Struct, **RESPONSE_STRUCT):
    """One member's verdict in a panel answer; ``error`` says why a live member gave none (it is then left out)."""

    judge: str
    source: Literal["judge", "caller"]
    prompt_family: str | None = None
    judge_score: int | None = None
    probabilities: list[float] | None = None
    mean_of_samples: float | None = None
    expected_score: float | None = None  # the member's expected score (calibration.input_kinds.mean_panel rule)
    cached: bool = False
    error: str | None = None


class PanelAnswer(msgspec.Struct, **RESPONSE_STRUCT):
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
    """One guarantee behind an answer (service.scoring.policy), documents as the unit, in one ``mode``.

    ``set_coverage``: the human label is in prediction_set for >= 1 - alpha of a new document's verdicts.
    ``accept_error``: among accepted verdicts, |human - point| >= tolerance at most alpha of the time.
    ``quality_gate``: among accepted passes, human < pass_threshold at most alpha of the time. ``mode``
    ``expected``: on average over the draw of the calibration documents (no ``confidence``, no ``bound``);
    ``pac``: with probability >= ``confidence`` over it, ``bound`` the certified upper bound. ``per_label``: for
    every human label y separately, on average over that draw: y is in the set for >= 1 - alpha of label-y verdicts;
    at most alpha of label-y verdicts are accepted with |y - point| >= tolerance; at most alpha of the verdicts whose
    human label is below pass_threshold pass. ``pooled_labels``: labels with too little calibration evidence of
    their own, whose promise holds for each listed group taken together.
    """

    kind: Literal["set_coverage", "accept_error", "quality_gate"]
    alpha: float
    mode: GuaranteeMode
    confidence: float | None = None
    tolerance: int | None = None
    pass_threshold: int | None = None
    bound: float | None = None
    pooled_labels: list[list[int]] | None = None


class CascadeStage(msgspec.Struct, **RESPONSE_STRUCT):
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


class CascadeAnswer(msgspec.Struct, **RESPONSE_STRUCT):
    """The cascade behind an answer: its stages in order, the ones called, and the split of accept_alpha."""

    name: str
    stages: list[str]  # the judge stages in order; a human follows the last
    stage_alpha: float  # accept_alpha / len(stages): each stage is certified at this level (Bonferroni)
    called: list[CascadeStage]
    judge_calls: int  # live judge calls made for this item, every stage's (a caller's verdict or a cached one: 0)


class ScoreResponse(msgspec.Struct, **RESPONSE_STRUCT):
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
    # Live judge calls this answer cost: 0 for the caller's own verdict and for a cached (or merged) one; a panel's or
    # cascade's counts every member or stage called.
    judge_calls: int
    raw_reply: str | None
    factuality_method: Literal["direct", "qa", "sentences"] | None = None
    qa_score: float | None = None
    qa_exact_match: float | None = None
    sentence_score: float | None = None  # share of sentences judged "no error" (factuality_method "sentences")
    evidence: list[QAEvidenceItem | SentenceEvidenceItem] | None = None  # "kind" tells which
    item_id: str | None = None  # the request's item_id, echoed
    # "possible_prompt_injection": a text the judge read tries to steer it (service.screening.injection); decision
    # escalate. "judge_model_mismatch": the judge's reply named another model than the one its calibration was
    # fitted on (service.judging.model_check); the answer stands, the operator should look.
    flags: list[str] = msgspec.field(default_factory=list)
    panel: PanelAnswer | None = None  # a panel request: members' verdicts and their disagreement
    cascade: CascadeAnswer | None = None  # a cascade request: the stages called and their verdicts


class ScoreBatchRequest(msgspec.Struct, **REQUEST_STRUCT):
    """Up to 1,000 /v1/score bodies; each item is validated on its own, so one bad item fails alone."""

    # Any JSON value is an item: one that is not a valid ScoreRequest fails alone, in its result (a 200 for the
    # batch), so declaring the items as ScoreRequest would promise a refusal that never comes.
    items: Annotated[
        list[
            Annotated[
                Any,
                Meta(description="a /v1/score body (schema ScoreRequest); anything else fails alone, in its result"),
            ]
        ],
        Meta(max_length=HARD_MAX_BATCH_ITEMS),
    ]


class BatchItemResult(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One batch item: ``{index, ok: true, result}`` or ``{index, ok: false, error}`` (+ the item's ``item_id``)."""

    index: int
    item_id: str | None = None  # the item's own item_id, echoed (also on a failed item when it was a string)
    ok: bool
    result: ScoreResponse | None = None
    error: Problem | None = None


class ScoreBatchResponse(msgspec.Struct, **RESPONSE_STRUCT):
    """Per-item outcomes in input order."""

    results: list[BatchItemResult]
    n_ok: int
    n_failed: int
