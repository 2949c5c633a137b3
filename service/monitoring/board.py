"""The alarms every answer checks, read from Redis at most once per MONITOR_REFRESH_S and kept in the process.

``await board.for_caller(tenant, admin_tenant)`` is the alarms that apply to one caller: its own tenant's and the
admin tenant's (the admin's feedback speaks for everyone), keyed as ``service.scoring.monitor_alarm`` reads them.
A request that finds the copy older than MONITOR_REFRESH_S re-reads the one small ``alarms`` hash (bounded by
MONITOR_READ_TIMEOUT_S); a Redis that does not answer keeps the last copy (logged once per outage), so scoring
never fails or waits long because of the monitors. **Fail closed**: until the alarms have been read once (a process
started while Redis does not answer), any cell may be in alarm, so every caller gets ``UnreadAlarms``, which
escalates every answer with a reason saying so, until a read succeeds. An alarm raised or reset in this process is
in its copy at once; other processes see it within MONITOR_REFRESH_S.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from redis.exceptions import RedisError

from service.monitoring.metrics import MonitorMetrics
from service.monitoring.store import AlarmRecord, MonitorStore
from service.observability.logging import EventLogger
from service.scoring.monitor_alarm import AlarmedCell, AlarmNote

__all__ = ["UNREAD_EXPLANATION", "AlarmBoard", "UnreadAlarms"]

UNREAD_EXPLANATION = (
    "the alarms of the feedback monitors have not been read since this process started (Redis does not answer), so "
    "this cell may be in alarm and is escalated until they are read"
)


FIRST_READ_TIMEOUT_S = 5.0  # the first read of the alarms: a slow Redis under load is waited for, once
_UNREAD = AlarmNote(monitor_id="unread", guarantee="unknown", level=0.0, e_value=0.0, explanation=UNREAD_EXPLANATION)


class UnreadAlarms(dict[AlarmedCell, AlarmNote]):
    """The alarms before the first successful read: every cell's look-up finds a note saying they are unread (a
    dict, as the scoring context carries, that is never empty)."""

    def get(self, key: AlarmedCell, default: object = None) -> AlarmNote:
        """The unread note, whatever the cell."""
        return _UNREAD

    def __len__(self) -> int:
        return 1  # never empty: an answer must look its cell up


class AlarmBoard:
    """A process's cached copy of the raised alarms."""

    def __init__(
        self, store: MonitorStore, *, refresh_s: float, timeout_s: float, logger: EventLogger, metrics: MonitorMetrics
    ) -> None:
        self.store = store
        self.metrics = metrics
        self.refresh_s = refresh_s
        self.timeout_s = timeout_s
        self.logger = logger
        self._records: dict[str, AlarmRecord] = {}
        self._by_caller: dict[tuple[str, str | None], dict[AlarmedCell, AlarmNote]] = {}
        self._read_at = float("-inf")
        self._failing = False
        self._read_once = False
        self._first_read = asyncio.Lock()  # callers before the first read wait for it, never skip it

    async def for_caller(self, tenant: str, admin_tenant: str | None) -> dict[AlarmedCell, AlarmNote]:
        """The alarms that apply to a caller of ``tenant`` (its own and ``admin_tenant``'s); ``UnreadAlarms``
        until they have been read once."""
        if not self._read_once:
            # Concurrent first callers share one read, given FIRST_READ_TIMEOUT_S (it gates every answer); a process
            # whose Redis does not answer then fails closed, re-trying at most every refresh_s.
            async with self._first_read:
                if not self._read_once and time.monotonic() - self._read_at >= self.refresh_s:
                    await self.refresh(max(self.timeout_s, FIRST_READ_TIMEOUT_S))
        elif time.monotonic() - self._read_at >= self.refresh_s:
            await self.refresh()
        if not self._read_once:
            return UnreadAlarms()
        cached = self._by_caller.get((tenant, admin_tenant))
        if cached is None:
            cached = {
                _cell(record): _note(record)
                for record in self._records.values()
                if record.tenant == tenant or (admin_tenant is not None and record.tenant == admin_tenant)
            }
            self._by_caller[(tenant, admin_tenant)] = cached
        return cached

    async def refresh(self, timeout_s: float | None = None) -> None:
        """Re-read the alarms (a failure keeps the last copy and is logged once until Redis answers again)."""
        self._read_at = time.monotonic()  # concurrent requests keep the copy meanwhile
        try:
            records = await asyncio.wait_for(self.store.alarms(), self.timeout_s if timeout_s is None else timeout_s)
        except (RedisError, OSError, TimeoutError) as error:
            if not self._failing:
                self.logger.warning("monitor.alarms_unreadable", error_type=type(error).__name__)
            self._failing = True
            return
        self._failing = False
        self._read_once = True
        self._replace(records)

    @property
    def read(self) -> bool:
        """Whether the alarms have been read at least once (before that, every cell escalates)."""
        return self._read_once

    def raised(self, record: AlarmRecord) -> None:
        """An alarm this process raised: in the copy at once."""
        self._replace([*self._records.values(), record])

    def cleared(self, monitor_id: str) -> None:
        """An alarm this process reset: out of the copy at once."""
        self._replace([r for r in self._records.values() if r.monitor_id != monitor_id])

    def _replace(self, records: Sequence[AlarmRecord]) -> None:
        self._records = {record.monitor_id: record for record in records}
        self._by_caller = {}
        self.metrics.alarms.set(len(self._records))


def _cell(record: AlarmRecord) -> AlarmedCell:
    return (record.calibration_id, record.judge, record.prompt_family, record.criterion, record.input_kind)


def _note(record: AlarmRecord) -> AlarmNote:
    return AlarmNote(
        monitor_id=record.monitor_id,
        guarantee=record.guarantee,
        level=record.level,
        e_value=record.e_value,
        explanation=record.explanation,
    )
