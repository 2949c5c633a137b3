"""GET /v1/calibration and POST /v1/calibration/reload (admin key)."""

from __future__ import annotations

from pathlib import PurePath
from typing import Annotated, TypeVar

import msgspec
from litestar import Request, get, post
from litestar.params import JSONBody, Parameter

from artifact.selection import selection_failure
from artifact.thresholds import GUARANTEE_MODES
from service.artifacts.overview import overview
from service.artifacts.registry import PRIMARY
from service.artifacts.snapshot import CalibrationSnapshot, coverage_target
from service.errors import CalibrationUnavailableError, InvalidRequestError
from service.http.auth import is_admin
from service.http.body import BODY_DECODER, BodyDecoder
from service.http.raw_bodies import OptionalBodyOperation
from service.http.services import problem_responses, require_admin_key, services_of
from service.wire.calibration import (
    ArtifactCell,
    ArtifactInfo,
    ArtifactSummary,
    CalibrationEntryInfo,
    CalibrationInfo,
    CalibrationOverview,
    CalibrationSummary,
    DefaultMethodInfo,
    ReloadRequest,
    ReloadResponse,
)

__all__ = ["VIEWS", "calibration_info", "describe", "paths_for_caller", "reload_calibration", "swap_response"]


def describe(snapshot: CalibrationSnapshot) -> CalibrationInfo:
    """Everything about a loaded artifact: provenance, the grid it covers and each entry's figures."""
    artifact, index = snapshot.artifact, snapshot.index
    defaults = {
        (d.judge, d.prompt_family, d.criterion, d.kind, mode): d.method
        for d in sorted(artifact.default_methods, key=lambda d: d.mode is not None)  # a moded default wins
        for mode in ((d.mode,) if d.mode is not None else GUARANTEE_MODES)
    }
    owners = snapshot.artifacts.owners
    entries = [
        CalibrationEntryInfo(
            judge=e.judge,
            prompt_family=e.prompt_family,
            criterion=e.criterion,
            method=e.method,
            alpha=e.alpha,
            coverage_target=coverage_target(e.alpha),
            n_cal=e.fitted.n_cal,
            heldout_coverage=e.heldout_coverage,
            heldout_coverage_std=e.heldout_coverage_std,
            heldout_set_size=e.heldout_set_size,
            n_splits=e.n_splits,
            is_default=defaults.get((e.judge, e.prompt_family, e.criterion, e.kind, e.mode)) == e.method,
            artifact=owners.get((e.judge, e.prompt_family, e.criterion), PRIMARY),
            n_labels=e.fitted.n_labels,
            input_kind=e.kind,
            heldout_coverage_p5=e.heldout_coverage_p5,
            empty_share=e.empty_share,
            accept_share=e.accept_share,
            review_share=e.review_share,
            escalate_share=e.escalate_share,
            accept_accuracy=e.accept_accuracy,
            mode="expected" if e.mode == "expected" else "pac",
        )
        for e in artifact.entries
    ]
    return CalibrationInfo(
        calibration_id=snapshot.calibration_id,
        path=snapshot.path,
        loaded_at=snapshot.loaded_at,
        format_version=artifact.format_version,
        created_at=artifact.created_at,
        code_version=artifact.code_version,
        data_hash=artifact.data_hash,
        source=artifact.source,
        label_scale=list(artifact.label_scale),
        judges=index.judges(),
        prompt_families=sorted({e.prompt_family for e in artifact.entries}),
        criteria=sorted({e.criterion for e in artifact.entries}),
        methods=snapshot.methods_in_order(),
        levels=snapshot.levels(),
        n_entries=len(entries),
        entries=entries,
        default_methods=[
            DefaultMethodInfo(
                judge=d.judge,
                prompt_family=d.prompt_family,
                criterion=d.criterion,
                method=d.method,
                reason=d.reason,
                input_kind=d.kind,
                rule_failed=selection_failure(d) is not None,
                mode="expected" if d.mode == "expected" else "pac" if d.mode == "pac" else None,
            )
            for d in artifact.default_methods
        ],
        artifacts=_artifact_infos(snapshot),
        decision_rules=list(artifact.decision_rules),
        label_rules=list(artifact.label_rules),
    )


