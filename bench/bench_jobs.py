"""Durable jobs (``/v1/jobs`` + ``python -m service.worker``) against real servers and Redis (run:
``python -m bench.bench_jobs``; needs Redis at REDIS_URL, default redis://127.0.0.1:6379/14).

=== ======================================================== ==================================================
row what is measured                                         baseline and target
=== ======================================================== ==================================================
a   BENCH_JOB_ITEMS (100,000) caller-score items: submit as   the same items through POST /v1/score/batch in
    one job, 2 workers, until every result line is read       1,000-item requests from one client, same server;
                                                              job throughput >= 1.0 x batch throughput
b   10,000 live items, judge stand-in at 50 ms, 32 judge      ideal 10,000 x 0.05 / 64 s = 7.81 s;
    calls at once per worker, 2 workers: submit -> done       wall <= 1.25 x ideal
c   the API process's peak RSS (VmHWM) while it accepts a     its RSS before the upload; target < 300 MB
    1,000,000-line job (streamed upload)
=== ======================================================== ==================================================

Every server is a separate process (uvicorn with 1 worker for the API, ``python -m service.worker`` for
workers), started here and stopped at the end; each row uses a queue name of its own whose keys are deleted
afterwards. Rows a and c measure one run each (they take tens of seconds on a 2-core machine).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import msgspec

from bench.servers import RunningServer, running_server, server_env
from bench.service_fixtures import ALPHA, CRITERION, DOCUMENT, JUDGE_NAME, judge_stand_in, write_artifact, write_judges
from bench.table import BenchRow, print_table

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/14")
JOB_ITEMS = int(os.environ.get("BENCH_JOB_ITEMS", "100000"))
LIVE_ITEMS = 10_000
LIVE_LATENCY_S = 0.05
LIVE_CONCURRENCY = 32
LIVE_IDEAL_S = LIVE_ITEMS * LIVE_LATENCY_S / (2 * LIVE_CONCURRENCY)
BIG_JOB_LINES = 1_000_000
RSS_TARGET_MB = 300.0
NDJSON = {"content-type": "application/x-ndjson"}


def _own_item(i: int) -> dict[str, Any]:
    return {"criterion": CRITERION, "judge": JUDGE_NAME, "alpha": ALPHA, "judge_score": 1 + i % 5}


def _live_item(i: int, tag: str) -> dict[str, Any]:
    return {"criterion": CRITERION, "judge": JUDGE_NAME, "alpha": ALPHA, "document": DOCUMENT,
            "summary": f"The council approved a budget ({tag} #{i})."}  # fmt: skip


def _delete_keys(queue: str) -> None:
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    keys = [*client.scan_iter(f"cj:{queue}:*"), *client.scan_iter(f"saq:*{queue}*")]
    if keys:
        client.delete(*keys)
    client.close()


def _wait_for_workers(queue: str, n: int, timeout_s: float = 120.0) -> float:
    """Wait until ``n`` workers of ``queue`` have registered with SAQ (a worker registers once its judges,
    calibration and queue are up, right before it takes tasks); the seconds waited. Under load the imports
    alone can take longer than a fixed sleep, which then counted start-up in the job's wall time and CPU."""
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    started = time.perf_counter()
    try:
        while client.zcount(f"saq:{queue}:stats", int(time.time() * 1000), "+inf") < n:
            if time.perf_counter() - started > timeout_s:
                raise RuntimeError(f"{n} workers did not start within {timeout_s} s")
            time.sleep(0.1)
    finally:
        client.close()
    time.sleep(0.5)  # the registration precedes the first dequeue by one event-loop turn
    return time.perf_counter() - started


