"""Settings of durable jobs, workers and load protection: one typed, frozen object, a field of ``Settings``.

Each setting is declared once (service/config/declared.py); docs/operations.md's table is generated from them.
"""

from __future__ import annotations

from typing import Annotated

from service.config.declared import DeclaredSettings, Env

__all__ = ["JobSettings"]


def _queue_name(name: str) -> bool:
    return bool(name) and all(c.isalnum() or c in "-_." for c in name)


class JobSettings(DeclaredSettings, frozen=True, kw_only=True):
    """Durable jobs, workers, admission control and the judges' circuit breakers."""

    max_job_items: Annotated[int, Env("MAX_JOB_ITEMS", "most items in one job (413 above it)", ge=1)] = 1_000_000
    max_job_body_bytes: Annotated[
        int, Env("MAX_JOB_BODY_BYTES", "largest POST /v1/jobs body (streamed, never held whole)", ge=1024)
    ] = 2_000_000_000
    max_job_line_bytes: Annotated[
        int,
        Env("MAX_JOB_LINE_BYTES", "largest item (a JSON Lines line, or one of `items`); 413 naming the line above it",
            ge=16),
    ] = 1_000_000  # fmt: skip
    chunk_size: Annotated[
        int, Env("JOB_CHUNK_SIZE", "most items per chunk: the unit a worker takes and writes", ge=1)
    ] = 500
    chunk_bytes: Annotated[
        int,
        Env("JOB_CHUNK_BYTES", "most input bytes per chunk (a chunk closes at whichever of the two bounds comes "
            "first); one line always fits a chunk", ge="max_job_line_bytes"),
    ] = 4_000_000  # fmt: skip
    results_ttl_s: Annotated[
        int, Env("JOB_RESULTS_TTL_S", "how long a job and its results are kept, seconds (7 days)", ge=1)
    ] = 7 * 86_400
    heartbeat_s: Annotated[
        int, Env("JOB_HEARTBEAT_S", "a chunk whose worker is silent this long is re-queued, seconds", ge=1)
    ] = 15
    sweep_s: Annotated[int, Env("JOB_SWEEP_S", "how often workers look for such chunks, seconds", ge=1)] = 5
    chunk_attempts: Annotated[
        int, Env("JOB_CHUNK_ATTEMPTS", "attempts per chunk before its items fail as abandoned", ge=1)
    ] = 5
    queue: Annotated[
        str,
        Env("JOB_QUEUE", "queue name (the SAQ queue and the job keys' prefix)", check=_queue_name,
            must="letters, digits, '-', '_' or '.'"),
    ] = "cj-jobs"  # fmt: skip
    worker_chunks: Annotated[int, Env("WORKER_CHUNKS", "chunks one worker process runs at once", ge=1)] = 2
    worker_concurrency: Annotated[
        int, Env("WORKER_CONCURRENCY", "items one worker process scores at once (judge calls)", ge=1)
    ] = 32
    worker_shutdown_s: Annotated[
        int, Env("WORKER_SHUTDOWN_S", "on SIGTERM: finish or release chunks within this, seconds", ge=0)
    ] = 25
    worker_metrics_port: Annotated[
        int, Env("WORKER_METRICS_PORT", "Prometheus /metrics port of a worker (0: none)", ge=0)
    ] = 0
    max_queued_items: Annotated[
        int, Env("MAX_QUEUED_ITEMS", "items waiting in unfinished jobs; past it POST 429", ge=1)
    ] = 2_000_000
    max_inflight_items: Annotated[
        int, Env("MAX_INFLIGHT_ITEMS", "items one API process scores at once in /v1/score/batch", ge=1)
    ] = 4_000
    max_store_bytes: Annotated[
        int,
        Env("JOB_STORE_MAX_BYTES", "Redis byte budget of job inputs and results kept (the admission bound; "
            "docs/jobs-sizing.md); past it POST 503", ge=1),
    ] = 4_000_000_000  # fmt: skip
    result_item_bytes: Annotated[
        int,
        Env("JOB_RESULT_ITEM_BYTES", "result bytes per item reserved at admission until the item's result is "
            "written (then its real size counts)", ge=1),
    ] = 1_000  # fmt: skip
    retry_after_s: Annotated[int, Env("RETRY_AFTER_S", "the `Retry-After` of a 429, seconds", ge=1)] = 10
    breaker_failures: Annotated[
        int, Env("BREAKER_FAILURES", "consecutive failed calls that open a judge's breaker", ge=1)
    ] = 10
    breaker_cooldown_s: Annotated[
        float, Env("BREAKER_COOLDOWN_S", "seconds an open breaker waits before one probe call", gt=0)
    ] = 30.0
