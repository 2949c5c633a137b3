"""POST /v1/calibrations (admin), GET /v1/calibrations/{id} (admin), POST /v1/calibrations/{id}/activate (admin),
DELETE /v1/calibrations/{id} (admin): calibrate your own judge over HTTP (rules:
``service.jobs.calibration_jobs``)."""

from __future__ import annotations

from typing import Annotated, Any

import anyio.to_thread
import msgspec
from litestar import Request, Response, delete, get, post
from litestar.openapi.spec import OpenAPIMediaType, OpenAPIType, RequestBody, Schema
from litestar.params import Parameter, PathParameter

from artifact.labels import CRITERION_PATTERN
from service.errors import BadRequestError, UnsupportedMediaTypeError
from service.http.routes.calibration import swap_response
from service.http.services import problem_responses, require_admin_key, services_of
from service.jobs.calibration_jobs.cells import MIN_CELL_ITEMS
from service.jobs.calibration_jobs.view import job_info
from service.judging.rubrics import MAX_LABELS
from service.wire.calibration import (
    ArtifactNameQuery,
    CalibrationJobInfo,
    ReloadResponse,
)

__all__ = [
    "activate_calibration",
    "calibration_job",
    "delete_calibration",
    "document_calibrations_openapi",
    "submit_calibration",
]

JobId = Annotated[str, PathParameter(description="the calibration job's id", max_length=64)]
LABELS_MEDIA_TYPES = ("application/x-ndjson", "application/jsonl", "application/json-lines", "application/json")
# The spec's example upload: the smallest one the service accepts (MIN_CELL_ITEMS rows in MIN_CELL_GROUPS groups),
# so a client that sends it (schemathesis does) gets the documented 202 and a job that finishes done.
_EXAMPLE_ROWS = [
    {
        "item_id": f"doc{d}/{part}",
        "criterion": "helpfulness",
        "judge": "my-judge",
        "human": human,
        "judge_score": score,
        "scale_max": 7,
        "group": f"doc{d}",
    }
    for d, part, human, score in (
        (1, "a", 5.5, 6),
        (1, "b", 3, 3),
        (2, "a", 6, 7),
        (2, "b", 2, 3),
        (3, "a", 4, 4),
        (3, "b", 7, 6),
        (4, "a", 1, 2),
        (4, "b", 5, 5),
    )
]
_EXAMPLE = msgspec.json.encode(_EXAMPLE_ROWS[0]).decode() + "\n"


