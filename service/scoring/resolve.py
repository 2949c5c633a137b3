"""Scoring step 1, resolve: limits, the loaded calibration, judge, criterion, prompt family, level and cell.

Rules 1-5 of ``service.scoring.score`` (and the named method's check of rule 6, before a judge is paid for). The
names a request resolves to depend on the snapshot and the app's fixed settings only, so ``resolve`` memoises
the ``Plan`` on the snapshot; ``resolve_ask`` adds what depends on the cell's scale (K, and the decision ask
checked against it).
"""

from __future__ import annotations

import msgspec

from calibration.conformal import METHODS
from calibration.levels import LEVEL_TOLERANCE
from judges.factuality.methods import FAITHFULNESS_PROMPT_FAMILIES
from service.artifacts.snapshot import CalibrationSnapshot, coverage_target
from service.config.settings import Settings
from service.errors import CalibrationUnavailableError, InvalidRequestError
from service.judging.families import live_prompt_family
from service.scoring.cell_decision import DecisionAsk, asked
from service.scoring.context import ScoringContext
from service.wire.common import CRITERIA as BUILTIN_CRITERIA
from service.wire.score import ScoreRequest

__all__ = [
    "Plan",
    "CheckedAsk",
    "carries_own_verdict",
    "check_limits",
    "check_method_name",
    "loaded_snapshot",
    "request_mode",
    "resolve",
    "resolve_ask",
]


class Plan(msgspec.Struct, frozen=True):
    """What rules 3-5 decide before the verdict: judge, prompt family, level, cell, whether it is calibrated."""

    judge: str
    prompt_family: str | None
    alpha: float
    coverage_target: float
    cell: tuple[str, str, str]
    calibrated_cell: bool
    mode: str = "expected"  # the guarantee mode every guarantee of the answer keeps (request.guarantee)


class CheckedAsk(msgspec.Struct, frozen=True):
    """The request's decision parameters (``ask``) checked against the cell's scale size K (``n_labels``, rule 7)."""

    n_labels: int
    ask: DecisionAsk


def check_limits(settings: Settings, request: ScoreRequest) -> None:
    """Rule 1: ``document`` and ``summary`` non-blank and within MAX_DOCUMENT_CHARS / MAX_SUMMARY_CHARS (422)."""
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


def loaded_snapshot(ctx: ScoringContext) -> CalibrationSnapshot:
    """Rule 2: the calibration snapshot of the request; 503 when no artifact is loaded."""
    if ctx.snapshot is None:
        raise CalibrationUnavailableError(
            f"no thresholds artifact is loaded ({ctx.calibration_error}); fix THRESHOLDS_PATH or POST "
            "/v1/calibration/reload"
        )
    return ctx.snapshot


def check_method_name(method: str | None) -> None:
    """A named method is one of ``calibration.conformal.METHODS`` (422 with the names otherwise)."""
    if method is not None and method not in METHODS:
        raise InvalidRequestError(f"unknown method {method!r}", allowed=list(METHODS))


def carries_own_verdict(request: ScoreRequest) -> bool:
    """True when the caller sends the verdict (score, log-probs, mean or sentence verdicts): no judge is called."""
    return (
        request.judge_score is not None
        or request.judge_logprobs is not None
        or request.mean_of_samples is not None
        or request.sentence_verdicts is not None
    )


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
    """Rule 3: the named, default or first judge; one the calibration or the configuration knows (422/503)."""
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


def _live_prompt_family(ctx: ScoringContext, request: ScoreRequest, judge: str) -> str:
    """Rule 4 for a live call: the family of the prompt the service will send; another named family is a 422."""
    # the user's rubric prompt, or the factuality method's: only thresholds fitted under it apply
    actual = live_prompt_family(ctx.judges, judge, request.criterion, request.factuality_method)
    assert actual is not None  # a live judge is a configured one (_resolve_judge)
    if request.prompt_family and request.prompt_family != actual:
        raise InvalidRequestError(
            f"judge {judge!r} is asked with prompt family {actual!r} for this request; prompt_family "
            f"{request.prompt_family!r} can only describe a verdict you send (judge_score / judge_logprobs)",
            allowed=[actual],
        )
    return actual


