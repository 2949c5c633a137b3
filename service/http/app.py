"""``create_app(settings=None) -> Edge``: wiring only.

Settings are read here (``Settings.from_env()`` unless given). Per-app services (metrics registry, logger,
policy, calibration holder, judge pool) are built here, kept on the Litestar app's ``state.services`` for the
handlers and on the returned ``Edge`` (``service.http.edge``, the ASGI application served, which wraps the
Litestar app as ``edge.inner``); the lifespan loads the calibration, opens the judge clients and the cache, and
closes them in ``finally``. With OTEL_EXPORTER_OTLP_ENDPOINT set the edge runs inside a server span per request
(``service.observability.tracing``; without it OpenTelemetry is never imported).

Routes: ``V1_HANDLERS`` (under ``/v1``, behind the API key) and ``PUBLIC_HANDLERS`` (health, metrics); a new
endpoint is one more entry there (and, when it is public, in ``service.http.edge.PUBLIC_PATHS``).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from copy import copy
from typing import IO

from litestar import Litestar, Router
from litestar.datastructures import State
from litestar.handlers import BaseRouteHandler
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme

from service.artifacts.report_cards import ShippedReportCards
from service.artifacts.state import CalibrationHolder
from service.comparing.mfas_limit import start_solver_server
from service.config.settings import Settings
from service.http.body import JSONRequest
from service.http.docs_page import OfflineRedoc
from service.http.edge import Edge
from service.http.raw_bodies import jobs_operation
from service.http.routes.calibration import calibration_info, reload_calibration
from service.http.routes.calibrations import (
    activate_calibration,
    calibration_job,
    delete_calibration,
    submit_calibration,
)
from service.http.routes.compare import compare
from service.http.routes.estimates import estimates, rankings
from service.http.routes.health import healthz, metrics, readyz
from service.http.routes.jobs import cancel_job, job_results, job_status, submit_job
from service.http.routes.judges import list_judges
from service.http.routes.monitoring import feedback, monitor, monitor_recalibrate, monitor_reset
from service.http.routes.reports import (
    calibration_report,
    calibration_report_page,
    judge_report,
    judge_report_page,
)
from service.http.routes.score import score, score_batch
from service.http.services import Services, handle_exception
from service.http.spec_values import LiveSpecJson
from service.http.wire_schema import WireSchemaPlugin
from service.jobs.calibration_jobs.jobs import CalibrationJobs
from service.jobs.metrics import JobMetrics
from service.jobs.queue import JobQueue
from service.jobs.tenancy import admin_tenant
from service.judging.admission import Admission
from service.judging.pool import JudgePool
from service.monitoring.monitors import Monitors
from service.observability.logging import EventLogger, library_logs, make_logs
from service.observability.metrics import ServiceMetrics
from service.observability.traces import make_tracing
from service.scoring.policy import DecisionPolicy

__all__ = ["API_VERSION", "create_app"]

API_VERSION = "1.0.0"
# The /v1 route handlers (behind the API key, in the spec's bearerAuth security) and the public ones.
V1_HANDLERS = (
    score, score_batch, compare, calibration_info, reload_calibration, list_judges,
    submit_job, job_status, job_results, cancel_job,
    submit_calibration, calibration_job, activate_calibration, delete_calibration,
    estimates, rankings,
    feedback, monitor, monitor_reset, monitor_recalibrate,
    judge_report, judge_report_page, calibration_report, calibration_report_page,
)  # fmt: skip
PUBLIC_HANDLERS = (healthz, readyz, metrics)
_DESCRIPTION = (
    "LLM-judge verdicts wrapped with split-conformal prediction sets (accept / review / escalate), "
    "pairwise tournament diagnostics (3-cycles, violation rate, rankings) and factuality evidence. "
    "Every error is RFC 9457 problem+json. When API_KEYS is set, /v1 needs `Authorization: Bearer <key>`."
)


@asynccontextmanager
async def _lifespan(app: Litestar) -> AsyncIterator[None]:
    services: Services = app.state.services
    # so that the first /v1/compare's MFAS limit is not spent starting its workers' server (about 1 s, in a thread)
    await asyncio.to_thread(start_solver_server)
    services.calibration.load_initial()
    if services.calibration.current is not None:
        services.metrics.calibration_entries.set(len(services.calibration.current.artifact.entries))
        services.logger.info("calibration.loaded", calibration_id=services.calibration.current.calibration_id)
    else:
        services.logger.error("calibration.unavailable", error=services.calibration.error)
    for skipped in services.calibration.skipped:  # a persisted artifact that is broken or claims a taken cell
        services.logger.error("calibration.artifact_skipped", detail=skipped)
    library = contextlib.ExitStack()
    library.enter_context(library_logs(services.logger))  # SAQ's, uvicorn's, redis' records as JSON lines too
    try:
        await services.judges.start()
        # What start-up built (modules, the artifact, clients) lives as long as the process: freezing it keeps
        # the collector from re-walking ~140k objects in every full collection, a 100 ms stall of the event
        # loop (measured during a 1,000-item batch). Shutdown unfreezes them, so an app started and stopped
        # inside a longer-lived process (tests) leaves nothing uncollectable behind.
        gc.freeze()
        yield
    finally:
        gc.unfreeze()
        await services.calibrations.aclose()
        services.calibration.activated.close()
        await services.judges.aclose()
        if services.jobs is not None:
            await services.jobs.aclose()
        services.tracing.shutdown()  # exports the spans still buffered
        library.close()
        services.logs.flush()


def _v1_handlers(settings: Settings) -> list[BaseRouteHandler]:
    """``V1_HANDLERS``, POST /v1/jobs with this deployment's body cap in its operation (a copy: the module's handler
    is left as it is, so that apps of other settings do not share it)."""
    jobs = copy(submit_job)
    jobs.operation_class = jobs_operation(settings.jobs.max_job_items)
    return [jobs if handler is submit_job else handler for handler in V1_HANDLERS]


def _monitors(jobs: JobQueue, settings: Settings, metrics: ServiceMetrics, logger: EventLogger) -> Monitors:
    """The feedback monitors on the jobs' Redis (service/monitoring/)."""
    owner = admin_tenant(settings.api_keys, settings.admin_api_key)
    return Monitors.on(jobs.store.redis, settings, metrics, logger, admin_tenant=owner)


