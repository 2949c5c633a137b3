"""What the monitor routes and the answers share in one process: the store, the cached alarms, the gauges."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from service.config.settings import Settings
from service.monitoring.board import AlarmBoard
from service.monitoring.metrics import MonitorMetrics
from service.monitoring.store import MonitorStore
from service.observability.metrics import ServiceMetrics

__all__ = ["Monitors"]


@dataclass(frozen=True, kw_only=True)
class Monitors:
    """The feedback monitors of one process (built only with REDIS_URL)."""

    store: MonitorStore
    board: AlarmBoard
    metrics: MonitorMetrics
    logger: Any
    max_items: int
    delta: float
    admin_tenant: str | None  # the tenant whose feedback and alarms apply to every caller (None: no such key)
    # the recomputed answers' decision counts go here, never into the served ones (cj_decisions_total)
    recomputed: ServiceMetrics = field(default_factory=ServiceMetrics)

    @classmethod
    def on(
        cls, redis: Any, settings: Settings, metrics: ServiceMetrics, logger: Any, *, admin_tenant: str | None
    ) -> Monitors:
        """The monitors on ``redis`` (the jobs' client) under the jobs' queue prefix."""
        store = MonitorStore(
            redis,
            settings.jobs.queue,
            max_open_groups=settings.monitor_max_open_groups,
            remembered_ids=settings.monitor_remembered_ids,
        )
        board = AlarmBoard(
            store, refresh_s=settings.monitor_refresh_s, timeout_s=settings.monitor_read_timeout_s, logger=logger
        )
        return cls(
            store=store,
            board=board,
            metrics=MonitorMetrics(metrics),
            logger=logger,
            max_items=settings.monitor_max_items,
            delta=settings.monitor_delta,
            admin_tenant=admin_tenant,
        )
