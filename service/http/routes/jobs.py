"""POST /v1/jobs, GET /v1/jobs/{id}, GET /v1/jobs/{id}/results, DELETE /v1/jobs/{id} (durable jobs).

Without REDIS_URL every route answers 503 ``jobs-unavailable`` saying how to enable jobs; a Redis that does
not answer is the same 503 with Retry-After (never a 500). The body of POST is streamed into Redis chunk by
chunk (``service.jobs.intake``), so its size is bounded by MAX_JOB_BODY_BYTES, not by MAX_BODY_BYTES (a JSON
``{"items": [...]}`` body, parsed whole, keeps MAX_BODY_BYTES).

Jobs belong to the API key that created them (``service.jobs.tenancy``): another key gets 404 for them, their
Idempotency-Keys are its own, and the admin key sees every job.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Annotated

from litestar import Request, Response, delete, get, post
from litestar.params import Parameter
from litestar.response import Stream
from redis.exceptions import RedisError

from service.errors import (
    ENABLE_JOBS_HELP,
    JobNotFoundError,
    JobsUnavailableError,
    StoreUnavailableError,
    store_unavailable,
)
from service.http.auth import bearer_token
from service.http.services import Services, problem_responses, services_of
from service.jobs.metrics import JobMetrics
from service.jobs.queue import JobQueue
from service.jobs.submit import JobIntake, Upload
from service.jobs.submit import submit_job as submit
from service.jobs.tenancy import JobCaller, job_caller
from service.jobs.views import job_accepted_view, job_status_view
from service.wire.jobs import JobAccepted, JobStatus

__all__ = ["cancel_job", "job_results", "job_status", "submit_job"]

JobId = Annotated[str, Parameter(max_length=64, description="the job_id POST /v1/jobs answered")]


def _jobs(services: Services) -> tuple[JobQueue, JobMetrics]:
    jobs = services.jobs
    if jobs is None:
        raise JobsUnavailableError(f"REDIS_URL is not set: {ENABLE_JOBS_HELP}")
    return jobs, services.job_metrics


def _redis_down(services: Services, error: Exception) -> StoreUnavailableError:
    return store_unavailable(error, services.settings.jobs.retry_after_s)


def _issued(job_id: str) -> str:
    """``job_id`` when it has the shape POST /v1/jobs issues (32 hex digits), else 404 without a Redis read: an
    id such as ``<id>:in`` would otherwise name another key of the same job."""
    if len(job_id) != 32 or any(c not in "0123456789abcdef" for c in job_id):
        raise JobNotFoundError(f"no job {job_id[:64]!r}: job ids are the 32 hex digits POST /v1/jobs answered")
    return job_id


def _caller(request: Request, services: Services) -> JobCaller:
    settings = services.settings
    return job_caller(settings.api_keys, settings.admin_api_key, bearer_token(request.headers.get("authorization")))


def _intake(services: Services, jobs: JobQueue) -> JobIntake:
    return JobIntake(
        jobs=jobs, settings=services.settings.jobs, admission=services.admission, metrics=services.job_metrics,
        max_json_body_bytes=services.settings.max_body_bytes, logger=services.logger,
    )  # fmt: skip


@post(
    "/jobs",
    status_code=202,
    summary="Submit a durable scoring job: JSON Lines (one /v1/score body per line, optional item_id) or items",
    responses=problem_responses(400, 401, 409, 413, 415, 422, 429, 503),
    tags=["jobs"],
    request_max_body_size=None,  # streamed; MAX_JOB_BODY_BYTES is enforced while reading
)
async def submit_job(request: Request) -> Response[JobAccepted]:
    """Store the items in chunks, queue one task per chunk, answer 202 with where to poll and read results.

    ``Idempotency-Key`` (per API key): the same key with the same body answers the first job again (header
    ``Idempotent-Replayed: true``); with another body, 409. Past MAX_QUEUED_ITEMS: 429 with Retry-After; past
    the byte budget JOB_STORE_MAX_BYTES: 503 ``job-store-full`` with Retry-After (docs/jobs-sizing.md); an
    item past MAX_JOB_LINE_BYTES: 413 naming its line.
    """
    services = services_of(request)
    jobs, _ = _jobs(services)
    upload = Upload(
        body=request.stream(),
        content_type=request.headers.get("content-type"),
        idempotency_key=request.headers.get("idempotency-key") or None,
        tenant=_caller(request, services).tenant,
    )
    submitted = await submit(upload, _intake(services, jobs))
    headers = {"Idempotent-Replayed": "true"} if submitted.replayed else None
    return Response(job_accepted_view(submitted.record), status_code=202, headers=headers)


@get("/jobs/{job_id:str}", summary="A job's status and progress", responses=problem_responses(400, 401, 404, 422, 503),
     tags=["jobs"])  # fmt: skip
async def job_status(job_id: JobId, request: Request) -> JobStatus:
    """status (queued | running | succeeded | failed | cancelled), counts, times, items per second, ETA."""
    services = services_of(request)
    jobs, _ = _jobs(services)
    caller = _caller(request, services)
    try:
        record = await jobs.store.get(_issued(job_id), caller.scope)
    except (RedisError, OSError) as error:
        raise _redis_down(services, error) from error
    return job_status_view(record, time.time())


@get(
    "/jobs/{job_id:str}/results",
    summary="A job's result lines in input order (JSON Lines); ?after=INDEX&limit=N reads on from a cursor",
    responses=problem_responses(400, 401, 404, 422, 503),
    tags=["jobs"],
    media_type="application/x-ndjson",
)
async def job_results(
    job_id: JobId,
    request: Request,
    after: Annotated[int, Parameter(ge=-1, description="return items after this index (-1: from the first)")] = -1,
    limit: Annotated[int | None, Parameter(ge=1, description="at most this many lines")] = None,
) -> Stream:
    """One line per item ``{"index", "item_id", "ok", "result" | "error"}``, as /v1/score/batch shapes items.

    While the job runs the lines stop before the first item without a result, so the last index received is a
    cursor: ask again with ``after`` set to it. Header ``X-Job-Status`` tells whether more lines will come.
    """
    services = services_of(request)
    jobs, _ = _jobs(services)
    caller = _caller(request, services)
    try:
        record = await jobs.store.get(_issued(job_id), caller.scope)
        blocks = jobs.store.result_lines(record, after=after, limit=limit)
        first = await anext(blocks, None)  # read before answering, so a Redis failure is a 503, not a cut stream
    except (RedisError, OSError) as error:
        raise _redis_down(services, error) from error

    async def body() -> AsyncIterator[bytes]:
        if first is not None:
            yield first
            async for block in blocks:
                yield block

    return Stream(body(), media_type="application/x-ndjson", headers={"X-Job-Status": record.status})


@delete("/jobs/{job_id:str}", status_code=200, summary="Cancel a job: items not yet started are not judged",
        responses=problem_responses(400, 401, 404, 422, 503), tags=["jobs"])  # fmt: skip
async def cancel_job(job_id: JobId, request: Request) -> JobStatus:
    """Cancel a queued or running job (a finished one is left as it is); its status afterwards."""
    services = services_of(request)
    jobs, _ = _jobs(services)
    caller = _caller(request, services)
    try:
        await jobs.store.cancel(_issued(job_id), caller.scope)
        record = await jobs.store.get(_issued(job_id), caller.scope)
    except (RedisError, OSError) as error:
        raise _redis_down(services, error) from error
    services.logger.info("job.cancelled", job_id=job_id, status=record.status)
    return job_status_view(record, time.time())
