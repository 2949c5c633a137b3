"""POST /v1/feedback, GET /v1/monitor, POST /v1/monitor/reset (admin) and POST /v1/monitor/recalibrate (admin):
human feedback on served verdicts, the monitors it feeds (rules: ``service.monitoring``) and a calibration job from
a monitor's feedback (``service.monitoring.recalibration``, run by ``service.jobs.calibration_jobs``).

Without REDIS_URL each answers 503 ``jobs-unavailable`` saying how to enable Redis; a Redis that does not answer is
the same 503 with Retry-After (the jobs routes' wording). Feedback and monitors belong to the caller's tenant
(``service.jobs.tenancy``: a digest of its API key); the admin key's feedback applies to every tenant's answers,
and the admin sees every monitor. Only the admin resets a monitor.
"""

from __future__ import annotations

from typing import Annotated

from litestar import Request, get, post
from litestar.openapi.spec import Example
from litestar.params import Body, Parameter
from redis.exceptions import RedisError

from service.errors import (
    ENABLE_MONITORS_HELP,
    InvalidRequestError,
    JobsUnavailableError,
    MonitorQuotaError,
    store_unavailable,
)
from service.http.auth import bearer_token
from service.http.body import BODY_DECODER, BodyDecoder
from service.http.routes.score import scoring_context
from service.http.services import Services, problem_responses, require_admin_key, services_of
from service.jobs.tenancy import JobCaller, job_caller
from service.monitoring.feedback import record_feedback
from service.monitoring.monitors import Monitors
from service.monitoring.recalibration import feedback_file
from service.monitoring.views import list_monitors, reset_monitor
from service.wire.monitoring import (
    FeedbackRequest,
    FeedbackResponse,
    MonitorRecalibrateRequest,
    MonitorRecalibration,
    MonitorReset,
    MonitorResetRequest,
    MonitorResponse,
)

__all__ = ["MAX_MONITOR_PAGE", "feedback", "monitor", "monitor_recalibrate", "monitor_reset"]

MAX_MONITOR_PAGE = 200

_EXAMPLE_ITEM = {
    "criterion": "relevance",
    "judge": "gpt-4o-mini-2024-07-18",
    "judge_score": 4,
    "human": 3,
    "item_id": "doc-17/summary-2",
    "group": "doc-17",
    "done": True,
}
FeedbackBody = Annotated[
    FeedbackRequest,
    Body(examples=[Example(summary="The human label of a served verdict", value={"items": [_EXAMPLE_ITEM]})]),
]

ResetBody = Annotated[
    MonitorResetRequest,
    Body(examples=[Example(summary="Reset one monitor", value={"monitor_id": "0" * 32, "reason": "prompt reverted"})]),
]


def _monitors(services: Services) -> Monitors:
    if services.monitors is None:
        raise JobsUnavailableError(f"REDIS_URL is not set: {ENABLE_MONITORS_HELP}")
    return services.monitors


def _caller(request: Request, services: Services) -> JobCaller:
    settings = services.settings
    return job_caller(settings.api_keys, settings.admin_api_key, bearer_token(request.headers.get("authorization")))


@post(
    "/feedback",
    status_code=200,
    summary="Human labels of served verdicts: recorded into the monitors of their cells",
    responses=problem_responses(400, 401, 413, 415, 422, 429, 503),
    tags=["monitor"],
    opt={BODY_DECODER: BodyDecoder(FeedbackRequest)},
)
async def feedback(data: FeedbackBody, request: Request) -> FeedbackResponse:
    """Each item: the verdict as sent to /v1/score, ``human``, ``item_id``, ``group`` and ``done`` (rules:
    ``service.monitoring.feedback``); refusals are per item, with a problem each."""
    services = services_of(request)
    monitors = _monitors(services)
    limit = services.settings.max_batch_items
    if len(data.items) > limit:
        raise InvalidRequestError(f"the feedback has {len(data.items)} items; the limit is MAX_BATCH_ITEMS={limit}")
    tenant = _caller(request, services).tenant
    try:
        context = scoring_context(services)  # no alarms: the verdict as it was served
        answer = await record_feedback(monitors, context, data.items, tenant=tenant, path="/v1/feedback")
    except (RedisError, OSError) as error:
        raise store_unavailable(error, services.settings.jobs.retry_after_s) from error
    quota = [r for r in answer.refusals if r.error.type.endswith(MonitorQuotaError.slug)]
    if data.items and len(quota) == len(data.items):  # nothing recorded, all for a quota: the request is refused
        raise MonitorQuotaError(quota[0].error.detail)
    return answer


