"""Score one item: verdict (the judge's, or the caller's) -> conformal prediction set -> decision.

Resolution rules, in order (each failure is a problem with the allowed values where there are any):

1. **Limits.** ``document`` <= MAX_DOCUMENT_CHARS and ``summary`` <= MAX_SUMMARY_CHARS characters (422).
2. **Calibration.** No artifact loaded -> 503; nothing can be calibrated without one.
3. **Judge** (before the criterion: without judges a live call is the 503 whatever it asks). ``judge`` or
   DEFAULT_JUDGE or the first configured judge. With the caller's own verdict it may
   be any judge of the calibration or of JUDGES_FILE (422 otherwise). Without one the judge is called: no
   judge configured -> 503 with set-up help; a judge that is not configured -> 422; ``document`` and
   ``summary`` are required (422).
4. **Prompt family.** A live call uses the judge's configured family, except faithfulness, whose prompts are
   the factuality module's own, looked up under ``factuality_direct`` / ``factuality_qa``
   (``FAITHFULNESS_PROMPT_FAMILIES``); a ``prompt_family`` naming another family is a 422, since a threshold
   fitted on one prompt must never be applied to a verdict from another. For the caller's verdict:
   ``prompt_family``; else, for faithfulness, the ``factuality_method``'s family when it is calibrated for
   the judge; else the configured judge's; else, for a calibration-only judge, the one family calibrated for
   (judge, criterion) (several -> 422 naming them).
5. **Level.** ``alpha`` (default DEFAULT_ALPHA) below every calibrated level -> 422 with the levels; a level
   between calibrated ones is served at the next smaller one (rule 6), and the reason says so.
6. **Entry** (``artifact.serving.choose_entry``, the rule ``offline validate`` applies too). A name outside
   ``calibration.conformal.METHODS`` -> 422. The cell (judge, prompt family, criterion) has no entry at all ->
   ``calibrated: false``, the full scale, ``escalate`` (never an invented set). The verdict carries input kinds
   (``calibration.input_kinds.verdicts``): ``probabilities`` (log-probs), ``mean`` (mean_of_samples), ``score`` (an
   integer
   score the caller sent, or the live judge's); only thresholds fitted on one of those kinds may serve it, else
   ``calibrated: false`` + escalate (never a threshold fitted on another kind). Among the kinds, the default
   method of each (or the named method) at the level, and the entry with the smaller held-out mean set wins.
   A named method calibrated for none of the verdict's kinds, or a level below every one of the cell's, ->
   ``calibrated: false`` + escalate, the reason saying what is calibrated and what to send (the spec cannot
   name each cell's methods and levels, so such a schema-valid request is answered, never with an invented
   set); for a live call a method the cell lacks is a 422 before the judge is paid for.
7. **Set and decision.** ``calibration.conformal.prediction_set`` on the kind's inputs
   (``calibration.input_kinds.verdicts.verdict_inputs``; ``aps_randomized`` with the core's default generator, so equal
   inputs give equal sets), served as its interval hull (a set with a hole, {2, 4}, becomes {2, 3, 4}; the
   reason says so), then the certified decision (``service.scoring.policy``: the cell's decision rule at the request's
   ``tolerance`` (default 2) and ``accept_alpha`` (default: the request's alpha), or its quality gate at
   ``pass_threshold``; a failed selection rule, a missing rule or an empty set escalate). The answer carries
   ``input_kind``, ``point`` (the calibrated label), ``guarantees`` and ``rule_failed``. ``tolerance`` >= K or
   ``pass_threshold`` > K -> 422, checked before the judge is called.

The caller's ``judge_logprobs`` are renormalised over 1..5 (a missing token reads below every token sent,
``verdict.filled_logprobs``); without ``judge_score`` the verdict's score is the most probable token (lower on ties).

The flow is a sequence of named steps, one module each: **resolve** (``service.scoring.resolve``: rules 1-5 ->
judge, prompt family, level, cell, then K and the decision ask) -> **verdict** (``service.scoring.verdict``: the
caller's or the judge's) -> **set** (``service.scoring.sets``: rules 6-7, the entry and the prediction set) ->
**decision** (``service.scoring.policy``, plus the injection screen) -> **response**. Panels
(``service.scoring.panels``) and cascades (``service.scoring.cascades``) branch off before the first step.
"""

