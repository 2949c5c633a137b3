"""Real worker processes (``python -m service.worker``) started by the test, on real Redis.

* A job of 20,000 caller-verdict items with two workers, one killed with SIGKILL while it holds a chunk: the
  job succeeds, every index appears exactly once, each result equals what /v1/score answers for the same body,
  and a chunk the dead worker held was run again by the other after the heartbeat timeout (about 20 s).
* Live items through a judge stand-in that fails some calls: every item is scored or carries a typed error.
* SIGTERM: a worker stops within WORKER_SHUTDOWN_S and its chunk is finished by another worker.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import redis

from service.config.settings import Settings
from tests.fakes.judge_server import JudgeServer
from tests.service.conftest import STAND_IN, AppHarness
from tests.service.jobs.conftest import REDIS_URL
from tests.service.jobs.test_api import NDJSON, caller_item, ndjson

pytestmark = pytest.mark.redis

JOB_ITEMS = 20_000
REPO = Path(__file__).resolve().parents[3]


class Workers:
    """Worker processes of one test; every one still running is killed at teardown."""

    def __init__(self, settings: Settings, log_dir: Path, extra_env: dict[str, str]) -> None:
        self.settings = settings
        self.log_dir = log_dir
        self.extra_env = extra_env
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(self, **env: str) -> subprocess.Popen[bytes]:
        jobs = self.settings.jobs
        environ = {key: value for key, value in os.environ.items() if not key.startswith(("JOB", "WORKER", "JUDGES"))}
        environ.update(
            THRESHOLDS_PATH=str(self.settings.thresholds_path),
            REDIS_URL=REDIS_URL,
            JOB_QUEUE=jobs.queue,
            JOB_HEARTBEAT_S=str(jobs.heartbeat_s),
            JOB_SWEEP_S=str(jobs.sweep_s),
            WORKER_CHUNKS=str(jobs.worker_chunks),
            LOG_FLUSH_MS="0",
            CACHE_TTL_S="120",
            **self.extra_env,
            **env,
        )
        with open(self.log_dir / f"worker-{len(self.processes)}.log", "wb") as log:  # the child keeps its own fd
            process = subprocess.Popen(
                [sys.executable, "-m", "service.worker"], cwd=REPO, env=environ, stdout=log, stderr=subprocess.STDOUT
            )
        self.processes.append(process)
        return process

    def log_lines(self, index: int) -> list[dict[str, Any]]:
        lines = []
        for raw in (self.log_dir / f"worker-{index}.log").read_text().splitlines():
            if raw.startswith("{"):
                lines.append(json.loads(raw))
        return lines

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=10)


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Callable[..., Workers]]:
    made: list[Workers] = []

    def make(settings: Settings, **extra_env: str) -> Workers:
        made.append(Workers(settings, tmp_path, extra_env))
        return made[-1]

    yield make
    for group in made:
        group.stop_all()


def wait_for(client: Any, job_id: str, done: Callable[[dict[str, Any]], bool], timeout_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        status = client.get(f"/v1/jobs/{job_id}").json()
        if done(status) or time.monotonic() > deadline:
            return status
        time.sleep(0.1)


def all_results(client: Any, job_id: str) -> list[dict[str, Any]]:
    response = client.get(f"/v1/jobs/{job_id}/results")
    assert response.status_code == 200
    return [msgspec.json.decode(line) for line in response.content.splitlines()]


def wait_until_holding_a_chunk(group: Workers, index: int, queue: str, timeout_s: float = 30) -> None:
    """Return once worker ``index`` has a chunk task active in SAQ's records (so a kill leaves one in flight)."""
    deadline = time.monotonic() + timeout_s
    started: list[dict[str, Any]] = []
    while not started and time.monotonic() < deadline:
        started = [line for line in group.log_lines(index) if line.get("event") == "worker.started"]
        time.sleep(0.05)
    worker_id = started[0]["worker_id"]
    client = redis.Redis.from_url(REDIS_URL)
    try:
        while time.monotonic() < deadline:
            for task_id in client.lrange(f"saq:{queue}:active", 0, -1):
                raw = client.get(task_id)
                task = json.loads(raw) if raw else {}
                if task.get("worker_id") != worker_id or task.get("status") != "active":
                    continue
                job_id, chunk = task["kwargs"]["job_id"], task["kwargs"]["chunk"]
                if not client.hexists(f"cj:{queue}:job:{job_id}:out", str(chunk)):  # not written yet
                    return
            time.sleep(0.005)
    finally:
        client.close()
    raise AssertionError(f"worker {index} never held a chunk")