def create_app(settings: Settings | None = None, *, log_stream: IO[str] | None = None) -> Edge:
    """The ASGI app for ``settings`` (default: from the environment); logs go to ``log_stream`` (stderr)."""
    settings = settings if settings is not None else Settings.from_env()
    tracing = make_tracing(settings)  # SettingsError: the endpoint is set but the otel extra is not installed
    metrics_ = ServiceMetrics()
    job_metrics = JobMetrics(metrics_)
    logs = make_logs(
        settings.log_level, log_stream, access_log=settings.access_log, flush_interval_s=settings.log_flush_ms / 1000
    )
    jobs = JobQueue.connect(settings.redis_url, settings.jobs) if settings.redis_url else None  # scoring, calibrations
    services = Services(
        settings=settings,
        metrics=metrics_,
        logger=logs.logger,
        logs=logs,
        policy=DecisionPolicy(),
        calibration=CalibrationHolder(
            settings.thresholds_path,
            reload_dir=settings.limits.reload_dir,
            max_artifact_bytes=settings.limits.max_artifact_bytes,
            artifacts_dir=settings.artifacts_dir,
            redis_url=settings.redis_url,
            artifacts_redis_key=settings.artifacts_redis_key,
        ),
        judges=JudgePool(settings, metrics_, logs.logger, tracing),
        report_cards=ShippedReportCards(settings.thresholds_path),
        admission=Admission(
            max_inflight_items=settings.jobs.max_inflight_items,
            max_queued_items=settings.jobs.max_queued_items,
            retry_after_s=settings.jobs.retry_after_s,
            refused=job_metrics.refused,
        ),
        job_metrics=job_metrics,
        jobs=jobs,
        calibrations=CalibrationJobs(
            accept_max=settings.accept_max_set_size,
            escalate_min=settings.escalate_min_set_size,
            queue=jobs,
            retry_after_s=settings.jobs.retry_after_s,
        ),
        tracing=tracing,
        monitors=None if jobs is None else _monitors(jobs, settings, metrics_, logs.logger),
    )
    # without API_KEYS a key is accepted and none is needed: the spec says so (the empty requirement)
    security: list[dict[str, list[str]]] = [{"bearerAuth": []}] if settings.api_keys else [{}, {"bearerAuth": []}]
    v1 = Router(path="/v1", route_handlers=_v1_handlers(settings), security=security)
    app = Litestar(
        route_handlers=[v1, *PUBLIC_HANDLERS],
        exception_handlers={Exception: handle_exception},
        lifespan=[_lifespan],
        request_max_body_size=settings.max_body_bytes,
        request_class=JSONRequest,
        logging_config=None,
        openapi_config=OpenAPIConfig(
            title="Conformal Judge",
            version=API_VERSION,
            description=_DESCRIPTION,
            components=Components(
                security_schemes={
                    "bearerAuth": SecurityScheme(
                        type="http", scheme="bearer", description="one of API_KEYS (or ADMIN_API_KEY)"
                    )
                }
            ),
            create_examples=False,
            # The JSON document at /schema and /schema/openapi.json, with the deployment's current names and scales;
            # an HTML page at /schema/redoc with a vendored Redoc (Litestar's own viewers load their scripts from a
            # CDN and render blank offline).
            render_plugins=[LiveSpecJson(), OfflineRedoc()],
        ),
        state=State({"services": services}),
        plugins=[WireSchemaPlugin()],
    )
    return Edge(inner=app, services=services)
