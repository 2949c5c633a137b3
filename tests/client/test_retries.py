"""Retries against a real loopback HTTP server that answers from a script (503/429 with Retry-After, dropped
connections, then 200): what is retried, how long the client waits, and where it stops."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from conformal_judge_client import ApiError, AsyncClient, Client, RetryPolicy, TransportError
from conformal_judge_client.retry import parse_retry_after

STATUS = {
    "job_id": "j1",
    "status": "running",
    "n_items": 1,
    "n_done": 0,
    "n_failed": 0,
    "items_per_second": None,
    "eta_s": None,
    "created_at": "2026-01-01T00:00:00Z",
    "started_at": None,
    "finished_at": None,
    "status_url": "/v1/jobs/j1",
    "results_url": "/v1/jobs/j1/results",
}
DROP = "drop"


@dataclass
class Scripted:
    """Answers in order: ``(status, headers, body)`` or ``DROP`` (close without answering); then 200 STATUS."""

    answers: list[Any] = field(default_factory=list)
    seen: list[tuple[str, str, float, dict[str, str]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""


@pytest.fixture
def scripted() -> Iterator[Scripted]:
    state = Scripted()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            with state.lock:
                state.seen.append((self.command, self.path, time.monotonic(), dict(self.headers)))
                answer = state.answers.pop(0) if state.answers else (200, {}, STATUS)
            if answer == DROP:
                self.close_connection = True
                return
            status, headers, body = answer
            payload = json.dumps(body).encode()
            self.send_response(status)
            content_type = "application/json" if status < 400 else "application/problem+json"
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(payload)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_DELETE = _answer  # noqa: N815 - http.server's handler names

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def problem(status: int, title: str) -> dict[str, Any]:
    return {"type": f"https://example.test/problems/{status}", "title": title, "status": status, "detail": "busy"}


def test_503_is_retried_after_its_retry_after(scripted: Scripted) -> None:
    scripted.answers = [(503, {"Retry-After": "1"}, problem(503, "Service Unavailable"))]
    with Client(scripted.url, api_key="k") as client:
        status = client.job_status("j1")
    assert status.status == "running" and len(scripted.seen) == 2
    assert scripted.seen[1][2] - scripted.seen[0][2] >= 0.95  # waited the Retry-After
    assert all(seen[3]["authorization"] == "Bearer k" for seen in scripted.seen)


def test_429_of_a_post_is_retried_too(scripted: Scripted) -> None:
    scripted.answers = [
        (429, {"Retry-After": "0"}, problem(429, "Too Many Requests")),
        (429, {"Retry-After": "0"}, problem(429, "Too Many Requests")),
        (
            202,
            {},
            {
                "job_id": "j1",
                "status": "queued",
                "n_items": 1,
                "status_url": "/v1/jobs/j1",
                "results_url": "/v1/jobs/j1/results",
            },
        ),
    ]
    with Client(scripted.url) as client:
        accepted = client.submit_job([{"criterion": "relevance", "judge": "j", "judge_score": 3}])
    assert accepted.job_id == "j1" and [s[0] for s in scripted.seen] == ["POST"] * 3
    keys = {seen[3]["idempotency-key"] for seen in scripted.seen}
    assert len(keys) == 1  # every resend carries the same Idempotency-Key


def test_a_retry_after_past_the_time_budget_is_not_waited_for(scripted: Scripted) -> None:
    scripted.answers = [(429, {"Retry-After": "120"}, problem(429, "Too Many Requests"))]
    started = time.monotonic()
    with Client(scripted.url, retry=RetryPolicy(max_total_s=30)) as client, pytest.raises(ApiError) as caught:
        client.job_status("j1")
    assert time.monotonic() - started < 5 and len(scripted.seen) == 1
    error = caught.value
    assert (error.status, error.title, error.detail, error.retry_after) == (429, "Too Many Requests", "busy", 120)
    assert error.type == "https://example.test/problems/429"


def test_attempts_are_bounded(scripted: Scripted) -> None:
    scripted.answers = [(503, {"Retry-After": "0"}, problem(503, "Service Unavailable"))] * 10
    with Client(scripted.url, retry=RetryPolicy(max_attempts=3)) as client, pytest.raises(ApiError) as caught:
        client.score({"criterion": "relevance", "judge": "j", "judge_score": 3})
    assert caught.value.status == 503 and len(scripted.seen) == 3


def test_a_lost_connection_is_retried_for_idempotent_calls_only(scripted: Scripted) -> None:
    scripted.answers = [DROP]
    with Client(scripted.url) as client:
        assert client.job_status("j1").job_id == "j1"
        assert [s[0] for s in scripted.seen] == ["GET", "GET"]
        scripted.answers = [DROP]
        with pytest.raises(TransportError):
            client.score({"criterion": "relevance", "judge": "j", "judge_score": 3})
    assert [s[0] for s in scripted.seen] == ["GET", "GET", "POST"]  # the score was not sent twice


def test_a_refused_connection_is_retried_then_raised() -> None:
    with Client("http://127.0.0.1:9", retry=RetryPolicy(max_attempts=2, backoff_s=0.01)) as client:
        with pytest.raises(TransportError) as caught:
            client.score({"criterion": "relevance", "judge": "j", "judge_score": 3})
    assert "attempt 2" in str(caught.value)


def test_a_body_that_is_not_a_problem_still_raises_api_error(scripted: Scripted) -> None:
    scripted.answers = [(500, {}, ["not", "a", "problem"])]
    with Client(scripted.url) as client, pytest.raises(ApiError) as caught:
        client.health()
    assert caught.value.status == 500 and caught.value.type == "about:blank"


def test_the_async_client_retries_the_same_way(scripted: Scripted) -> None:
    scripted.answers = [(503, {"Retry-After": "1"}, problem(503, "Service Unavailable")), DROP]

    async def main() -> Any:
        async with AsyncClient(scripted.url, retry=RetryPolicy(backoff_s=0.01)) as client:
            return await client.job_status("j1")

    assert asyncio.run(main()).status == "running"
    assert len(scripted.seen) == 3 and scripted.seen[1][2] - scripted.seen[0][2] >= 0.95


def test_retry_after_reads_seconds_and_http_dates() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after("Thu, 01 Jan 2026 12:00:30 GMT", now=lambda: now) == 30.0
    assert parse_retry_after("Thu, 01 Jan 2026 11:00:00 GMT", now=lambda: now) == 0.0  # in the past: at once
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None
