"""A stored monitor as GET /v1/monitor shows it (``calibration.monitoring.cell_report``), and the admin reset."""

from __future__ import annotations

import sys

from calibration.monitoring import RateEstimate, cell_report, explain_alarm, trail_value
from service.artifacts.snapshot import CalibrationSnapshot
from service.errors import NotFoundError
from service.monitoring.monitors import Monitors
from service.monitoring.store import MonitorRecord
from service.scoring.monitor_alarm import cell_calibration_id
from service.wire.monitoring import (
    MonitorAlarm,
    MonitorCell,
    MonitorEProcessPoint,
    MonitorGuarantee,
    MonitorReset,
    MonitorResponse,
)

__all__ = ["list_monitors", "monitor_view", "reset_monitor"]


INFORMATIVE_WIDTH = 0.5  # a confidence sequence wider than this says nothing a reader can use: not shown


def _finite(e_value: float) -> float:
    """An e-value as JSON can carry it: the largest float for one past float range (JSON has no infinity; msgspec
    would write null, off the spec)."""
    return min(e_value, sys.float_info.max)


def _bound(estimate: RateEstimate, value: float) -> float | None:
    return value if estimate.high - estimate.low < INFORMATIVE_WIDTH else None


def monitor_view(record: MonitorRecord, snapshot: CalibrationSnapshot | None) -> MonitorCell:
    """The monitor's status, counts, e-values (now and over time), running rates and alarm; ``active`` when its
    calibration still owns the cell in ``snapshot``."""
    report = cell_report(record.spec, record.state)
    cell = record.key.cell
    active = snapshot is not None and (
        cell_calibration_id(snapshot, cell.judge, cell.prompt_family, cell.criterion) == cell.calibration_id
        and (cell.judge, cell.prompt_family, cell.criterion) in snapshot.cell_levels
    )
    alarm = report.alarm
    return MonitorCell(
        monitor_id=record.monitor_id,
        calibration_id=cell.calibration_id,
        judge=cell.judge,
        prompt_family=cell.prompt_family,
        criterion=cell.criterion,
        input_kind=cell.input_kind,
        status=report.status,
        labels=report.labels,
        groups=report.documents,
        open_groups=record.open_groups,
        e_value=_finite(report.e_value),
        threshold=report.threshold,
        e_process=[
            MonitorEProcessPoint(documents=p.documents, labels=p.labels, e_value=trail_value(p))
            for p in report.e_process
        ],
        e_process_step=report.e_process_step,
        delta=record.spec.delta,
        horizon=record.spec.horizon,
        max_items=record.spec.guarantees[0].max_items,
        guarantees=[
            MonitorGuarantee(
                guarantee=g.guarantee,
                human_label=g.human_label,
                level=g.level,
                allowed=g.estimate.allowed,
                tolerance=g.tolerance,
                e_value=_finite(g.e_value),
                rate=g.estimate.rate,
                low=_bound(g.estimate, g.estimate.low),
                high=_bound(g.estimate, g.estimate.high),
                counted=g.estimate.counted,
                failures=g.estimate.failures,
            )
            for g in report.guarantees
        ],
        alarm=None
        if alarm is None
        else MonitorAlarm(
            guarantee=alarm.guarantee,
            human_label=alarm.human_label,
            level=alarm.level,
            tolerance=alarm.tolerance,
            label=alarm.label,
            document=alarm.document,
            e_value=_finite(alarm.e_value),
            guarantee_e_value=_finite(alarm.guarantee_e_value),
            failures=alarm.failures,
            counted=alarm.counted,
            explanation=explain_alarm(alarm),
        ),
        active=active,
    )


async def list_monitors(
    monitors: Monitors, snapshot: CalibrationSnapshot | None, scope: str | None, *, after: str, limit: int
) -> MonitorResponse:
    """One page of the monitors of tenant ``scope`` (None: every tenant's): ids above ``after``, at most ``limit``."""
    records, cursor = await monitors.store.monitors(scope, after=after, limit=limit)
    return MonitorResponse(cells=[monitor_view(record, snapshot) for record in records], next_after=cursor)


async def reset_monitor(monitors: Monitors, monitor_id: str, *, reason: str) -> MonitorReset:
    """Remove a monitor and its alarm (the admin's decision, logged as an audit event); 404 for an unknown id."""
    record = await monitors.store.load(monitor_id)
    if record is None:
        raise NotFoundError(f"no monitor {monitor_id!r}: GET /v1/monitor lists the monitor ids")
    had_alarm = await monitors.store.reset(monitor_id)
    monitors.board.cleared(monitor_id)
    cell = record.key.cell
    monitors.logger.warning(
        "monitor.reset",
        audit=True,
        monitor_id=monitor_id,
        calibration_id=cell.calibration_id,
        judge=cell.judge,
        prompt_family=cell.prompt_family,
        criterion=cell.criterion,
        input_kind=cell.input_kind,
        had_alarm=had_alarm,
        labels=record.state.labels,
        groups=record.state.documents,
        reason=reason,
    )
    return MonitorReset(monitor_id=monitor_id, reset=True, had_alarm=had_alarm)
