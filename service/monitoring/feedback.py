"""Human feedback on served verdicts into the monitors: recompute what was served, then record the labels.

Rules, per item (each refusal is that item's own problem; the others are recorded):

1. The item decodes as a ``FeedbackItem`` (422 otherwise) and carries the verdict that was served: ``judge_score``
   and/or ``judge_logprobs`` (422 otherwise: feedback never calls a judge).
2. What was served is recomputed by ``service.scoring.score.score_item``, the path /v1/score answers with, under
   the calibration active now (any problem it raises refuses the item); an answer without a coverage guarantee
   (uncalibrated, a failed rule) has nothing to monitor (422).
3. The label is read as calibration reads it (``service.monitoring.cells``) and joins the monitor of the answer's
   cell and levels (``service.monitoring.store``): the same ``item_id`` again is a duplicate, dropped; a label for
   a document already closed, past MONITOR_MAX_ITEMS in its document, or opening a document past
   MONITOR_MAX_OPEN_GROUPS is refused (409 / 422 / 409).

A **document** (``group``, default the item itself) closes with the item that says ``done: true``, or once it holds
``group_size`` labels when its items declare that size; an item without a ``group`` is its own document and closes
at once; the answer warns while documents stay open. Closing is the caller's decision, never a rule that looks at
the labels. Each monitor touched is updated in one transaction; a Redis failure answers 503 for the request
(the monitors updated before it keep their labels, and the same items sent again are duplicates there).
"""

from __future__ import annotations

from typing import Any

import msgspec

from calibration.monitoring import CellSpec
from service.artifacts.snapshot import CalibrationSnapshot
from service.errors import InvalidRequestError, problem_from_exception
from service.monitoring.cells import MonitorKey, monitor_key, served_label, watched_spec
from service.monitoring.monitors import Monitors
from service.monitoring.store import Labelled, UpdateResult
from service.scoring.context import ScoringContext
from service.scoring.monitor_alarm import cell_calibration_id
from service.scoring.policy import find_rule
from service.scoring.resolve import loaded_snapshot
from service.scoring.score import score_item
from service.wire.decoding import as_wire_type
from service.wire.monitoring import FeedbackItem, FeedbackRefusal, FeedbackResponse
from service.wire.score import ScoreRequest, ScoreResponse

__all__ = ["labelled_row", "record_feedback"]


def _served_request(item: FeedbackItem) -> ScoreRequest:
    if item.judge_score is None and item.judge_logprobs is None:
        raise InvalidRequestError(
            "feedback needs the verdict that was served: send its judge_score and/or judge_logprobs (the service "
            "never calls a judge for feedback)"
        )
    return ScoreRequest(
        criterion=item.criterion,
        judge=item.judge,
        prompt_family=item.prompt_family,
        judge_score=item.judge_score,
        judge_logprobs=item.judge_logprobs,
        alpha=item.alpha,
        method=item.method,
        tolerance=item.tolerance,
        accept_alpha=item.accept_alpha,
        guarantee=item.guarantee,
        confidence=item.confidence,
        item_id=item.item_id,
    )


def _accepts(snapshot: CalibrationSnapshot, answer: ScoreResponse) -> bool:
    """Whether the rule that served the answer can accept (else accept error promises nothing): under the per-label
    guarantee, when the answer lists an accept (or gate) guarantee, i.e. the judge passed the skill test; otherwise
    when some row of the cell's certified rule accepts a bin."""
    if any(g.mode == "per_label" for g in answer.guarantees):
        return any(g.kind in ("accept_error", "quality_gate") for g in answer.guarantees)
    cell = (answer.judge, answer.prompt_family or "", answer.criterion)
    rule = find_rule(snapshot.decision_rules, cell, (answer.input_kind or "",))
    return rule is not None and any(row.accepted_bins for row in rule.certifications)


async def _labelled(
    monitors: Monitors, ctx: ScoringContext, index: int, item: FeedbackItem, tenant: str
) -> tuple[MonitorKey, CellSpec, Labelled]:
    answer = await score_item(ctx, _served_request(item))
    snapshot = loaded_snapshot(ctx)
    family = answer.prompt_family or ""
    calibration_id = cell_calibration_id(snapshot, answer.judge, family, answer.criterion)
    key = monitor_key(answer, tenant=tenant, calibration_id=calibration_id)
    n_labels = snapshot.n_labels_for((answer.judge, family, answer.criterion))
    served = served_label(answer, item.human, n_labels)
    spec = watched_spec(
        answer,
        n_labels=n_labels,
        accepts=_accepts(snapshot, answer),
        max_items=monitors.max_items,
        delta=monitors.cell_delta,
        horizon=monitors.horizon,
    )
    group = item.group if item.group is not None else item.item_id
    done = item.done or item.group is None
    if item.group_size is not None and item.group_size > monitors.max_items:
        raise InvalidRequestError(
            f"group_size={item.group_size} exceeds MONITOR_MAX_ITEMS={monitors.max_items}: such a document would "
            "never close by its size (its labels past MONITOR_MAX_ITEMS are refused)"
        )
    row = labelled_row(item, judge=answer.judge, prompt_family=family, group=group, n_labels=n_labels)
    labelled = Labelled(
        index=index, item_id=item.item_id, group=group, done=done, served=served, row=row, group_size=item.group_size
    )
    return key, spec, labelled


