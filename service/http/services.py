"""The HTTP layer's shared parts: the per-app services, the problem handler and the OpenAPI problem entries.

Route modules (``routes/``, one per resource) hold the handlers; ``edge`` holds the outermost layer (request id,
API key, metrics, access log) and ``auth`` the key checks (``check_api_key``, ``require_admin_key``).
This module holds what every route shares:

================================ ==========================================================================
name                             role
================================ ==========================================================================
``Services``                     everything a handler needs, built per app and kept on ``app.state``
``services_of``                  a handler's way to its app's ``Services`` (``request.app.state``)
``handle_exception``             every exception -> problem+json (``service.http.problems``), logged, counted
``record_problem``               a problem answered: logged and counted
``problem_responses``            OpenAPI ``responses`` entries for problem+json statuses
================================ ==========================================================================

Handlers reach the services through ``services_of(request)`` rather than a Litestar dependency: resolving
even a cached dependency costs about 8 us a request (a quarter of a bare echo endpoint, measured), and
``Services`` is fixed for the app's life, so there is nothing for injection to decide.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from litestar import Request, Response
from litestar.connection import ASGIConnection
from litestar.openapi.datastructures import ResponseSpec

from service.artifacts.report_cards import ShippedReportCards
from service.artifacts.state import CalibrationHolder
from service.config.settings import Settings
from service.http.auth import check_api_key, require_admin_key
from service.http.problems import PROBLEM_MEDIA_TYPE, problem_from_exception
from service.jobs.calibration_jobs.jobs import CalibrationJobs
from service.jobs.metrics import JobMetrics
from service.jobs.queue import JobQueue
from service.judging.admission import Admission
from service.judging.pool import JudgePool
from service.monitoring.monitors import Monitors
from service.observability.logging import AppLogs, EventLogger
from service.observability.metrics import ServiceMetrics
from service.observability.tracing import Tracing
from service.scoring.policy import DecisionPolicy
from service.wire.common import Problem

__all__ = [
    "Services",
    "check_api_key",
    "handle_exception",
    "problem_responses",
    "record_problem",
    "require_admin_key",
    "services_of",
]

_PROBLEM_DESCRIPTIONS = {
    400: "Malformed JSON",
    401: "Missing or unknown bearer key (when API_KEYS is set)",
    403: "The key may not do this",
    404: "No such job (never created, or expired after JOB_RESULTS_TTL_S)",
    409: "Idempotency-Key reused with another body, or a cell owned by another artifact",
    413: "Request body larger than MAX_BODY_BYTES",
    415: "The request body is not declared as JSON (Content-Type must be application/json)",
    422: "Validation failed, a name/level/limit the service does not accept (see `allowed`), or a live judge call "
    "with no judge configured (send your own verdict)",
    502: "The judge call failed or its reply could not be read",
    429: "Admission control: too many items queued or in flight; retry after Retry-After seconds",
    503: "Unavailable for now: no calibration loaded, Redis absent or down, or a judge's breaker open",
}


@dataclass(frozen=True, kw_only=True)
class Services:
    """Per-app services; the lifespan fills ``judges`` and closes it, the rest lives as long as the app."""

    settings: Settings
    metrics: ServiceMetrics
    logger: EventLogger
    logs: AppLogs
    policy: DecisionPolicy
    calibration: CalibrationHolder
    judges: JudgePool
    report_cards: ShippedReportCards  # the report cards file beside THRESHOLDS_PATH (service/artifacts/report_cards.py)
    admission: Admission  # 429 bounds (service/judging/admission.py)
    job_metrics: JobMetrics
    jobs: JobQueue | None = None  # durable jobs (service/jobs/); None without REDIS_URL
    # POST /v1/calibrations jobs (service/jobs/calibration_jobs/jobs.py): run by the workers on the job queue with
    # REDIS_URL, else as in-process background tasks
    calibrations: CalibrationJobs = field(default_factory=lambda: CalibrationJobs(accept_max=2, escalate_min=5))
    # the served OpenAPI document and the calibration snapshot it was derived for (service.http.spec_values)
    spec_cache: dict[str, object] = field(default_factory=dict)
    tracing: Tracing = field(default_factory=Tracing)  # no-op unless OTEL_EXPORTER_OTLP_ENDPOINT is set
    monitors: Monitors | None = None  # feedback monitors (service/monitoring/); None without REDIS_URL


def services_of(connection: ASGIConnection) -> Services:
    """The Services of the app answering ``connection`` (a request)."""
    # set by service.http.app.create_app; read by key: State's attribute access goes through __getattr__, which
    # runs only after the ordinary lookup has failed with an AttributeError (a raised exception every request)
    return connection.app.state["services"]


def problem_responses(*statuses: int) -> dict[int, ResponseSpec]:
    """OpenAPI response entries (problem+json bodies) for the given statuses."""
    return {
        status: ResponseSpec(
            data_container=Problem,
            description=_PROBLEM_DESCRIPTIONS.get(status, "Problem"),
            media_type=PROBLEM_MEDIA_TYPE,
            generate_examples=False,
        )
        for status in statuses
    }


def handle_exception(request: Request, exc: Exception) -> Response[Problem]:
    """Map any exception to problem+json; 5xx are logged with the traceback, 4xx as one line."""
    services = services_of(request)
    problem, headers = problem_from_exception(exc, instance=request.url.path)
    record_problem(services, problem, exc)
    return Response(problem, status_code=problem.status, media_type=PROBLEM_MEDIA_TYPE, headers=headers)


def record_problem(services: Services, problem: Problem, exc: Exception) -> None:
    """Log a problem response (5xx internal errors with the traceback, others as one line) and count it."""
    log = services.logger  # the request id and route come from service.observability.logging.current_request
    if problem.status >= 500 and problem.type.endswith("internal-error"):
        log.error("request.failed", status=problem.status, exc_info=exc, error_type=type(exc).__name__)
    else:
        log.info("request.problem", status=problem.status, problem=problem.type, detail=problem.detail[:300])
    services.metrics.count_problem(problem.status, problem.type)