from __future__ import annotations

from typing import cast

import msgspec

from calibration.input_kinds.verdicts import InputKind
from service.artifacts.snapshot import CalibrationSnapshot, coverage_target
from service.judging.model_check import MODEL_MISMATCH_FLAG
from service.scoring.cascades import score_cascade
from service.scoring.cell_decision import DecisionAsk, decide_for_cell
from service.scoring.context import ScoringContext
from service.scoring.monitor_alarm import escalate_for_alarm
from service.scoring.panels import is_panel_request, score_panel
from service.scoring.per_label import per_label_step, without_label_rule
from service.scoring.policy import PolicyDecision, escalate_for_injection
from service.scoring.resolve import Plan, carries_own_verdict, check_limits, loaded_snapshot, resolve, resolve_ask
from service.scoring.sets import ServedSet, served_set
from service.scoring.verdict import Verdict, verdict_for
from service.screening.injection import INJECTION_FLAG, screen_texts
from service.wire.score import ScoreRequest, ScoreResponse

__all__ = ["score_item"]


async def score_item(ctx: ScoringContext, request: ScoreRequest) -> ScoreResponse:
    """Resolve -> verdict -> set -> decision -> response for one request (rules in the module docstring); a cell
    whose feedback monitor is in alarm escalates (service.scoring.monitor_alarm)."""
    answer = await _score_item(ctx, request)
    if ctx.alarms and ctx.snapshot is not None:
        return escalate_for_alarm(ctx.snapshot, answer, ctx.alarms)
    return answer


async def _score_item(ctx: ScoringContext, request: ScoreRequest) -> ScoreResponse:
    check_limits(ctx.settings, request)
    if request.cascade is not None:  # a cascade of judges: each stage scored by this function
        return await score_cascade(ctx, request, score_item)
    if is_panel_request(request):
        return await score_panel(ctx, request)
    snapshot = loaded_snapshot(ctx)
    own = carries_own_verdict(request)
    plan = resolve(ctx, snapshot, request, own)
    answer_key = _answer_key(request, plan, own)
    remembered = _remembered_answer(ctx, snapshot, request, answer_key)
    if remembered is not None:
        return remembered
    checked = resolve_ask(ctx, snapshot, request, plan, own)
    verdict = await verdict_for(ctx, request, plan.judge, own, checked.n_labels)
    findings = [] if own else screen_texts({"document": request.document, "summary": request.summary}, ctx.screened)
    stepped = per_label_step(snapshot, plan, verdict, checked.ask) if plan.mode == "per_label" else None
    if stepped is not None:
        served, decision = stepped
        if findings:
            decision = escalate_for_injection(decision, findings)
    else:
        marginal = msgspec.structs.replace(plan, mode="expected") if plan.mode == "per_label" else plan
        served = served_set(snapshot, marginal, request.method, verdict, checked.n_labels)
        decision = _decide(ctx, snapshot, marginal, verdict, served, checked.ask, findings)
        if plan.mode == "per_label" and served.entry is not None:
            decision = without_label_rule(decision)
    ctx.metrics.count_decision(
        request.criterion, decision.decision, served.entry is not None or served.label_rule is not None
    )
    response = _respond(snapshot, request, plan, verdict, served, decision, own=own, flagged=bool(findings))
    if answer_key is not None and (served.entry is not None or served.label_rule is not None):
        remembered = response if request.item_id is None else msgspec.structs.replace(response, item_id=None)
        snapshot.remember(answer_key, remembered)
    return response


def _answer_key(request: ScoreRequest, plan: Plan, own: bool) -> tuple | None:
    """The memo key of a bare judge score in a calibrated cell, else None: that whole answer is a pure function of
    the plan, the named method, the score and the decision ask (at most K per plan and method)."""
    bare_score = (
        own
        and request.judge_score is not None
        and request.judge_logprobs is None
        and request.mean_of_samples is None
        and request.sentence_verdicts is None
    )
    if not (bare_score and plan.calibrated_cell):
        return None
    return (
        "answer",
        plan,
        request.method,
        request.judge_score,
        request.tolerance,
        request.accept_alpha,
        request.pass_threshold,
    )


