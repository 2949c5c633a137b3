"""The HTTP service's speed targets, measured against real servers on 127.0.0.1 (run: python -m bench.bench_service).

=== ===================================================== =========================================================
row what is measured                                      baseline and target
=== ===================================================== =========================================================
a   POST /v1/score with the caller's own judge_score      a bare Litestar endpoint echoing the same JSON, same
    (thresholds artifact loaded): throughput, p50, p99    uvicorn settings (1 worker), same load generator;
                                                          throughput ours/baseline >= 0.8
b   POST /v1/score/batch, 1,000 items judged live by      ideal 1,000 x 0.05 s / 32 = 1.5625 s; wall time
    the stand-in (50 ms a call, max_concurrency 32)       <= 1.2 x ideal
c   POST /v1/score answered from the cache                the caller's-own-score path on the same server;
                                                          p50 latency <= 2 x, and zero judge calls (stand-in count)
=== ===================================================== =========================================================

Both HTTP servers run as separate uvicorn processes with identical command lines except the app. The load
generator is a fixed-concurrency keep-alive HTTP/1.1 client on raw asyncio streams, light enough that the
server, not the client, is the bottleneck. Every run has a bounded request count and every process is stopped
at the end.

Row a on a shared, noisy machine: with two or more CPUs the servers are pinned to one CPU and the load
generator to another, so a server never competes with its client; the two servers then run short rounds
back to back (echo, ours, echo, ours, ...) and the target statistic is the **median over rounds of the paired
ratio** ours/echo, which cancels the slow drifts in machine speed that make single long runs disagree by 30%.
The table also shows each server's median throughput, its latency percentiles and its CPU time per request
(user + system, from /proc), and the notes list every round.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from litestar import Litestar, Request, post

from bench.table import BenchRow, print_table

HOST = "127.0.0.1"
JUDGE_NAME = "bench-judge"
JUDGE_LATENCY_S = 0.05
JUDGE_MAX_CONCURRENCY = 32
BATCH_ITEMS = 1000
IDEAL_BATCH_S = BATCH_ITEMS * JUDGE_LATENCY_S / JUDGE_MAX_CONCURRENCY
BATCH_ROUNDS = 3
THROUGHPUT_CONCURRENCY = 32
THROUGHPUT_WARMUP = 300
THROUGHPUT_REQUESTS = 1000
THROUGHPUT_ROUNDS = 15
LATENCY_REQUESTS = 400
LATENCY_ROUNDS = 3
CRITERION = "coherence"
PROMPT_FAMILY = "paper"
ALPHA = 0.1


# ------------------------------------------------------------------------------------------ baseline app


@post("/v1/score", status_code=200)
async def _echo(request: Request) -> Any:
    return await request.json()


def baseline_app() -> Litestar:
    """A bare Litestar app whose POST /v1/score returns the JSON body it received (the floor for row a)."""
    return Litestar(route_handlers=[_echo], openapi_config=None)


# ------------------------------------------------------------------------------------------ servers


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


@dataclass(frozen=True)
class RunningServer:
    """A uvicorn process serving on 127.0.0.1:port."""

    port: int
    pid: int

    def cpu_seconds(self) -> float | None:
        """User + system CPU time the process has used so far (Linux /proc), None where unavailable."""
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def uvicorn_server(app_factory: str, env: dict[str, str], *, probe_path: str) -> Iterator[RunningServer]:
    """Run ``uvicorn <app_factory> --factory`` (1 worker, 127.0.0.1, free port) until the block ends."""
    port = _free_port()
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        app_factory,
        "--factory",
        "--host",
        HOST,
        "--port",
        str(port),
        "--workers",
        "1",
        "--log-level",
        "warning",
        "--no-access-log",
    ]
    log = tempfile.TemporaryFile()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"{app_factory} exited with {process.returncode}: {log.read()[-2000:]!r}")
            try:
                httpx.get(f"http://{HOST}:{port}{probe_path}", timeout=1.0)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{app_factory} did not answer on port {port} within 30 s") from None
                time.sleep(0.1)
        yield RunningServer(port=port, pid=process.pid)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _server_env(extra: dict[str, str]) -> dict[str, str]:
    """The bench's environment without any service setting inherited from the shell, plus ``extra``."""
    service_vars = {
        "THRESHOLDS_PATH",
        "JUDGES_FILE",
        "DEFAULT_JUDGE",
        "DEFAULT_ALPHA",
        "API_KEYS",
        "ADMIN_API_KEY",
        "REDIS_URL",
        "CACHE_TTL_S",
        "CACHE_MAX_ENTRIES",
        "LOG_LEVEL",
        "ACCESS_LOG",
        "LOG_FLUSH_MS",
        "HOST",
        "PORT",
        "MAX_BATCH_ITEMS",
    }
    env = {key: value for key, value in os.environ.items() if key not in service_vars}
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra)
    return env


