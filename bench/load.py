"""The load generator of the HTTP benchmarks: a fixed-concurrency keep-alive HTTP/1.1 client on raw asyncio streams.

Light enough that the server, not the client, is the bottleneck; to check that, each run also reports the
client's own CPU time (the thread running the loop) as a share of the run's wall time. Every run has a bounded
request count, and every answer must be a 200 with a Content-Length.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass

import numpy as np

__all__ = ["HOST", "LoadResult", "load"]

HOST = "127.0.0.1"


@dataclass(frozen=True, kw_only=True)
class LoadResult:
    """A fixed-concurrency run: requests per second, latency percentiles in seconds, and the client's CPU share."""

    n: int
    seconds: float
    throughput: float
    p50: float
    p99: float
    client_busy: float  # the load generator's CPU seconds / the run's wall seconds (near 1: the client is the limit)


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
    client_cpu = time.thread_time()
    started = time.perf_counter()
    await asyncio.gather(*(_connection(port, request, share, latencies) for share in shares if share))
    seconds = time.perf_counter() - started
    client_cpu = time.thread_time() - client_cpu
    ordered = np.sort(np.asarray(latencies))
    return LoadResult(
        n=len(latencies),
        seconds=seconds,
        throughput=len(latencies) / seconds,
        p50=float(np.percentile(ordered, 50)),
        p99=float(np.percentile(ordered, 99)),
        client_busy=client_cpu / seconds,
    )


def load(port: int, path: str, body: dict, *, concurrency: int, n_requests: int) -> LoadResult:
    """POST body to path n_requests times over `concurrency` keep-alive connections; every answer must be 200."""
    encoded = json.dumps(body).encode()
    return asyncio.run(_load(port, path, encoded, concurrency=concurrency, n_requests=n_requests))
