"""Judge panels in ``/v1/score``: several judges' verdicts -> one calibrated set (combination:
calibration.input_kinds.mean_panel).

A request is a panel request when it carries ``verdicts`` (the caller's members' verdicts) or ``panel`` (a
name from PANELS_FILE: the service asks every member concurrently, through the judge-answer cache). Rules:

1. **Shape.** ``verdicts`` and ``panel`` exclude each other and every single-judge field (``judge``,
   ``judge_score``, ``judge_logprobs``, ``mean_of_samples``, ``sentence_verdicts``, ``prompt_family``) -> 422.
   Each caller's member needs at least one of ``judge_score``, ``judge_logprobs``, ``mean_of_samples`` (422).
   A judge named twice in ``verdicts`` gets ``calibrated: false`` + escalate, the reason naming it (no panel
   cell applies; JSON Schema cannot state unique member judges, so such a request is answered).
   ``faithfulness`` is not scored by panels (422). An unknown panel name -> 422 with the configured names;
   ``panel`` needs ``document`` and ``summary`` (422).
2. **Members' verdicts.** A caller's ``judge_logprobs`` are renormalised over 1..K with a missing token read below
   every token sent (service.scoring.verdict.filled_logprobs); a live member's come from its reply. Each member's
   expected score follows :func:`calibration.input_kinds.mean_panel.expected_score` (mean_of_samples, else sum k
   p_k, else
   the score). A live member whose call fails is reported with its ``error`` and left out; when no member answers, the
   first failure is the request's error (as for one judge).
3. **Cell.** The members that answered form the served panel
   (:func:`calibration.input_kinds.mean_panel.served_panel`): the
   cell (``panel:<sorted members>``, the members' inputs as prompt family (``panel:probabilities+score``...,
   :func:`calibration.input_kinds.mean_panel.panel_family`: a member sending another input than the panel was
   fitted on gets
   ``calibrated: false``, never thresholds fitted on other inputs), criterion), input kind ``mean``, entry
   chosen by :func:`artifact.serving.choose_entry` (level: the largest calibrated alpha <= the request's;
   method: the request's or the default). Fewer than two members, or a sub-panel without thresholds ->
   ``calibrated: false``, the full scale, ``escalate`` (never the full panel's thresholds).
4. **Answer.** The usual ScoreResponse with ``judge`` = the served panel cell (or the full panel's name when
   uncalibrated), ``prompt_family`` = the members' inputs (``panel`` when fewer than two answered),
   ``judge_score`` = round_half_up(mean), plus ``panel``: members, their verdicts and their disagreement
   (spread, std of the expected scores). A live panel's texts are screened for prompt injection as for one
   judge.

PANELS_FILE is a JSON list ``[{"name": "jury", "judges": ["judge-a", "judge-b", ...]}]``: names unique, at
least two distinct judges each, every judge configured in JUDGES_FILE (checked at start-up).

Limitation: a panel cell is fitted on its members' recorded prompt families; the service does not check that
live members are configured with the same families.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import msgspec

from artifact.serving import LevelRefused, MethodRefused, ServedEntry, choose_entry
from calibration.input_kinds.mean_panel import (
    PANEL_INPUT_KIND,
    PANEL_PREFIX,
    PANEL_PROMPT_FAMILY,
    disagreement,
    member_input,
    panel_family,
    panel_mean,
    panel_name,
    served_panel,
)
from calibration.input_kinds.verdicts import InputKind, round_half_up, verdict_inputs
from service.artifacts.snapshot import CalibrationSnapshot, coverage_target
from service.errors import InvalidRequestError
from service.judging.model_check import MODEL_MISMATCH_FLAG
from service.scoring.cell_decision import DecisionAsk, asked, decide_for_cell
from service.scoring.context import ScoringContext
from service.scoring.panel_members import caller_member, live_members, live_panel_members
from service.scoring.per_label import without_label_rule
from service.scoring.policy import (
    PolicyDecision,
    escalate_for_injection,
    full_scale,
    interval_hull,
    set_note,
)
from service.scoring.resolve import check_method_name, loaded_snapshot, request_mode
from service.screening.injection import INJECTION_FLAG, screen_texts
from service.wire.score import PanelAnswer, PanelMemberVerdict, ScoreRequest, ScoreResponse

__all__ = ["is_panel_request", "score_panel"]


def is_panel_request(request: ScoreRequest) -> bool:
    """True when the request carries ``verdicts`` or ``panel``."""
    return request.verdicts is not None or request.panel is not None


def _check_shape(request: ScoreRequest) -> None:
    if request.verdicts is not None and request.panel is not None:
        raise InvalidRequestError("send either verdicts (your members' verdicts) or panel (a configured panel)")
    single = [
        name
        for name, value in (
            ("judge", request.judge),
            ("judge_score", request.judge_score),
            ("judge_logprobs", request.judge_logprobs),
            ("mean_of_samples", request.mean_of_samples),
            ("sentence_verdicts", request.sentence_verdicts),
            ("prompt_family", request.prompt_family),
        )
        if value is not None
    ]
    if single:
        raise InvalidRequestError(f"a panel request names its judges in verdicts or panel; remove {', '.join(single)}")
    if request.criterion == "faithfulness":
        raise InvalidRequestError("panels score the SummEval criteria and configured rubrics, not faithfulness")
    check_method_name(request.method)


async def score_panel(ctx: ScoringContext, request: ScoreRequest) -> ScoreResponse:
    """One panel request -> the combined set, the members' verdicts and their disagreement (module rules)."""
    _check_shape(request)
    snapshot = loaded_snapshot(ctx)
    asked_mode = request_mode(snapshot, request)
    # no panel cell has a per-label rule yet: the default guarantee serves its expected set and escalates, saying so
    mode = "expected" if asked_mode == "per_label" else asked_mode
    rubric = ctx.judges.rubrics.get(request.criterion)
    n_labels = rubric.scale_max if rubric is not None else snapshot.criterion_labels.get(request.criterion, 5)
    ask = asked(
        tolerance=request.tolerance,
        accept_alpha=request.accept_alpha,
        alpha=request.alpha,
        default_alpha=ctx.settings.default_alpha,
        pass_threshold=request.pass_threshold,
        n_labels=n_labels,
    )
    live = request.panel is not None
    calls, mismatch = 0, False
    if live:
        members = live_panel_members(ctx, request)
        asked_members = await live_members(ctx, request, members, n_labels)
        verdicts, calls, mismatch = asked_members.verdicts, asked_members.judge_calls, asked_members.model_mismatch
    else:
        assert request.verdicts is not None
        members = [v.judge for v in request.verdicts]
        verdicts = [caller_member(v, n_labels) for v in request.verdicts]
    answered = [v for v in verdicts if v.expected_score is not None]
    full_name, cell_name, why = _panel_names(members, answered)
    alpha = request.alpha if request.alpha is not None else ctx.settings.default_alpha
    family, served, why = _panel_entry(snapshot, request, cell_name, answered, alpha, why, mode)
    expected = [float(v.expected_score) for v in answered if v.expected_score is not None]
    mean = panel_mean(expected, n_labels) if len(expected) >= 2 else None
    spread = disagreement(expected) if expected else None
    judge_score = round_half_up(mean) if mean is not None else _fallback_score(verdicts, n_labels)
    if served is None or mean is None or cell_name is None:
        labels = full_scale(n_labels)
        decision = ctx.policy.uncalibrated(why, point=judge_score)
        method, kind, used_alpha, entry = request.method, None, alpha, None
    else:
        entry, method, kind, used_alpha = served.entry, served.method, served.kind, served.alpha
        missing = [m for m in members if m not in {v.judge for v in answered}]
        labels, decision = _panel_decision(
            ctx,
            snapshot,
            (cell_name, family, request.criterion),
            served,
            mean,
            n_labels,
            judge_score,
            ask,
            missing,
            mode,
        )
    if asked_mode == "per_label" and entry is not None:
        decision = without_label_rule(decision)
    findings = screen_texts({"document": request.document, "summary": request.summary}) if live else []
    if findings:
        decision = escalate_for_injection(decision, findings)
    ctx.metrics.count_decision(request.criterion, decision.decision, entry is not None)
    return ScoreResponse(
        criterion=request.criterion,
        judge=cell_name if entry is not None and cell_name else full_name,
        prompt_family=family,
        source="judge" if live else "caller",
        judge_score=judge_score,
        probabilities=None,
        prediction_set=list(labels),
        set_size=len(labels),
        alpha=used_alpha,
        coverage_target=coverage_target(used_alpha),
        input_kind=cast("InputKind | None", kind),  # one of INPUT_KINDS (artifact.thresholds checks entries)
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
        cached=bool(verdicts) and all(v.cached for v in answered) and live,
        judge_calls=calls,
        raw_reply=None,
        flags=[*([INJECTION_FLAG] if findings else []), *([MODEL_MISMATCH_FLAG] if mismatch else [])],
        panel=PanelAnswer(
            name=request.panel,
            members=sorted(members),
            served_by=cell_name if entry else None,
            mean=mean,
            spread=None if spread is None else spread.spread,
            std=None if spread is None else spread.std,
            verdicts=verdicts,
        ),
    )