# ------------------------------------------------------------------------------------------ load generator


@dataclass(frozen=True, kw_only=True)
class LoadResult:
    """A fixed-concurrency run: requests per second and latency percentiles in seconds."""

    n: int
    seconds: float
    throughput: float
    p50: float
    p99: float


def _request_bytes(port: int, path: str, body: bytes) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("ascii") + body


async def _connection(port: int, request: bytes, n: int, latencies: list[float]) -> None:
    reader, writer = await asyncio.open_connection(HOST, port)
    try:
        for _ in range(n):
            started = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head[9:12])
            length = None
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if length is None:
                raise RuntimeError(f"response without Content-Length: {head!r}")
            body = await reader.readexactly(length)
            latencies.append(time.perf_counter() - started)
            if status != 200:
                raise RuntimeError(f"HTTP {status}: {body[:500]!r}")
    finally:
        writer.close()
        await writer.wait_closed()


async def _load(port: int, path: str, body: bytes, *, concurrency: int, n_requests: int) -> LoadResult:
    request = _request_bytes(port, path, body)
    latencies: list[float] = []
    shares = [n_requests // concurrency + (1 if i < n_requests % concurrency else 0) for i in range(concurrency)]
    started = time.perf_counter()
    await asyncio.gather(*(_connection(port, request, share, latencies) for share in shares if share))
    seconds = time.perf_counter() - started
    ordered = np.sort(np.asarray(latencies))
    return LoadResult(
        n=len(latencies),
        seconds=seconds,
        throughput=len(latencies) / seconds,
        p50=float(np.percentile(ordered, 50)),
        p99=float(np.percentile(ordered, 99)),
    )


def load(port: int, path: str, body: dict, *, concurrency: int, n_requests: int, warmup: int = 0) -> LoadResult:
    """POST body to path n_requests times over `concurrency` keep-alive connections; every answer must be 200."""
    encoded = json.dumps(body).encode()
    if warmup:
        asyncio.run(_load(port, path, encoded, concurrency=concurrency, n_requests=warmup))
    return asyncio.run(_load(port, path, encoded, concurrency=concurrency, n_requests=n_requests))


def _median_result(results: list[LoadResult]) -> LoadResult:
    """The run with the median throughput (its own latencies kept, so the row is one real run)."""
    return sorted(results, key=lambda r: r.throughput)[len(results) // 2]


# ------------------------------------------------------------------------------------------ fixtures


def _write_artifact(path: Path) -> None:
    """A thresholds artifact for the bench judge (residual and lac at alpha 0.1), fitted on synthetic scores."""
    from artifact.thresholds import (
        FORMAT_VERSION,
        DefaultMethod,
        ThresholdEntry,
        ThresholdsArtifact,
        save_artifact,
    )
    from calibration.conformal import fit_conformal

    rng = np.random.default_rng(0)
    labels = rng.integers(1, 6, 1000)
    judge_scores = np.clip(labels + rng.integers(-1, 2, 1000), 1, 5)
    probabilities = rng.dirichlet(np.ones(5), 1000)
    entries = [
        ThresholdEntry(
            judge=JUDGE_NAME,
            prompt_family=PROMPT_FAMILY,
            criterion=CRITERION,
            method=method,
            alpha=ALPHA,
            fitted=fit_conformal(method, ALPHA, labels, judge_scores=judge_scores, probabilities=probabilities),
        )
        for method in ("residual", "lac")
    ]
    artifact = ThresholdsArtifact(
        format_version=FORMAT_VERSION,
        created_at="bench",
        code_version="bench",
        data_hash="bench",
        label_scale=[1, 2, 3, 4, 5],
        entries=entries,
        default_methods=[
            DefaultMethod(
                judge=JUDGE_NAME, prompt_family=PROMPT_FAMILY, criterion=CRITERION, method="residual", reason="bench"
            )
        ],
    )
    save_artifact(artifact, path)


def _write_judges(path: Path, base_url: str) -> None:
    path.write_text(
        json.dumps(
            [
                {
                    "name": JUDGE_NAME,
                    "model": "bench-model",
                    "base_url": base_url,
                    "api_key_env": None,
                    "prompt_family": PROMPT_FAMILY,
                    "temperature": 0.0,
                    "logprobs": True,
                    "max_concurrency": JUDGE_MAX_CONCURRENCY,
                    "timeout_s": 30.0,
                    "max_retries": 0,
                }
            ]
        )
    )


DOCUMENT = (
    "The city council approved a new budget on Tuesday after a long debate. The plan raises spending on "
    "schools and roads while cutting administrative costs, and it takes effect next month."
)


def _own_score_body() -> dict:
    return {
        "criterion": CRITERION,
        "judge": JUDGE_NAME,
        "prompt_family": PROMPT_FAMILY,
        "alpha": ALPHA,
        "judge_score": 3,
    }


def _judged_body(i: int, tag: str) -> dict:
    return {
        "criterion": CRITERION,
        "judge": JUDGE_NAME,
        "alpha": ALPHA,
        "document": DOCUMENT,
        "summary": f"The council approved a budget ({tag} #{i}) raising school and road spending.",
    }


# ------------------------------------------------------------------------------------------ benchmarks


@contextmanager
def pinned_for_load(servers: list[RunningServer]) -> Iterator[str]:
    """Pin the servers to the last CPU and this thread (the load generator) to the others, then undo it."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if len(cpus) < 2:
        yield "not pinned (fewer than 2 CPUs)"
        return
    before = {server.pid: os.sched_getaffinity(server.pid) for server in servers}
    for server in servers:
        os.sched_setaffinity(server.pid, {cpus[-1]})
    os.sched_setaffinity(0, set(cpus[:-1]))
    try:
        yield f"servers pinned to CPU {cpus[-1]}, load generator to CPU {','.join(map(str, cpus[:-1]))}"
    finally:
        os.sched_setaffinity(0, set(cpus))
        for pid, affinity in before.items():
            try:
                os.sched_setaffinity(pid, affinity)
            except ProcessLookupError:
                pass


@dataclass(frozen=True, kw_only=True)
class Round:
    """One load run on one server: its throughput/latency and the server's CPU seconds per request."""

    load: LoadResult
    cpu_per_request_s: float | None


def _measured_round(server: RunningServer, body: dict) -> Round:
    cpu_before = server.cpu_seconds()
    result = load(
        server.port,
        "/v1/score",
        body,
        concurrency=THROUGHPUT_CONCURRENCY,
        n_requests=THROUGHPUT_REQUESTS,
        warmup=THROUGHPUT_WARMUP,
    )
    cpu_after = server.cpu_seconds()
    cpu = None if cpu_before is None or cpu_after is None else (cpu_after - cpu_before) / result.n
    return Round(load=result, cpu_per_request_s=cpu)


def bench_own_score(
    ours: RunningServer, baseline: RunningServer, label: str = "(a)"
) -> tuple[list[BenchRow], list[str]]:
    """Row a: caller's own score against the echo endpoint; paired interleaved rounds, median paired ratio."""
    body = _own_score_body()
    reply = httpx.post(f"http://{HOST}:{ours.port}/v1/score", json=body, timeout=10)
    reply.raise_for_status()
    shaped = reply.json()
    if not (shaped["source"] == "caller" and shaped["calibrated"] and shaped["prediction_set"]):
        raise RuntimeError(f"/v1/score did not calibrate the caller's score: {shaped}")
    pairs: list[tuple[Round, Round]] = []
    for _ in range(THROUGHPUT_ROUNDS):
        base_round = _measured_round(baseline, body)
        ours_round = _measured_round(ours, body)
        pairs.append((ours_round, base_round))
    paired = sorted(o.load.throughput / b.load.throughput for o, b in pairs)
    ratio = statistics.median(paired)
    mine = _median_result([o.load for o, _ in pairs])
    base = _median_result([b.load for _, b in pairs])
    setting = f"c={THROUGHPUT_CONCURRENCY}, {THROUGHPUT_ROUNDS} paired rounds of {THROUGHPUT_REQUESTS} req"
    rows = [
        BenchRow(
            name=f"{label} /v1/score own judge_score throughput ({setting})",
            ours=mine.throughput,
            baseline_name="bare Litestar echo",
            baseline=base.throughput,
            unit="req/s",
            target=f"median paired ours/echo ≥ 0.8 (is {ratio:.2f}; quartiles "
            f"{paired[len(paired) // 4]:.2f}-{paired[(3 * len(paired)) // 4]:.2f})",
            met=ratio >= 0.8,
        ),
        BenchRow(
            name=f"{label} /v1/score own judge_score p50 latency",
            ours=mine.p50 * 1e3,
            baseline_name="bare Litestar echo",
            baseline=base.p50 * 1e3,
            unit="ms",
            target="reported",
            met=True,
        ),
        BenchRow(
            name=f"{label} /v1/score own judge_score p99 latency",
            ours=mine.p99 * 1e3,
            baseline_name="bare Litestar echo",
            baseline=base.p99 * 1e3,
            unit="ms",
            target="reported",
            met=True,
        ),
    ]
    cpu_ours = [o.cpu_per_request_s for o, _ in pairs if o.cpu_per_request_s is not None]
    cpu_base = [b.cpu_per_request_s for _, b in pairs if b.cpu_per_request_s is not None]
    if cpu_ours and cpu_base:
        rows.append(
            BenchRow(
                name=f"{label} server CPU per request (user + system)",
                ours=statistics.median(cpu_ours) * 1e6,
                baseline_name="bare Litestar echo",
                baseline=statistics.median(cpu_base) * 1e6,
                unit="us",
                target="reported",
                met=True,
            )
        )
    notes = [
        f"{label} paired ratios ours/echo per round: " + ", ".join(f"{r:.2f}" for r in paired),
        f"{label} throughput per round, req/s: ours "
        + ", ".join(f"{o.load.throughput:.0f}" for o, _ in pairs)
        + "; echo "
        + ", ".join(f"{b.load.throughput:.0f}" for _, b in pairs),
    ]
    return rows, notes


def bench_batch(ours: RunningServer, judge: Any) -> tuple[list[BenchRow], list[str]]:
    """Row b: 1,000 distinct items judged live; median wall time of BATCH_ROUNDS rounds with fresh texts."""
    walls = []
    notes = []
    with httpx.Client(timeout=120) as client:
        for round_ in range(BATCH_ROUNDS):
            items = [_judged_body(i, f"batch{round_}") for i in range(BATCH_ITEMS)]
            calls_before = judge_calls(judge)
            cpu_before = ours.cpu_seconds()
            started = time.perf_counter()
            reply = client.post(f"http://{HOST}:{ours.port}/v1/score/batch", json={"items": items})
            wall = time.perf_counter() - started
            cpu_after = ours.cpu_seconds()
            reply.raise_for_status()
            result = reply.json()
            calls = judge_calls(judge) - calls_before
            if result["n_ok"] != BATCH_ITEMS:
                failed = [r for r in result["results"] if not r["ok"]][:3]
                raise RuntimeError(f"batch: {result['n_failed']} items failed, e.g. {failed}")
            walls.append(wall)
            cpu = "" if cpu_before is None or cpu_after is None else f", service CPU {cpu_after - cpu_before:.2f} s"
            notes.append(f"(b) round {round_}: {wall:.3f} s wall, {calls} judge calls{cpu}")
    wall = statistics.median(walls)
    alone = _stand_in_alone(judge)
    notes.append(
        f"(b) the stand-in alone, {BATCH_ITEMS} calls at concurrency {JUDGE_MAX_CONCURRENCY} straight from this "
        f"process (no service), in the same run: median {statistics.median(alone):.3f} s "
        f"({', '.join(f'{s:.3f}' for s in alone)}); the batch's wall time is bounded below by it"
    )
    rows = [
        BenchRow(
            name=f"(b) /v1/score/batch {BATCH_ITEMS} items, judge 50 ms, max_concurrency 32",
            ours=wall,
            baseline_name="ideal 1000×0.05/32",
            baseline=IDEAL_BATCH_S,
            unit="s",
            target=f"≤ 1.2 × ideal = {1.2 * IDEAL_BATCH_S:.3f} s",
            met=wall <= 1.2 * IDEAL_BATCH_S,
        ),
    ]
    return rows, notes


def _stand_in_alone(judge: Any) -> list[float]:
    """Seconds the stand-in takes for BATCH_ITEMS chat completions at the judge's concurrency, sent by the load
    generator directly (BATCH_ROUNDS rounds): what the batch row would take with a service that cost nothing."""
    port = int(judge_url(judge).rsplit(":", 1)[1].split("/", 1)[0])
    body = {"model": "bench-model", "messages": [{"role": "user", "content": DOCUMENT}], "logprobs": True}
    return [
        load(port, "/v1/chat/completions", body, concurrency=JUDGE_MAX_CONCURRENCY, n_requests=BATCH_ITEMS).seconds
        for _ in range(BATCH_ROUNDS)
    ]


def bench_cache_hit(ours: RunningServer, judge: Any) -> tuple[list[BenchRow], list[str]]:
    """Row c: a cached judge answer costs no judge call and stays within 2x the own-score latency (p50, c=1)."""
    judged = _judged_body(0, "cache")
    url = f"http://{HOST}:{ours.port}/v1/score"
    calls_before = judge_calls(judge)
    first = httpx.post(url, json=judged, timeout=30)
    first.raise_for_status()
    if first.json()["cached"] is not False or first.json()["source"] != "judge":
        raise RuntimeError(f"the first judged request should be a cache miss: {first.json()}")
    calls_after_miss = judge_calls(judge)
    hit_runs, own_runs = [], []
    warmup = 20
    for _ in range(LATENCY_ROUNDS):
        hit_runs.append(load(ours.port, "/v1/score", judged, concurrency=1, n_requests=LATENCY_REQUESTS, warmup=warmup))
        own_runs.append(
            load(ours.port, "/v1/score", _own_score_body(), concurrency=1, n_requests=LATENCY_REQUESTS, warmup=warmup)
        )
    second = httpx.post(url, json=judged, timeout=30)
    second.raise_for_status()
    if second.json()["cached"] is not True:
        raise RuntimeError(f"a repeated judged request should be a cache hit: {second.json()}")
    calls_during_hits = judge_calls(judge) - calls_after_miss
    hit = statistics.median(r.p50 for r in hit_runs)
    own = statistics.median(r.p50 for r in own_runs)
    n_hits = LATENCY_ROUNDS * (LATENCY_REQUESTS + warmup) + 1
    rows = [
        BenchRow(
            name=f"(c) judge calls during {n_hits} cache hits",
            ours=float(calls_during_hits),
            baseline_name="judge calls for the first (miss)",
            baseline=float(calls_after_miss - calls_before),
            unit="calls",
            target="0 calls on hits",
            met=calls_during_hits == 0,
        ),
        BenchRow(
            name="(c) /v1/score cache hit p50 latency (c=1)",
            ours=hit * 1e3,
            baseline_name="own judge_score path",
            baseline=own * 1e3,
            unit="ms",
            target=f"≤ 2 × baseline (is {hit / own:.2f}×)",
            met=hit <= 2 * own,
        ),
    ]
    notes = [
        f"(c) judge stand-in request count: {calls_before} before the miss, {calls_after_miss} after it, "
        f"{judge_calls(judge)} after {n_hits} hits"
    ]
    return rows, notes


def _pinned(
    bench: Callable[..., tuple[list[BenchRow], list[str]]], ours: RunningServer, baseline: RunningServer, **options: str
) -> tuple[list[BenchRow], list[str]]:
    with pinned_for_load([ours, baseline]) as pinning:
        rows, notes = bench(ours, baseline, **options)
    return rows, [*notes, f"{options.get('label', '(a)')} {pinning}"]


def _failed_row(name: str, error: BaseException) -> BenchRow:
    return BenchRow(
        name=f"{name}: FAILED ({type(error).__name__})",
        ours=float("nan"),
        baseline_name="-",
        baseline=float("nan"),
        unit="",
        target="runs",
        met=False,
    )


# ------------------------------------------------------------------------------------------ judge stand-in


@contextmanager
def judge_stand_in(latency_s: float) -> Iterator[Any]:
    """The OpenAI-compatible stand-in from tests/fakes/judge_server.py, answering "3" after latency_s."""
    from tests.fakes.judge_server import JudgeServer

    with JudgeServer(default_score=3, latency_s=latency_s) as server:
        yield server


def judge_url(judge: Any) -> str:
    """The stand-in's OpenAI base URL."""
    return judge.base_url


def judge_calls(judge: Any) -> int:
    """Chat-completion requests the stand-in has served so far."""
    return int(judge.call_count)


# ------------------------------------------------------------------------------------------ main


def main() -> None:
    """Start the stand-in, our app and the echo baseline on 127.0.0.1, run rows a-c, print one table."""
    rows: list[BenchRow] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory() as folder, judge_stand_in(JUDGE_LATENCY_S) as judge:
        thresholds = Path(folder) / "thresholds.json"
        judges = Path(folder) / "judges.json"
        _write_artifact(thresholds)
        _write_judges(judges, judge_url(judge))
        ours_env = _server_env(
            {"THRESHOLDS_PATH": str(thresholds), "JUDGES_FILE": str(judges), "DEFAULT_JUDGE": JUDGE_NAME}
        )
        logged_env = {**ours_env, "ACCESS_LOG": "all"}
        with (
            uvicorn_server("service.http.app:create_app", ours_env, probe_path="/healthz") as ours,
            uvicorn_server("service.http.app:create_app", logged_env, probe_path="/healthz") as logged,
            uvicorn_server("bench.bench_service:baseline_app", _server_env({}), probe_path="/") as baseline,
        ):
            sections = (
                ("(a) own judge_score vs echo", lambda: _pinned(bench_own_score, ours, baseline)),
                (
                    "(a') the same with ACCESS_LOG=all",
                    lambda: _pinned(bench_own_score, logged, baseline, label="(a', ACCESS_LOG=all)"),
                ),
                ("(b) batch of 1,000 judged items", lambda: bench_batch(ours, judge)),
                ("(c) cache hit", lambda: bench_cache_hit(ours, judge)),
            )
            for name, run in sections:
                try:
                    section_rows, section_notes = run()
                except Exception as error:  # one broken section must not hide the others' numbers
                    section_rows, section_notes = [_failed_row(name, error)], [f"{name} failed: {error!r}"]
                rows += section_rows
                notes += section_notes
    print_table("Service: HTTP throughput, batch wall time and cache hits (uvicorn, 1 worker, 127.0.0.1)", rows)
    print("\nThe ratio column is baseline/ours; for throughput (higher is better) the target reads ours/baseline.")
    for note in notes:
        print(f"- {note}")
    crashed = [note for note in notes if " failed: " in note]
    if crashed:  # unmet targets are reported in the table; a section that could not run is an error
        raise RuntimeError("bench_service: " + "; ".join(crashed))


if __name__ == "__main__":
    main()
