"""The monitors in Redis: one monitor's state, its open documents and the ids it has seen, changed atomically, within
each tenant's quotas.

Keys (``p`` = ``cj:<JOB_QUEUE>:mon:``, the jobs' Redis and prefix):

======================= ====== ===================================================================================
key                     type   content
======================= ====== ===================================================================================
``p m:<id>``            hash   ``key`` (the MonitorKey), ``spec`` (its CellSpec), ``state`` (its CellMonitor), JSON
``p m:<id>:open``       hash   group digest -> the open document's tallies (JSON), at most MONITOR_MAX_OPEN_GROUPS
``p m:<id>:seen``       zset   item id digests labelled (score: when), the latest MONITOR_REMEMBERED_IDS kept
``p m:<id>:closed``     zset   group digests closed (score: when), the latest MONITOR_REMEMBERED_IDS kept
``p m:<id>:rows``       list   the labelled rows (the labelled JSON Lines format, each with its tenant), newest
                               first, as many kept: what a recalibration from feedback fits on
``p t:<tenant>``        set    the tenant's monitor ids (at most MONITOR_MAX_PER_TENANT)
``p b:<tenant>``        string bytes of the tenant's kept rows and their digests (<= MONITOR_TENANT_MAX_BYTES)
``p monitors``          hash   monitor id -> tenant (the listing)
``p alarms``            hash   monitor id -> the alarm's cell and guarantee (JSON): what escalates answers
======================= ====== ===================================================================================

Item ids and groups are kept as 24-hex-digit digests (``service.monitoring.batch.digest``): a member's size does not
depend on what the caller sent. A monitor's keys and its tenant's expire MONITOR_TTL_S after their last label.
One feedback request updates each monitor it touches in one optimistic transaction (WATCH the monitor's keys and
its tenant's, read, compute with :mod:`calibration.monitoring`, MULTI/EXEC the writes; a concurrent writer makes
EXEC fail and the update is recomputed), so replicas and workers never lose or double-count a label. A tenant's
new monitor past MONITOR_MAX_PER_TENANT, or a row past MONITOR_TENANT_MAX_BYTES, is refused (429 ``monitor-quota``
naming the limit): Redis holds per tenant at most its monitors' fixed state and open documents plus that many
bytes of rows, whatever the stream's length.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Sequence
from typing import Any

import msgspec
from redis.exceptions import WatchError

from calibration.monitoring import CellMonitor, CellSpec, explain_alarm, start_cell
from service.errors import ConflictError, MonitorQuotaError
from service.monitoring.batch import (
    LABEL_BYTES,
    AlarmRecord,
    Batch,
    Labelled,
    OpenDocument,
    UpdateResult,
    candidate_digests,
    digest,
)
from service.monitoring.cells import MonitorKey

__all__ = ["AlarmRecord", "Labelled", "MonitorRecord", "MonitorStore", "UpdateResult", "digest", "monitor_prefix"]

_ATTEMPTS = 50


def monitor_prefix(queue: str) -> str:
    """The prefix of every monitor key, beside the jobs of queue ``queue``."""
    return f"cj:{queue}:mon:"


class MonitorRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A stored monitor: its key, spec, state and open documents."""

    monitor_id: str
    key: MonitorKey
    spec: CellSpec
    state: CellMonitor
    open_groups: int


