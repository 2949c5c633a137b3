"""The judge stand-in's faults against a real ``python -m service`` over HTTP (issue 22, D2 / D6 / D22).

One server, one judge (the stand-in), faults in turn: a 200 MB reply, a reply dripped a byte at a time, a 400
"context too long" for one caller's documents, unreadable replies, then an outage and its recovery. Meanwhile a
thread polls ``/healthz``. Checked: every faulty call is a per-item 502 (never a score, never a 500), the
breaker opens for the outage only, the first batch after recovery is served whole (no 503 once the judge is
healthy), and ``/healthz`` stays responsive throughout (p99 under a generous bound: the issue's target is
100 ms; the old code stalled the event loop for seconds on a 5 MB reply and minutes on 200 MB).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from tests.fakes.judge_server import JudgeServer
from tests.service.conftest import STAND_IN, AppHarness

ROOT = Path(__file__).resolve().parents[3]
# The issue asks for p99 < 100 ms on an idle machine; tests share 2 cores with other work, so the bound here
# is generous and still an order of magnitude below the stalls it guards against.
HEALTHZ_P99_BOUND_S = 0.5
COOLDOWN_S = 1.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def service_url(artifact_path: Path, stand_in: JudgeServer, tmp_path: Path) -> Iterator[str]:
    """``python -m service`` with the stand-in as judge (timeout_s 1 s, one retry), a breaker that opens after
    3 provider faults for 1 s; yields its base URL."""
    judges = tmp_path / "judges.json"
    config = stand_in.judge_config(name=STAND_IN, timeout_s=1.0, max_retries=1, max_concurrency=8)
    judges.write_bytes(msgspec.json.encode([config]))
    port = _free_port()
    environment = {
        key: value for key, value in os.environ.items() if key not in ("API_KEYS", "REDIS_URL", "ADMIN_API_KEY")
    }
    environment.update(
        THRESHOLDS_PATH=str(artifact_path),
        JUDGES_FILE=str(judges),
        PORT=str(port),
        HOST="127.0.0.1",
        BREAKER_FAILURES="3",
        BREAKER_COOLDOWN_S=str(COOLDOWN_S),
        BREAKER_PROBE_WAIT_S="20",
        LOG_LEVEL="ERROR",
    )
    command = [sys.executable, "-m", "service"]
    process = subprocess.Popen(command, cwd=ROOT, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180  # readiness, with a bound generous enough for a loaded machine
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("the service did not start")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class HealthPoller:
    """Polls ``/healthz`` every 20 ms in a thread; ``latencies`` are the seconds each answer took."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._stop = threading.Event()
        self.latencies: list[float] = []
        self.failures: list[str] = []
        self._thread = threading.Thread(target=self._run, name="healthz-poller", daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=60) as client:
            while not self._stop.is_set():
                started = time.perf_counter()
                try:
                    status = client.get(f"{self._url}/healthz").status_code
                except httpx.HTTPError as error:
                    self.failures.append(repr(error))
                else:
                    if status != 200:
                        self.failures.append(f"status {status}")
                self.latencies.append(time.perf_counter() - started)
                self._stop.wait(0.02)

    def __enter__(self) -> HealthPoller:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(70)

    def p99(self) -> float:
        """The 99th percentile of the latencies (nearest rank: the ceil(0.99 n)-th smallest)."""
        ordered = sorted(self.latencies)
        return ordered[max(0, -(-99 * len(ordered) // 100) - 1)]


def _score(client: httpx.Client, url: str, document: str) -> httpx.Response:
    return client.post(f"{url}/v1/score", json={"criterion": "relevance", "document": document, "summary": "S."})


def test_judge_faults_keep_the_api_responsive_and_open_the_breaker_only_for_an_outage(
    service_url: str, stand_in: JudgeServer
) -> None:
    url = service_url
    with HealthPoller(url) as poller, httpx.Client(timeout=60) as client:
        # A 200 MB reply that still reads as "4": a 502 once 256 KiB are in, not a score after minutes.
        stand_in.inject("huge_reply", size_bytes=200_000_000)
        reply = _score(client, url, "Huge reply.")
        assert reply.status_code == 502 and reply.json()["type"].endswith("judge-reply-unreadable"), reply.text
        assert "JUDGE_MAX_REPLY_BYTES" in reply.json()["detail"]

        # A reply dripped one byte per 50 ms: cut at the judge's 1 s deadline (retries included).
        stand_in.inject("slow_drip", drip_s=0.05)
        reply = _score(client, url, "Slow drip.")
        assert reply.status_code == 502 and "timed out" in reply.json()["detail"], reply.text

        # One caller's over-long documents: a 400 per item, which does not open the breaker (3 faults would).
        stand_in.bad_request_marker = "VERY-LONG-DOCUMENT"
        items = [{"criterion": "relevance", "document": f"VERY-LONG-DOCUMENT {n}", "summary": "S."} for n in range(10)]
        batch = client.post(f"{url}/v1/score/batch", json={"items": items}).json()
        assert batch["n_failed"] == 10
        assert all(r["error"]["status"] == 502 and "HTTP 400" in r["error"]["detail"] for r in batch["results"])

        # Unreadable replies: not a chat completion, or no score even after the format retry.
        stand_in.inject("garbage_reply", times=4)
        for n in range(4):
            assert _score(client, url, f"Garbage {n}.").json()["type"].endswith("judge-reply-unreadable")
        stand_in.inject("no_score", times=8)
        for n in range(4):
            assert _score(client, url, f"No score {n}.").json()["type"].endswith("judge-reply-unreadable")
        reply = _score(client, url, "Another caller.")
        assert reply.status_code == 200 and reply.json()["judge_score"] == 4, reply.text  # breaker still closed

        # An outage opens the breaker (provider faults count) ...
        stand_in.outage = "unavailable_503"
        statuses = [_score(client, url, f"Outage {n}.").status_code for n in range(4)]
        assert statuses == [502, 502, 502, 503]
        open_reply = _score(client, url, "Outage 9.")
        assert open_reply.status_code == 503 and open_reply.json()["type"].endswith("judge-circuit-open")

        # ... and after recovery the first batch is served whole: one probe, the others wait for it.
        stand_in.outage = None
        stand_in.latency_s = 0.2  # the probe is still in flight when the other items reach the breaker
        time.sleep(COOLDOWN_S + 0.2)
        items = [{"criterion": "relevance", "document": f"After {n}.", "summary": "S."} for n in range(200)]
        batch = client.post(f"{url}/v1/score/batch", json={"items": items}).json()
        errors = [r["error"] for r in batch["results"] if not r["ok"]]
        assert errors == [] and batch["n_ok"] == 200

        metrics = client.get(f"{url}/metrics").text
    assert poller.failures == []
    assert len(poller.latencies) > 20
    assert poller.p99() < HEALTHZ_P99_BOUND_S, f"/healthz p99 {poller.p99():.3f} s over {len(poller.latencies)}"
    assert 'status="500"' not in metrics


def test_an_oversized_reply_fails_its_own_batch_item_only(judge_app: AppHarness, stand_in: JudgeServer) -> None:
    """The cap is per reply: the item whose reply is 400 KB is a 502 naming JUDGE_MAX_REPLY_BYTES; the others
    are scored."""

    def responder(body: dict[str, Any]) -> str:
        prompt = "\n".join(str(message["content"]) for message in body["messages"])
        return "4" + " " * 400_000 if "HUGE-REPLY" in prompt else "4"

    stand_in.responder = responder
    items = [{"criterion": "relevance", "document": f"Doc {tag}.", "summary": "S."} for tag in ("a", "HUGE-REPLY", "b")]
    data = judge_app.client.post("/v1/score/batch", json={"items": items}).json()
    first, huge, last = data["results"]
    assert first["ok"] and last["ok"] and first["result"]["judge_score"] == 4
    assert not huge["ok"] and huge["error"]["status"] == 502
    assert huge["error"]["type"].endswith("judge-reply-unreadable")
    assert "JUDGE_MAX_REPLY_BYTES" in huge["error"]["detail"]


SLOTS_DOCUMENT = "Rain closed the harbour road on Monday; ferries ran late and two shops flooded."
SLOTS_SUMMARY = "Heavy rain shut the harbour road and flooded two shops."


def test_a_502_problem_names_the_judge_never_its_url(judge_app, stand_in: JudgeServer, tmp_path: Path) -> None:
    stand_in.inject("error_500", times=5)
    reply = judge_app.client.post(
        "/v1/score", json={"criterion": "relevance", "document": SLOTS_DOCUMENT, "summary": SLOTS_SUMMARY}
    )
    assert reply.status_code == 502
    detail = reply.json()["detail"]
    assert "stand-in" in detail and stand_in.base_url not in detail and "127.0.0.1" not in detail