def labelled_row(item: FeedbackItem, *, judge: str, prompt_family: str, group: str, n_labels: int) -> bytes:
    """The item as a row of the labelled JSON Lines format (artifact.labels), under the judge and prompt family
    that served it: what a recalibration from feedback fits on."""
    row: dict[str, Any] = {
        "item_id": item.item_id,
        "criterion": item.criterion,
        "judge": judge,
        "prompt_family": prompt_family,
        "human": item.human,
        "group": group,
        "scale_max": n_labels,
    }
    if item.judge_score is not None:
        row["judge_score"] = item.judge_score
    if item.judge_logprobs is not None:
        values = item.judge_logprobs.values(n_labels)
        row["judge_logprobs"] = {str(k): v for k, v in enumerate(values, start=1) if v is not None}
    return msgspec.json.encode(row)


async def record_feedback(
    monitors: Monitors, ctx: ScoringContext, items: list[Any], *, tenant: str, path: str
) -> FeedbackResponse:
    """Record the items (module rules) for ``tenant``; ``ctx`` scores without alarms (the verdict as served)."""
    ctx = msgspec.structs.replace(ctx, metrics=monitors.recomputed, alarms={})  # recomputed, not served
    refusals: dict[int, FeedbackRefusal] = {}
    bound: dict[str, tuple[MonitorKey, CellSpec, list[Labelled]]] = {}
    for index, raw in enumerate(items):
        raw_id = raw.get("item_id") if isinstance(raw, dict) else None
        try:
            key, spec, labelled = await _labelled(monitors, ctx, index, as_wire_type(raw, FeedbackItem), tenant)
        except Exception as error:  # every refusal stays with its item
            problem, _ = problem_from_exception(error, instance=f"{path}#/items/{index}")
            if problem.status >= 500:
                monitors.logger.error("feedback.item_failed", index=index, exc_info=error)
            refusals[index] = FeedbackRefusal(
                index=index, item_id=raw_id if isinstance(raw_id, str) else None, error=problem
            )
            continue
        bound.setdefault(key.monitor_id, (key, spec, []))[2].append(labelled)
    accepted = duplicates = closed = raised = still_open = 0
    for key, spec, bound_items in bound.values():
        # spec: what a new monitor watches (from its first item's answer); a stored monitor keeps its own
        result = await monitors.store.record(key, spec, bound_items)
        accepted, duplicates, closed = (
            accepted + result.accepted,
            duplicates + result.duplicates,
            closed + result.closed,
        )
        still_open += result.open_documents
        raised += _observed(monitors, key, bound_items, result, path, refusals)
    return FeedbackResponse(
        accepted=accepted,
        duplicates=duplicates,
        refused=len(refusals),
        documents_closed=closed,
        alarms_raised=raised,
        refusals=[refusals[i] for i in sorted(refusals)],
        open_documents=still_open,
        warnings=[] if still_open == 0 else [_open_warning(still_open)],
    )


def _open_warning(still_open: int) -> str:
    return (
        f"{still_open} document(s) are still open in the monitors this feedback fed: a document's labels count only "
        "once it closes, with done: true on its last item or when it holds group_size labels"
    )


def _observed(
    monitors: Monitors,
    key: MonitorKey,
    labelled: list[Labelled],
    result: UpdateResult,
    path: str,
    refusals: dict[int, FeedbackRefusal],
) -> int:
    """Refusals, gauges and the alarm's log event of one monitor's update; 1 when it raised the alarm."""
    ids = {item.index: item.item_id for item in labelled}
    for index, error in result.refused.items():
        problem, _ = problem_from_exception(error, instance=f"{path}#/items/{index}")
        refusals[index] = FeedbackRefusal(index=index, item_id=ids[index], error=problem)
    monitors.metrics.labels.inc(result.accepted)
    if result.alarm is None or result.state is None or result.state.alarm is None:
        return 0
    alarm, cell = result.state.alarm, key.cell
    monitors.board.raised(result.alarm)
    monitors.metrics.raised.inc()
    monitors.logger.warning(
        "monitor.alarm",
        monitor_id=key.monitor_id,
        calibration_id=cell.calibration_id,
        judge=cell.judge,
        prompt_family=cell.prompt_family,
        criterion=cell.criterion,
        input_kind=cell.input_kind,
        guarantee=alarm.guarantee,
        human_label=alarm.human_label,
        explanation=result.alarm.explanation,
        level=alarm.level,
        tolerance=alarm.tolerance,
        label=alarm.label,
        document=alarm.document,
        e_value=alarm.e_value,
        guarantee_e_value=alarm.guarantee_e_value,
        tenant_scope="all" if key.cell.tenant == monitors.admin_tenant else "own",
    )
    return 1
