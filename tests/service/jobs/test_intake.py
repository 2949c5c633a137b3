"""Job bodies: every item exactly once whatever the JSON whitespace, and chunks bounded by bytes as well as items.

Attacks: ``{"items": [...]}`` pretty-printed (newlines and CRLF between and inside items, strings holding
escaped ``\\n`` / ``\\r\\n``), CRLF JSON Lines, a single line past MAX_JOB_LINE_BYTES (413 naming the line), and
items of 600 KB that made one chunk of every item before (500 items of 1 MB: one 500 MB chunk).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
import redis

from service.config.settings import Settings
from tests.service.conftest import AppHarness
from tests.service.jobs.conftest import REDIS_URL, run_chunks
from tests.service.jobs.test_api import NDJSON, caller_item, results

pytestmark = pytest.mark.redis


def _run_all(settings: Settings, client: Any, job_id: str) -> dict[str, Any]:
    status = client.get(f"/v1/jobs/{job_id}").json()
    n_chunks = redis.Redis.from_url(REDIS_URL).hlen(f"cj:{settings.jobs.queue}:job:{job_id}:in")
    assert set(run_chunks(settings, job_id, list(range(n_chunks)))) == {"written"}
    status = client.get(f"/v1/jobs/{job_id}").json()
    assert status["status"] == "succeeded", status
    return status


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_pretty_printed_items_body_keeps_every_item_once(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings], newline: str
) -> None:
    """Before: items were joined and split on newlines, so a 3-item body gave n_done 6 and lost item b."""
    settings = jobs_settings(chunk_size=5)
    client = start_app(settings).client
    items = [{**caller_item(i), "item_id": name} for i, name in enumerate("abc")]
    items[1]["item_id"] = "b\nwith a newline\r\nand CRLF"  # escaped in JSON: one item still
    body = json.dumps({"items": items}, indent=2).replace("\n", newline).encode()
    assert body.count(newline.encode()) > 10
    accepted = client.post("/v1/jobs", content=body, headers={"content-type": "application/json"})
    assert accepted.status_code == 202, accepted.text
    job_id = accepted.json()["job_id"]
    assert accepted.json()["n_items"] == 3
    status = _run_all(settings, client, job_id)
    assert (status["n_done"], status["n_failed"]) == (3, 0)
    lines = results(client, job_id)
    assert [line["index"] for line in lines] == [0, 1, 2]
    assert [line["item_id"] for line in lines] == [item["item_id"] for item in items]
    for line, item in zip(lines, items, strict=True):
        assert line["ok"] is True
        assert line["result"] == client.post("/v1/score", json=item).json()


def test_pretty_printed_items_across_chunks_keep_their_indices(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    """Before: 502 items in chunks of 500 returned indices 500-501 twice and lost item 0 (here 12 in chunks of 5)."""
    settings = jobs_settings(chunk_size=5)
    client = start_app(settings).client
    items = [{**caller_item(i), "item_id": f"i{i}"} for i in range(12)]
    body = json.dumps({"items": items}, indent=4).encode()
    job_id = client.post("/v1/jobs", content=body, headers={"content-type": "application/json"}).json()["job_id"]
    status = _run_all(settings, client, job_id)
    assert status["n_done"] == 12
    lines = results(client, job_id)
    assert [(line["index"], line["item_id"]) for line in lines] == [(i, f"i{i}") for i in range(12)]


def test_crlf_json_lines_keep_every_item_once(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    settings = jobs_settings(chunk_size=2)
    client = start_app(settings).client
    items = [{**caller_item(i), "item_id": f"line\r\n{i}"} for i in range(5)]
    body = b"\r\n".join(json.dumps(item).encode() for item in items) + b"\r\n\r\n"
    job_id = client.post("/v1/jobs", content=body, headers=NDJSON).json()["job_id"]
    status = _run_all(settings, client, job_id)
    assert (status["n_done"], status["n_failed"]) == (5, 0)
    assert [line["item_id"] for line in results(client, job_id)] == [item["item_id"] for item in items]


def test_a_line_past_the_line_limit_is_413_naming_it(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    """Before: a line was bounded by MAX_BODY_BYTES (10 MB) only; now by MAX_JOB_LINE_BYTES (default 1 MB)."""
    settings = jobs_settings()
    client = start_app(settings).client
    huge = json.dumps({**caller_item(1), "document": "x" * 1_200_000}).encode()
    body = json.dumps(caller_item(0)).encode() + b"\n\n" + huge + b"\n" + json.dumps(caller_item(2)).encode()
    refused = client.post("/v1/jobs", content=body, headers=NDJSON)
    assert refused.status_code == 413, refused.text
    problem = refused.json()
    assert problem["type"].endswith("job-too-large") and refused.headers["content-type"] == "application/problem+json"
    assert "line 3" in problem["detail"] and "MAX_JOB_LINE_BYTES=1000000" in problem["detail"]
    single = client.post("/v1/jobs", content=huge, headers=NDJSON)  # one line, no newline at all
    assert single.status_code == 413 and "line 1" in single.json()["detail"]
    as_items = client.post("/v1/jobs", content=b'{"items": [{"criterion": "coherence"}, ' + huge + b"]}",
                           headers={"content-type": "application/json"})  # fmt: skip
    assert as_items.status_code == 413 and "item 1" in as_items.json()["detail"]
    keys = redis.Redis.from_url(REDIS_URL).keys(f"cj:{settings.jobs.queue}:job:*")
    assert keys == []  # nothing of the refused jobs is kept
    assert settings.jobs.max_job_line_bytes == 1_000_000  # the default the details name


def test_chunks_are_cut_by_bytes_and_results_page_across_them(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    """Items of 600 KB (padded with JSON whitespace) with the default JOB_CHUNK_BYTES (4 MB): before, all 10 went
    into one chunk of 6 MB (JOB_CHUNK_SIZE 500 counts items only)."""
    settings = jobs_settings()
    client = start_app(settings).client
    pad = " " * 600_000
    lines = [f'{{"item_id": "big-{i}",{pad}"criterion": "coherence", "judge": "stand-in", "judge_score": {1 + i % 5}}}'
             for i in range(10)]  # fmt: skip
    lines[3] = json.dumps({**caller_item(3), "item_id": "small-3"})
    job_id = client.post("/v1/jobs", content="\n".join(lines).encode(), headers=NDJSON).json()["job_id"]
    store = redis.Redis.from_url(REDIS_URL)
    stored = store.hgetall(f"cj:{settings.jobs.queue}:job:{job_id}:in")
    assert len(stored) >= 2
    assert max(len(blob) for blob in stored.values()) <= 4_000_000  # JOB_CHUNK_BYTES' default
    assert sum(blob.count(b"\n") + 1 for blob in stored.values()) == 10
    _run_all(settings, client, job_id)
    expected = [f"big-{i}" if i != 3 else "small-3" for i in range(10)]
    assert [line["item_id"] for line in results(client, job_id)] == expected
    for after in range(-1, 10):  # the cursor resumes at every index, across chunks of different lengths
        for limit in (1, 3, 7):
            page = results(client, job_id, after=after, limit=limit)
            assert [line["index"] for line in page] == list(range(after + 1, min(after + 1 + limit, 10)))


def test_chunk_limits_in_units() -> None:
    """The chunker alone: a chunk closes at whichever bound comes first, and one line always fits."""
    from service.jobs.intake import BodyDigest, ChunkLimits, json_items_chunks, ndjson_chunks  # (new names)

    limits = ChunkLimits(chunk_size=3, chunk_bytes=20, max_items=100, max_bytes=10_000, max_line_bytes=20)

    async def stream() -> Any:
        for piece in (b'{"a": 1}\r\n[1,', b"2]\n", b"7\n" * 5, b'"0123456789abcdef"\n', b"  \n", b"8"):
            yield piece

    async def collect() -> list[list[bytes]]:
        return [chunk async for chunk in ndjson_chunks(stream(), BodyDigest(), limits)]

    chunks = asyncio.run(collect())
    assert chunks == [[b'{"a": 1}', b"[1,2]", b"7"], [b"7", b"7", b"7"], [b"7"], [b'"0123456789abcdef"'], [b"8"]]
    assert all(sum(len(line) + 1 for line in chunk) <= 20 for chunk in chunks)
    pretty = b'{\n "items": [\n  {\n   "a": "x\\ny"\n  },\r\n  2,\n  3,\n  4\n ]\n}'
    assert json_items_chunks(pretty, limits) == [[b'{"a":"x\\ny"}', b"2", b"3"], [b"4"]]


def test_deeply_nested_bodies_are_400_not_500(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    client = start_app(jobs_settings()).client
    deep = b"[" * 5_000 + b"]" * 5_000
    as_items = client.post(
        "/v1/jobs", content=b'{"items": [' + deep + b"]}", headers={"content-type": "application/json"}
    )
    as_lines = client.post("/v1/jobs", content=deep + b"\n", headers=NDJSON)
    for response in (as_items, as_lines):
        assert response.status_code == 400, response.text
        assert "nested too deeply" in response.json()["detail"]
