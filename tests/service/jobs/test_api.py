"""The /v1/jobs routes against real Redis, with chunks run in-process by the worker's runner.

Covered: 503 without Redis, JSON Lines and ``{"items"}`` bodies, item_id echo, per-line errors, results equal
to /v1/score, the ``after``/``limit`` cursor while a job runs, Idempotency-Key replay and 409, cancel, TTL
expiry, 429 past MAX_QUEUED_ITEMS, 400/413/415 bodies, duplicate chunk runs and abandoned chunks.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import redis

from service.config.settings import Settings
from tests.service.conftest import STAND_IN, AppHarness
from tests.service.jobs.conftest import REDIS_URL, delete_queue_keys, run_chunks

pytestmark = pytest.mark.redis

NDJSON = {"content-type": "application/x-ndjson"}


def caller_item(i: int) -> dict[str, Any]:
    """The i-th caller-verdict item: criteria, scores, levels and log-probs vary with i."""
    item: dict[str, Any] = {"criterion": "relevance" if i % 2 else "coherence", "judge": STAND_IN}
    if i % 3 == 0:
        item["judge_logprobs"] = {str(k): -abs(k - (1 + i % 5)) * 1.3 - 0.1 for k in range(1, 6)}
    else:
        item["judge_score"] = 1 + i % 5
    if i % 4 == 0:
        item["alpha"] = 0.2
    return item


def ndjson(items: list[Any]) -> bytes:
    return b"\n".join(item if isinstance(item, bytes) else json.dumps(item).encode() for item in items) + b"\n"


def results(client: Any, job_id: str, **params: Any) -> list[dict[str, Any]]:
    response = client.get(f"/v1/jobs/{job_id}/results", params=params)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in response.text.splitlines()]


def test_jobs_answer_503_with_help_without_redis(app: AppHarness) -> None:
    response = app.client.post("/v1/jobs", content=ndjson([caller_item(1)]), headers=NDJSON)
    assert response.status_code == 503
    problem = response.json()
    assert problem["type"].endswith("jobs-unavailable") and "REDIS_URL" in problem["detail"]
    assert "service.worker" in problem["detail"]
    assert app.client.get("/v1/jobs/abc").status_code == 503
    assert app.client.post("/v1/score", json=caller_item(1)).status_code == 200  # sync endpoints keep working


def test_submit_run_and_read_results_equal_to_score(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    settings = jobs_settings(chunk_size=4)
    harness = start_app(settings)
    client = harness.client
    items: list[Any] = [{**caller_item(i), "item_id": f"doc-{i}"} for i in range(10)]
    items[4] = b"{not json"
    items[6] = {"criterion": "relevance", "judge": STAND_IN, "judge_score": 9, "item_id": "bad-score"}
    items[7] = {"criterion": "relevance", "judge": STAND_IN, "judge_score": 2, "item_id": 33}  # not a string
    response = client.post("/v1/jobs", content=ndjson(items), headers=NDJSON)
    assert response.status_code == 202, response.text
    accepted = response.json()
    job_id = accepted["job_id"]
    assert accepted["n_items"] == 10 and accepted["status"] == "queued"
    assert accepted["status_url"] == f"/v1/jobs/{job_id}" and accepted["results_url"] == f"/v1/jobs/{job_id}/results"
    assert client.get(f"/v1/jobs/{job_id}").json()["status"] == "queued"
    assert results(client, job_id) == []  # nothing done yet: the cursor does not move

    assert run_chunks(settings, job_id, [0]) == ["written"]
    status = client.get(f"/v1/jobs/{job_id}").json()
    assert status["status"] == "running" and status["n_done"] == 4 and status["started_at"] is not None
    partial = results(client, job_id)
    assert [line["index"] for line in partial] == [0, 1, 2, 3]  # stops before chunk 1, which has no results
    assert results(client, job_id, after=3) == []

    assert run_chunks(settings, job_id, [2, 1, 1]) == ["written", "written", "duplicate"]
    status = client.get(f"/v1/jobs/{job_id}").json()
    # every item has its line, three are errors: the job ends "failed" (docs/jobs.md), its results complete
    assert status["status"] == "failed" and status["n_done"] == 10 and status["n_failed"] == 3
    assert status["eta_s"] == 0.0 and status["items_per_second"] > 0 and status["finished_at"] is not None
    lines = results(client, job_id)
    assert [line["index"] for line in lines] == list(range(10))
    assert [line["item_id"] for line in lines] == ["doc-0", "doc-1", "doc-2", "doc-3", None, "doc-5", "bad-score",
                                                   None, "doc-8", "doc-9"]  # fmt: skip
    for index, line in enumerate(lines):
        if index in (4, 6, 7):
            assert line["ok"] is False and "result" not in line
            continue
        expected = client.post("/v1/score", json=items[index])  # the same body, item_id included
        assert expected.status_code == 200 and expected.json()["item_id"] == f"doc-{index}"
        assert line == {"index": index, "item_id": f"doc-{index}", "ok": True, "result": expected.json()}
    assert lines[4]["error"]["type"].endswith("bad-request") and lines[4]["error"]["status"] == 400
    assert lines[4]["error"]["instance"] == f"/v1/jobs/{job_id}#/items/4"
    batch = client.post("/v1/score/batch", json={"items": [items[6], items[7]]}).json()["results"]
    for line, batch_item in zip((lines[6], lines[7]), batch, strict=True):  # the batch endpoint's own problems
        assert line["error"]["type"] == batch_item["error"]["type"] and line["error"]["status"] == 422
        assert line["item_id"] == batch_item.get("item_id")
    # the cursor: pages of 3 resume where the last one stopped
    pages, after = [], -1
    while page := results(client, job_id, after=after, limit=3):
        pages.append([line["index"] for line in page])
        after = page[-1]["index"]
    assert pages == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]


def test_items_json_body_and_limits(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    settings = jobs_settings(chunk_size=2, max_job_items=5)
    client = start_app(settings).client
    response = client.post("/v1/jobs", json={"items": [{**caller_item(1), "item_id": "a"}, caller_item(2)]})
    assert response.status_code == 202 and response.json()["n_items"] == 2
    run_chunks(settings, response.json()["job_id"], [0])
    lines = results(client, response.json()["job_id"])
    assert [line["item_id"] for line in lines] == ["a", None] and all(line["ok"] for line in lines)

    too_many = client.post("/v1/jobs", content=ndjson([caller_item(i) for i in range(6)]), headers=NDJSON)
    assert too_many.status_code == 413 and "MAX_JOB_ITEMS=5" in too_many.json()["detail"]
    assert client.post("/v1/jobs", content=b"hello\n{}", headers=NDJSON).status_code == 400
    assert client.post("/v1/jobs", content=b"\n\n", headers=NDJSON).status_code == 400
    assert client.post("/v1/jobs", content=b"{}", headers={"content-type": "text/plain"}).status_code == 415
    assert client.post("/v1/jobs", json={"items": []}).status_code == 400
    assert client.post("/v1/jobs", json={"things": [1]}).status_code == 400
    assert client.get("/v1/jobs/no-such-job").status_code == 404
    assert client.delete("/v1/jobs/no-such-job").status_code == 404


def test_idempotency_key_replays_the_same_job_and_refuses_another_body(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    client = start_app(jobs_settings()).client
    body = ndjson([caller_item(i) for i in range(3)])
    headers = {**NDJSON, "Idempotency-Key": "nightly-2026-11-30"}
    first = client.post("/v1/jobs", content=body, headers=headers)
    again = client.post("/v1/jobs", content=body, headers=headers)
    assert first.status_code == again.status_code == 202
    assert again.json() == first.json() and again.headers["idempotent-replayed"] == "true"
    other = client.post("/v1/jobs", content=ndjson([caller_item(9)]), headers=headers)
    assert other.status_code == 409 and other.json()["type"].endswith("idempotency-conflict")
    fresh = client.post("/v1/jobs", content=body, headers={**NDJSON, "Idempotency-Key": "another"})
    assert fresh.status_code == 202 and fresh.json()["job_id"] != first.json()["job_id"]


def test_concurrent_requests_with_one_idempotency_key_make_one_job(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    """Eight requests with one key sent at once (three rounds, a key each): one job per key, every answer names
    it, the others are replays; its items are counted open once."""
    harness = start_app(jobs_settings())
    client = harness.client
    body = ndjson([caller_item(i) for i in range(40)])
    for round_ in range(3):
        headers = {**NDJSON, "Idempotency-Key": f"race-{round_}-{time.time()}"}
        barrier = threading.Barrier(8)

        def submit(headers: dict[str, str], barrier: threading.Barrier) -> Any:
            barrier.wait()
            return client.post("/v1/jobs", content=body, headers=headers)

        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda _, h=headers, b=barrier: submit(h, b), range(8)))
        assert [answer.status_code for answer in answers] == [202] * 8, [answer.text for answer in answers]
        job_ids = {answer.json()["job_id"] for answer in answers}
        assert len(job_ids) == 1, job_ids
        replayed = [answer.headers.get("idempotent-replayed") == "true" for answer in answers]
        assert sum(replayed) == 7
    store_keys = redis.Redis.from_url(REDIS_URL).keys(f"cj:{harness.services.settings.jobs.queue}:job:*")
    assert len([key for key in store_keys if key.count(b":") == 3]) == 3  # three jobs' metadata, no more
    assert asyncio.run(_open_items(harness)) == 3 * 40


async def _open_items(harness: AppHarness) -> int:
    from service.jobs.queue import JobQueue

    jobs = JobQueue.connect(REDIS_URL, harness.services.settings.jobs)
    try:
        return await jobs.store.queued_items()
    finally:
        await jobs.aclose()


def test_cancel_stops_unstarted_chunks(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    settings = jobs_settings(chunk_size=2)
    client = start_app(settings).client
    job_id = client.post("/v1/jobs", content=ndjson([caller_item(i) for i in range(6)]), headers=NDJSON).json()[
        "job_id"
    ]
    assert run_chunks(settings, job_id, [0]) == ["written"]
    cancelled = client.delete(f"/v1/jobs/{job_id}")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert run_chunks(settings, job_id, [1, 2]) == ["cancelled", "cancelled"]  # nothing judged
    status = client.get(f"/v1/jobs/{job_id}").json()
    assert status["status"] == "cancelled" and status["n_done"] == 2 and status["eta_s"] is None
    assert [line["index"] for line in results(client, job_id)] == [0, 1]
    assert client.delete(f"/v1/jobs/{job_id}").json()["status"] == "cancelled"  # idempotent


def test_results_expire_after_the_ttl(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings], queue_name: str
) -> None:
    settings = jobs_settings(chunk_size=2, results_ttl_s=1)
    client = start_app(settings).client
    job_id = client.post("/v1/jobs", content=ndjson([caller_item(i) for i in range(3)]), headers=NDJSON).json()[
        "job_id"
    ]
    run_chunks(settings, job_id, [0, 1])
    assert client.get(f"/v1/jobs/{job_id}").json()["status"] == "succeeded"
    assert len(results(client, job_id)) == 3
    time.sleep(2.2)
    assert client.get(f"/v1/jobs/{job_id}").status_code == 404
    assert client.get(f"/v1/jobs/{job_id}/results").status_code == 404
    import redis

    leftovers = list(redis.Redis.from_url(REDIS_URL).scan_iter(f"cj:{queue_name}:job:*"))
    assert leftovers == []


def test_queued_items_bound_answers_429_with_retry_after(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    settings = jobs_settings(chunk_size=5, max_queued_items=12, retry_after_s=7)
    harness = start_app(settings)
    client = harness.client
    first = client.post("/v1/jobs", content=ndjson([caller_item(i) for i in range(10)]), headers=NDJSON)
    assert first.status_code == 202
    refused = client.post("/v1/jobs", content=ndjson([caller_item(i) for i in range(3)]), headers=NDJSON)
    assert refused.status_code == 429 and refused.headers["retry-after"] == "7"
    assert refused.json()["type"].endswith("overloaded") and "MAX_QUEUED_ITEMS=12" in refused.json()["detail"]
    run_chunks(settings, first.json()["job_id"], [0])  # 5 items done: 5 still queued
    again = client.post("/v1/jobs", content=ndjson([caller_item(i) for i in range(3)]), headers=NDJSON)
    assert again.status_code == 202
    metrics = client.get("/metrics").text
    assert 'cj_admission_refused_total{route="/v1/jobs"} 1.0' in metrics
    assert 'cj_jobs_submitted_total{outcome="accepted"} 2.0' in metrics
    assert "cj_job_queued_items 5.0" in metrics  # read by the last POST, before its own 3 items


def test_a_chunk_past_its_attempts_gets_abandoned_errors(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    settings = jobs_settings(chunk_size=2, chunk_attempts=3)
    client = start_app(settings).client
    items = [{**caller_item(i), "item_id": str(i)} for i in range(4)]
    job_id = client.post("/v1/jobs", content=ndjson(items), headers=NDJSON).json()["job_id"]
    assert run_chunks(settings, job_id, [0]) == ["written"]
    assert run_chunks(settings, job_id, [1], attempt=4) == ["abandoned"]
    status = client.get(f"/v1/jobs/{job_id}").json()
    assert status["status"] == "failed" and status["n_done"] == 4 and status["n_failed"] == 2
    lines = results(client, job_id)
    assert [line["ok"] for line in lines] == [True, True, False, False]
    assert [line["item_id"] for line in lines] == ["0", "1", "2", "3"]
    assert all(line["error"]["type"].endswith("chunk-abandoned") for line in lines[2:])


def test_queue_keys_are_removed_by_the_fixture_helper(queue_name: str) -> None:
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    client.set(f"cj:{queue_name}:probe", b"1")
    assert delete_queue_keys(REDIS_URL, queue_name) == 1
    assert client.exists(f"cj:{queue_name}:probe") == 0
    client.close()