def _remembered_answer(
    ctx: ScoringContext, snapshot: CalibrationSnapshot, request: ScoreRequest, answer_key: tuple | None
) -> ScoreResponse | None:
    """The remembered answer under ``answer_key`` (counted, with the caller's item_id), or None."""
    if answer_key is None:
        return None
    remembered = snapshot.memo.get(answer_key)
    if not isinstance(remembered, ScoreResponse):  # None: not remembered (answer keys hold only answers)
        return None
    ctx.metrics.count_decision(request.criterion, remembered.decision, True)
    if request.item_id is None:
        return remembered
    return msgspec.structs.replace(remembered, item_id=request.item_id)


def _decide(
    ctx: ScoringContext,
    snapshot: CalibrationSnapshot,
    plan: Plan,
    verdict: Verdict,
    served: ServedSet,
    ask: DecisionAsk,
    findings: list[str],
) -> PolicyDecision:
    """Rule 7's decision (service.scoring.policy) on the served set; uncalibrated or a steered judge -> escalate."""
    if served.entry is None or served.kind is None:
        decision = ctx.policy.uncalibrated(served.note, point=verdict.judge_score)
    else:
        decision = decide_for_cell(
            ctx.policy,
            snapshot,
            cell=plan.cell,
            kinds=verdict.kinds,
            served_input_kind=served.kind,
            alpha=served.alpha,
            delta=served.entry.fitted.delta,
            judge_score=verdict.judge_score,
            probabilities=verdict.probabilities,
            mean=verdict.mean,
            prediction_set=served.labels,
            ask=ask,
            mode=plan.mode,
        )
        decision = msgspec.structs.replace(decision, reason=decision.reason + served.note)
    if findings:  # the judge read a text that tries to steer it (service.screening.injection): never accept its verdict
        decision = escalate_for_injection(decision, findings)
    return decision


def _respond(
    snapshot: CalibrationSnapshot,
    request: ScoreRequest,
    plan: Plan,
    verdict: Verdict,
    served: ServedSet,
    decision: PolicyDecision,
    *,
    own: bool,
    flagged: bool,
) -> ScoreResponse:
    """The ScoreResponse of the steps' results (the caller's item_id echoed)."""
    entry, alpha, label_rule = served.entry, served.alpha, served.label_rule
    faithfulness = request.criterion == "faithfulness"
    return ScoreResponse(
        criterion=request.criterion,
        judge=plan.judge,
        prompt_family=plan.prompt_family,
        source="caller" if own else "judge",
        judge_score=verdict.judge_score,
        probabilities=verdict.probabilities,
        prediction_set=list(served.labels),
        set_size=len(served.labels),
        alpha=alpha,
        coverage_target=plan.coverage_target if alpha == plan.alpha else coverage_target(alpha),
        input_kind=cast(InputKind, served.kind),  # one of INPUT_KINDS (artifact.thresholds checks entries)
        method=served.method,
        calibrated=entry is not None or label_rule is not None,
        decision=decision.decision,
        escalate=decision.escalate,
        point=decision.point,
        guarantees=list(decision.guarantees),
        rule_failed=decision.rule_failed,
        reason=decision.reason,
        calibration_id=snapshot.calibration_id,
        n_cal=label_rule.n_items if label_rule is not None else None if entry is None else entry.fitted.n_cal,
        heldout_coverage=None if entry is None else entry.heldout_coverage,
        cached=verdict.cached,
        judge_calls=verdict.judge_calls,
        raw_reply=verdict.raw_reply,
        factuality_method=(request.factuality_method if not own or verdict.sentence_score is not None else None)
        if faithfulness
        else None,
        qa_score=verdict.qa_score,
        qa_exact_match=verdict.qa_exact_match,
        sentence_score=verdict.sentence_score,
        evidence=verdict.evidence,
        flags=[*([INJECTION_FLAG] if flagged else []), *([MODEL_MISMATCH_FLAG] if verdict.model_mismatch else [])],
        item_id=request.item_id,  # the caller's id, echoed (never remembered: the memo is shared)
    )
