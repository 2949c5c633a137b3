"""Admission's byte budget: the jobs kept in Redis (inputs, results, results reserved for items not yet done)
stay within JOB_STORE_MAX_BYTES; a job past it is refused with 503 + Retry-After (413 when it alone is larger),
and what a job holds follows its real result bytes once written, until it expires.

Before: results cost ~789 bytes per item for JOB_RESULTS_TTL_S with no bound, and admission counted only
unfinished items (an expired, never-run job even stayed counted as open forever).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
import redis

from service.config.settings import Settings
from service.jobs.queue import JobQueue
from service.judging.admission import Admission
from service.observability.metrics import LoopCounter
from tests.service.conftest import AppHarness
from tests.service.jobs.conftest import REDIS_URL, run_chunks
from tests.service.jobs.test_api import NDJSON, caller_item, ndjson

pytestmark = pytest.mark.redis


def _stored(settings: Settings) -> tuple[int, float | None, int]:
    async def main() -> tuple[int, float | None, int]:
        jobs = JobQueue.connect(settings.redis_url, settings.jobs)
        try:
            stored = await jobs.store.stored_bytes()
            return stored.total, stored.earliest_expiry, await jobs.store.queued_items()
        finally:
            await jobs.aclose()

    return asyncio.run(main())


def _out_bytes(settings: Settings, job_id: str) -> int:
    blobs = redis.Redis.from_url(REDIS_URL).hvals(f"cj:{settings.jobs.queue}:job:{job_id}:out")
    return sum(len(blob) for blob in blobs)


def _in_bytes(settings: Settings, job_id: str) -> int:
    blobs = redis.Redis.from_url(REDIS_URL).hvals(f"cj:{settings.jobs.queue}:job:{job_id}:in")
    return sum(len(blob) for blob in blobs)


def test_the_byte_budget_refuses_with_503_and_follows_real_result_sizes(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    settings = jobs_settings(chunk_size=4, max_store_bytes=30_000, result_item_bytes=1_500, retry_after_s=3)
    harness = start_app(settings)
    client = harness.client
    body = ndjson([caller_item(i) for i in range(10)])
    first = client.post("/v1/jobs", content=body, headers=NDJSON)
    assert first.status_code == 202
    job_id = first.json()["job_id"]
    reserved = _in_bytes(settings, job_id) + 10 * 1_500
    assert _stored(settings)[0] == reserved

    refused = client.post("/v1/jobs", content=body, headers=NDJSON)  # 2 x ~16.5 KB > 30 KB
    assert refused.status_code == 503, refused.text
    assert refused.headers["content-type"] == "application/problem+json"
    problem = refused.json()
    assert problem["type"].endswith("job-store-full") and "JOB_STORE_MAX_BYTES=30000" in problem["detail"]
    # nothing frees before the first job's keys expire (JOB_RESULTS_TTL_S from now): Retry-After says so
    assert int(refused.headers["retry-after"]) >= settings.jobs.results_ttl_s - 5
    metrics = client.get("/metrics").text
    assert 'cj_admission_refused_total{route="/v1/jobs"} 1.0' in metrics
    assert f"cj_job_store_bytes {float(reserved)}" in metrics  # read by the refused POST

    too_big = client.post("/v1/jobs", content=ndjson([caller_item(i) for i in range(25)]), headers=NDJSON)
    assert too_big.status_code == 413 and "JOB_STORE_MAX_BYTES=30000" in too_big.json()["detail"]

    run_chunks(settings, job_id, [0])  # 4 items written: their estimate and input replaced by real results
    total, _, _ = _stored(settings)
    assert total == _in_bytes(settings, job_id) + _out_bytes(settings, job_id) + 6 * 1_500
    run_chunks(settings, job_id, [1, 2])
    assert client.get(f"/v1/jobs/{job_id}").json()["status"] == "succeeded"
    total, _, _ = _stored(settings)
    assert total == _out_bytes(settings, job_id) > 0  # a finished job holds exactly its results
    assert total / 10 < 1_500  # the per-item reservation covers a real result line

    second = client.post("/v1/jobs", content=body, headers=NDJSON)  # now it fits
    assert second.status_code == 202, second.text
    second_id = second.json()["job_id"]
    run_chunks(settings, second_id, [0])
    assert client.delete(f"/v1/jobs/{second_id}").json()["status"] == "cancelled"
    total, _, _ = _stored(settings)
    assert total == _out_bytes(settings, job_id) + _out_bytes(settings, second_id)  # cancelled: its results only


def test_expired_jobs_leave_the_budget_and_the_open_items(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    settings = jobs_settings(results_ttl_s=1, max_store_bytes=20_000, result_item_bytes=1_000)
    client = start_app(settings).client
    body = ndjson([caller_item(i) for i in range(10)])
    assert client.post("/v1/jobs", content=body, headers=NDJSON).status_code == 202  # never run
    assert client.post("/v1/jobs", content=body, headers=NDJSON).status_code == 503
    time.sleep(2.2)
    assert client.post("/v1/jobs", content=body, headers=NDJSON).status_code == 202
    total, earliest, queued = _stored(settings)
    assert queued == 10  # the expired job's 10 items are no longer counted as waiting
    assert 10_000 < total < 20_000 and earliest is not None and earliest > time.time()


def test_check_store_bytes_rules() -> None:
    from service.errors import JobStoreFullError, JobTooLargeError  # (new names

    refused = LoopCounter("r", "r", ("route",))
    admission = Admission(max_inflight_items=10, max_queued_items=5, retry_after_s=3, refused=refused)
    admission.check_store_bytes(60, 40, max_bytes=100)
    with pytest.raises(JobStoreFullError) as full:
        admission.check_store_bytes(61, 40, max_bytes=100, earliest_expiry_in_s=41.2)
    assert full.value.status == 503 and full.value.headers == {"Retry-After": "42"}
    with pytest.raises(JobStoreFullError) as soon:
        admission.check_store_bytes(61, 40, max_bytes=100, earliest_expiry_in_s=0.5)
    assert soon.value.headers == {"Retry-After": "3"}  # never below RETRY_AFTER_S
    with pytest.raises(JobTooLargeError):
        admission.check_store_bytes(0, 101, max_bytes=100)
    assert refused.counts == {("/v1/jobs",): 3}