@contextmanager
def workers(env: dict[str, str], n: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``n`` worker processes with ``env``; SIGTERM (then kill) at the end."""
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "service.worker"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )  # fmt: skip
        for _ in range(n)
    ]
    try:
        yield processes
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=40)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _read_after(client: httpx.Client, job_id: str, cursor: int) -> tuple[int, int]:
    """Read the result lines after ``cursor`` (as bytes: like the batch baseline, nothing is parsed but the last
    line's index); (lines read, the new cursor)."""
    count, tail = 0, b""
    with client.stream("GET", f"/v1/jobs/{job_id}/results", params={"after": cursor}) as response:
        response.raise_for_status()
        for piece in response.iter_bytes():
            count += piece.count(b"\n")
            tail = (tail + piece)[-65536:]
    if count:
        cursor = msgspec.json.decode(tail.rstrip(b"\n").rsplit(b"\n", 1)[-1])["index"]
    return count, cursor


def _run_job(client: httpx.Client, body: bytes, n_items: int, timeout_s: float, phases: dict[str, float]) -> float:
    """Submit, then the README's client loop: poll the status, and whenever ``n_done`` has grown read the results
    after the last index received, until the job has finished and a read brings nothing more; the wall time in
    seconds (``phases``: submit, run until the status says finished, the reading left after that)."""
    started = time.perf_counter()
    accepted = client.post("/v1/jobs", content=body, headers=NDJSON)
    accepted.raise_for_status()
    phases["submit"] = time.perf_counter() - started
    job_id = accepted.json()["job_id"]
    lines, cursor, finished_at = 0, -1, None
    while True:
        status = client.get(f"/v1/jobs/{job_id}").json()
        finished = status["status"] not in ("queued", "running")
        if finished and finished_at is None:
            finished_at = time.perf_counter()
        got = 0
        if finished or status["n_done"] > lines:
            got, cursor = _read_after(client, job_id, cursor)
            lines += got
        if finished and got == 0:
            break
        if time.perf_counter() - started > timeout_s:
            raise RuntimeError(f"job not finished after {timeout_s} s: {status}")
        if not got:
            time.sleep(0.05)
    ended = time.perf_counter()
    assert finished_at is not None
    phases["run"] = finished_at - started - phases["submit"]
    phases["read after"] = ended - finished_at
    wall = ended - started
    if status["status"] != "succeeded" or lines != n_items or status["n_failed"]:
        raise RuntimeError(f"job ended {status['status']} with {lines} lines, {status['n_failed']} failed")
    return wall


def bench_throughput(api: RunningServer, env: dict[str, str]) -> tuple[list[BenchRow], list[str]]:
    """Row a: job with 2 workers vs sequential 1,000-item batches."""
    items = [_own_item(i) for i in range(JOB_ITEMS)]
    with httpx.Client(base_url=f"http://127.0.0.1:{api.port}", timeout=120) as client:
        started, api_cpu = time.perf_counter(), _cpu_seconds(api.pid)
        for start in range(0, JOB_ITEMS, 1000):
            response = client.post("/v1/score/batch", json={"items": items[start : start + 1000]})
            response.raise_for_status()
        batch_s = time.perf_counter() - started
        batch_cpu = _cpu_seconds(api.pid) - api_cpu
        body = b"\n".join(msgspec.json.encode(item) for item in items)
        with workers(env, 2) as processes:
            _wait_for_workers(env["JOB_QUEUE"], 2)  # both workers up before the clock starts, as the API is
            cpu_before = [_cpu_seconds(process.pid) for process in processes]
            phases: dict[str, float] = {}
            job_s = _run_job(client, body, JOB_ITEMS, timeout_s=900, phases=phases)
            worker_cpu = sum(_cpu_seconds(p.pid) - c for p, c in zip(processes, cpu_before, strict=True))
            job_api_cpu = _cpu_seconds(api.pid) - api_cpu - batch_cpu
    job_rate, batch_rate = JOB_ITEMS / job_s, JOB_ITEMS / batch_s
    row = BenchRow(
        name=f"(a) {JOB_ITEMS:,} caller-score items: job, 2 workers (items/s)",
        ours=job_rate, baseline_name="/v1/score/batch, 1,000 a request", baseline=batch_rate, unit="items/s",
        target="ours/baseline >= 1.0", met=job_rate >= batch_rate,
    )  # fmt: skip
    return [row], [
        f"(a) job {job_s:.1f} s, batches {batch_s:.1f} s; ours/baseline = {job_rate / batch_rate:.2f}; workers' CPU "
        f"{worker_cpu:.1f} s = {1e6 * worker_cpu / JOB_ITEMS:.0f} us an item and the API's {job_api_cpu:.1f} s "
        f"(the batch server's: {1e6 * batch_cpu / JOB_ITEMS:.0f} us an item); load average {os.getloadavg()[0]:.1f}; "
        + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in phases.items())
    ]


def bench_live(api: RunningServer, env: dict[str, str], judge: Any = None) -> tuple[list[BenchRow], list[str]]:
    """Row b: 10,000 live items, 2 workers x 32 judge calls at once, judge at 50 ms (``judge``: the stand-in,
    whose count of requests in flight at once shows whether both workers reached their 32)."""
    tag = uuid.uuid4().hex[:8]  # fresh summaries: no answer comes from the cache
    body = b"\n".join(msgspec.json.encode(_live_item(i, tag)) for i in range(LIVE_ITEMS))
    with httpx.Client(base_url=f"http://127.0.0.1:{api.port}", timeout=120) as client, workers(env, 2) as processes:
        _wait_for_workers(env["JOB_QUEUE"], 2)  # both workers up (import, calibration) before the clock starts
        cpu_before = [_cpu_seconds(process.pid) for process in processes]
        own_before = time.process_time()
        wall = _run_job(client, body, LIVE_ITEMS, timeout_s=300, phases={})
        worker_cpu = sum(_cpu_seconds(p.pid) - c for p, c in zip(processes, cpu_before, strict=True))
        stand_in_cpu = time.process_time() - own_before  # this process: the stand-in's threads and the poller
    row = BenchRow(
        name=f"(b) {LIVE_ITEMS:,} live items, 50 ms judge, 2 workers x {LIVE_CONCURRENCY} (wall s)",
        ours=wall, baseline_name="ideal n x 0.05 / 64", baseline=LIVE_IDEAL_S, unit="s",
        target="ours <= 1.25 x ideal", met=wall <= 1.25 * LIVE_IDEAL_S,
    )  # fmt: skip
    return [row], [
        f"(b) wall {wall:.2f} s = {wall / LIVE_IDEAL_S:.2f} x ideal {LIVE_IDEAL_S:.2f} s; CPU per item: workers "
        f"{1e3 * worker_cpu / LIVE_ITEMS:.2f} ms, judge stand-in {1e3 * stand_in_cpu / LIVE_ITEMS:.2f} ms "
        f"(2 cores: the CPU floor is {(worker_cpu + stand_in_cpu) / 2:.1f} s); load average {os.getloadavg()[0]:.1f}"
        + ("" if judge is None else f"; judge calls in flight at most {judge.max_in_flight} (2 x {LIVE_CONCURRENCY})")
    ]


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} for {pid}")


