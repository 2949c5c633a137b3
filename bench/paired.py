"""Paired interleaved rounds on a shared, noisy machine: several servers, one short load run each per round.

The servers run one at a time, pinned (every thread of every process of each, ``bench.process_tree``) to one
CPU while the load generator runs on the others, so a server never competes with its client. Each round runs
every server once; a comparison of two servers is the **median over rounds of the paired ratio** of their
throughputs in the same round, which cancels the slow drifts in machine speed that make single long runs disagree
by 30%. The servers come in groups whose members are compared (ours and the echo under one server): a group's runs
are adjacent, so a pair is seconds apart, and every other round runs the groups and their members in reverse
(ABBA), so neither side of a pair always runs first.

Each run starts with a warm-up load that is not counted: neither its throughput nor its CPU time (the server's
CPU is read after it), so the CPU per request is the steady state's.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bench.load import LoadResult, load
from bench.process_tree import restore_affinity
from bench.servers import RunningServer

__all__ = ["PairedRatio", "Round", "paired_ratio", "paired_rounds", "round_order"]


@dataclass(frozen=True, kw_only=True)
class Round:
    """One load run on one server: its throughput and latencies, and the server tree's CPU seconds a request."""

    load: LoadResult
    cpu_per_request_s: float | None


@dataclass(frozen=True, kw_only=True)
class PairedRatio:
    """The per-round ratios a/b of two servers' throughputs, their median and quartiles."""

    ratios: tuple[float, ...]
    median: float
    q1: float
    q3: float

    def describe(self) -> str:
        return f"{self.median:.2f} (quartiles {self.q1:.2f}-{self.q3:.2f}, {len(self.ratios)} rounds)"


def paired_ratio(numerator: Sequence[float], denominator: Sequence[float]) -> PairedRatio:
    """Median and quartiles over rounds of numerator[r] / denominator[r] (the same round's two runs)."""
    if len(numerator) != len(denominator) or not numerator:
        raise ValueError("paired_ratio needs the same, non-zero number of rounds on both sides")
    ratios = tuple(a / b for a, b in zip(numerator, denominator, strict=True))
    if len(ratios) == 1:
        return PairedRatio(ratios=ratios, median=ratios[0], q1=ratios[0], q3=ratios[0])
    q1, median, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
    return PairedRatio(ratios=ratios, median=statistics.median(ratios), q1=q1, q3=q3)


def round_order(groups: Sequence[Sequence[str]], round_index: int) -> list[str]:
    """The servers of round ``round_index``: the groups in order, each group's members adjacent; odd rounds run
    everything in reverse."""
    order = [name for group in groups for name in group]
    return order if round_index % 2 == 0 else order[::-1]


def _measured_round(server: RunningServer, body: dict, *, concurrency: int, warmup: int, requests: int) -> Round:
    if warmup:
        load(server.port, "/v1/score", body, concurrency=concurrency, n_requests=warmup)
    cpu_before = server.cpu_seconds()  # after the warm-up: its CPU is not counted
    result = load(server.port, "/v1/score", body, concurrency=concurrency, n_requests=requests)
    cpu_after = server.cpu_seconds()
    cpu = None if cpu_before is None or cpu_after is None else (cpu_after - cpu_before) / result.n
    return Round(load=result, cpu_per_request_s=cpu)


def split_cpus() -> tuple[set[int], set[int]] | None:
    """(the servers' CPU, the load generator's CPUs): the last CPU this process may use and the others; None with
    fewer than two."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if len(cpus) < 2:
        return None
    return {cpus[-1]}, set(cpus[:-1])


def paired_rounds(
    servers: Mapping[str, RunningServer],
    groups: Sequence[Sequence[str]],
    body: dict,
    *,
    rounds: int,
    concurrency: int,
    warmup: int,
    requests: int,
) -> tuple[dict[str, list[Round]], str]:
    """Run every server of ``groups`` once per round (``round_order``), ``rounds`` rounds; each server's runs in
    round order, and how they were pinned."""
    split = split_cpus()
    results: dict[str, list[Round]] = {name: [] for name in servers}
    before: dict[int, set[int]] = {}
    own = os.sched_getaffinity(0) if split else set()
    if split:
        os.sched_setaffinity(0, split[1])  # this thread: the load generator
    try:
        for round_index in range(rounds):
            for name in round_order(groups, round_index):
                if split:  # again before each run: catches a thread or process started since
                    for task, cpus in servers[name].pin(split[0]).items():
                        before.setdefault(task, cpus)
                results[name].append(
                    _measured_round(servers[name], body, concurrency=concurrency, warmup=warmup, requests=requests)
                )
    finally:
        if split:
            os.sched_setaffinity(0, own)
            restore_affinity(before)
    if split is None:
        return results, "not pinned (fewer than 2 CPUs)"
    server_cpu, client_cpus = split
    pinning = (
        f"every thread of every server process pinned to CPU {min(server_cpu)}, the load generator to CPU "
        f"{','.join(map(str, sorted(client_cpus)))}"
    )
    return results, pinning
