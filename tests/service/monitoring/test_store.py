"""The monitor store on a real Redis: concurrent writers (two processes' clients) lose and double-count no label,
a monitor's spec is the one fixed at its first label, and the board keeps its last copy while Redis is down."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError

from calibration.monitoring import CellSpec, GuaranteeSpec
from service.monitoring.board import AlarmBoard
from service.monitoring.cells import CellKey, MonitorKey, ServedLabel
from service.monitoring.metrics import MonitorMetrics
from service.monitoring.store import AlarmRecord, Labelled, MonitorStore
from service.observability.logging import make_logs
from service.observability.metrics import ServiceMetrics
from tests.redis_url import REDIS_TEST_URL

pytestmark = pytest.mark.redis
KEY = MonitorKey(
    cell=CellKey(
        tenant="", calibration_id="c0ffee", judge="j", prompt_family="f", criterion="relevance", input_kind="score"
    ),
)
SERVED = ServedLabel(label=3, scale=5, covered=True, coverage_alpha=0.1, per_label=False, accept_alpha=None,
                     accepted=False, wrong=False)  # fmt: skip


def watched_spec(*, max_items: int, delta: float) -> CellSpec:
    return CellSpec(guarantees=[GuaranteeSpec(guarantee="coverage", level=0.1, max_items=max_items)], delta=delta)


def _items(writer: int, n: int) -> list[Labelled]:
    return [
        Labelled(
            index=i,
            item_id=f"w{writer}-{i}",
            group=f"w{writer}-doc{i // 2}",
            done=i % 2 == 1,
            served=SERVED,
        )
        for i in range(n)
    ]


def _store(client: Any, queue: str) -> MonitorStore:
    return MonitorStore(client, queue, max_open_groups=100, remembered_ids=1000)


def test_concurrent_writers_count_every_label_once(queue_name: str) -> None:
    async def main() -> tuple[int, int, int]:
        clients = [aioredis.Redis.from_url(REDIS_TEST_URL) for _ in range(4)]
        try:
            stores = [_store(client, queue_name) for client in clients]
            spec = watched_spec(max_items=4, delta=0.05)
            documents = [(w, _items(w, 20)[i : i + 2]) for w in range(4) for i in range(0, 20, 2)]
            batches = [stores[w].record(KEY, spec, items) for w, items in documents]  # 40 writers at once
            results = await asyncio.gather(*batches)
            again = await stores[0].record(KEY, spec, _items(0, 20))  # every id again: duplicates only
            record = await stores[0].load(KEY.monitor_id)
            assert record is not None and again.accepted == 0 and again.duplicates == 20
            return sum(r.accepted for r in results), record.state.labels, record.state.documents
        finally:
            for client in clients:
                await client.aclose()

    accepted, labels, documents = asyncio.run(main())
    assert (accepted, labels, documents) == (80, 80, 40)


def test_the_spec_is_fixed_at_the_first_label(queue_name: str) -> None:
    async def main() -> int:
        client = aioredis.Redis.from_url(REDIS_TEST_URL)
        try:
            store = _store(client, queue_name)
            await store.record(KEY, watched_spec(max_items=2, delta=0.05), _items(0, 2))
            later = watched_spec(max_items=16, delta=0.01)  # the settings changed since: the monitor keeps its own
            await store.record(KEY, later, _items(1, 2))
            record = await store.load(KEY.monitor_id)
            assert record is not None and record.spec.delta == 0.05
            return record.spec.guarantees[0].max_items
        finally:
            await client.aclose()

    assert asyncio.run(main()) == 2


class _FlakyStore:
    def __init__(self) -> None:
        self.down = False
        self.record = AlarmRecord(
            tenant="t", calibration_id="c", judge="j", prompt_family="f", criterion="relevance",
            input_kind="score", guarantee="coverage", level=0.1, e_value=25.0, monitor_id="m1",
        )  # fmt: skip

    async def alarms(self) -> list[AlarmRecord]:
        if self.down:
            raise RedisConnectionError("down")
        return [self.record]


def test_a_board_that_never_read_the_alarms_escalates_every_cell_until_it_does() -> None:
    store = _FlakyStore()
    store.down = True  # a process started while Redis does not answer
    board = AlarmBoard(store, refresh_s=0.0, timeout_s=0.5, logger=make_logs("ERROR").logger,  # type: ignore[arg-type]
                       metrics=MonitorMetrics(ServiceMetrics()))  # fmt: skip

    async def main() -> tuple[Any, Any]:
        before = await board.for_caller("u", None)
        store.down = False
        return before, await board.for_caller("u", None)

    before, after = asyncio.run(main())
    note = before.get(("any", "j", "f", "relevance", "score"))
    assert before and note is not None and "have not been read" in note.explanation  # fail closed, said why
    assert after == {} and board.read  # read: tenant "u" has no alarm of its own


def test_the_board_keeps_its_copy_while_redis_is_down_and_filters_by_tenant() -> None:
    store = _FlakyStore()
    metrics = MonitorMetrics(ServiceMetrics())
    board = AlarmBoard(store, refresh_s=0.0, timeout_s=0.5, logger=make_logs("ERROR").logger, metrics=metrics)  # type: ignore[arg-type]

    async def main() -> tuple[int, int, int, int]:
        own = len(await board.for_caller("t", None))
        other = len(await board.for_caller("u", None))
        via_admin = len(await board.for_caller("u", "t"))  # "t" as the admin's tenant applies to "u" too
        store.down = True
        kept = len(await board.for_caller("t", None))
        return own, other, via_admin, kept

    assert asyncio.run(main()) == (1, 0, 1, 1)
    assert metrics.alarms._value.get() == 1  # the bounded gauge: monitors in alarm, no names
    board.cleared("m1")
    assert asyncio.run(board.for_caller("t", None)) == {}