_View = TypeVar("_View", CalibrationInfo, CalibrationOverview)


def paths_for_caller(view: _View, admin: bool) -> _View:
    """``view`` as the caller may see it: the server's file paths for the admin key, else each file's name only."""
    if admin:
        return view
    artifacts = [msgspec.structs.replace(a, path=PurePath(a.path).name) for a in view.artifacts]
    return msgspec.structs.replace(view, path=PurePath(view.path).name, artifacts=artifacts)


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


def swap_response(
    previous: CalibrationSnapshot | None, snapshot: CalibrationSnapshot, name: str, warnings: list[str] | None = None
) -> ReloadResponse:
    """What loading artifact ``name`` changed: cells it added, cells its previous version owned that it keeps
    (replaced) and those it no longer has (removed), measured on the sets before and after; ``warnings`` as given."""
    loaded = snapshot.artifacts.get(name)
    before = {} if previous is None else previous.artifacts.owners
    cells = set(() if loaded is None else loaded.cells)
    owned_before = {cell for cell, owner in before.items() if owner == name}
    replaced = len(cells & owned_before)
    return ReloadResponse(
        previous_calibration_id=None if previous is None else previous.calibration_id,
        artifact=name,
        cells_added=len(cells) - replaced,
        cells_replaced=replaced,
        cells_removed=len(owned_before - cells),
        calibration=summarise(snapshot),
        warnings=list(warnings or ()),
    )


def summarise(snapshot: CalibrationSnapshot) -> CalibrationSummary:
    """What is loaded, in short: provenance of the merged view and one line per artifact."""
    artifact = snapshot.artifact
    return CalibrationSummary(
        calibration_id=snapshot.calibration_id,
        path=snapshot.path,
        loaded_at=snapshot.loaded_at,
        created_at=artifact.created_at,
        code_version=artifact.code_version,
        data_hash=artifact.data_hash,
        source=artifact.source,
        label_scale=list(artifact.label_scale),
        n_entries=len(artifact.entries),
        artifacts=[
            ArtifactSummary(
                name=m.name,
                calibration_id=m.calibration_id,
                path=m.path,
                n_cells=len(m.cells),
                n_entries=len(m.artifact.entries),
            )
            for m in snapshot.artifacts.members
        ],
    )


def _artifact_infos(snapshot: CalibrationSnapshot) -> list[ArtifactInfo]:
    infos = []
    for member in snapshot.artifacts.members:
        art = member.artifact
        defaults: dict[tuple[str, str, str], dict[str, str]] = {}
        for d in sorted(art.default_methods, key=lambda d: d.mode is not None):  # a moded default wins
            if d.mode in (None, "expected"):  # the default guarantee's
                defaults.setdefault((d.judge, d.prompt_family, d.criterion), {})[d.kind] = d.method
        infos.append(
            ArtifactInfo(
                name=member.name,
                calibration_id=member.calibration_id,
                path=member.path,
                loaded_at=member.loaded_at,
                created_at=art.created_at,
                code_version=art.code_version,
                data_hash=art.data_hash,
                source=art.source,
                label_scale=list(art.label_scale),
                n_entries=len(art.entries),
                cells=[
                    ArtifactCell(
                        judge=cell[0],
                        prompt_family=cell[1],
                        criterion=cell[2],
                        n_labels=snapshot.n_labels_for(cell),
                        methods=snapshot.methods(*cell),
                        levels=snapshot.levels_for(*cell),
                        default_method=defaults.get(cell, {}).get("score"),
                        default_methods=defaults.get(cell, {}),
                    )
                    for cell in member.cells
                ],
            )
        )
    return infos
