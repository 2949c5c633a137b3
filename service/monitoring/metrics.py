"""Prometheus series of the feedback monitors, registered into an app's ``ServiceMetrics`` registry: a fixed set of
series without labels, so /metrics neither grows with the monitors nor names a tenant's cells (those are in
GET /v1/monitor, behind the caller's key).

================================ ======= ==========================================================================
metric                           type    meaning
================================ ======= ==========================================================================
``cj_monitor_alarms``            gauge   monitors in alarm, every tenant's (as of this process's last read)
``cj_monitor_labels_recorded``   counter labels this process recorded into a monitor
``cj_monitor_alarms_raised``     counter alarms this process raised
================================ ======= ==========================================================================
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge

from service.observability.metrics import ServiceMetrics

__all__ = ["MonitorMetrics"]


class MonitorMetrics:
    """The monitor series, registered in ``metrics.registry``."""

    def __init__(self, metrics: ServiceMetrics) -> None:
        registry = metrics.registry
        self.alarms = Gauge("cj_monitor_alarms", "Feedback monitors in alarm (every tenant's)", registry=registry)
        self.labels = Counter(
            "cj_monitor_labels_recorded", "Labels this process recorded into monitors", registry=registry
        )
        self.raised = Counter("cj_monitor_alarms_raised", "Monitor alarms raised by this process", registry=registry)
