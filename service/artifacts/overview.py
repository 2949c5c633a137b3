"""The loaded calibration in short (GET /v1/calibration?view=summary): one line per cell, input kind and guarantee
mode (``expected`` and ``pac``: each line read from that mode's entries and decision rows only).

A line says what serves the cell (``artifact.serving.choose_entry`` at each calibrated level, for a verdict of that
input kind alone, grouped by method), the held-out mean set size and coverage of the entry served at the default
alpha, whether the default method's selection rule failed, and what the cell's certified decision rule
(``calibration.decisions.rule``) accepts at /v1/score's defaults: ``tolerance`` 2 and ``accept_alpha`` = the default
alpha, read as ``decide`` reads it (the row with the largest calibrated accept_alpha <= the asked one). Everything is
read from the artifact; nothing is re-estimated. The full view (``describe``) has every entry and rule.
"""

from __future__ import annotations

import msgspec

from artifact.serving import LevelRefused, ServedEntry, choose_entry
from calibration.decisions.rule import certification_at
from calibration.per_label.rule import LabelRule
from service.artifacts.registry import PRIMARY
from service.artifacts.snapshot import CalibrationSnapshot
from service.wire.calibration import ArtifactSummary, CalibrationOverview, CellOverview, ServedLevels
from service.wire.score import ScoreRequest

__all__ = ["DEFAULT_TOLERANCE", "overview"]

# /v1/score's default tolerance (ScoreRequest.tolerance), read from the wire type so the two cannot drift.
DEFAULT_TOLERANCE: int = next(f.default for f in msgspec.structs.fields(ScoreRequest) if f.name == "tolerance")


def _served(
    snapshot: CalibrationSnapshot, cell: tuple[str, str, str], kind: str, alpha: float, mode: str
) -> ServedEntry | None:
    """The entry of ``mode`` serving a verdict of ``kind`` alone at ``alpha``, or None when alpha is below every
    level."""
    try:
        served = choose_entry(snapshot.index_for(mode), cell, [kind], alpha)
    except LevelRefused:
        return None
    return served if isinstance(served, ServedEntry) else None


def _cell(
    snapshot: CalibrationSnapshot,
    cell: tuple[str, str, str],
    kind: str,
    mode: str,
    levels: list[float],
    *,
    alpha: float,
    tolerance: int,
) -> CellOverview:
    by_method: dict[str, list[float]] = {}
    for level in levels:
        served = _served(snapshot, cell, kind, level, mode)
        if served is not None:
            by_method.setdefault(served.method, []).append(served.alpha)
    at_default = _served(snapshot, cell, kind, alpha, mode)
    rule = snapshot.decision_rules.get((*cell, kind))
    row = None if rule is None else certification_at(rule, tolerance, alpha, mode)
    usable = row is not None and not row.rule_failed
    return CellOverview(
        judge=cell[0],
        prompt_family=cell[1],
        criterion=cell[2],
        input_kind=kind,
        mode="expected" if mode == "expected" else "pac",
        artifact=snapshot.artifacts.owners.get(cell, PRIMARY),
        n_labels=snapshot.n_labels_for(cell),
        served=[ServedLevels(method=method, alphas=alphas) for method, alphas in by_method.items()],
        selection_failed=snapshot.default_failures.get((*cell, kind, mode)) is not None,
        set_size=None if at_default is None else at_default.entry.heldout_set_size,
        coverage=None if at_default is None else at_default.entry.heldout_coverage,
        decision_rule=rule is not None,
        accept_alpha=None if row is None else row.accept_alpha,
        accept_share=row.accept_share if usable and row is not None else None,
        certified_error=row.certified_error if usable and row is not None else None,
        certification_failed=row is not None and row.rule_failed,
    )


def _label_line(snapshot: CalibrationSnapshot, rule: LabelRule) -> CellOverview:
    """A per-label rule's line: its levels, and its held-out figures on its own file (calibration.per_label.summary)."""
    cell = (rule.judge, rule.prompt_family, rule.criterion)
    figures = rule.summary
    return CellOverview(
        judge=rule.judge,
        prompt_family=rule.prompt_family,
        criterion=rule.criterion,
        input_kind=rule.input_kind,
        mode="per_label",
        artifact=snapshot.artifacts.owners.get(cell, PRIMARY),
        n_labels=rule.n_labels,
        served=[ServedLevels(method="per_label_intervals", alphas=[row.alpha for row in rule.levels])],
        selection_failed=False,
        set_size=None if figures is None else figures.set_size,
        coverage=None,
        decision_rule=True,
        accept_alpha=None if figures is None else figures.alpha,
        accept_share=None if figures is None else figures.accept_share,
        certified_error=None,
        certification_failed=False,
        skilled=rule.skill.skilled,
    )


def overview(
    snapshot: CalibrationSnapshot,
    *,
    default_alpha: float,
    tolerance: int = DEFAULT_TOLERANCE,
) -> CalibrationOverview:
    """The summary of ``snapshot`` read at ``default_alpha`` and ``tolerance`` (a default's failed selection from the
    snapshot's ``default_failures``, artifact.selection)."""
    key = ("overview", default_alpha, tolerance)
    known = snapshot.memo.get(key)
    if isinstance(known, CalibrationOverview):
        return known
    artifact = snapshot.artifact
    levels: dict[tuple[str, str, str, str, str], set[float]] = {}
    for e in artifact.entries:
        levels.setdefault((e.judge, e.prompt_family, e.criterion, e.kind, e.mode), set()).add(e.alpha)
    lines = [
        _cell(
            snapshot,
            (judge, family, criterion),
            kind,
            mode,
            sorted(levels[judge, family, criterion, kind, mode]),
            alpha=default_alpha,
            tolerance=tolerance,
        )
        for judge, family, criterion, kind, mode in sorted(levels)
    ]
    lines += [_label_line(snapshot, rule) for _, rule in sorted(snapshot.label_rules.items())]
    summary = CalibrationOverview(
        view="summary",
        calibration_id=snapshot.calibration_id,
        path=snapshot.path,
        loaded_at=snapshot.loaded_at,
        format_version=artifact.format_version,
        created_at=artifact.created_at,
        code_version=artifact.code_version,
        data_hash=artifact.data_hash,
        source=artifact.source,
        label_scale=list(artifact.label_scale),
        n_entries=len(artifact.entries),
        levels=snapshot.levels(),
        default_alpha=default_alpha,
        tolerance=tolerance,
        accept_alpha=default_alpha,
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
        n_cells=len(lines),
        cells=lines,
    )
    snapshot.remember(key, summary)
    return summary
