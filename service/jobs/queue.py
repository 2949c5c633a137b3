"""The job queue: SAQ (a maintained Redis job queue with heartbeats, retries and lost-worker sweeps) carries
one task per chunk; ``service.jobs.store`` holds the chunks' data.

======================================= ===================================================================
call                                    effect
======================================= ===================================================================
``jobs = JobQueue.connect(settings)``   a SAQ queue on REDIS_URL named JOB_QUEUE, and a ``JobStore`` on
                                        the same Redis client
``await jobs.enqueue_chunks(id, n)``    one SAQ task ``score_chunk(job_id, chunk)`` per chunk, keyed
                                        ``<job id>:<chunk>`` (SAQ refuses a second task with a live key)
``await jobs.enqueue_calibration(p, b)`` a calibration job's record and body (``jobs.calibration_jobs``) and its
                                        SAQ task ``run_calibration(calibration_id)``, keyed ``cal:<id>``
``await jobs.calibration_record(id)``   that job's stored record (plan, state), or None
``await jobs.depth()``                  chunk tasks queued and running (for metrics)
``await jobs.aclose()``                 closes the Redis connections
======================================= ===================================================================

Task options: no run-time limit (a chunk of live judge calls takes as long as the judge does); a heartbeat of
JOB_HEARTBEAT_S, which the worker refreshes while the chunk runs, so a SAQ sweep re-queues the chunk of a
worker that died (kill -9) once it has been silent that long; JOB_CHUNK_ATTEMPTS + 1 attempts, the last of
which writes ``chunk-abandoned`` errors instead of judging (``service.jobs.runner``).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from redis.exceptions import RedisError

from service.config.jobs import JobSettings
from service.errors import ENABLE_JOBS_HELP, JobsUnavailableError
from service.jobs.calibration_jobs.records import CALIBRATION_TASK, CalibrationPlan, CalibrationRecords
from service.jobs.store import JobStore, key_prefix

__all__ = ["CHUNK_TASK", "JobQueue"]

CHUNK_TASK = "score_chunk"
_TASK_TTL_S = 600  # how long SAQ keeps a finished task's own record (our results live in the job store)


class JobQueue:
    """The SAQ queue and the job store of one process (API or worker)."""

    def __init__(self, queue: Any, store: JobStore, settings: JobSettings) -> None:
        self.queue = queue
        self.store = store
        self.settings = settings
        self.calibrations = CalibrationRecords(store.redis, key_prefix(settings.queue), ttl_s=settings.results_ttl_s)

    @classmethod
    def connect(cls, redis_url: str | None, settings: JobSettings) -> JobQueue:
        """The queue on ``redis_url``; ``JobsUnavailableError`` (how to enable jobs) when it is None."""
        if not redis_url:
            raise JobsUnavailableError(ENABLE_JOBS_HELP)
        from saq import Queue
        from saq.queue.redis import RedisQueue

        queue = Queue.from_url(redis_url, name=settings.queue)
        assert isinstance(queue, RedisQueue)  # what from_url makes of any URL but postgres:// and http://
        store = JobStore(
            queue.redis, settings.queue, results_ttl_s=settings.results_ttl_s,
            result_item_bytes=settings.result_item_bytes,
        )  # fmt: skip
        return cls(queue, store, settings)

    async def enqueue_chunks(self, job_id: str, n_chunks: int) -> None:
        """Queue one ``score_chunk`` task per chunk (SAQ bounds its own concurrent Redis operations)."""
        await asyncio.gather(*(self.enqueue_chunk(job_id, chunk) for chunk in range(n_chunks)))

    async def enqueue_chunk(self, job_id: str, chunk: int) -> None:
        """Queue the task of one chunk."""
        await self.queue.enqueue(
            CHUNK_TASK,
            key=f"{job_id}:{chunk}",
            timeout=0,
            heartbeat=self.settings.heartbeat_s,
            retries=self.settings.chunk_attempts + 1,
            ttl=_TASK_TTL_S,
            job_id=job_id,
            chunk=chunk,
        )

    async def enqueue_calibration(self, plan: CalibrationPlan, body: bytes) -> None:
        """Store a calibration job and queue its task (the same heartbeat and attempts as a chunk's)."""
        await self.calibrations.put(plan, body)
        await self.queue.enqueue(
            CALIBRATION_TASK,
            key=f"cal:{plan.id}",
            timeout=0,
            heartbeat=self.settings.heartbeat_s,
            retries=self.settings.chunk_attempts,
            ttl=_TASK_TTL_S,
            calibration_id=plan.id,
        )

    async def calibration_record(self, job_id: str) -> tuple[CalibrationPlan, dict[str, Any]] | None:
        """The calibration job's stored record now (its plan and its state fields), or None when there is none;
        the calibrations domain maps it to its job object."""
        return await self.calibrations.load(job_id)

    async def depth(self) -> dict[str, int]:
        """Chunk tasks by state: ``queued`` (waiting) and ``active`` (taken by a worker)."""
        return {"queued": await self.queue.count("queued"), "active": await self.queue.count("active")}

    async def aclose(self) -> None:
        """Close the queue's Redis connections (a Redis that is down by then changes nothing)."""
        with contextlib.suppress(RedisError, OSError):
            await self.queue.disconnect()
