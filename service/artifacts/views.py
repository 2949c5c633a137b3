"""The loaded calibration as the answers show it: everything about it (``GET /v1/calibration``, the full view; the
summary view is ``service.artifacts.overview``), what a reload or an activation changed, and either as a caller may
see it (file paths for the admin key only)."""

from __future__ import annotations

from pathlib import PurePath
from typing import TypeVar

import msgspec

from artifact.selection import selection_failure
from artifact.thresholds import GUARANTEE_MODES
from service.artifacts.registry import PRIMARY
from service.artifacts.snapshot import CalibrationSnapshot, coverage_target
from service.wire.calibration import (
    ArtifactCell,
    ArtifactInfo,
    ArtifactSummary,
    CalibrationEntryInfo,
    CalibrationInfo,
    CalibrationOverview,
    CalibrationSummary,
    DefaultMethodInfo,
    ReloadResponse,
)

__all__ = ["describe", "paths_for_caller", "summarise", "swap_response"]


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