@post(
    "/calibrations",
    status_code=202,
    guards=[require_admin_key],
    summary="Calibrate your own judge: a labelled JSON Lines body (artifact/labels.py) runs as a background job",
    responses=problem_responses(400, 401, 403, 413, 415, 422, 503),  # 503: the job queue's Redis does not answer
    tags=["calibration"],
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
async def delete_calibration(request: Request, job_id: JobId) -> Response[None]:
    """Forget the job; its cells answer uncalibrated again when it was live."""
    services = services_of(request)
    await services.calibrations.delete(job_id, services.calibration)
    return Response(None, status_code=204)


def _within_scale(k: int) -> Schema:
    """A row's values on the scale 1..k (human, judge_score, mean_of_samples, the log-prob keys)."""
    label = Schema(maximum=k)
    return Schema(
        properties={
            "human": label,
            "judge_score": label,
            "mean_of_samples": label,
            "judge_logprobs": Schema(property_names=Schema(enum=[str(n) for n in range(1, k + 1)])),
        }
    )


def _row_schema() -> Schema:
    """One labelled row as ``artifact.labels`` decodes it (unknown fields refused), with its own rule: a row's
    ``scale_max`` bounds its values. The rules between rows (distinct item_ids, one scale per criterion, enough items
    and groups per cell), between a row and the query (a row without ``scale_max`` is on the query's ``scale``) and
    ``document``/``input`` either/or (see below) are 422s the schema does not state."""
    text = Schema(type=OpenAPIType.STRING, min_length=1, pattern=r"\S")  # not blank
    name = Schema(type=OpenAPIType.STRING, min_length=1, max_length=200, pattern=r"\S")
    label = Schema(type=OpenAPIType.NUMBER, minimum=1, maximum=MAX_LABELS)
    return Schema(
        type=OpenAPIType.OBJECT,
        additional_properties=False,
        required=["item_id", "criterion", "human", "judge"],
        description="one labelled row: item_id, criterion, human, judge, judge_score and/or judge_logprobs or "
        "mean_of_samples; optional scale_max (bounds the row's values; without it the query's scale does), "
        "prompt_family, group, document/summary or input/output (not both of a pair) (artifact/labels.py)",
        properties={
            "item_id": text,
            "criterion": Schema(type=OpenAPIType.STRING, pattern=CRITERION_PATTERN.pattern),
            "judge": name,
            "human": label,
            "judge_score": Schema(type=OpenAPIType.INTEGER, minimum=1, maximum=MAX_LABELS),
            "judge_logprobs": Schema(
                type=OpenAPIType.OBJECT,
                min_properties=1,
                property_names=Schema(type=OpenAPIType.STRING, enum=[str(n) for n in range(1, MAX_LABELS + 1)]),
                additional_properties=Schema(type=OpenAPIType.NUMBER, maximum=0),
            ),
            "mean_of_samples": label,
            "scale_max": Schema(type=OpenAPIType.INTEGER, minimum=2, maximum=MAX_LABELS),
            "prompt_family": name,
            "group": text,
            "document": text,
            "summary": text,
            "input": text,
            "output": text,
        },
        any_of=[Schema(required=[name]) for name in ("judge_score", "judge_logprobs", "mean_of_samples")],
        # The either/or of document/input and summary/output is left to the description: with it, the schema's
        # cases outgrow what schemathesis 4.32's generator (jsonschema_rs) can canonicalise, and it gives up on the
        # operation (its fuzzing phase reports a schema error).
        all_of=[
            Schema(  # if the row's scale_max is k then its values lie within 1..k
                any_of=[
                    Schema(schema_not=Schema(required=["scale_max"], properties={"scale_max": Schema(const=k)})),
                    _within_scale(k),
                ]
            )
            for k in range(2, MAX_LABELS)
        ],
    )


def document_calibrations_openapi(schema_paths: Any) -> None:
    """Give POST /v1/calibrations its request body in the spec (the handler reads the raw body), POST
    /v1/calibration/reload its optional body, and the 204 of DELETE /v1/calibrations/{job_id} no content."""
    paths = schema_paths or {}
    reload = paths.get("/v1/calibration/reload")
    if reload is not None and reload.post is not None and isinstance(reload.post.request_body, RequestBody):
        reload.post.request_body.required = False  # no body: reload the current path (documented)
    deleting = paths.get("/v1/calibrations/{job_id}")
    if deleting is not None and deleting.delete is not None and deleting.delete.responses:
        no_content = deleting.delete.responses.get("204")
        if no_content is not None and hasattr(no_content, "content"):
            no_content.content = None
    path = paths.get("/v1/calibrations")
    if path is None or path.post is None:
        return
    row = _row_schema()
    path.post.request_body = RequestBody(
        required=True,
        description="labelled JSON Lines, one row per (judge, criterion, item); also accepted as "
        + ", ".join(LABELS_MEDIA_TYPES[1:])
        + "; as application/json also a JSON array of rows (row i is line i + 1)",
        content={
            # the JSON Lines example sits in the description: a client without a JSON Lines encoder (schemathesis)
            # would otherwise fail on an example it cannot send
            LABELS_MEDIA_TYPES[0]: OpenAPIMediaType(
                schema=Schema(type=None, description=f"{row.description}; e.g. {_EXAMPLE.strip()}")
            ),
            "application/json": OpenAPIMediaType(
                schema=Schema(type=OpenAPIType.ARRAY, items=row, min_items=MIN_CELL_ITEMS), example=_EXAMPLE_ROWS
            ),
        },
    )
