"""Bounded and private monitors: a tenant is refused (429 ``monitor-quota`` naming the limit) past
MONITOR_MAX_PER_TENANT monitors or MONITOR_TENANT_MAX_BYTES of kept rows while another tenant is not; a flood of
labels with long ids keeps the monitors' Redis footprint bounded (ids kept as fixed-size digests); every key
expires; GET /v1/monitor pages; /metrics keeps a fixed set of series that names no cell."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
import redis.asyncio as aioredis

from service.config.settings import Settings
from service.monitoring.store import monitor_prefix
from tests.redis_url import REDIS_TEST_URL
from tests.service.conftest import AppHarness
from tests.service.monitoring.conftest import feedback_item
from tests.service.monitoring.test_feedback_api import ADMIN

pytestmark = pytest.mark.redis
KEY_1, KEY_2 = "tenant-one-key-7c1d", "tenant-two-key-93ab"


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def _redis_footprint(queue: str) -> tuple[int, int, list[int], list[bytes]]:
    """(bytes used by the monitors' keys (MEMORY USAGE), their count, their TTLs, one seen set's members)."""

    async def main() -> tuple[int, int, list[int], list[bytes]]:
        client = aioredis.Redis.from_url(REDIS_TEST_URL)
        try:
            keys = [key async for key in client.scan_iter(match=monitor_prefix(queue) + "*")]
            used = [await client.memory_usage(key) or 0 for key in keys]
            ttls = [await client.ttl(key) for key in keys if b":m:" in key or b":t:" in key or b":b:" in key]
            seen = next((k for k in keys if k.endswith(b":seen")), None)
            members = [] if seen is None else await client.zrange(seen, 0, -1)
            return sum(used), len(keys), ttls, members
        finally:
            await client.aclose()

    return asyncio.run(main())


def test_a_tenant_past_its_monitor_cap_is_refused_and_another_is_not(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    settings = jobs_settings({"monitor_max_per_tenant": 1, "api_keys": (KEY_1, KEY_2), "admin_api_key": ADMIN})
    client = start_app(settings).client
    first = client.post("/v1/feedback", json={"items": [feedback_item("a", 3)]}, headers=bearer(KEY_1))
    assert first.status_code == 200 and first.json()["accepted"] == 1
    other_cell = [feedback_item("b", 3, criterion="coherence")]
    refused = client.post("/v1/feedback", json={"items": other_cell}, headers=bearer(KEY_1))
    assert refused.status_code == 429 and refused.headers["content-type"] == "application/problem+json"
    problem = refused.json()
    assert problem["type"].endswith("monitor-quota") and "MONITOR_MAX_PER_TENANT=1" in problem["detail"]
    mixed = [feedback_item("c", 3), *other_cell]  # one item fits: the answer is 200 with the other refused alone
    answer = client.post("/v1/feedback", json={"items": mixed}, headers=bearer(KEY_1)).json()
    assert answer["accepted"] == 1 and answer["refusals"][0]["error"]["status"] == 429
    assert client.post("/v1/feedback", json={"items": other_cell}, headers=bearer(KEY_2)).status_code == 200


def test_a_flood_is_refused_at_the_byte_cap_and_redis_growth_stays_bounded(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings], queue_name: str
) -> None:
    cap = 40_000
    settings = jobs_settings(
        {"monitor_tenant_max_bytes": cap, "monitor_max_items": 1, "api_keys": (KEY_1, KEY_2), "max_batch_items": 100}
    )
    client = start_app(settings).client
    answers = []
    for request in range(30):  # 3,000 labels with 190-character ids
        items = [feedback_item(f"{request:03d}-{n:03d}-" + "x" * 182, 3) for n in range(100)]
        answers.append(client.post("/v1/feedback", json={"items": items}, headers=bearer(KEY_1)))
    assert answers[0].status_code == 200 and answers[-1].status_code == 429
    assert answers[-1].json()["type"].endswith("monitor-quota")
    assert "MONITOR_TENANT_MAX_BYTES=40,000" in answers[-1].json()["detail"]
    used, count, ttls, members = _redis_footprint(queue_name)
    # rows within the cap, the other keys fixed-size per label kept: a bound that does not grow with the flood
    assert used < 4 * cap, used
    assert {len(m) for m in members} == {24}  # digests, whatever the caller's id length
    assert ttls and all(0 < ttl <= settings.monitor_ttl_s for ttl in ttls)
    other = client.post("/v1/feedback", json={"items": [feedback_item("b1", 3)]}, headers=bearer(KEY_2))
    assert other.status_code == 200 and other.json()["accepted"] == 1  # another tenant is not starved
    metrics = client.get("/metrics", headers=bearer(KEY_1)).text
    series = [line for line in metrics.splitlines() if line.startswith("cj_monitor")]
    assert len(series) <= 6 and not any("{" in line for line in series)  # fixed, unlabelled: no cell, no tenant


def _cells(client: Any, **params: Any) -> dict[str, Any]:
    answer = client.get("/v1/monitor", params=params, headers=bearer(ADMIN))
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_the_monitor_listing_pages_in_id_order(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    client = start_app(jobs_settings({"api_keys": (KEY_1, KEY_2), "admin_api_key": ADMIN})).client
    for key in (KEY_1, KEY_2, ADMIN):
        for criterion in ("relevance", "coherence"):
            item = feedback_item(f"{criterion}-1", 3, criterion=criterion)
            assert client.post("/v1/feedback", json={"items": [item]}, headers=bearer(key)).status_code == 200
    every = _cells(client, limit=200)
    assert len(every["cells"]) == 6 and every["next_after"] is None
    ids = [c["monitor_id"] for c in every["cells"]]
    assert ids == sorted(ids)
    paged, after = [], ""
    while True:
        page = _cells(client, limit=4, after=after) if after else _cells(client, limit=4)
        paged += [c["monitor_id"] for c in page["cells"]]
        if page["next_after"] is None:
            break
        after = page["next_after"]
    assert paged == ids
    for bad in ({"limit": 0}, {"limit": 201}, {"limit": "x"}, {"after": "../x"}, {"after": "Z" * 10}):
        answer = client.get("/v1/monitor", params=bad, headers=bearer(ADMIN))
        assert answer.status_code in (400, 422), bad
        assert answer.headers["content-type"] == "application/problem+json", bad
    own = client.get("/v1/monitor", params={"limit": 1}, headers=bearer(KEY_1)).json()
    assert len(own["cells"]) == 1 and own["next_after"] is not None  # a tenant pages through its own only