def _panel_names(members: Sequence[str], answered: Sequence[PanelMemberVerdict]) -> tuple[str, str | None, str]:
    """The full panel's name, the served sub-panel's cell name (None when a judge is named twice) and why the
    answer would be uncalibrated (rule 1's repeated judge, rule 3's fewer than two members)."""
    # A judge named twice: no panel cell applies (a panel's members are distinct judges), so the answer is
    # uncalibrated and says why; every verdict is still shown (never merged or dropped silently).
    repeated = sorted({name for name in members if members.count(name) > 1})
    try:
        full_name = panel_name(members) if not repeated else PANEL_PREFIX + "+".join(sorted(members))
    except ValueError as error:  # a judge name with "+" or a "panel:" name cannot be a member
        raise InvalidRequestError(str(error)) from None
    if repeated:
        return (
            full_name,
            None,
            (
                f"judge(s) {', '.join(map(repr, repeated))} appear more than once in verdicts: a "
                "panel's members are distinct judges, so no panel cell applies"
            ),
        )
    cell_name = served_panel(members, [v.judge for v in answered])
    names = ", ".join(v.judge for v in answered) or "none"
    return full_name, cell_name, f"fewer than two panel members answered ({names})"


def _panel_entry(
    snapshot: CalibrationSnapshot,
    request: ScoreRequest,
    cell_name: str | None,
    answered: Sequence[PanelMemberVerdict],
    alpha: float,
    why: str,
    mode: str,
) -> tuple[str, ServedEntry | None, str]:
    """Rule 3: the members' inputs as prompt family, the entry serving the panel cell (None when none does) and
    why none does."""
    if cell_name is None:
        return PANEL_PROMPT_FAMILY, None, why
    inputs = {
        v.judge: member_input(judge_score=v.judge_score, probabilities=v.probabilities, mean=v.mean_of_samples)
        for v in answered
    }
    family = panel_family([inputs[m] for m in sorted(inputs)])
    cell = (cell_name, family, request.criterion)
    why = f"no calibration for the panel {cell_name!r}, criterion {request.criterion!r}"
    fitted_on = [f for f in snapshot.prompt_families_for(cell_name, request.criterion) if f != family]
    if fitted_on:
        why = (
            f"the panel {cell_name!r} is calibrated for {request.criterion!r} on members' inputs "
            f"{' or '.join(fitted_on)} (sorted member order); this verdict carries {family}"
        )
    if not snapshot.cell_methods.get(cell):
        return family, None, why
    try:
        found = choose_entry(snapshot.index_for(mode), cell, (PANEL_INPUT_KIND,), alpha, request.method)
    except (LevelRefused, MethodRefused) as error:  # no threshold for this: never an invented set
        return family, None, str(error)
    if isinstance(found, ServedEntry):
        return family, found, why
    return family, None, found.reason


