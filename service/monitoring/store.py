"""The monitors in Redis: one monitor's state, its open documents and the ids it has seen, changed atomically.

Keys (``p`` = ``cj:<JOB_QUEUE>:mon:``, the jobs' Redis and prefix):

======================= ====== ===================================================================================
key                     type   content
======================= ====== ===================================================================================
``p m:<id>``            hash   ``key`` (the MonitorKey), ``spec`` (its CellSpec), ``state`` (its CellMonitor), JSON
``p m:<id>:open``       hash   group digest -> the open document's tallies (JSON), at most MONITOR_MAX_OPEN_GROUPS
``p m:<id>:seen``       zset   item id digests labelled (score: when), the latest MONITOR_REMEMBERED_IDS kept
``p m:<id>:closed``     zset   group digests closed (score: when), the latest MONITOR_REMEMBERED_IDS kept
``p m:<id>:rows``       list   the labelled rows (the labelled JSON Lines format), newest first, as many kept:
                               what a recalibration from feedback fits on
``p monitors``          hash   monitor id -> tenant (the listing)
``p alarms``            hash   monitor id -> the alarm's cell and guarantee (JSON): what escalates answers
======================= ====== ===================================================================================

Item ids and groups are kept as 24-hex-digit digests (``digest``): a member's size does not depend on what the
caller sent. One feedback request updates each monitor it touches in one optimistic transaction (WATCH the
monitor's four keys, read, compute with :mod:`calibration.monitoring`, MULTI/EXEC the writes; a concurrent writer
makes EXEC fail and the update is recomputed), so replicas and workers never lose or double-count a label. Memory
per monitor is bounded by the settings above, whatever the stream's length.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
from redis.exceptions import WatchError

from calibration.monitoring import (
    CellMonitor,
    CellSpec,
    DocumentTally,
    add_item,
    explain_alarm,
    observe_document,
    start_cell,
)
from service.errors import ConflictError, InvalidRequestError, ServiceProblem
from service.monitoring.cells import MonitorKey, ServedLabel, label_outcome

__all__ = ["AlarmRecord", "Labelled", "MonitorRecord", "MonitorStore", "UpdateResult", "digest", "monitor_prefix"]

_ATTEMPTS = 50


def digest(text: str) -> str:
    """24 hex digits of BLAKE2b: how an item id or a document is kept (a fixed size, whatever the caller sent)."""
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def monitor_prefix(queue: str) -> str:
    """The prefix of every monitor key, beside the jobs of queue ``queue``."""
    return f"cj:{queue}:mon:"


class OpenDocument(msgspec.Struct, frozen=True, kw_only=True):
    """An open document's tallies, one per watched guarantee, and its labels."""

    tallies: list[DocumentTally]
    labels: int = 0


class AlarmRecord(msgspec.Struct, frozen=True, kw_only=True):
    """An alarm as the answers read it: the monitor's cell and the guarantee it names."""

    tenant: str
    calibration_id: str
    judge: str
    prompt_family: str
    criterion: str
    input_kind: str
    guarantee: str
    level: float
    e_value: float
    monitor_id: str
    explanation: str = ""  # the alarm in words (calibration.monitoring.explain_alarm)


class Labelled(msgspec.Struct, frozen=True, kw_only=True):
    """One feedback item bound for a monitor: where it came from and what its label says."""

    index: int
    item_id: str
    group: str
    done: bool
    served: ServedLabel
    row: bytes = b""  # the item as a labelled row (artifact.labels format), kept for a recalibration


class UpdateResult(msgspec.Struct, kw_only=True):
    """What one monitor's update did: accepted and duplicate labels, refusals by index, documents closed."""

    accepted: int = 0
    duplicates: int = 0
    closed: int = 0
    refused: dict[int, ServiceProblem] = msgspec.field(default_factory=dict)
    alarm: AlarmRecord | None = None  # set when this update raised the alarm
    spec: CellSpec | None = None  # the monitor after the update
    state: CellMonitor | None = None


class MonitorRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A stored monitor: its key, spec, state and open documents."""

    monitor_id: str
    key: MonitorKey
    spec: CellSpec
    state: CellMonitor
    open_groups: int


class MonitorStore:
    """The monitors on one Redis client (``redis.asyncio.Redis``, bytes replies) under one prefix."""

    def __init__(self, redis: Any, queue: str, *, max_open_groups: int, remembered_ids: int) -> None:
        self.redis = redis
        self.prefix = monitor_prefix(queue)
        self.max_open_groups = max_open_groups
        self.remembered_ids = remembered_ids

    def _keys(self, monitor_id: str) -> tuple[str, str, str, str]:
        base = f"{self.prefix}m:{monitor_id}"
        return base, base + ":open", base + ":seen", base + ":closed"

    def _rows_key(self, monitor_id: str) -> str:
        return f"{self.prefix}m:{monitor_id}:rows"

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
        await pipe.watch(main, open_key, seen_key, closed_key)
        stored = await pipe.hmget(main, "spec", "state")
        if stored[0] is not None:
            spec = msgspec.json.decode(stored[0], type=CellSpec)  # fixed at the first label, never re-read
        state = start_cell(spec) if stored[1] is None else msgspec.json.decode(stored[1], type=CellMonitor)
        ids = list(dict.fromkeys(digest(item.item_id) for item in items))
        groups = list(dict.fromkeys(digest(item.group) for item in items))
        seen_scores = await pipe.zmscore(seen_key, ids)
        closed_scores = await pipe.zmscore(closed_key, groups)
        batch = _Batch(
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
        )
        for item in items:
            batch.add(item)
        result = batch.result
        pipe.multi()
        now = time.time()
        pipe.hset(main, mapping={"key": msgspec.json.encode(key), "spec": msgspec.json.encode(spec),
                                 "state": msgspec.json.encode(batch.state)})  # fmt: skip
        pipe.hset(f"{self.prefix}monitors", monitor_id, key.cell.tenant)
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
            pipe.lpush(self._rows_key(monitor_id), *batch.rows)
            pipe.ltrim(self._rows_key(monitor_id), 0, self.remembered_ids - 1)
        if state.alarm is None and batch.state.alarm is not None:
            result.alarm = _alarm_record(monitor_id, key, batch.state)
            pipe.hset(f"{self.prefix}alarms", monitor_id, msgspec.json.encode(result.alarm))
        await pipe.execute()
        result.spec, result.state = spec, batch.state
        return result

    async def monitors(self, tenant: str | None) -> list[MonitorRecord]:
        """Every stored monitor of ``tenant`` (None: all), in id order."""
        owners = await self.redis.hgetall(f"{self.prefix}monitors")
        ids = sorted(m.decode() for m, t in owners.items() if tenant is None or t.decode() == tenant)
        records = [await self.load(monitor_id) for monitor_id in ids]
        return [record for record in records if record is not None]

    async def load(self, monitor_id: str) -> MonitorRecord | None:
        """One stored monitor, or None (never created, or reset)."""
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
        """Remove a monitor's state, documents, ids and alarm; whether it had an alarm."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hexists(f"{self.prefix}alarms", monitor_id)
            pipe.delete(*self._keys(monitor_id), self._rows_key(monitor_id))
            pipe.hdel(f"{self.prefix}monitors", monitor_id)
            pipe.hdel(f"{self.prefix}alarms", monitor_id)
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


@dataclass(kw_only=True)
class _Batch:
    """One monitor's update in the making: the rules of ``MonitorStore.record`` applied item by item."""

    spec: CellSpec
    state: CellMonitor
    seen: set[str]
    closed: set[str]
    documents: dict[str, OpenDocument]
    n_open: int
    max_open: int
    result: UpdateResult = field(default_factory=UpdateResult)
    touched: set[str] = field(default_factory=set)  # open documents to write
    newly_closed: list[str] = field(default_factory=list)
    labelled: list[str] = field(default_factory=list)
    rows: list[bytes] = field(default_factory=list)

    def add(self, item: Labelled) -> None:
        """Tally one item (or count it a duplicate, or refuse it), closing its document when it says done."""
        item_key, group = digest(item.item_id), digest(item.group)
        if item_key in self.seen:
            self.result.duplicates += 1
            open_document = self.documents.get(group)
            if item.done and open_document is not None:  # a resent last label still closes its document
                self._close(group, open_document)
            return
        document, refusal = self._document(group, item.group)
        if refusal is not None:
            self.result.refused[item.index] = refusal
            return
        assert document is not None
        outcome = label_outcome(self.spec, item.served)
        tallies = [
            add_item(t, counted=c, failed=f, level=level)
            for t, c, f, level in zip(document.tallies, outcome.counted, outcome.failed, outcome.levels, strict=True)
        ]
        document = OpenDocument(tallies=tallies, labels=document.labels + 1)
        self.seen.add(item_key)
        self.labelled.append(item_key)
        if item.row:
            self.rows.append(item.row)
        self.result.accepted += 1
        if not item.done:
            self.documents[group] = document
            self.touched.add(group)
            return
        self._close(group, document)

    def _close(self, group: str, document: OpenDocument) -> None:
        """Count the finished document in the monitor (calibration.monitoring.observe_document)."""
        self.state = observe_document(self.spec, self.state, document.tallies, labels=document.labels)
        if self.documents.pop(group, None) is not None:
            self.n_open -= 1
        self.touched.discard(group)
        self.closed.add(group)
        self.newly_closed.append(group)
        self.result.closed += 1

    def _document(self, group: str, name: str) -> tuple[OpenDocument | None, ServiceProblem | None]:
        """The open document of digest ``group`` (named ``name``; a new one when it has none), or why a label for it
        is refused."""
        if group in self.closed:
            return None, ConflictError(
                f"document {name!r} is closed (done was sent for it): a label after its document closed is "
                "refused, never counted as a new document"
            )
        document = self.documents.get(group)
        if document is None:
            if self.n_open >= self.max_open:
                return None, ConflictError(
                    f"this monitor has {self.n_open} open documents (MONITOR_MAX_OPEN_GROUPS={self.max_open}): "
                    "close documents with done: true before opening more"
                )
            self.n_open += 1
            self.documents[group] = document = OpenDocument(tallies=[DocumentTally() for _ in self.spec.guarantees])
        max_items = self.spec.guarantees[0].max_items
        if document.labels >= max_items:
            return None, InvalidRequestError(
                f"document {name!r} has {document.labels} labels already, the monitor's MONITOR_MAX_ITEMS="
                f"{max_items}: a document with more labels is refused (the bets are sized for it)"
            )
        return document, None
