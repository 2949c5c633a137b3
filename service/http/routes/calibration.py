"""GET /v1/calibration and POST /v1/calibration/reload (admin key)."""

from __future__ import annotations

from typing import Annotated

from litestar import Request, get, post
from litestar.params import JSONBody, Parameter

from service.artifacts.overview import overview
from service.artifacts.registry import PRIMARY
from service.artifacts.views import describe, paths_for_caller, swap_response
from service.errors import CalibrationUnavailableError, InvalidRequestError
from service.http.auth import is_admin
from service.http.body import BODY_DECODER, BodyDecoder
from service.http.raw_bodies import OptionalBodyOperation
from service.http.services import problem_responses, require_admin_key, services_of
from service.wire.calibration import (
    CalibrationInfo,
    CalibrationOverview,
    ReloadRequest,
    ReloadResponse,
)

__all__ = ["VIEWS", "calibration_info", "reload_calibration"]


VIEWS = ("full", "summary")
View = Annotated[
    str,
    Parameter(
        description="full: every entry with its evidence and every decision rule (megabytes for the shipped artifact); "
        "summary: one line per cell and input kind (served method per level, set size at DEFAULT_ALPHA, the "
        "decision rule's accept share at the default tolerance and accept_alpha), tens of kilobytes",
        schema_extra={"enum": list(VIEWS)},
    ),
]


@get(
    "/calibration",
    summary="The loaded calibration: judges, criteria, methods, levels, sizes, held-out coverage, provenance "
    "(view=summary: one line per cell)",
    responses=problem_responses(401, 422, 503),
    tags=["calibration"],
)
async def calibration_info(request: Request, view: View = "full") -> CalibrationInfo | CalibrationOverview:
    """Describe the artifact in use (``view``); 503 when none is loaded (the load error is in the detail)."""
    if view not in VIEWS:
        raise InvalidRequestError(f"unknown view {view!r}", allowed=list(VIEWS))
    services = services_of(request)
    snapshot = services.calibration.current
    admin = is_admin(services.settings, request.headers.get("authorization"))
    if snapshot is None:
        why = services.calibration.error if admin else "its load error is shown with the admin key"
        raise CalibrationUnavailableError(f"no thresholds artifact is loaded: {why}")
    if view == "summary":
        summary = overview(snapshot, default_alpha=services.settings.default_alpha)
        return paths_for_caller(summary, admin)
    return paths_for_caller(describe(snapshot), admin)


@post(
    "/calibration/reload",
    status_code=200,
    guards=[require_admin_key],
    summary="Load a thresholds artifact and swap it in atomically (admin key); a broken file is refused",
    responses=problem_responses(400, 401, 403, 409, 413, 415, 422, 503),
    tags=["calibration"],
    opt={BODY_DECODER: BodyDecoder(ReloadRequest | None)},
    operation_class=OptionalBodyOperation,  # no body: reload the current path
)
async def reload_calibration(request: Request, data: JSONBody[ReloadRequest | None] = None) -> ReloadResponse:
    """Load ``path`` (default: the current path), validate, swap; ArtifactError -> 422 and the old one stays."""
    services = services_of(request)
    path = data.path if data is not None else None
    name = data.name if data is not None and data.name is not None else PRIMARY
    try:
        previous, snapshot = await services.calibration.reload(path, name=None if name == PRIMARY else name)
    except Exception:
        services.metrics.reloads.inc("refused")
        raise
    services.metrics.reloads.inc("ok")
    services.metrics.calibration_entries.set(len(snapshot.artifact.entries))
    services.logger.info(
        "calibration.reloaded",
        calibration_id=snapshot.calibration_id,
        previous=None if previous is None else previous.calibration_id,
        entries=len(snapshot.artifact.entries),
    )
    warnings = [] if name == PRIMARY else services.calibration.activated.not_kept(name)
    if warnings:
        services.logger.warning("calibration.not_persisted", artifact=name, calibration_id=snapshot.calibration_id)
    return swap_response(previous, snapshot, name, warnings)
