"""``python -m service.worker`` (``make worker``): a job worker on REDIS_URL; run any number, on any machines.

A worker takes chunk tasks from the SAQ queue JOB_QUEUE (WORKER_CHUNKS at a time, WORKER_CONCURRENCY items at
once over all of them) and scores them with the same ``service.scoring.score.score_item`` as the API, on the same
settings (THRESHOLDS_PATH, JUDGES_FILE, REDIS_URL for the shared judge-answer cache, ...). It also runs the
calibration jobs of POST /v1/calibrations queued there (``service.jobs.calibration_jobs.jobs.run_queued_calibration``:
the fits run in a thread, one job per task slot).

Lifecycle:

* start: loads the calibration, opens the judge clients and the cache, connects the queue; without
  REDIS_URL it exits with status 2 and says how to enable jobs;
* while running: SAQ's upkeep re-queues chunks whose worker has been silent for JOB_HEARTBEAT_S (checked every
  JOB_SWEEP_S by one worker at a time); a gauge task reads the queue depth as often;
* SIGTERM / SIGINT: takes no new chunk, waits up to WORKER_SHUTDOWN_S for those in flight, then cancels
  them, which puts them back in the queue for another worker (nothing written twice: results are written
  once per chunk).

Logs are JSON lines on stderr (``job_id`` and ``chunk`` on every chunk line; SAQ's own records, a failed task's
traceback included, as ``library.log`` lines: ``service.observability.logging.library_logs``);
WORKER_METRICS_PORT > 0 serves the worker's Prometheus metrics (judge calls, job items, chunk retries, heartbeats,
queue depth) on HOST. With OTEL_EXPORTER_OTLP_ENDPOINT set the worker exports traces as the API does
(``service.observability.traces``, the otel extra; without it start-up fails with status 2 naming the extra): a
span per chunk, the judge-call spans under it, a ``gen_ai.evaluation.result`` event per verdict; the spans still
buffered are sent on exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import sys
from typing import Any

from service.artifacts.state import CalibrationHolder
from service.config.settings import Settings, SettingsError
from service.errors import ENABLE_JOBS_HELP, JobsUnavailableError
from service.jobs.calibration_jobs.jobs import CALIBRATION_SPLITS, run_queued_calibration
from service.jobs.calibration_jobs.records import CALIBRATION_TASK
from service.jobs.metrics import JobMetrics
from service.jobs.queue import CHUNK_TASK, JobQueue
from service.jobs.runner import ChunkRunner
from service.jobs.tenancy import admin_tenant
from service.judging.pool import JudgePool
from service.monitoring.monitors import Monitors
from service.observability.logging import EventLogger, library_logs, make_logs
from service.observability.metrics import ServiceMetrics
from service.observability.traces import make_tracing
from service.observability.tracing import Tracing
from service.scoring.context import ScoringContext
from service.scoring.monitor_alarm import AlarmedCell, AlarmNote
from service.scoring.policy import DecisionPolicy

__all__ = ["main", "make_runner", "run_worker"]


async def _score_chunk(ctx: dict[str, Any], *, job_id: str, chunk: int) -> str:
    """The SAQ task: run one chunk, refreshing the task's heartbeat while it runs."""
    job = ctx["job"]
    runner: ChunkRunner = ctx["runner"]
    return await runner.run_chunk(job_id, chunk, attempt=job.attempts, heartbeat=job.update)


async def _run_calibration(ctx: dict[str, Any], *, calibration_id: str) -> str:
    """The SAQ task of a calibration job (POST /v1/calibrations): fit it, refreshing the task's heartbeat."""
    settings: Settings = ctx["settings"]
    outcome = await run_queued_calibration(
        ctx["jobs"], calibration_id, n_splits=CALIBRATION_SPLITS, accept_max=settings.accept_max_set_size,
        escalate_min=settings.escalate_min_set_size, heartbeat=ctx["job"].update,
    )  # fmt: skip
    ctx["runner"].logger.info("calibration.job", calibration_id=calibration_id, outcome=outcome)
    return outcome


async def _gauges(
    jobs: JobQueue, metrics: JobMetrics, every_s: float, logger: EventLogger, stop: asyncio.Event
) -> None:
    """Refresh the queue-depth gauges every ``every_s`` until ``stop`` is set.

    A stop event rather than cancellation: a cancellation that lands inside a Redis call can be absorbed by
    the client, which left this loop (and so the worker's exit) waiting forever.
    """
    while not stop.is_set():
        try:
            depth = await jobs.depth()
            for state, count in depth.items():
                metrics.queue_chunks.labels(state).set(count)
            metrics.queued_items.set(await jobs.store.queued_items())
        except Exception as error:  # noqa: BLE001 - a missed reading is not worth stopping the worker
            logger.warning("worker.gauges_failed", error=type(error).__name__)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every_s)


