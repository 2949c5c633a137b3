"""``calibrate --labels``: a user's labelled JSON Lines files -> the validity study -> report + artifact.

The format is :mod:`artifact.labels` (one reader for the CLI and the service). Steps: read and check every file
together (a problem stops the run with ``file:line: field: problem``); one cell per (judge, prompt family,
criterion) with its own scale 1..K and the rows' groups; the validity study (:func:`offline.studies.conformal.validity.
run_validity_study`: per cell and input kind :func:`calibration.input_kinds.fit.fit_input_kind`, PAC thresholds at
delta = 0.05,
splits by group, the default chosen by cross-fitting) on those cells only, exactly as ``make calibrate`` calibrates
the shipped judges and as ``POST /v1/calibrations`` does; the report under ``--out`` (:mod:`offline.report.labelled`
plus ``conformal/validity.{json,md}``); the artifact holding only these cells
(:func:`offline.build.export.build_artifact` with the fits), whose ``data_hash`` is over the labelled files.

A cell whose items are too few for a finite threshold at some alpha (:func:`artifact.labels.min_items_for`; PAC
at delta = 0.05 needs 59 items at alpha 0.05, 29 at 0.10) is reported in ``warnings`` with the number needed; its
entries at those levels give the full scale (``threshold`` null), which the service answers ``escalate``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from artifact.input_kinds import FitKey, ModeFits
from artifact.labels import DEFAULT_SCALE, LabelRow, labelled_cells, min_items_for, read_labels
from artifact.thresholds import save_artifact
from calibration.errors import LabelsError
from offline.build.cell_data import JudgeCriterionData
from offline.build.export import build_artifact, code_version
from offline.build.input_kinds import fit_input_kinds
from offline.build.inputs.errors import DataError
from offline.build.modes import pair_modes
from offline.build.rules import export_label_rules, export_rules
from offline.report.labelled import write_labelled_report
from offline.studies.conformal.validity import (
    ALPHA_GRID,
    DEFAULT_DELTA,
    HEADLINE_ALPHA,
    run_validity_study,
    write_validity,
)

__all__ = ["LabelledRun", "calibrate_labels", "cell_data", "labels_hash", "load_label_files", "size_warnings"]

MIN_GROUPS = 2


@dataclass(frozen=True)
class LabelledRun:
    """What ``calibrate --labels`` wrote, and the cells and warnings behind it."""

    index: Path
    summary: Path
    thresholds: Path
    tables: tuple[Path, ...]
    figures: tuple[Path, ...]
    cells: tuple[tuple[str, str, str, int, int], ...]  # (judge, prompt_family, criterion, K, items)
    warnings: tuple[str, ...]


def load_label_files(paths: Sequence[Path], *, scale: int = DEFAULT_SCALE) -> list[LabelRow]:
    """Read and check the files together (artifact.labels rules); DataError names file, line and field."""
    chunks = []
    for path in paths:
        try:
            chunks.append((str(path), Path(path).read_bytes()))
        except FileNotFoundError:
            raise DataError(path, None, "file not found") from None
        except OSError as error:
            raise DataError(path, None, f"cannot read the file: {error.strerror or error}") from None
    try:
        return read_labels(chunks, default_scale=scale)
    except LabelsError as error:
        problem = f"{error.field}: {error.problem}" if error.field else error.problem
        raise DataError(error.source, error.line, problem) from None


def cell_data(rows: Sequence[LabelRow]) -> list[JudgeCriterionData]:
    """The studies' per-cell arrays (with groups and the cell's scale) from checked rows."""
    return [
        JudgeCriterionData(
            judge=cell.judge,
            prompt_family=cell.prompt_family,
            criterion=cell.criterion,
            item_ids=cell.item_ids,
            labels=cell.labels,
            judge_scores=cell.judge_scores,
            probabilities=cell.probabilities,
            n_answered=len(cell.item_ids),
            n_excluded=0,
            groups=cell.groups,
            n_labels=cell.n_labels,
            means=cell.means,
        )
        for cell in labelled_cells(rows)
    ]


def size_warnings(
    datasets: Iterable[JudgeCriterionData], alphas: Sequence[float], delta: float | None = DEFAULT_DELTA
) -> list[str]:
    """One line per cell with levels whose threshold cannot be finite on all its items (fewer than
    ``min_items_for(alpha, delta)``), naming the smallest such level's need and the levels that are fine."""
    lines = []
    for data in datasets:
        n = len(data.item_ids)
        short = [a for a in sorted(alphas) if n < min_items_for(a, delta)]
        if short:
            fine = [a for a in sorted(alphas) if a not in short]
            where = f"{data.judge} / {data.prompt_family} / {data.criterion}"
            rule = "marginal" if delta is None else f"PAC at delta={delta}"
            lines.append(
                f"{where}: {n} labelled items: alpha={short[0]} needs at least {min_items_for(short[0], delta)} "
                f"({rule}); at alpha {short[0]}..{short[-1]} the sets are the full scale (escalate)"
                + (f"; finite from alpha={fine[0]}" if fine else "")
                + f"; held-out figures use about half the items ({n // 2})"
            )
    return lines