def bench_rss(api: RunningServer) -> tuple[list[BenchRow], list[str]]:
    """Row c: peak RSS of the API process while a 1,000,000-line job is uploaded (no workers: it stays queued)."""
    line = msgspec.json.encode(_own_item(3))

    def body() -> Iterator[bytes]:
        block = b"\n".join([line] * 10_000) + b"\n"
        for _ in range(BIG_JOB_LINES // 10_000):
            yield block

    before = _rss_mb(api.pid, "VmRSS")
    with httpx.Client(base_url=f"http://127.0.0.1:{api.port}", timeout=600) as client:
        started = time.perf_counter()
        response = client.post("/v1/jobs", content=body(), headers=NDJSON)
        upload_s = time.perf_counter() - started
        response.raise_for_status()
        n_items = response.json()["n_items"]
        client.delete(f"/v1/jobs/{response.json()['job_id']}")
    peak = _rss_mb(api.pid, "VmHWM")
    row = BenchRow(
        name=f"(c) API peak RSS accepting a {n_items:,}-line job (MB)", ours=peak,
        baseline_name="RSS before the upload", baseline=before, unit="MB", target=f"< {RSS_TARGET_MB:.0f} MB",
        met=peak < RSS_TARGET_MB and n_items == BIG_JOB_LINES,
    )  # fmt: skip
    size_mb = len(line) * BIG_JOB_LINES / 1e6
    return [row], [f"(c) {size_mb:.0f} MB uploaded in {upload_s:.1f} s; peak RSS {peak:.0f} MB, before {before:.0f} MB"]


def main() -> None:
    """Start the judge stand-in, the API and workers per row; print one table."""
    rows: list[BenchRow] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory() as folder, judge_stand_in(LIVE_LATENCY_S) as judge:
        thresholds, judges = Path(folder) / "thresholds.json", Path(folder) / "judges.json"
        write_artifact(thresholds)
        write_judges(judges, judge.base_url, max_concurrency=32)
        sections = (("a", bench_throughput), ("b", bench_live), ("c", bench_rss))
        for name, run in sections:
            queue = f"bench-{uuid.uuid4().hex[:8]}"
            env = server_env({
                "THRESHOLDS_PATH": str(thresholds), "JUDGES_FILE": str(judges), "DEFAULT_JUDGE": JUDGE_NAME,
                "REDIS_URL": REDIS_URL, "JOB_QUEUE": queue, "WORKER_CONCURRENCY": str(LIVE_CONCURRENCY),
                "JOB_CHUNK_SIZE": "250" if name == "b" else "1000", "CACHE_TTL_S": "600", "LOG_LEVEL": "WARNING",
            })  # fmt: skip
            try:
                with running_server("uvicorn", "ours", env, probe_path="/healthz") as api:
                    if name == "b":
                        section_rows, section_notes = bench_live(api, env, judge)
                    else:
                        section_rows, section_notes = run(api, env) if name != "c" else run(api)  # type: ignore[call-arg]
            except Exception as error:  # one broken row must not hide the others
                section_rows = [BenchRow(f"({name}) failed", float("nan"), "-", float("nan"), "", "-", False)]
                section_notes = [f"({name}) failed: {error!r}"]
            finally:
                _delete_keys(queue)
            rows += section_rows
            notes += section_notes
    print_table("Durable jobs: throughput, live wall time, API memory (uvicorn 1 worker + service.worker x 2)", rows)
    for note in notes:
        print(f"- {note}")
    crashed = [note for note in notes if " failed: " in note]
    if crashed:
        raise RuntimeError("bench_jobs: " + "; ".join(crashed))


if __name__ == "__main__":
    main()
