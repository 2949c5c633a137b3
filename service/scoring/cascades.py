"""Cascades in ``/v1/score``: a cheap judge first, a stronger one only when the cheaper cannot accept, then a human.

CASCADES_FILE is a JSON list ``[{"name": "thrifty", "judges": ["small-judge", "large-judge"]}]``: names unique, at
least two distinct judges each, every judge configured in JUDGES_FILE (checked at start-up). A human follows the
last judge. A request names one with ``cascade``. Rules:

1. **Shape.** ``cascade`` excludes ``verdicts``, ``panel`` and ``prompt_family`` (each stage uses its own judge's
   family) -> 422; an unknown name -> 422 with the configured names. Without the caller's verdict the service calls
   the first stage (``judge`` must be unset; ``document`` and ``summary`` required). With the caller's verdict
   (``judge_score`` / ``judge_logprobs`` / ``mean_of_samples``) ``judge`` names the stage it comes from (default:
   the first; a judge outside the cascade -> 422).
2. **Stages.** Each stage is scored exactly as ``/v1/score`` scores that judge (``service.scoring.score``), with its own
   cell's certified rule at ``accept_alpha / S`` (S = the cascade's judge stages; Bonferroni). The first stage that
   accepts ends the cascade (``accept``). A stage that cannot accept passes the item on: the service calls the next
   judge when it has ``document`` and ``summary``; otherwise (the caller's own verdict without the texts) the answer
   is ``second_opinion``, naming the next judge. No stage accepting -> ``escalate`` (the human). A stage flagged for
   prompt injection stops the cascade (``escalate``): the next judge would read the same text.
3. **Guarantee**, in the request's mode (``guarantee``). ``pac``: among items the cascade accepts,
   P(|human - point| >= tolerance) <= the sum over stages of each stage's certified bound <= accept_alpha, with
   confidence >= 1 - the sum of the stages' delta (a union bound). ``expected``: averaged over calibrations, the
   error among accepted items is <= accept_alpha: given a calibration, the cascade's error among accepted is <=
   sum_s r_s 1{stage s's region accepted} (each region's items are a subset of the accepted ones), and each stage's
   rule keeps E[r_s 1{accepted}] <= accept_alpha / S. ``per_label``: for every human label y, the share of label-y
   items the cascade accepts with a wrong point is <= accept_alpha on average over calibrations: such an item is
   accepted wrongly by some stage s, and each stage's per-label rule keeps that share <= accept_alpha / S.
   Why: the cascade accepts at stage s only items stage s's rule accepts, and every rule is certified on the whole
   calibration population, so P(error and accepted) <= sum_s e_s P(stage s accepts) <= (sum_s e_s) P(accepted).
   A stage with no certified row never accepts and adds nothing. In quality-gate mode (``pass_threshold``) the same
   holds for false passes with the stages' gates.
4. **Answer.** The last stage's answer (its set, point, judge) with the cascade's decision and guarantees, and
   ``cascade``: the stages, the per-stage level, each stage called (or sent) with its verdict and decision, and the
   number of live judge calls made (a cached stage verdict or the caller's own costs none; ``judge_calls`` on the
   answer holds the same number), and ``flags`` with ``judge_model_mismatch`` when any stage's reply named another
   model than its judge's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Literal

import msgspec

from calibration.decisions.rule import certification_at, gate_at
from service.artifacts.snapshot import CalibrationSnapshot
from service.errors import CalibrationUnavailableError, InvalidRequestError
from service.judging.model_check import MODEL_MISMATCH_FLAG
from service.scoring.context import ScoringContext
from service.screening.injection import INJECTION_FLAG
from service.wire.score import CascadeAnswer, CascadeStage, Guarantee, ScoreRequest, ScoreResponse

__all__ = ["score_cascade"]

ScoreOne = Callable[["ScoringContext", ScoreRequest], Awaitable[ScoreResponse]]


def _own(request: ScoreRequest) -> bool:
    return (
        request.judge_score is not None
        or request.judge_logprobs is not None
        or request.mean_of_samples is not None
        or request.sentence_verdicts is not None
    )


def _stages(ctx: ScoringContext, request: ScoreRequest) -> tuple[tuple[str, ...], int]:
    """Rule 1: the cascade's stages and the position of the first stage to score."""
    if request.verdicts is not None or request.panel is not None or request.prompt_family is not None:
        raise InvalidRequestError(
            "a cascade request names its judges in CASCADES_FILE; remove verdicts, panel and "
            "prompt_family (each stage uses its own judge's family)"
        )
    cascades = ctx.judges.cascades
    if request.cascade not in cascades:
        raise InvalidRequestError(f"unknown cascade {request.cascade!r} (CASCADES_FILE)", allowed=sorted(cascades))
    stages = cascades[request.cascade]
    if _own(request):
        judge = request.judge or stages[0]
        if judge not in stages:
            raise InvalidRequestError(
                f"judge {judge!r} is not a stage of cascade {request.cascade!r}; name the stage "
                "your verdict comes from",
                allowed=list(stages),
            )
        return stages, stages.index(judge)
    if request.judge is not None:
        raise InvalidRequestError(
            f"cascade {request.cascade!r} calls its own judges; remove judge (or send your "
            "verdict with the stage it comes from)",
            allowed=list(stages),
        )
    if request.document is None or request.summary is None:
        raise InvalidRequestError("document and summary are required when the service calls a cascade")
    return stages, 0


