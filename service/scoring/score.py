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
   (``calibration.verdicts``): ``probabilities`` (log-probs), ``mean`` (mean_of_samples), ``score`` (an integer
   score the caller sent, or the live judge's); only thresholds fitted on one of those kinds may serve it, else
   ``calibrated: false`` + escalate (never a threshold fitted on another kind). Among the kinds, the default
   method of each (or the named method) at the level, and the entry with the smaller held-out mean set wins.
   A named method calibrated for none of the verdict's kinds, or a level below every one of the cell's, ->
   ``calibrated: false`` + escalate, the reason saying what is calibrated and what to send (the spec cannot
   name each cell's methods and levels, so such a schema-valid request is answered, never with an invented
   set); for a live call a method the cell lacks is a 422 before the judge is paid for.
7. **Set and decision.** ``calibration.conformal.prediction_set`` on the kind's inputs
   (``calibration.verdicts.verdict_inputs``; ``aps_randomized`` with the core's default generator, so equal
   inputs give equal sets), served as its interval hull (a set with a hole, {2, 4}, becomes {2, 3, 4}; the
   reason says so), then the certified decision (``service.scoring.policy``: the cell's decision rule at the request's
   ``tolerance`` (default 2) and ``accept_alpha`` (default: the request's alpha), or its quality gate at
   ``pass_threshold``; a failed selection rule, a missing rule or an empty set escalate). The answer carries
   ``input_kind``, ``point`` (the calibrated label), ``guarantees`` and ``rule_failed``. ``tolerance`` >= K or
   ``pass_threshold`` > K -> 422, checked before the judge is called.

The caller's ``judge_logprobs`` are renormalised over 1..5 (a missing token counts ln(1e-5), the recorded
data's convention); without ``judge_score`` the verdict's score is the most probable token (lower on ties).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import msgspec

from artifact.serving import LevelRefused, MethodRefused, ServedEntry, Uncalibrated, choose_entry
from calibration.conformal import METHODS, probabilities_from_logprobs
from calibration.verdicts import round_half_up, verdict_inputs
from judges.factuality import FAITHFULNESS_PROMPT_FAMILIES
from judges.sentence_check import judge_score_from_share
from service.calibrations.state import CalibrationSnapshot, coverage_target
from service.config.settings import Settings
from service.errors import CalibrationUnavailableError, InvalidRequestError
from service.judging.injection import INJECTION_FLAG, screen_texts
from service.scoring.cascades import score_cascade
from service.scoring.context import ScoringContext
from service.scoring.panels import score_panel
from service.scoring.policy import asked, decide_for_cell, escalate_for_injection, full_scale, interval_hull, set_note
from service.wire.schemas import CRITERIA as BUILTIN_CRITERIA
from service.wire.schemas import QAEvidenceItem, ScoreRequest, ScoreResponse, SentenceEvidenceItem

__all__ = ["FAITHFULNESS_PROMPT_FAMILIES", "MISSING_LOGPROB", "ScoringContext", "Verdict", "score_item"]

MISSING_LOGPROB = math.log(1e-5)
_LEVEL_TOLERANCE = 1e-9


class Verdict(msgspec.Struct, frozen=True, kw_only=True):
    """A 1..K verdict with its probabilities (when known) and where it came from."""

    judge_score: int
    probabilities: list[float] | None
    source: str
    cached: bool = False
    raw_reply: str | None = None
    qa_score: float | None = None
    qa_exact_match: float | None = None
    evidence: list[QAEvidenceItem | SentenceEvidenceItem] | None = None
    sentence_score: float | None = None  # share of sentences judged "no error" (factuality_method "sentences")
    kinds: tuple[str, ...] = ("score",)  # input kinds the verdict carries (calibration.verdicts), preferred first
    mean: float | None = None  # mean_of_samples, for the ``mean`` kind


def _check_limits(settings: Settings, request: ScoreRequest) -> None:
    if request.document is None and request.summary is None:
        return
    for name, text, limit, variable in (
        ("document", request.document, settings.max_document_chars, "MAX_DOCUMENT_CHARS"),
        ("summary", request.summary, settings.max_summary_chars, "MAX_SUMMARY_CHARS"),
    ):
        if text is not None and not text.strip():
            raise InvalidRequestError(f"{name} is blank: it must contain some text")
        if text is not None and len(text) > limit:
            raise InvalidRequestError(f"{name} has {len(text)} characters; the limit is {variable}={limit}")


def _own_verdict(request: ScoreRequest, n_labels: int = 5) -> Verdict:
    probabilities = None
    if request.judge_score is not None and request.judge_score > n_labels:
        raise InvalidRequestError(f"judge_score={request.judge_score} is outside this cell's scale 1..{n_labels}")
    if request.judge_logprobs is not None:
        if request.judge_logprobs.highest_token() > n_labels:
            raise InvalidRequestError(
                f'judge_logprobs has token "{request.judge_logprobs.highest_token()}" outside this cell\'s scale '
                f"1..{n_labels}"
            )
        values = request.judge_logprobs.values(n_labels)
        if all(value is None for value in values):
            raise InvalidRequestError(
                f'judge_logprobs holds no token: give log-probabilities for some of "1".."{n_labels}"'
            )
        filled = [MISSING_LOGPROB if value is None else value for value in values]
        probabilities = [float(p) for p in probabilities_from_logprobs(filled)]
    mean = request.mean_of_samples
    if mean is not None and mean > n_labels:
        raise InvalidRequestError(f"mean_of_samples={mean} is outside this cell's scale 1..{n_labels}")
    kinds = tuple(kind for kind, given in (("probabilities", probabilities is not None), ("mean", mean is not None),
                                           ("score", request.judge_score is not None)) if given)
    score = request.judge_score
    if score is None and probabilities is not None:
        score = max(range(len(probabilities)), key=lambda k: (probabilities[k], -k)) + 1
    if score is None:
        assert mean is not None
        score = round_half_up(mean)
    return Verdict(judge_score=score, probabilities=probabilities, source="caller", kinds=kinds, mean=mean)


def _sentence_evidence(verdicts: Sequence[Any]) -> list[QAEvidenceItem | SentenceEvidenceItem]:
    return [SentenceEvidenceItem(sentence=v.sentence, error=v.category != "no error", category=v.category,
                                 reason=v.reason) for v in verdicts]


def _own_sentence_verdict(request: ScoreRequest) -> Verdict:
    """The caller's per-sentence verdicts -> share error-free -> ``1 + round_half_up(4 x share)`` (sentence_check)."""
    if request.criterion != "faithfulness" or request.factuality_method != "sentences":
        raise InvalidRequestError('sentence_verdicts need criterion "faithfulness" and factuality_method "sentences"')
    if request.judge_score is not None or request.judge_logprobs is not None or request.mean_of_samples is not None:
        raise InvalidRequestError("send either sentence_verdicts or judge_score / judge_logprobs / mean_of_samples")
    verdicts = request.sentence_verdicts or []
    share = sum(v.category == "no error" for v in verdicts) / len(verdicts)
    return Verdict(judge_score=judge_score_from_share(share), probabilities=None, source="caller",
                   evidence=_sentence_evidence(verdicts), sentence_score=share)


def _check_criterion(ctx: ScoringContext, snapshot: CalibrationSnapshot, request: ScoreRequest, own: bool) -> None:
    """A criterion is one the judge can be asked about (SummEval's four, faithfulness, a configured rubric) or, for
    the caller's own verdict, also any the loaded calibration covers; otherwise 422 with the allowed names."""
    askable = set(BUILTIN_CRITERIA) | set(ctx.judges.rubric_names())
    if request.criterion in askable or (own and request.criterion in snapshot.criterion_labels):
        return
    allowed = sorted(askable | set(snapshot.criterion_labels)) if own else sorted(askable)
    how = "" if own else " for a live judge call (a criterion only your calibration covers needs your judge_score)"
    raise InvalidRequestError(f"unknown criterion {request.criterion!r}{how}", allowed=allowed)


def _resolve_judge(ctx: ScoringContext, snapshot: CalibrationSnapshot, request: ScoreRequest, own: bool) -> str:
    configured = ctx.judges.names()
    name = request.judge or ctx.judges.default_judge()
    if own:
        if name is not None and (name in snapshot.judge_names or name in configured):
            return name
        known = sorted(snapshot.judge_names | set(configured))
        if name is None:
            raise InvalidRequestError(
                "judge is required with judge_score / judge_logprobs: name the judge whose verdict it is",
                allowed=known,
            )
        raise InvalidRequestError(f"unknown judge {name!r}: not in the calibration nor configured", allowed=known)
    ctx.judges.client(name or "")  # 503 without judges, 422 for an unconfigured one
    assert name is not None
    return name


def _require_texts(request: ScoreRequest) -> None:
    if request.document is None or request.summary is None:
        raise InvalidRequestError(
            "document and summary are required when the service calls the judge "
            "(or send judge_score / judge_logprobs to calibrate your own verdict)"
        )


def _resolve_prompt_family(
    ctx: ScoringContext, snapshot: CalibrationSnapshot, request: ScoreRequest, judge: str, own: bool
) -> str | None:
    config = ctx.judges.config(judge)
    if not own:
        # The family of the prompt the service will send; a threshold of another family must not apply.
        rubric = ctx.judges.rubrics.get(request.criterion)
        if request.criterion == "faithfulness":
            actual = FAITHFULNESS_PROMPT_FAMILIES[request.factuality_method]
        elif rubric is not None:
            actual = rubric.family  # the user's rubric prompt: only thresholds fitted under it apply
        else:
            actual = config.prompt_family
        if request.prompt_family and request.prompt_family != actual:
            raise InvalidRequestError(
                f"judge {judge!r} is asked with prompt family {actual!r} for this request; prompt_family "
                f"{request.prompt_family!r} can only describe a verdict you send (judge_score / judge_logprobs)",
                allowed=[actual],
            )
        return actual
    if request.prompt_family:
        return request.prompt_family
    if request.criterion == "faithfulness":
        family = FAITHFULNESS_PROMPT_FAMILIES[request.factuality_method]
        if snapshot.methods(judge, family, "faithfulness"):
            return family
    if config is not None:
        return config.prompt_family
    families = snapshot.prompt_families_for(judge, request.criterion)
    if len(families) > 1:
        raise InvalidRequestError(
            f"judge {judge!r} is calibrated for {request.criterion} under several prompt families; "
            "name one in prompt_family",
            allowed=families,
        )
    return families[0] if families else None


def _resolve_alpha(ctx: ScoringContext, snapshot: CalibrationSnapshot, request: ScoreRequest) -> float:
    """The requested level (default DEFAULT_ALPHA); below every calibrated level -> 422. A level between
    calibrated ones is served at the next smaller one (artifact.serving), which the answer states."""
    alpha = request.alpha if request.alpha is not None else ctx.settings.default_alpha
    levels = snapshot.all_levels
    if levels and alpha < levels[0] - _LEVEL_TOLERANCE:
        raise InvalidRequestError(
            f"alpha={alpha} is below every calibrated level (the smallest is {levels[0]}); calibrated levels: "
            f"{', '.join(map(str, levels))}",
            allowed=[str(level) for level in levels],
        )
    return alpha


async def _judge_verdict(ctx: ScoringContext, request: ScoreRequest, judge: str) -> Verdict:
    document, summary = request.document or "", request.summary or ""
    if request.criterion == "faithfulness" and request.factuality_method == "sentences":
        answer = await ctx.judges.faithfulness_sentences(judge, document, summary)
        checked = answer.value
        return Verdict(judge_score=checked.judge_score, probabilities=None, source="judge", cached=answer.cached,
                       raw_reply=checked.raw_reply, evidence=_sentence_evidence(checked.verdicts),
                       sentence_score=checked.score)
    if request.criterion == "faithfulness" and request.factuality_method == "qa":
        answer = await ctx.judges.faithfulness_qa(judge, document, summary, request.n_questions)
        qa = answer.value
        return Verdict(
            judge_score=qa.judge_score,
            probabilities=None,
            source="judge",
            cached=answer.cached,
            raw_reply=qa.generation_raw,
            qa_score=qa.score,
            qa_exact_match=qa.exact_match,
            evidence=[
                QAEvidenceItem(
                    question=item.question,
                    summary_answer=item.summary_answer,
                    article_answer=item.article_answer,
                    similarity=item.similarity,
                    exact_match=item.exact_match,
                )
                for item in qa.evidence
            ],
        )
    if request.criterion == "faithfulness":
        answer = await ctx.judges.faithfulness_direct(judge, document, summary)
    else:
        answer = await ctx.judges.direct(judge, request.criterion, document, summary)
    verdict = answer.value
    return Verdict(
        judge_score=verdict.judge_score,
        probabilities=None if verdict.probabilities is None else [float(p) for p in verdict.probabilities],
        source="judge",
        cached=answer.cached,
        raw_reply=verdict.raw_reply,
        kinds=("score",) if verdict.probabilities is None else ("probabilities", "score"),
    )


def _check_named_method(snapshot: CalibrationSnapshot, cell: tuple[str, str, str], method: str) -> None:
    calibrated = snapshot.methods(*cell)
    if method not in calibrated:
        raise InvalidRequestError(
            f"method {method!r} is not calibrated for judge={cell[0]!r}, prompt_family={cell[1]!r}, "
            f"criterion={cell[2]!r}; calibrated methods: {', '.join(calibrated)}",
            allowed=calibrated,
        )


class _Plan(msgspec.Struct, frozen=True):
    """What rules 3-5 decide before the verdict: judge, prompt family, level, cell, whether it is calibrated."""

    judge: str
    prompt_family: str | None
    alpha: float
    coverage_target: float
    cell: tuple[str, str, str]
    calibrated_cell: bool


def _plan(ctx: ScoringContext, snapshot: CalibrationSnapshot, request: ScoreRequest, own: bool) -> _Plan:
    """Rules 3-5 (and the named method's check), memoised on the snapshot by the request's names."""
    key = ("plan", own, request.judge, request.prompt_family, request.criterion, request.alpha, request.method,
           request.factuality_method)
    plan = snapshot.memo.get(key)
    if plan is not None:
        return plan  # type: ignore[return-value]
    judge = _resolve_judge(ctx, snapshot, request, own)  # first: without judges a live call is the 503 whatever it asks
    _check_criterion(ctx, snapshot, request, own)
    prompt_family = _resolve_prompt_family(ctx, snapshot, request, judge, own)
    alpha = _resolve_alpha(ctx, snapshot, request)
    cell = (judge, prompt_family or "", request.criterion)
    calibrated_cell = prompt_family is not None and bool(snapshot.cell_methods.get(cell))
    if calibrated_cell and request.method is not None and not own:
        _check_named_method(snapshot, cell, request.method)  # before paying for a judge call
    coverage = snapshot.coverage_targets.get(alpha) or coverage_target(alpha)
    plan = _Plan(judge, prompt_family, alpha, coverage, cell, calibrated_cell)
    snapshot.remember(key, plan)
    return plan


def _calibrated_entry(
    snapshot: CalibrationSnapshot, plan: _Plan, requested: str | None, verdict: Verdict
) -> ServedEntry | Uncalibrated:
    """Rule 6 for a calibrated cell (artifact.serving: input kind, level, method), memoised on the snapshot."""
    key = ("entry", plan.cell, plan.alpha, requested, verdict.kinds)
    found = snapshot.memo.get(key)
    if found is not None:
        return found  # type: ignore[return-value]
    try:
        served = choose_entry(snapshot.index, plan.cell, verdict.kinds, plan.alpha, requested)
    except (LevelRefused, MethodRefused) as error:  # the cell has no threshold for this: never an invented set
        served = Uncalibrated(reason=str(error))
    snapshot.remember(key, served)
    return served


async def score_item(ctx: ScoringContext, request: ScoreRequest) -> ScoreResponse:
    """Verdict -> prediction set -> decision for one request (rules in the module docstring)."""
    _check_limits(ctx.settings, request)
    if request.cascade is not None:  # a cascade of judges: service.scoring.cascades, each stage scored by this function
        return await score_cascade(ctx, request, score_item)
    if request.verdicts is not None or request.panel is not None:  # a judge panel: service.scoring.panels
        return await score_panel(ctx, request)
    snapshot = ctx.snapshot
    if snapshot is None:
        raise CalibrationUnavailableError(
            f"no thresholds artifact is loaded ({ctx.calibration_error}); fix THRESHOLDS_PATH or POST "
            "/v1/calibration/reload"
        )
    if request.method is not None and request.method not in METHODS:
        raise InvalidRequestError(f"unknown method {request.method!r}", allowed=list(METHODS))
    own = request.judge_score is not None or request.judge_logprobs is not None or request.mean_of_samples is not None
    own = own or request.sentence_verdicts is not None
    plan = _plan(ctx, snapshot, request, own)
    # A bare judge score in a calibrated cell: the whole answer is a pure function of the plan, the named
    # method and the score, so it is remembered (at most K per plan and method; the response is frozen).
    answer_key = (
        ("answer", plan, request.method, request.judge_score, request.tolerance, request.accept_alpha,
         request.pass_threshold)
        if own and request.judge_score is not None and request.judge_logprobs is None
        and request.mean_of_samples is None and request.sentence_verdicts is None and plan.calibrated_cell
        else None
    )
    if answer_key is not None:
        remembered = snapshot.memo.get(answer_key)
        if remembered is not None:
            ctx.metrics.count_decision(request.criterion, remembered.decision, True)  # type: ignore[attr-defined]
            if request.item_id is None:
                return remembered  # type: ignore[return-value]
            return msgspec.structs.replace(remembered, item_id=request.item_id)  # type: ignore[type-var]
    if not own:
        _require_texts(request)
    judge, prompt_family, alpha = plan.judge, plan.prompt_family, plan.alpha
    rubric = ctx.judges.rubrics.get(request.criterion)
    # K: the calibrated cell's own; for an uncalibrated rubric criterion the rubric's; else the criterion's
    n_labels = rubric.scale_max if rubric is not None and not plan.calibrated_cell else snapshot.n_labels_for(plan.cell)
    ask = asked(tolerance=request.tolerance, accept_alpha=request.accept_alpha, alpha=request.alpha,
                default_alpha=ctx.settings.default_alpha, pass_threshold=request.pass_threshold, n_labels=n_labels)
    if request.sentence_verdicts is not None:
        verdict = _own_sentence_verdict(request)
    else:
        verdict = _own_verdict(request, n_labels) if own else await _judge_verdict(ctx, request, judge)

    entry = None
    note = ""
    kind: str | None = None
    method: str | None = request.method
    why_uncalibrated = (
        f"no calibration for judge={judge!r}, prompt_family={prompt_family!r}, criterion={request.criterion!r}"
    )
    if plan.calibrated_cell:
        served = _calibrated_entry(snapshot, plan, request.method, verdict)
        if isinstance(served, Uncalibrated):
            why_uncalibrated = served.reason
        else:
            entry, method, note, kind, alpha = served.entry, served.method, served.note, served.kind, served.alpha
    if entry is None or kind is None:
        labels = full_scale(n_labels)
        decision = ctx.policy.uncalibrated(why_uncalibrated, point=verdict.judge_score)
    else:
        score, probabilities = verdict_inputs(kind, n_labels, judge_score=verdict.judge_score,
                                              probabilities=verdict.probabilities, mean=verdict.mean)
        conformal = snapshot.prediction_set(entry, score, probabilities)
        labels = interval_hull(conformal)
        decision = decide_for_cell(
            ctx.policy, snapshot, cell=plan.cell, kinds=verdict.kinds, served_kind=kind, alpha=alpha,
            delta=entry.fitted.delta, judge_score=verdict.judge_score, probabilities=verdict.probabilities,
            mean=verdict.mean, prediction_set=labels, ask=ask,
        )
        note = set_note(conformal, labels, alpha) + note
        decision = msgspec.structs.replace(decision, reason=decision.reason + note)
    findings = [] if own else screen_texts({"document": request.document, "summary": request.summary}, ctx.screened)
    if findings:  # the judge read a text that tries to steer it (service.judging.injection): never accept its verdict
        decision = escalate_for_injection(decision, findings)
    ctx.metrics.count_decision(request.criterion, decision.decision, entry is not None)
    faithfulness = request.criterion == "faithfulness"
    response = ScoreResponse(
        criterion=request.criterion,
        judge=judge,
        prompt_family=prompt_family,
        source="caller" if own else "judge",
        judge_score=verdict.judge_score,
        probabilities=verdict.probabilities,
        prediction_set=list(labels),
        set_size=len(labels),
        alpha=alpha,
        coverage_target=plan.coverage_target if alpha == plan.alpha else coverage_target(alpha),
        input_kind=kind,
        method=method,
        calibrated=entry is not None,
        decision=decision.decision,
        escalate=decision.escalate,
        point=decision.point,
        guarantees=list(decision.guarantees),
        rule_failed=decision.rule_failed,
        reason=decision.reason,
        calibration_id=snapshot.calibration_id,
        n_cal=None if entry is None else entry.fitted.n_cal,
        heldout_coverage=None if entry is None else entry.heldout_coverage,
        cached=verdict.cached,
        raw_reply=verdict.raw_reply,
        factuality_method=(request.factuality_method if not own or verdict.sentence_score is not None else None)
        if faithfulness else None,
        qa_score=verdict.qa_score,
        qa_exact_match=verdict.qa_exact_match,
        sentence_score=verdict.sentence_score,
        evidence=verdict.evidence,
        flags=[INJECTION_FLAG] if findings else [],
        item_id=request.item_id,  # the caller's id, echoed (never remembered: the memo is shared)
    )
    if answer_key is not None and entry is not None:
        snapshot.remember(
            answer_key, response if request.item_id is None else msgspec.structs.replace(response, item_id=None)
        )
    return response
