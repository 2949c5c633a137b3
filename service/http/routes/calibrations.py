"""POST /v1/calibrations (admin), GET /v1/calibrations/{id} (admin), POST /v1/calibrations/{id}/activate (admin),
DELETE /v1/calibrations/{id} (admin): calibrate your own judge over HTTP (rules:
``service.jobs.calibration_jobs``)."""

from __future__ import annotations

from typing import Annotated

import anyio.to_thread
import msgspec
from litestar import Request, delete, get, post
from litestar.params import Parameter, PathParameter

from service.artifacts.views import swap_response
from service.errors import BadRequestError, UnsupportedMediaTypeError
from service.http.raw_bodies import LabelledRowsOperation
from service.http.services import problem_responses, require_admin_key, services_of
from service.jobs.calibration_jobs.view import job_info
from service.judging.rubrics import MAX_LABELS
from service.wire.calibration import (
    ArtifactNameQuery,
    CalibrationJobInfo,
    ReloadResponse,
)
from service.wire.labelled_rows import LABELS_MEDIA_TYPES

__all__ = [
    "activate_calibration",
    "calibration_job",
    "delete_calibration",
    "submit_calibration",
]

JobId = Annotated[str, PathParameter(description="the calibration job's id", max_length=64)]


@post(
    "/calibrations",
    status_code=202,
    guards=[require_admin_key],
    summary="Calibrate your own judge: a labelled JSON Lines body (artifact/labels.py) runs as a background job",
    responses=problem_responses(400, 401, 403, 413, 415, 422, 503),  # 503: the job queue's Redis does not answer
    tags=["calibration"],
    operation_class=LabelledRowsOperation,  # the body the handler reads itself (service.http.raw_bodies)
)
async def submit_calibration(
    request: Request,
    scale: Annotated[int, Parameter(ge=2, le=MAX_LABELS, description="K of rows without scale_max")] = 5,
    name: ArtifactNameQuery = "",
) -> CalibrationJobInfo:
    """Validate the whole body (422 naming line and field; nothing queued), then 202 with the job."""
    content_type = (request.headers.get("content-type") or "").partition(";")[0].strip().lower()
    if content_type not in LABELS_MEDIA_TYPES:
        raise UnsupportedMediaTypeError(
            f"send labelled JSON Lines as one of {', '.join(LABELS_MEDIA_TYPES)}; got {content_type or 'none'!r}"
        )
    body = await request.body()  # bounded by MAX_BODY_BYTES (413)
    data = await anyio.to_thread.run_sync(_rows_as_lines, body, content_type)  # off the event loop, as validation
    services = services_of(request)
    job = await services.calibrations.submit(
        data,
        scale=scale,
        name=name or None,
        snapshot=services.calibration.current,
        max_cell_rows=services.settings.limits.max_calibration_cell_rows,
        judges=services.judges,
    )
    services.logger.info("calibration.job_submitted", job=job.id, rows=job.n_rows, cells=len(job.cells_planned))
    return job_info(job)


def _rows_as_lines(body: bytes, content_type: str) -> bytes:
    """A JSON array of rows (``application/json`` starting with ``[``) as JSON Lines: row i is line i + 1."""
    if content_type != "application/json" or not body.lstrip().startswith(b"["):
        return body
    try:
        rows = msgspec.json.decode(body)
    except msgspec.DecodeError as error:
        raise BadRequestError(f"malformed JSON array of rows: {error}") from None
    except RecursionError:
        raise BadRequestError("the JSON is nested too deeply; a row nests at most a few levels") from None
    return b"\n".join(msgspec.json.encode(row) for row in rows)


@get(
    "/calibrations/{job_id:str}",
    guards=[require_admin_key],
    summary="A calibration job (admin key): progress; when done, the new cells with their held-out coverage and "
    "decision rates",
    responses=problem_responses(400, 401, 403, 404, 422, 503),  # 503: the job records' Redis does not answer
    tags=["calibration"],
)
async def calibration_job(request: Request, job_id: JobId) -> CalibrationJobInfo:
    """The job (404 when unknown)."""
    return job_info(await services_of(request).calibrations.get(job_id))


@post(
    "/calibrations/{job_id:str}/activate",
    status_code=200,
    guards=[require_admin_key],
    summary="Make a finished calibration live beside the other artifacts (409 if not done or a cell is taken)",
    responses=problem_responses(400, 401, 403, 404, 409, 422, 503),
    tags=["calibration"],
)
async def activate_calibration(request: Request, job_id: JobId) -> ReloadResponse:
    """Activate the job's artifact; answers like a reload (short summary)."""
    services = services_of(request)
    job, snapshot, previous = await services.calibrations.activate(job_id, services.calibration)
    services.metrics.calibration_entries.set(len(snapshot.artifact.entries))
    services.logger.info("calibration.activated", job=job.id, artifact=job.name, calibration_id=snapshot.calibration_id)
    warnings = services.calibration.activated.not_kept(job.name)
    if warnings:  # neither ARTIFACTS_DIR nor the Redis hash: a restart forgets it
        services.logger.warning(
            "calibration.not_persisted", job=job.id, artifact=job.name, calibration_id=snapshot.calibration_id
        )
    return swap_response(previous, snapshot, job.name, warnings)


@delete(
    "/calibrations/{job_id:str}",
    status_code=204,
    guards=[require_admin_key],
    summary="Delete a calibration job and, if it was activated, remove its artifact",
    responses=problem_responses(400, 401, 403, 404, 409, 422, 503),
    tags=["calibration"],
)
async def delete_calibration(request: Request, job_id: JobId) -> None:
    """Forget the job; its cells answer uncalibrated again when it was live."""
    services = services_of(request)
    await services.calibrations.delete(job_id, services.calibration)