@get(
    "/monitor",
    summary="The feedback monitors: status, labels, documents, e-values, running rates and alarms",
    responses=problem_responses(400, 401, 422, 503),
    tags=["monitor"],
)
async def monitor(
    request: Request,
    limit: Annotated[int, Parameter(ge=1, le=MAX_MONITOR_PAGE, description="monitors per page")] = 50,
    after: Annotated[
        str, Parameter(max_length=64, pattern=r"^[0-9a-f]{0,64}$", description="the previous page's next_after")
    ] = "",
) -> MonitorResponse:
    """One page of the caller's monitors (the admin: every tenant's), in monitor id order, each from
    ``calibration.monitoring.cell_report``."""
    services = services_of(request)
    monitors = _monitors(services)
    scope = _caller(request, services).scope
    try:
        return await list_monitors(monitors, services.calibration.current, scope, after=after, limit=limit)
    except (RedisError, OSError) as error:
        raise store_unavailable(error, services.settings.jobs.retry_after_s) from error


@post(
    "/monitor/reset",
    status_code=200,
    summary="Reset a monitor and clear its alarm (admin; audited in the log)",
    responses=problem_responses(400, 401, 403, 404, 415, 422, 503),
    tags=["monitor"],
    guards=[require_admin_key],
    opt={BODY_DECODER: BodyDecoder(MonitorResetRequest)},
)
async def monitor_reset(data: ResetBody, request: Request) -> MonitorReset:
    """Remove the monitor's state and alarm: its cell's answers are no longer escalated by it, and its next label
    starts a new monitor."""
    services = services_of(request)
    monitors = _monitors(services)
    try:
        return await reset_monitor(monitors, data.monitor_id, reason=data.reason)
    except (RedisError, OSError) as error:
        raise store_unavailable(error, services.settings.jobs.retry_after_s) from error


RecalibrateBody = Annotated[
    MonitorRecalibrateRequest,
    Body(examples=[Example(summary="Calibrate on a monitor's feedback", value={"monitor_id": "0" * 32})]),
]


@post(
    "/monitor/recalibrate",
    status_code=202,
    summary="Start a calibration job on a monitor's collected feedback (admin)",
    responses=problem_responses(400, 401, 403, 404, 409, 415, 422, 503),
    tags=["monitor"],
    guards=[require_admin_key],
    opt={BODY_DECODER: BodyDecoder(MonitorRecalibrateRequest)},
)
async def monitor_recalibrate(data: RecalibrateBody, request: Request) -> MonitorRecalibration:
    """The monitor's labelled rows become a calibration job (the rules of POST /v1/calibrations); poll its status
    for what the new rule accepts, then activate it: the cell's new calibration id clears the alarm."""
    services = services_of(request)
    monitors = _monitors(services)
    snapshot = services.calibration.current
    try:
        limit = services.settings.limits.max_calibration_cell_rows
        labelled = await feedback_file(
            monitors, snapshot, data.monitor_id, max_rows=limit, for_every_tenant=data.for_every_tenant
        )
        job = await services.calibrations.submit(
            labelled.body,
            scale=labelled.scale,
            name=labelled.name,
            snapshot=snapshot,
            max_cell_rows=limit,
            judges=services.judges,
        )
    except (RedisError, OSError) as error:
        raise store_unavailable(error, services.settings.jobs.retry_after_s) from error
    note = (
        f"activating it replaces artifact {labelled.name!r}, so the cell's calibration id changes and the alarm clears"
        if labelled.name is not None
        else "the cell belongs to the primary artifact (THRESHOLDS_PATH), which an activation cannot replace: "
        "merge the job's artifact into the primary one and reload it (POST /v1/calibration/reload) to serve it"
    )
    note += (
        f"; the rows are the labels of {labelled.tenant}, {labelled.rows_after_alarm} of them in documents closed "
        "after the alarm"
    )
    if labelled.rows < labelled.kept_from:
        note += (
            f"; {labelled.rows} of the {labelled.kept_from} kept rows (whole documents drawn at random) fit "
            f"MAX_CALIBRATION_CELL_ROWS={limit}"
        )
    note += "; a worker (python -m service.worker) must be running for the job to run, else it stays queued"
    services.logger.warning(
        "monitor.recalibrate", audit=True, monitor_id=data.monitor_id, job=job.id, rows=labelled.rows,
        documents=labelled.documents, whose_rows=labelled.tenant, for_every_tenant=data.for_every_tenant,
    )  # fmt: skip
    return MonitorRecalibration(
        monitor_id=data.monitor_id,
        job_id=job.id,
        status=job.status,
        artifact_name=job.name,
        rows=labelled.rows,
        documents=labelled.documents,
        rows_kept=labelled.kept_from,
        whose_rows=labelled.tenant,
        rows_after_alarm=labelled.rows_after_alarm,
        status_url=f"/v1/calibrations/{job.id}",
        note=note,
    )