def make_runner(
    settings: Settings, jobs: JobQueue, logger: EventLogger, tracing: Tracing | None = None
) -> tuple[ChunkRunner, JudgePool, ServiceMetrics]:
    """A chunk runner on ``jobs`` scoring with the settings' calibration and judges (start the pool first);
    ``tracing`` (default none) gets its chunk spans, judge-call spans and verdict events."""
    tracing = tracing if tracing is not None else Tracing()
    metrics = ServiceMetrics()
    job_metrics = JobMetrics(metrics)
    # the API's artifacts: THRESHOLDS_PATH and the activated ones (ARTIFACTS_DIR / ARTIFACTS_REDIS_KEY), followed
    # per chunk below so that an item is calibrated exactly as /v1/score would calibrate it
    calibration = CalibrationHolder(
        settings.thresholds_path,
        artifacts_dir=settings.artifacts_dir,
        redis_url=settings.redis_url,
        artifacts_redis_key=settings.artifacts_redis_key,
    )
    calibration.load_initial()
    if calibration.current is None:
        logger.error("calibration.unavailable", error=calibration.error)
    judges = JudgePool(settings, metrics, logger, tracing)
    policy = DecisionPolicy()

    def context() -> ScoringContext:
        calibration.follow()  # activations / deletions since the last chunk (a version check when none)
        return ScoringContext(
            settings=settings,
            snapshot=calibration.current,
            calibration_error=calibration.error,
            judges=judges,
            policy=policy,
            metrics=metrics,
            screened=judges.screened,  # the process's memo: a repeated text is screened once
        )

    owner = admin_tenant(settings.api_keys, settings.admin_api_key)  # its alarms apply to every tenant's jobs
    monitors = Monitors.on(jobs.store.redis, settings, metrics, logger, admin_tenant=owner)

    async def alarms(tenant: str) -> dict[AlarmedCell, AlarmNote]:
        return await monitors.board.for_caller(tenant, monitors.admin_tenant)

    runner = ChunkRunner(
        alarms=alarms,
        store=jobs.store,
        settings=settings.jobs,
        context=context,
        slots=asyncio.Semaphore(settings.jobs.worker_concurrency),
        metrics=job_metrics,
        logger=logger,
        tracing=tracing,
    )
    return runner, judges, metrics


async def run_worker(settings: Settings, tracing: Tracing | None = None) -> None:
    """Run one worker until SIGTERM / SIGINT (see the module docstring); ``tracing`` defaults to the settings'
    (``make_tracing``) and is shut down (its spans flushed) on the way out."""
    from saq import Worker

    tracing = tracing if tracing is not None else make_tracing(settings)
    jobs = JobQueue.connect(settings.redis_url, settings.jobs)
    logs = make_logs(settings.log_level, sys.stderr, flush_interval_s=settings.log_flush_ms / 1000)
    logger = logs.logger
    runner, judges, metrics = make_runner(settings, jobs, logger, tracing)
    job_metrics = runner.metrics
    worker: Worker[Any] = Worker(
        jobs.queue,
        functions=[(CHUNK_TASK, _score_chunk), (CALIBRATION_TASK, _run_calibration)],
        concurrency=settings.jobs.worker_chunks,
        timers={"sweep": settings.jobs.sweep_s, "abort": 1, "schedule": 1, "worker_info": settings.jobs.sweep_s},
        dequeue_timeout=1,
        shutdown_grace_period_s=settings.jobs.worker_shutdown_s,
    )
    worker.context["runner"] = runner
    worker.context["jobs"] = jobs
    worker.context["settings"] = settings
    if settings.jobs.worker_metrics_port:
        from prometheus_client import start_http_server

        start_http_server(settings.jobs.worker_metrics_port, addr=settings.host, registry=metrics.registry)
    await judges.start()
    # As the API does after start-up (service.http.app): what was built so far (modules, the calibration, clients)
    # lives as long as the process, so the collector need not walk it again in every full collection.
    gc.freeze()
    stop_gauges = asyncio.Event()
    gauges = asyncio.create_task(_gauges(jobs, job_metrics, settings.jobs.sweep_s, logger, stop_gauges))
    logger.info(
        "worker.started", worker_id=worker.id, queue=settings.jobs.queue, chunks=settings.jobs.worker_chunks,
        concurrency=settings.jobs.worker_concurrency,
    )  # fmt: skip
    library = contextlib.ExitStack()
    library.enter_context(library_logs(logger))  # SAQ's records (a failed task's traceback) as JSON lines
    try:
        await jobs.queue.connect()
        await worker.start()
    finally:
        stop_gauges.set()
        await asyncio.wait([gauges], timeout=5)
        logger.info("worker.stopped", worker_id=worker.id)
        await judges.aclose()
        await jobs.aclose()
        tracing.shutdown()  # exports the spans still buffered
        library.close()
        logs.flush()


def main() -> int:
    """Entry point: read the settings, run a worker; 2 on a settings error or without REDIS_URL."""
    try:
        settings = Settings.from_env()
        if not settings.redis_url:
            raise JobsUnavailableError("REDIS_URL is not set")
    except (SettingsError, JobsUnavailableError) as error:
        print(f"service.worker: {error}; {ENABLE_JOBS_HELP}", file=sys.stderr)
        return 2
    try:
        tracing = make_tracing(settings)  # SettingsError: the endpoint is set but the otel extra is not installed
    except SettingsError as error:
        print(f"service.worker: {error}", file=sys.stderr)
        return 2
    asyncio.run(run_worker(settings, tracing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
