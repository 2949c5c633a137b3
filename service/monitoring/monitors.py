"""What the monitor routes and the answers share in one process: the store, the cached alarms, the gauges."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from service.config.settings import Settings
from service.monitoring.board import AlarmBoard
from service.monitoring.metrics import MonitorMetrics
from service.monitoring.store import MonitorStore
from service.observability.logging import EventLogger
from service.observability.metrics import ServiceMetrics

__all__ = ["Monitors"]


@dataclass(frozen=True, kw_only=True)
class Monitors:
    """The feedback monitors of one process (built only with REDIS_URL)."""

    store: MonitorStore
    board: AlarmBoard
    metrics: MonitorMetrics
    logger: EventLogger
    max_items: int
    delta: float  # MONITOR_DELTA: the false-alarm budget of one caller's cell
    horizon: int  # MONITOR_HORIZON: documents over which delta holds
    admin_tenant: str | None  # the tenant whose feedback and alarms apply to every caller (None: no such key)
    # the recomputed answers' decision counts go here, never into the served ones (cj_decisions_total)
    recomputed: ServiceMetrics = field(default_factory=ServiceMetrics)

    @property
    def cell_delta(self) -> float:
        """One monitor's share of delta: a caller's cell is escalated by its own tenant's monitor and by the
        admin's, so with an admin key each gets half (their union stays within delta); without one, all of it."""
        return self.delta if self.admin_tenant is None else self.delta / 2

    @classmethod
    def on(
        cls, redis: Any, settings: Settings, metrics: ServiceMetrics, logger: EventLogger, *, admin_tenant: str | None
    ) -> Monitors:
        """The monitors on ``redis`` (the jobs' client) under the jobs' queue prefix."""
        store = MonitorStore(
            redis,
            settings.jobs.queue,
            max_open_groups=settings.monitor_max_open_groups,
            remembered_ids=settings.monitor_remembered_ids,
            max_per_tenant=settings.monitor_max_per_tenant,
            tenant_max_bytes=settings.monitor_tenant_max_bytes,
            ttl_s=settings.monitor_ttl_s,
        )
        gauges = MonitorMetrics(metrics)
        board = AlarmBoard(
            store,
            refresh_s=settings.monitor_refresh_s,
            timeout_s=settings.monitor_read_timeout_s,
            logger=logger,
            metrics=gauges,
        )
        return cls(
            store=store,
            board=board,
            metrics=gauges,
            logger=logger,
            max_items=settings.monitor_max_items,
            delta=settings.monitor_delta,
            horizon=settings.monitor_horizon,
            admin_tenant=admin_tenant,
        )