def _resolve_prompt_family(
    ctx: ScoringContext, snapshot: CalibrationSnapshot, request: ScoreRequest, judge: str, own: bool
) -> str | None:
    """Rule 4: the prompt family the verdict was (or will be) produced under; None when nothing names one."""
    if not own:
        return _live_prompt_family(ctx, request, judge)
    if request.prompt_family:
        return request.prompt_family
    if request.criterion == "faithfulness":
        family = FAITHFULNESS_PROMPT_FAMILIES[request.factuality_method]
        if snapshot.methods(judge, family, "faithfulness"):
            return family
    config = ctx.judges.config(judge)
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
    if levels and alpha < levels[0] - LEVEL_TOLERANCE:
        raise InvalidRequestError(
            f"alpha={alpha} is below every calibrated level (the smallest is {levels[0]}); calibrated levels: "
            f"{', '.join(map(str, levels))}",
            allowed=[str(level) for level in levels],
        )
    return alpha


def request_mode(snapshot: CalibrationSnapshot, request: ScoreRequest) -> str:
    """The request's guarantee mode; ``confidence`` with ``expected``, or above every calibrated confidence of the
    artifact's pac entries, is a 422."""
    if request.confidence is None:
        return request.guarantee
    if request.guarantee != "pac":
        raise InvalidRequestError(
            'confidence applies to guarantee "pac" only (the expected guarantee holds on average over the '
            'calibration documents, with no confidence level); send guarantee: "pac" or drop confidence'
        )
    calibrated = snapshot.pac_confidences
    if calibrated and request.confidence > calibrated[-1] + LEVEL_TOLERANCE:  # ascending: the largest
        raise InvalidRequestError(
            f"confidence={request.confidence} is above the calibrated confidence {calibrated[-1]:g} of the pac "
            "guarantees (a guarantee is served at a calibrated confidence >= the asked one)",
            allowed=[f"{c:g}" for c in calibrated],
        )
    return "pac"


def _check_named_method(snapshot: CalibrationSnapshot, cell: tuple[str, str, str], method: str) -> None:
    """A method named for a live call must be calibrated for the cell (422 with the cell's methods)."""
    calibrated = snapshot.methods(*cell)
    if method not in calibrated:
        raise InvalidRequestError(
            f"method {method!r} is not calibrated for judge={cell[0]!r}, prompt_family={cell[1]!r}, "
            f"criterion={cell[2]!r}; calibrated methods: {', '.join(calibrated)}",
            allowed=calibrated,
        )


def resolve(ctx: ScoringContext, snapshot: CalibrationSnapshot, request: ScoreRequest, own: bool) -> Plan:
    """Rules 3-5 (and the named method's check), memoised on the snapshot by the request's names."""
    check_method_name(request.method)
    key = (
        "plan",
        own,
        request.judge,
        request.prompt_family,
        request.criterion,
        request.alpha,
        request.method,
        request.factuality_method,
        request.guarantee,
        request.confidence,
    )
    plan = snapshot.memo.get(key)
    if plan is not None:
        return plan  # type: ignore[return-value]
    judge = _resolve_judge(ctx, snapshot, request, own)  # first: without judges a live call is the 503 whatever it asks
    _check_criterion(ctx, snapshot, request, own)
    prompt_family = _resolve_prompt_family(ctx, snapshot, request, judge, own)
    alpha = _resolve_alpha(ctx, snapshot, request)
    mode = request_mode(snapshot, request)
    cell = (judge, prompt_family or "", request.criterion)
    calibrated_cell = prompt_family is not None and bool(snapshot.cell_methods.get(cell))
    if calibrated_cell and request.method is not None and not own:
        _check_named_method(snapshot, cell, request.method)  # before paying for a judge call
    coverage = snapshot.coverage_targets.get(alpha) or coverage_target(alpha)
    plan = Plan(judge, prompt_family, alpha, coverage, cell, calibrated_cell, mode)
    snapshot.remember(key, plan)
    return plan


def resolve_ask(
    ctx: ScoringContext, snapshot: CalibrationSnapshot, request: ScoreRequest, plan: Plan, own: bool
) -> CheckedAsk:
    """The texts a live call needs (422), K (the calibrated cell's, else an uncalibrated rubric's or the
    criterion's) and the decision ask checked against K (rule 7's 422s, before the judge is called)."""
    if not own and (request.document is None or request.summary is None):
        raise InvalidRequestError(
            "document and summary are required when the service calls the judge "
            "(or send judge_score / judge_logprobs to calibrate your own verdict)"
        )
    rubric = ctx.judges.rubrics.get(request.criterion)
    n_labels = rubric.scale_max if rubric is not None and not plan.calibrated_cell else snapshot.n_labels_for(plan.cell)
    ask = asked(
        tolerance=request.tolerance,
        accept_alpha=request.accept_alpha,
        alpha=request.alpha,
        default_alpha=ctx.settings.default_alpha,
        pass_threshold=request.pass_threshold,
        n_labels=n_labels,
    )
    return CheckedAsk(n_labels, ask)
