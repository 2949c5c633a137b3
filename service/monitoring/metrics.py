"""Prometheus gauges of the feedback monitors, registered into an app's ``ServiceMetrics`` registry.

================================ ======= ==========================================================================
metric                           type    labels
================================ ======= ==========================================================================
``cj_monitor_alarm``             gauge   monitor, calibration_id, judge, prompt_family, criterion, input_kind:
                                         1 in alarm, 0 ok
``cj_monitor_labels``            gauge   the same: labels counted in closed documents
``cj_monitor_e_value``           gauge   the same: the cell's e-value (alarm at 1 / MONITOR_DELTA)
``cj_monitor_alarms_raised``     counter (none): alarms this process raised
================================ ======= ==========================================================================

A gauge is set when this process records feedback for the monitor or lists it (GET /v1/monitor).
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge

from calibration.monitoring import CellMonitor, CellSpec, cell_e_value
from service.monitoring.cells import MonitorKey
from service.observability.metrics import ServiceMetrics

__all__ = ["MonitorMetrics"]

_LABELS = ("monitor", "calibration_id", "judge", "prompt_family", "criterion", "input_kind")


class MonitorMetrics:
    """The monitor gauges, registered in ``metrics.registry``."""

    def __init__(self, metrics: ServiceMetrics) -> None:
        registry = metrics.registry
        self.alarm = Gauge("cj_monitor_alarm", "1 while the feedback monitor is in alarm", _LABELS, registry=registry)
        self.labels = Gauge("cj_monitor_labels", "Labels in the monitor's closed documents", _LABELS, registry=registry)
        self.e_value = Gauge("cj_monitor_e_value", "The monitor's e-value", _LABELS, registry=registry)
        self.raised = Counter("cj_monitor_alarms_raised", "Monitor alarms raised by this process", registry=registry)

    def observe(self, monitor_id: str, key: MonitorKey, spec: CellSpec, state: CellMonitor) -> None:
        """Set the monitor's gauges from its state."""
        cell = key.cell
        labels = (monitor_id, cell.calibration_id, cell.judge, cell.prompt_family, cell.criterion, cell.input_kind)
        self.alarm.labels(*labels).set(0 if state.alarm is None else 1)
        self.labels.labels(*labels).set(state.labels)
        self.e_value.labels(*labels).set(cell_e_value(spec, state))

    def forget(self, monitor_id: str, key: MonitorKey) -> None:
        """Drop a reset monitor's series."""
        cell = key.cell
        labels = (monitor_id, cell.calibration_id, cell.judge, cell.prompt_family, cell.criterion, cell.input_kind)
        for gauge in (self.alarm, self.labels, self.e_value):
            try:
                gauge.remove(*labels)
            except KeyError:
                continue
