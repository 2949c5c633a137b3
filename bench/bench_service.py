"""The HTTP service's speed targets, measured against real servers on 127.0.0.1 (run: python -m bench.bench_service).

=== ===================================================== =========================================================
row what is measured                                      baseline and target
=== ===================================================== =========================================================
a   POST /v1/score with the caller's own judge_score      a bare Litestar endpoint echoing the same JSON
    (thresholds artifact loaded): throughput, p50, p99,   (``bench/echo_app.py``) under the same server; under
    server CPU a request; under uvicorn and granian       the server that serves the service (uvicorn):
                                                          median paired ours/echo >= 0.85. Also granian/uvicorn
                                                          for each app (reported)
a'  the same with ACCESS_LOG=all, under uvicorn           the echo under uvicorn (reported)
b   POST /v1/score/batch, 1,000 items judged live by      ideal 1,000 x 0.05 s / 32 = 1.5625 s; wall time
    the stand-in (50 ms a call, max_concurrency 32)       <= 1.2 x ideal
c   POST /v1/score answered from the cache                the caller's-own-score path on the same server;
                                                          p50 latency <= 2 x, and zero judge calls (stand-in count)
=== ===================================================== =========================================================

The servers and their command lines: ``bench/servers.py`` (uvicorn runs exactly ``python -m service``'s server code,
the echo too; granian is optional). The paired interleaved rounds, the pinning of every server thread and the CPU
accounting over each server's process tree: ``bench/paired.py``. Rows b and c run on the service's own server.

``python -m bench.bench_service [--rounds N] [--only-throughput]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx

from bench.load import HOST, LoadResult, load
from bench.paired import Round, paired_ratio, paired_rounds
from bench.servers import SERVERS, RunningServer, granian_installed, running_server, server_env
from bench.service_fixtures import (
    DOCUMENT,
    JUDGE_NAME,
    judge_calls,
    judge_stand_in,
    judge_url,
    judged_body,
    own_score_body,
    write_artifact,
    write_judges,
)
from bench.table import BenchRow, print_table

SERVED_BY = "uvicorn"  # the server of python -m service (service/http/server.py)
TARGET_OURS_OVER_ECHO = 0.85
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
LOGGED = "uvicorn/ours ACCESS_LOG=all"


# ------------------------------------------------------------------------------------------ row a


def _median_run(runs: list[Round]) -> LoadResult:
    """The run with the median throughput (its own latencies kept, so a row shows one real run)."""
    return sorted((run.load for run in runs), key=lambda r: r.throughput)[len(runs) // 2]


def _median_cpu_us(runs: list[Round]) -> float | None:
    cpu = [run.cpu_per_request_s for run in runs if run.cpu_per_request_s is not None]
    return statistics.median(cpu) * 1e6 if cpu else None


def _throughputs(runs: list[Round]) -> list[float]:
    return [run.load.throughput for run in runs]


def _server_rows(server: str, ours: list[Round], echo: list[Round]) -> list[BenchRow]:
    """Ours against the echo under one server: throughput (the target under SERVED_BY), latencies, CPU."""
    ratio = paired_ratio(_throughputs(ours), _throughputs(echo))
    mine, base = _median_run(ours), _median_run(echo)
    served = server == SERVED_BY
    target = f"median paired ours/echo ≥ {TARGET_OURS_OVER_ECHO}" if served else "reported: median paired ours/echo"
    rows = [
        BenchRow(
            name=f"(a) {server}: /v1/score own judge_score throughput "
            f"(c={THROUGHPUT_CONCURRENCY}, {len(ours)} paired rounds of {THROUGHPUT_REQUESTS} req)",
            ours=mine.throughput,
            baseline_name=f"bare Litestar echo, {server}",
            baseline=base.throughput,
            unit="req/s",
            target=f"{target} (is {ratio.describe()})",
            met=ratio.median >= TARGET_OURS_OVER_ECHO if served else True,
        )
    ]
    for label, attribute in (("p50", "p50"), ("p99", "p99")):
        rows.append(
            BenchRow(
                name=f"(a) {server}: /v1/score own judge_score {label} latency",
                ours=getattr(mine, attribute) * 1e3,
                baseline_name=f"bare Litestar echo, {server}",
                baseline=getattr(base, attribute) * 1e3,
                unit="ms",
                target="reported",
                met=True,
            )
        )
    cpu_ours, cpu_echo = _median_cpu_us(ours), _median_cpu_us(echo)
    if cpu_ours is not None and cpu_echo is not None:
        # echo/ours per round: the cost ratio, which a server's share of a contended CPU moves less than throughput
        pairs = [(e.cpu_per_request_s, o.cpu_per_request_s) for e, o in zip(echo, ours, strict=True)]
        cost = paired_ratio([e for e, o in pairs if e and o], [o for e, o in pairs if e and o])
        rows.append(
            BenchRow(
                name=f"(a) {server}: server CPU a request (user + system, whole process tree, after warm-up)",
                ours=cpu_ours,
                baseline_name=f"bare Litestar echo, {server}",
                baseline=cpu_echo,
                unit="us",
                target=f"reported: median paired echo/ours {cost.describe()}",
                met=True,
            )
        )
    return rows


def _server_comparison_rows(results: Mapping[str, list[Round]]) -> list[BenchRow]:
    """granian against uvicorn for each app (paired rounds), throughput and CPU a request."""
    rows = []
    for app in ("ours", "echo"):
        granian, uvicorn = results[f"granian/{app}"], results[f"uvicorn/{app}"]
        ratio = paired_ratio(_throughputs(granian), _throughputs(uvicorn))
        cpu_granian, cpu_uvicorn = _median_cpu_us(granian), _median_cpu_us(uvicorn)
        cpu = (
            f"; CPU a request {cpu_granian:.0f} vs {cpu_uvicorn:.0f} us"
            if cpu_granian is not None and cpu_uvicorn is not None
            else ""
        )
        rows.append(
            BenchRow(
                name=f"(a) {app}: granian against uvicorn, throughput",
                ours=_median_run(granian).throughput,
                baseline_name=f"uvicorn, {app}",
                baseline=_median_run(uvicorn).throughput,
                unit="req/s",
                target=f"reported: median paired granian/uvicorn {ratio.describe()}{cpu}",
                met=True,
            )
        )
    return rows


def bench_throughput(servers: Mapping[str, RunningServer], rounds: int) -> tuple[list[BenchRow], list[str]]:
    """Row a (and a'): every server once a round, ``rounds`` rounds; paired ratios within the same server and
    within the same app."""
    body = own_score_body()
    for name, server in servers.items():
        if "/ours" not in name:
            continue
        reply = httpx.post(f"http://{HOST}:{server.port}/v1/score", json=body, timeout=10)
        reply.raise_for_status()
        shaped = reply.json()
        if not (shaped["source"] == "caller" and shaped["calibrated"] and shaped["prediction_set"]):
            raise RuntimeError(f"{name}: /v1/score did not calibrate the caller's score: {shaped}")
    # the pairs compared: ours beside the echo under each server (the logged variant beside the same echo)
    groups = [
        [
            name
            for name in (f"{server}/ours", f"{server}/echo", LOGGED if server == "uvicorn" else "")
            if name in servers
        ]
        for server in SERVERS
    ]
    results, pinning = paired_rounds(
        servers,
        [group for group in groups if group],
        body,
        rounds=rounds,
        concurrency=THROUGHPUT_CONCURRENCY,
        warmup=THROUGHPUT_WARMUP,
        requests=THROUGHPUT_REQUESTS,
    )
    rows: list[BenchRow] = []
    for server in SERVERS:
        if f"{server}/ours" in results:
            rows += _server_rows(server, results[f"{server}/ours"], results[f"{server}/echo"])
    if "granian/ours" in results:
        rows += _server_comparison_rows(results)
    if LOGGED in results:
        logged = paired_ratio(_throughputs(results[LOGGED]), _throughputs(results["uvicorn/echo"]))
        rows.append(
            BenchRow(
                name="(a') uvicorn: /v1/score own judge_score throughput with ACCESS_LOG=all",
                ours=_median_run(results[LOGGED]).throughput,
                baseline_name="bare Litestar echo, uvicorn",
                baseline=_median_run(results["uvicorn/echo"]).throughput,
                unit="req/s",
                target=f"reported: median paired ours/echo {logged.describe()}",
                met=True,
            )
        )
    notes = [f"(a) {pinning}; {THROUGHPUT_WARMUP} warm-up requests before each run, not counted"]
    for name, runs in results.items():
        busy = statistics.median(run.load.client_busy for run in runs)
        notes.append(
            f"(a) {name} req/s per round: {', '.join(f'{t:.0f}' for t in _throughputs(runs))} "
            f"(load generator busy {busy:.0%} of the run)"
        )
    return rows, notes


# ------------------------------------------------------------------------------------------ rows b and c


def bench_batch(ours: RunningServer, judge: Any) -> tuple[list[BenchRow], list[str]]:
    """Row b: 1,000 distinct items judged live; median wall time of BATCH_ROUNDS rounds with fresh texts."""
    walls = []
    notes = []
    with httpx.Client(timeout=120) as client:
        for round_ in range(BATCH_ROUNDS):
            items = [judged_body(i, f"batch{round_}") for i in range(BATCH_ITEMS)]
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


def _latency_run(port: int, body: dict, warmup: int) -> LoadResult:
    load(port, "/v1/score", body, concurrency=1, n_requests=warmup)
    return load(port, "/v1/score", body, concurrency=1, n_requests=LATENCY_REQUESTS)


def bench_cache_hit(ours: RunningServer, judge: Any) -> tuple[list[BenchRow], list[str]]:
    """Row c: a cached judge answer costs no judge call and stays within 2x the own-score latency (p50, c=1)."""
    judged = judged_body(0, "cache")
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
        hit_runs.append(_latency_run(ours.port, judged, warmup))
        own_runs.append(_latency_run(ours.port, own_score_body(), warmup))
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


# ------------------------------------------------------------------------------------------ main


@contextmanager
def _servers(folder: Path, judge: Any, names: tuple[str, ...]) -> Iterator[dict[str, RunningServer]]:
    """Every server of row a, started one after the other and all stopped at the end."""
    thresholds, judges = folder / "thresholds.json", folder / "judges.json"
    write_artifact(thresholds)
    write_judges(judges, judge_url(judge), JUDGE_MAX_CONCURRENCY)
    ours_env = server_env({"THRESHOLDS_PATH": str(thresholds), "JUDGES_FILE": str(judges), "DEFAULT_JUDGE": JUDGE_NAME})
    echo_env = server_env({})
    wanted = [("uvicorn/ours", "uvicorn", "ours", ours_env), ("uvicorn/echo", "uvicorn", "echo", echo_env)]
    wanted.append((LOGGED, "uvicorn", "ours", {**ours_env, "ACCESS_LOG": "all"}))
    if granian_installed():
        wanted += [("granian/ours", "granian", "ours", ours_env), ("granian/echo", "granian", "echo", echo_env)]
    wanted = [entry for entry in wanted if entry[1] in names]
    with ExitStack() as stack:
        yield {
            name: stack.enter_context(
                running_server(server, app, env, probe_path="/healthz" if app == "ours" else "/", name=name)
            )
            for name, server, app, env in wanted
        }


def main(argv: list[str] | None = None) -> None:
    """Start the stand-in and the servers on 127.0.0.1, run rows a-c, print one table."""
    parser = argparse.ArgumentParser(prog="python -m bench.bench_service", description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=THROUGHPUT_ROUNDS, help="paired rounds of row a")
    parser.add_argument("--only-throughput", action="store_true", help="row a only (skip the batch and cache rows)")
    parser.add_argument(
        "--servers", default=",".join(SERVERS), help=f"comma-separated, of {', '.join(SERVERS)} (default: both)"
    )
    options = parser.parse_args(argv if argv is not None else [])
    rows: list[BenchRow] = []
    notes: list[str] = []
    if not granian_installed():
        notes.append("granian is not installed (pip install -e '.[bench]'): uvicorn only")
    with tempfile.TemporaryDirectory() as folder, judge_stand_in(JUDGE_LATENCY_S) as judge:
        with _servers(Path(folder), judge, tuple(options.servers.split(","))) as servers:
            ours = servers[f"{SERVED_BY}/ours"]
            sections: list[tuple[str, Callable[[], tuple[list[BenchRow], list[str]]]]] = [
                ("(a) own judge_score vs echo, both servers", lambda: bench_throughput(servers, options.rounds))
            ]
            if not options.only_throughput:
                sections += [
                    ("(b) batch of 1,000 judged items", lambda: bench_batch(ours, judge)),
                    ("(c) cache hit", lambda: bench_cache_hit(ours, judge)),
                ]
            for name, run in sections:
                try:
                    section_rows, section_notes = run()
                except Exception as error:  # one broken section must not hide the others' numbers
                    section_rows, section_notes = [_failed_row(name, error)], [f"{name} failed: {error!r}"]
                rows += section_rows
                notes += section_notes
    print_table(
        f"Service: HTTP throughput, batch wall time and cache hits (1 worker, 127.0.0.1; served by {SERVED_BY})", rows
    )
    print("\nThe ratio column is baseline/ours; for throughput (higher is better) the target reads ours/baseline.")
    for note in notes:
        print(f"- {note}")
    crashed = [note for note in notes if " failed: " in note]
    if crashed:  # unmet targets are reported in the table; a section that could not run is an error
        raise RuntimeError("bench_service: " + "; ".join(crashed))


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