def kill_one_worker_mid_job(
    n_items: int, start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings], workers: Any
) -> None:
    settings = jobs_settings(chunk_size=250, heartbeat_s=2, sweep_s=1, worker_chunks=2)
    client = start_app(settings).client
    items = [{**caller_item(i), "item_id": f"item-{i}"} for i in range(n_items)]
    accepted = client.post("/v1/jobs", content=ndjson(items), headers=NDJSON)
    assert accepted.status_code == 202
    job_id = accepted.json()["job_id"]
    group = workers(settings)
    # The doomed worker starts alone, so the job cannot be over before it is seen holding a chunk (with both
    # workers started at once, a fast machine's workers could finish all 20,000 items while the test polled);
    # it is killed the moment it is seen holding that chunk unwritten (starting the survivor first left it time
    # to finish the chunk on a loaded machine, and then no chunk needed a re-run), and the survivor starts after.
    doomed = group.start()
    wait_until_holding_a_chunk(group, 0, settings.jobs.queue)
    doomed.send_signal(signal.SIGKILL)
    doomed.wait(timeout=10)
    survivor = group.start()
    status = client.get(f"/v1/jobs/{job_id}").json()
    assert status["status"] == "running" and status["n_done"] < n_items, status
    status = wait_for(client, job_id, lambda s: s["status"] != "running", 180)
    assert status["status"] == "succeeded", status
    assert status["n_done"] == n_items and status["n_failed"] == 0
    assert survivor.poll() is None  # the other worker is still serving

    lines = all_results(client, job_id)
    assert [line["index"] for line in lines] == list(range(n_items))  # each index exactly once, in order
    expected: dict[bytes, Any] = {}
    for line, item in zip(lines, items, strict=True):
        body = {key: value for key, value in item.items() if key != "item_id"}
        key = msgspec.json.encode(body)
        if key not in expected:  # /v1/score's answer to the body; with the item_id it is the same plus the id
            expected[key] = client.post("/v1/score", json=body).json()
        result = {**expected[key], "item_id": item["item_id"]}
        assert line == {"index": line["index"], "item_id": item["item_id"], "ok": True, "result": result}
    # the dead worker's chunks in flight were run again by the survivor once its heartbeat was overdue (if one
    # was written in the instant before the kill, its re-run comes after the job ended and writes nothing)
    deadline = time.monotonic() + 30
    while True:
        lines_1 = group.log_lines(1)
        retried = [entry for entry in lines_1 if entry.get("event") == "job.chunk" and entry["attempt"] > 1]
        if retried or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert retried, "no chunk was re-run after the SIGKILL"
    assert all(entry["job_id"] == job_id for entry in retried)


def test_a_worker_killed_mid_job_loses_nothing(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings], workers: Any
) -> None:
    kill_one_worker_mid_job(JOB_ITEMS, start_app, jobs_settings, workers)