def _stage_rows(
    snapshot: CalibrationSnapshot, cell: tuple[str, str, str], request: ScoreRequest, stage_alpha: float
) -> tuple[float, float] | None:
    """(largest delta, largest bound) over the cell's rules' rows of the request's mode serving (tolerance or
    pass_threshold, level); (0, 0) for an expected row that may accept; None when no row may accept."""
    found: list[tuple[float, float]] = []
    if request.guarantee == "per_label":  # a stage may accept when its per-label rule's judge has skill
        skilled = any(
            rule.skill.skilled for key, rule in snapshot.label_rules.items() if (key[0], key[1], key[2]) == cell
        )
        return (0.0, 0.0) if skilled else None
    for (judge, family, criterion, _), rule in snapshot.decision_rules.items():
        if (judge, family, criterion) != cell:
            continue
        if request.pass_threshold is not None:
            gate = gate_at(rule, request.pass_threshold, stage_alpha, request.guarantee)
            row = None if gate is None else (gate.delta, gate.certified_false_pass, gate.rule_failed, gate.pass_bins)
        else:
            cert = certification_at(rule, request.tolerance, stage_alpha, request.guarantee)
            row = None if cert is None else (cert.delta, cert.certified_error, cert.rule_failed, cert.accepted_bins)
        if row is None or row[2] or not row[3]:
            continue
        delta, bound = row[0], row[1]
        if request.guarantee == "expected":
            found.append((0.0, 0.0))
        elif delta is not None and bound is not None:
            found.append((delta, bound))
    if not found:
        return None
    return max(d for d, _ in found), max(b for _, b in found)


def _overall(
    ctx: ScoringContext,
    snapshot: CalibrationSnapshot,
    request: ScoreRequest,
    stages: Sequence[str],
    families: Mapping[str, str | None],
    accept_alpha: float,
    stage_alpha: float,
) -> Guarantee | None:
    """Rule 3's guarantee over every stage of the cascade (called or not), or None when no stage can accept."""
    deltas, bounds = [], []
    for judge in stages:
        config = ctx.judges.config(judge)
        family = families.get(judge) or (config.prompt_family if config is not None else None)
        rows = (
            None if family is None else _stage_rows(snapshot, (judge, family, request.criterion), request, stage_alpha)
        )
        if rows is not None:
            deltas.append(rows[0])
            bounds.append(rows[1])
    if not deltas:
        return None
    gate = request.pass_threshold is not None
    kind: Literal["accept_error", "quality_gate"] = "quality_gate" if gate else "accept_error"
    where = {"pass_threshold": request.pass_threshold} if gate else {"tolerance": request.tolerance}
    if request.guarantee in ("expected", "per_label"):
        return Guarantee(kind=kind, alpha=accept_alpha, mode=request.guarantee, **where)
    return Guarantee(
        kind=kind,
        alpha=accept_alpha,
        mode="pac",
        confidence=round(max(0.0, 1.0 - sum(deltas)), 12),
        bound=round(sum(bounds), 12),
        **where,
    )


