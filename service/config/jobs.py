"""Settings of durable jobs, workers and load protection: one typed, frozen object, a field of ``Settings``.

=========================== ======================================================== ===============
variable                    meaning                                                  default
=========================== ======================================================== ===============
``MAX_JOB_ITEMS``           most items in one job (413 above it)                     ``1000000``
``MAX_JOB_BODY_BYTES``      largest POST /v1/jobs body (streamed, never held whole)  ``2000000000``
``MAX_JOB_LINE_BYTES``      largest item (a JSON Lines line, or one of ``items``);   ``1000000``
                            413 naming the line above it
``JOB_CHUNK_SIZE``          most items per chunk: the unit a worker takes and writes ``500``
``JOB_CHUNK_BYTES``         most input bytes per chunk (a chunk closes at whichever  ``4000000``
                            of the two bounds comes first); >= MAX_JOB_LINE_BYTES
``JOB_RESULTS_TTL_S``       how long a job and its results are kept, seconds         ``604800`` (7 d)
``JOB_HEARTBEAT_S``         a chunk whose worker is silent this long is re-queued    ``15``
``JOB_SWEEP_S``             how often workers look for such chunks, seconds          ``5``
``JOB_CHUNK_ATTEMPTS``      attempts per chunk before its items fail as abandoned    ``5``
``JOB_QUEUE``               queue name (the SAQ queue and the job keys' prefix)      ``cj-jobs``
``WORKER_CHUNKS``           chunks one worker process runs at once                   ``2``
``WORKER_CONCURRENCY``      items one worker process scores at once (judge calls)    ``32``
``WORKER_SHUTDOWN_S``       on SIGTERM: finish or release chunks within this         ``25``
``WORKER_METRICS_PORT``     Prometheus /metrics port of a worker (0: none)           ``0``
``MAX_QUEUED_ITEMS``        items waiting in unfinished jobs; past it POST 429       ``2000000``
``MAX_INFLIGHT_ITEMS``      items one API process scores at once in /v1/score/batch  ``4000``
``JOB_STORE_MAX_BYTES``     Redis byte budget of job inputs and results kept (the    ``4000000000``
                            admission bound; docs/jobs-sizing.md); past it POST 503
``JOB_RESULT_ITEM_BYTES``   result bytes per item reserved at admission until the    ``1000``
                            item's result is written (then its real size counts)
``RETRY_AFTER_S``           the ``Retry-After`` of a 429, seconds                    ``10``
``BREAKER_FAILURES``        consecutive failed calls that open a judge's breaker     ``10``
``BREAKER_COOLDOWN_S``      seconds an open breaker waits before one probe call      ``30``
=========================== ======================================================== ===============
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import msgspec

from service.config.errors import SettingsError

__all__ = ["JobSettings"]

T = TypeVar("T")


class JobSettings(msgspec.Struct, frozen=True, kw_only=True):
    """Durable jobs, workers, admission control and the judges' circuit breakers (see the module table)."""

    max_job_items: int = 1_000_000
    max_job_body_bytes: int = 2_000_000_000
    max_job_line_bytes: int = 1_000_000
    chunk_size: int = 500
    chunk_bytes: int = 4_000_000
    results_ttl_s: int = 7 * 86_400
    heartbeat_s: int = 15
    sweep_s: int = 5
    chunk_attempts: int = 5
    queue: str = "cj-jobs"
    worker_chunks: int = 2
    worker_concurrency: int = 32
    worker_shutdown_s: int = 25
    worker_metrics_port: int = 0
    max_queued_items: int = 2_000_000
    max_inflight_items: int = 4_000
    max_store_bytes: int = 4_000_000_000
    result_item_bytes: int = 1_000
    retry_after_s: int = 10
    breaker_failures: int = 10
    breaker_cooldown_s: float = 30.0

    def __post_init__(self) -> None:
        for name, value, low in (
            ("MAX_JOB_ITEMS", self.max_job_items, 1),
            ("MAX_JOB_BODY_BYTES", self.max_job_body_bytes, 1024),
            ("MAX_JOB_LINE_BYTES", self.max_job_line_bytes, 16),
            ("JOB_CHUNK_SIZE", self.chunk_size, 1),
            ("JOB_CHUNK_BYTES", self.chunk_bytes, self.max_job_line_bytes),  # one line always fits a chunk
            ("JOB_RESULTS_TTL_S", self.results_ttl_s, 1),
            ("JOB_HEARTBEAT_S", self.heartbeat_s, 1),
            ("JOB_SWEEP_S", self.sweep_s, 1),
            ("JOB_CHUNK_ATTEMPTS", self.chunk_attempts, 1),
            ("WORKER_CHUNKS", self.worker_chunks, 1),
            ("WORKER_CONCURRENCY", self.worker_concurrency, 1),
            ("WORKER_SHUTDOWN_S", self.worker_shutdown_s, 0),
            ("WORKER_METRICS_PORT", self.worker_metrics_port, 0),
            ("MAX_QUEUED_ITEMS", self.max_queued_items, 1),
            ("MAX_INFLIGHT_ITEMS", self.max_inflight_items, 1),
            ("JOB_STORE_MAX_BYTES", self.max_store_bytes, 1),
            ("JOB_RESULT_ITEM_BYTES", self.result_item_bytes, 1),
            ("RETRY_AFTER_S", self.retry_after_s, 1),
            ("BREAKER_FAILURES", self.breaker_failures, 1),
        ):
            if value < low:
                raise SettingsError(f"{name}={value!r} must be >= {low}")
        if self.breaker_cooldown_s <= 0:
            raise SettingsError(f"BREAKER_COOLDOWN_S={self.breaker_cooldown_s!r} must be > 0")
        if not self.queue or not all(c.isalnum() or c in "-_." for c in self.queue):
            raise SettingsError(f"JOB_QUEUE={self.queue!r} must be letters, digits, '-', '_' or '.'")

    @classmethod
    def from_env(cls, get: Callable[[str, Callable[[str], T], T], T]) -> JobSettings:
        """Read the variables through ``Settings.from_env``'s ``get(name, parse, default)``."""
        defaults = cls()
        names: Mapping[str, str] = {
            "max_job_items": "MAX_JOB_ITEMS",
            "max_job_body_bytes": "MAX_JOB_BODY_BYTES",
            "max_job_line_bytes": "MAX_JOB_LINE_BYTES",
            "chunk_size": "JOB_CHUNK_SIZE",
            "chunk_bytes": "JOB_CHUNK_BYTES",
            "results_ttl_s": "JOB_RESULTS_TTL_S",
            "heartbeat_s": "JOB_HEARTBEAT_S",
            "sweep_s": "JOB_SWEEP_S",
            "chunk_attempts": "JOB_CHUNK_ATTEMPTS",
            "queue": "JOB_QUEUE",
            "worker_chunks": "WORKER_CHUNKS",
            "worker_concurrency": "WORKER_CONCURRENCY",
            "worker_shutdown_s": "WORKER_SHUTDOWN_S",
            "worker_metrics_port": "WORKER_METRICS_PORT",
            "max_queued_items": "MAX_QUEUED_ITEMS",
            "max_inflight_items": "MAX_INFLIGHT_ITEMS",
            "max_store_bytes": "JOB_STORE_MAX_BYTES",
            "result_item_bytes": "JOB_RESULT_ITEM_BYTES",
            "retry_after_s": "RETRY_AFTER_S",
            "breaker_failures": "BREAKER_FAILURES",
            "breaker_cooldown_s": "BREAKER_COOLDOWN_S",
        }
        values: dict[str, Any] = {}
        for field, variable in names.items():
            default = getattr(defaults, field)
            values[field] = get(variable, type(default), default)
        return cls(**values)