def test_live_items_through_a_faulty_judge_are_scored_or_carry_a_typed_error(
    start_app: Callable[[Settings], AppHarness],
    jobs_settings: Callable[..., Settings],
    workers: Any,
    judge_server: JudgeServer,
    tmp_path: Path,
) -> None:
    judges_file = tmp_path / "judges.json"
    judges_file.write_bytes(msgspec.json.encode([judge_server.judge_config(name=STAND_IN, max_retries=0)]))
    judge_server.inject("error_500", times=25)
    judge_server.inject("no_score", times=5)
    judge_server.inject("unavailable_503", times=10)
    settings = jobs_settings(chunk_size=40, heartbeat_s=2, sweep_s=1, breaker_failures=1000)
    client = start_app(settings).client
    run = time.time_ns()
    items = [
        {"criterion": "coherence", "document": f"Article {run} number {i}: the council met.", "summary": f"S{i}.",
         "item_id": str(i)}
        for i in range(200)
    ]  # fmt: skip
    job_id = client.post("/v1/jobs", content=ndjson(items), headers=NDJSON).json()["job_id"]
    group = workers(settings, JUDGES_FILE=str(judges_file), BREAKER_FAILURES="1000")
    group.start()
    group.start()
    status = wait_for(client, job_id, lambda s: s["status"] != "running" and s["status"] != "queued", 120)
    assert status["status"] == "failed" and status["n_failed"] > 0, status  # some items failed (docs/jobs.md)
    lines = all_results(client, job_id)
    assert [line["index"] for line in lines] == list(range(200))
    assert [line["item_id"] for line in lines] == [str(i) for i in range(200)]
    typed = ("judge-call-failed", "judge-reply-unreadable")
    failed = [line for line in lines if not line["ok"]]
    assert all(line["error"]["type"].rsplit(":", 1)[-1] in typed for line in failed)
    # max_retries 0: each 500 / 503 fault fails its item; a reply without a score may be asked again by the client
    assert len(failed) == status["n_failed"] and 35 <= len(failed) <= 40
    assert {line["error"]["type"].rsplit(":", 1)[-1] for line in failed} >= {"judge-call-failed"}
    scored = [line["result"] for line in lines if line["ok"]]
    assert all(result["source"] == "judge" and result["judge_score"] == 4 for result in scored)


def test_sigterm_releases_the_chunk_in_flight_to_another_worker(
    start_app: Callable[[Settings], AppHarness],
    jobs_settings: Callable[..., Settings],
    workers: Any,
    judge_server: JudgeServer,
    tmp_path: Path,
) -> None:
    judges_file = tmp_path / "judges.json"
    judges_file.write_bytes(msgspec.json.encode([judge_server.judge_config(name=STAND_IN, max_concurrency=4)]))
    judge_server.latency_s = 0.25
    settings = jobs_settings(chunk_size=40, heartbeat_s=2, sweep_s=1, worker_chunks=1)
    client = start_app(settings).client
    run = time.time_ns()
    items = [{"criterion": "coherence", "document": f"Doc {run}-{i}.", "summary": f"S{i}."} for i in range(40)]
    job_id = client.post("/v1/jobs", content=ndjson(items), headers=NDJSON).json()["job_id"]
    group = workers(settings, JUDGES_FILE=str(judges_file), WORKER_SHUTDOWN_S="1", WORKER_CONCURRENCY="4")
    first = group.start()
    wait_for(client, job_id, lambda s: s["status"] == "running", 60)
    time.sleep(0.5)  # the chunk (40 items, 4 at a time, 0.25 s each: 2.5 s) is in flight
    stopped_at = time.monotonic()
    first.send_signal(signal.SIGTERM)
    assert first.wait(timeout=15) == 0
    assert time.monotonic() - stopped_at < 1 + 5  # the shutdown deadline plus closing the clients
    assert client.get(f"/v1/jobs/{job_id}").json()["n_done"] == 0  # the chunk was not finished: released
    group.start()
    status = wait_for(client, job_id, lambda s: s["status"] == "succeeded", 60)
    assert status["n_done"] == 40 and status["n_failed"] == 0
    assert [line["index"] for line in all_results(client, job_id)] == list(range(40))