def _panel_decision(
    ctx: ScoringContext,
    snapshot: CalibrationSnapshot,
    cell: tuple[str, str, str],
    served: ServedEntry,
    mean: float,
    n_labels: int,
    judge_score: int,
    ask: DecisionAsk,
    missing: Sequence[str],
    mode: str,
) -> tuple[tuple[int, ...], PolicyDecision]:
    """The panel mean's set from the served entry and the cell's certified decision on it (rules 3-4)."""
    score, probabilities = verdict_inputs(PANEL_INPUT_KIND, n_labels, mean=mean)
    conformal = snapshot.prediction_set(served.entry, score, probabilities)
    labels = interval_hull(conformal)
    # the panel's verdict is its mean: a rule of the panel cell reads the "mean" feature (or the rounded score)
    decision = decide_for_cell(
        ctx.policy,
        snapshot,
        cell=cell,
        kinds=(PANEL_INPUT_KIND,),
        served_input_kind=served.kind,
        alpha=served.alpha,
        delta=served.entry.fitted.delta,
        judge_score=judge_score,
        probabilities=None,
        mean=mean,
        prediction_set=labels,
        ask=ask,
        mode=mode,
    )
    note = set_note(conformal, labels, served.alpha) + served.note
    if missing:
        note += f"; served by the sub-panel {cell[0]!r}: {', '.join(missing)} gave no verdict"
    return labels, msgspec.structs.replace(decision, reason=decision.reason + note)


def _fallback_score(verdicts: Sequence[PanelMemberVerdict], n_labels: int) -> int:
    """The score field when no panel mean exists: the one answering member's rounded expected score, else the
    scale's middle (the set is the full scale and the decision escalate either way)."""
    for verdict in verdicts:
        if verdict.expected_score is not None:
            return min(max(round_half_up(verdict.expected_score), 1), n_labels)
    return (n_labels + 1) // 2