class MonitorStore:
    """The monitors on one Redis client (``redis.asyncio.Redis``, bytes replies) under one prefix."""

    def __init__(
        self,
        redis: Any,
        queue: str,
        *,
        max_open_groups: int,
        remembered_ids: int,
        max_per_tenant: int = 20,
        tenant_max_bytes: int = 50_000_000,
        ttl_s: int = 2_592_000,
    ) -> None:
        self.redis = redis
        self.prefix = monitor_prefix(queue)
        self.max_open_groups = max_open_groups
        self.remembered_ids = remembered_ids
        self.max_per_tenant = max_per_tenant
        self.tenant_max_bytes = tenant_max_bytes
        self.ttl_s = ttl_s

    def _keys(self, monitor_id: str) -> tuple[str, str, str, str]:
        base = f"{self.prefix}m:{monitor_id}"
        return base, base + ":open", base + ":seen", base + ":closed"

    def _rows_key(self, monitor_id: str) -> str:
        return f"{self.prefix}m:{monitor_id}:rows"

    def _tenant_keys(self, tenant: str) -> tuple[str, str]:
        return f"{self.prefix}t:{tenant}", f"{self.prefix}b:{tenant}"

    async def record(self, key: MonitorKey, spec: CellSpec, items: Sequence[Labelled]) -> UpdateResult:
        """Add the items' labels to the monitor of ``key`` (created with ``spec`` on its first label), closing the
        documents marked done, in one transaction (retried while another writer changes the monitor)."""
        monitor_id = key.monitor_id
        for attempt in range(_ATTEMPTS):
            async with self.redis.pipeline(transaction=True) as pipe:
                try:
                    return await self._record(pipe, monitor_id, key, spec, items)
                except WatchError:
                    pass
            # another writer won: wait a jittered, growing moment so that contending writers take turns
            await asyncio.sleep(random.uniform(0.0, min(0.2, 0.002 * 2**attempt)))
        raise ConflictError(f"monitor {monitor_id} changed {_ATTEMPTS} times while this feedback was recorded; retry")

    async def _record(
        self, pipe: Any, monitor_id: str, key: MonitorKey, spec: CellSpec, items: Sequence[Labelled]
    ) -> UpdateResult:
        main, open_key, seen_key, closed_key = self._keys(monitor_id)
        rows_key = self._rows_key(monitor_id)
        tenant_set, tenant_bytes = self._tenant_keys(key.cell.tenant)
        await pipe.watch(main, open_key, seen_key, closed_key, rows_key, tenant_set, tenant_bytes)
        stored = await pipe.hmget(main, "spec", "state")
        if stored[0] is not None:
            spec = msgspec.json.decode(stored[0], type=CellSpec)  # fixed at the first label, never re-read
        elif not await pipe.sismember(tenant_set, monitor_id) and await pipe.scard(tenant_set) >= self.max_per_tenant:
            refusal = MonitorQuotaError(
                f"this tenant has {self.max_per_tenant} monitors, MONITOR_MAX_PER_TENANT={self.max_per_tenant}: a "
                "label for another cell would start one more (an admin resets monitors to free them)"
            )
            return UpdateResult(refused={item.index: refusal for item in items})
        state = start_cell(spec) if stored[1] is None else msgspec.json.decode(stored[1], type=CellMonitor)
        ids = list(dict.fromkeys(key for item in items for key in candidate_digests(item)))
        groups = list(dict.fromkeys(digest(item.group) for item in items))
        seen_scores = await pipe.zmscore(seen_key, ids)
        closed_scores = await pipe.zmscore(closed_key, groups)
        used = int(await pipe.get(tenant_bytes) or 0)
        batch = Batch(
            spec=spec,
            state=state,
            seen={i for i, score in zip(ids, seen_scores, strict=True) if score is not None},
            closed={g for g, score in zip(groups, closed_scores, strict=True) if score is not None},
            documents={
                g: msgspec.json.decode(raw, type=OpenDocument)
                for g, raw in zip(groups, await pipe.hmget(open_key, groups), strict=True)
                if raw is not None
            },
            n_open=await pipe.hlen(open_key),
            max_open=self.max_open_groups,
            bytes_left=max(0, self.tenant_max_bytes - used),
            max_bytes=self.tenant_max_bytes,
        )
        for item in items:
            batch.add(item)
        result = batch.result
        freed = 0
        if batch.rows:  # the oldest rows the trim below drops: their bytes leave the tenant's count
            kept = await pipe.llen(rows_key)
            start = max(0, self.remembered_ids - len(batch.rows))
            if kept > start:
                freed = sum(len(row) + LABEL_BYTES for row in await pipe.lrange(rows_key, start, -1))
        pipe.multi()
        now = time.time()
        pipe.hset(main, mapping={"key": msgspec.json.encode(key), "spec": msgspec.json.encode(spec),
                                 "state": msgspec.json.encode(batch.state)})  # fmt: skip
        pipe.hset(f"{self.prefix}monitors", monitor_id, key.cell.tenant)
        pipe.sadd(tenant_set, monitor_id)
        if batch.touched:
            pipe.hset(open_key, mapping={g: msgspec.json.encode(batch.documents[g]) for g in batch.touched})
        if batch.newly_closed:
            pipe.hdel(open_key, *batch.newly_closed)
            pipe.zadd(closed_key, dict.fromkeys(batch.newly_closed, now))
            pipe.zremrangebyrank(closed_key, 0, -self.remembered_ids - 1)
        if batch.labelled:
            pipe.zadd(seen_key, dict.fromkeys(batch.labelled, now))
            pipe.zremrangebyrank(seen_key, 0, -self.remembered_ids - 1)
        if batch.rows:
            pipe.lpush(rows_key, *batch.rows)
            pipe.ltrim(rows_key, 0, self.remembered_ids - 1)
            charged = sum(len(row) + LABEL_BYTES for row in batch.rows[-self.remembered_ids :])
            pipe.incrby(tenant_bytes, charged - freed)
        for expiring in (main, open_key, seen_key, closed_key, rows_key, tenant_set, tenant_bytes):
            pipe.expire(expiring, self.ttl_s)
        if state.alarm is None and batch.state.alarm is not None:
            result.alarm = _alarm_record(monitor_id, key, batch.state)
            pipe.hset(f"{self.prefix}alarms", monitor_id, msgspec.json.encode(result.alarm))
        await pipe.execute()
        result.spec, result.state, result.open_documents = spec, batch.state, batch.n_open
        return result

    async def monitors(
        self, tenant: str | None, *, after: str = "", limit: int | None = None
    ) -> tuple[list[MonitorRecord], str | None]:
        """The stored monitors of ``tenant`` (None: all) in id order, those with an id above ``after``, at most
        ``limit`` of them, and the cursor of the next page (None: no more). Monitors whose keys expired leave the
        listing on the way."""
        owners = await self.redis.hgetall(f"{self.prefix}monitors")
        ids = sorted(m.decode() for m, t in owners.items() if tenant is None or t.decode() == tenant)
        ids = [monitor_id for monitor_id in ids if monitor_id > after]
        records: list[MonitorRecord] = []
        for monitor_id in ids:
            if limit is not None and len(records) == limit:
                return records, records[-1].monitor_id
            record = await self.load(monitor_id)
            if record is None:
                await self.redis.hdel(f"{self.prefix}monitors", monitor_id)  # expired
                continue
            records.append(record)
        return records, None

    async def load(self, monitor_id: str) -> MonitorRecord | None:
        """One stored monitor, or None (never created, reset or expired)."""
        main, open_key, _, _ = self._keys(monitor_id)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hmget(main, "key", "spec", "state")
            pipe.hlen(open_key)
            (raw_key, raw_spec, raw_state), n_open = await pipe.execute()
        if raw_key is None or raw_spec is None or raw_state is None:
            return None
        return MonitorRecord(
            monitor_id=monitor_id,
            key=msgspec.json.decode(raw_key, type=MonitorKey),
            spec=msgspec.json.decode(raw_spec, type=CellSpec),
            state=msgspec.json.decode(raw_state, type=CellMonitor),
            open_groups=int(n_open),
        )

    async def rows(self, monitor_id: str) -> list[bytes]:
        """The monitor's kept labelled rows, oldest first."""
        return list(reversed(await self.redis.lrange(self._rows_key(monitor_id), 0, -1)))

    async def owner(self, monitor_id: str) -> str | None:
        """The tenant of a stored monitor, or None when there is none."""
        raw = await self.redis.hget(f"{self.prefix}monitors", monitor_id)
        return None if raw is None else raw.decode()

    async def reset(self, monitor_id: str) -> bool:
        """Remove a monitor's state, documents, ids, rows (their bytes leave its tenant's count) and alarm; whether
        it had an alarm."""
        tenant = await self.owner(monitor_id)
        rows = await self.redis.lrange(self._rows_key(monitor_id), 0, -1)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hexists(f"{self.prefix}alarms", monitor_id)
            pipe.delete(*self._keys(monitor_id), self._rows_key(monitor_id))
            pipe.hdel(f"{self.prefix}monitors", monitor_id)
            pipe.hdel(f"{self.prefix}alarms", monitor_id)
            if tenant is not None:
                tenant_set, tenant_bytes = self._tenant_keys(tenant)
                pipe.srem(tenant_set, monitor_id)
                pipe.decrby(tenant_bytes, sum(len(row) + LABEL_BYTES for row in rows))
            had_alarm, *_ = await pipe.execute()
        return bool(had_alarm)

    async def alarms(self) -> list[AlarmRecord]:
        """Every raised alarm (every tenant's)."""
        raw = await self.redis.hgetall(f"{self.prefix}alarms")
        return [msgspec.json.decode(value, type=AlarmRecord) for value in raw.values()]


def _alarm_record(monitor_id: str, key: MonitorKey, state: CellMonitor) -> AlarmRecord:
    assert state.alarm is not None
    cell = key.cell
    return AlarmRecord(
        tenant=cell.tenant,
        calibration_id=cell.calibration_id,
        judge=cell.judge,
        prompt_family=cell.prompt_family,
        criterion=cell.criterion,
        input_kind=cell.input_kind,
        guarantee=state.alarm.guarantee,
        level=state.alarm.level,
        e_value=state.alarm.e_value,
        monitor_id=monitor_id,
        explanation=explain_alarm(state.alarm),
    )