def labels_hash(paths: Sequence[Path]) -> str:
    """sha256 over (file name, NUL, size, NUL, bytes) of each labelled file, in the order given."""
    digest = hashlib.sha256()
    for path in paths:
        data = Path(path).read_bytes()
        digest.update(Path(path).name.encode() + b"\0" + str(len(data)).encode() + b"\0")
        digest.update(data)
    return digest.hexdigest()


def calibrate_labels(
    paths: Sequence[Path],
    *,
    out_dir: Path,
    thresholds_path: Path,
    scale: int = DEFAULT_SCALE,
    n_splits: int = 20,
    seed: int = 0,
    alphas: Sequence[float] = ALPHA_GRID,
    delta: float | None = DEFAULT_DELTA,
    progress: Callable[[Iterable], Iterable] | None = None,
) -> LabelledRun:
    """Labelled files -> validity study -> report under ``out_dir`` -> artifact at ``thresholds_path`` (module
    rules)."""
    rows = load_label_files(paths, scale=scale)
    datasets = cell_data(rows)
    for d in datasets:
        groups = len(set(d.groups or ()))
        if groups < MIN_GROUPS or len(d.item_ids) < 4:
            raise DataError(
                paths[0],
                None,
                f"cell {d.judge} / {d.prompt_family} / {d.criterion} has "
                f"{len(d.item_ids)} labelled items in {groups} group(s): held-out figures split by group, "
                f"so at least {MIN_GROUPS} groups (documents or sources) and 4 items are needed",
            )
    warnings = size_warnings(datasets, alphas, delta)
    summary, fits = run_validity_study(
        datasets, n_splits=n_splits, seed=seed, delta=delta, alphas=alphas, progress=progress
    )
    # the expected mode's entries beside the pac ones (the service's default guarantee)
    expected = (
        None if delta is None else fit_input_kinds(datasets, n_splits=n_splits, seed=seed, delta=None, alphas=alphas)
    )
    both: Mapping[FitKey, ModeFits] = pair_modes(fits, expected)
    out = Path(out_dir)
    summary_json, summary_md = write_validity(summary, out)
    k_of = {(d.judge, d.prompt_family, d.criterion): d.n_labels for d in datasets}
    label_rules = export_label_rules(datasets)
    index, heldout_path, figure = write_labelled_report(
        out,
        fits,
        n_labels=k_of,
        warnings=warnings,
        headline_alpha=HEADLINE_ALPHA,
        thresholds=Path(thresholds_path),
        files=list(paths),
        label_rules=label_rules,
    )
    names = ", ".join(Path(p).name for p in paths)
    artifact = build_artifact(
        data_hash=labels_hash(paths),
        code_version=code_version(),
        fits=both,
        decision_rules=export_rules(datasets, seed=seed),
        label_rules=label_rules,
        source=f"offline calibrate --labels {names}: y* = human rounded to the nearest integer (halves up); per "
        f"(cell, input kind) calibration.input_kinds.fit.fit_input_kind: thresholds at delta={delta} fitted on all "
        f"labelled "
        f"items with seed {seed}, held-out figures from {n_splits} seeded splits by group, default method by "
        "cross-fitting by group",
    )
    save_artifact(artifact, thresholds_path)
    Path(thresholds_path).chmod(0o644)
    return LabelledRun(
        index=index,
        summary=summary_json,
        thresholds=Path(thresholds_path),
        tables=(summary_md, heldout_path),
        figures=(figure,),
        warnings=tuple(warnings),
        cells=tuple((d.judge, d.prompt_family, d.criterion, d.n_labels, len(d.item_ids)) for d in datasets),
    )