def _stage(answer: ScoreResponse) -> CascadeStage:
    return CascadeStage(
        judge=answer.judge,
        prompt_family=answer.prompt_family,
        source=answer.source,
        judge_score=answer.judge_score,
        probabilities=answer.probabilities,
        point=answer.point,
        decision=answer.decision,
        rule_failed=answer.rule_failed,
        guarantees=answer.guarantees,
        reason=answer.reason,
        cached=answer.cached,
    )


async def score_cascade(ctx: ScoringContext, request: ScoreRequest, score_one: ScoreOne) -> ScoreResponse:
    """Rules 1-4 of the module docstring; ``score_one`` scores one stage as /v1/score does (service.scoring.score)."""
    snapshot = ctx.snapshot
    if snapshot is None:
        raise CalibrationUnavailableError(
            f"no thresholds artifact is loaded ({ctx.calibration_error}); fix "
            "THRESHOLDS_PATH or POST /v1/calibration/reload"
        )
    stages, start = _stages(ctx, request)
    accept_alpha = (
        request.accept_alpha
        if request.accept_alpha is not None
        else request.alpha
        if request.alpha is not None
        else ctx.settings.default_alpha
    )
    stage_alpha = accept_alpha / len(stages)
    has_texts = request.document is not None and request.summary is not None
    called: list[CascadeStage] = []
    calls, mismatch = 0, False
    answer: ScoreResponse | None = None
    decision, why = "escalate", ""
    for position in range(start, len(stages)):
        stage_request = msgspec.structs.replace(
            request, cascade=None, judge=stages[position], accept_alpha=stage_alpha, item_id=None
        )
        if position > start:  # a later stage is always the service's own call
            stage_request = msgspec.structs.replace(
                stage_request, judge_score=None, judge_logprobs=None, mean_of_samples=None, sentence_verdicts=None
            )
        answer = await score_one(ctx, stage_request)
        called.append(_stage(answer))
        calls += answer.judge_calls
        mismatch = mismatch or MODEL_MISMATCH_FLAG in answer.flags
        if answer.decision == "accept":
            decision, why = "accept", f"stage {position + 1} ({stages[position]}) accepted"
            break
        if INJECTION_FLAG in answer.flags:
            why = f"stage {position + 1} ({stages[position]}) read a possible prompt injection; ask a human"
            break
        if position + 1 == len(stages):
            why = "no judge stage could accept; the last stage hands the item to a human"
            break
        if not has_texts:
            decision = "second_opinion"
            why = (
                f"stage {position + 1} ({stages[position]}) could not accept; ask the next stage, "
                f"{stages[position + 1]} (the service calls it when the request carries document and summary)"
            )
            break
    assert answer is not None
    families = {stage.judge: stage.prompt_family for stage in called}
    overall = _overall(ctx, snapshot, request, stages, families, accept_alpha, stage_alpha)
    guarantees = [g for g in answer.guarantees if g.kind == "set_coverage"] + ([overall] if overall else [])
    reason = (
        f"cascade {request.cascade!r} ({' -> '.join(stages)} -> human; each stage certified at accept_alpha "
        f"{accept_alpha:g} / {len(stages)} = {stage_alpha:g}): {why}; last stage: {answer.reason}"
    )
    return msgspec.structs.replace(
        answer,
        decision=decision,
        escalate=decision == "escalate",
        guarantees=guarantees,
        reason=reason,
        item_id=request.item_id,
        judge_calls=calls,
        flags=[*(f for f in answer.flags if f != MODEL_MISMATCH_FLAG), *([MODEL_MISMATCH_FLAG] if mismatch else [])],
        cascade=CascadeAnswer(
            name=request.cascade or "", stages=list(stages), stage_alpha=stage_alpha, called=called, judge_calls=calls
        ),
    )
