"""``calibrate --labels``: a user's labelled JSON Lines files -> the conformal study -> report + artifact.

The format is :mod:`calibration.labels` (one reader for the CLI and the service). Steps: read and check every file
together (a problem stops the run with ``file:line: field: problem``); one cell per (judge, prompt family,
criterion) with its own scale 1..K; the conformal study (:func:`offline.studies.conformal.run_conformal_study`)
on those cells only; the report under ``--out`` (``index.md``, ``conformal/``); the artifact holding only these
cells (:func:`offline.export.build_artifact`), whose ``data_hash`` is over the labelled files.

A cell whose items are fewer than a finite threshold needs at some alpha (:func:`calibration.labels.min_items_for`:
19 at alpha 0.05, 9 at 0.10) is reported in ``warnings`` with the number needed; its entries at that alpha give
the full scale (``threshold`` null), which the service answers ``escalate``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from calibration.cell_calibration import calibrate_cell
from calibration.errors import LabelsError
from calibration.labels import DEFAULT_SCALE, LabelRow, labelled_cells, min_items_for, read_labels
from calibration.thresholds import ThresholdsArtifact, save_artifact
from offline.data.errors import DataError
from offline.export import build_artifact, code_version
from offline.report import SUMMARY_FILES, write_summary
from offline.report.labelled import write_labelled_report
from offline.studies.conformal import ALPHAS, HEADLINE_ALPHA, PAPER_METHOD, JudgeCriterionData, run_conformal_study

__all__ = ["LabelledRun", "calibrate_labels", "cell_data", "labels_hash", "load_label_files", "size_warnings"]


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
    """Read and check the files together (calibration.labels rules); DataError names file, line and field."""
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
    """The study's per-cell arrays (with groups and the cell's scale) from checked rows."""
    return [
        JudgeCriterionData(
            judge=cell.judge, prompt_family=cell.prompt_family, criterion=cell.criterion, item_ids=cell.item_ids,
            labels=cell.labels, judge_scores=cell.judge_scores, probabilities=cell.probabilities,
            n_answered=len(cell.item_ids), n_excluded=0, groups=cell.groups, n_labels=cell.n_labels,
        )
        for cell in labelled_cells(rows)
    ]


def size_warnings(datasets: Iterable[JudgeCriterionData], alphas: Sequence[float]) -> list[str]:
    """One line per (cell, alpha) whose items are too few for a finite threshold, saying how many are needed.

    The artifact is fitted on all items (needs ``min_items_for(alpha)``); the held-out figures on half of them."""
    lines = []
    for data in datasets:
        n = len(data.item_ids)
        for alpha in alphas:
            need = min_items_for(alpha)
            if n < 2 * need:
                where = f"{data.judge} / {data.prompt_family} / {data.criterion}"
                lines.append(
                    f"{where}: {n} labelled items; alpha={alpha} needs at least {need} for a finite threshold "
                    f"(and {2 * need} for held-out figures on 50/50 splits)"
                    + ("; its sets are the full scale" if n < need else "")
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
    alphas: Sequence[float] = ALPHAS,
    progress: Callable[[Iterable], Iterable] | None = None,
) -> LabelledRun:
    """Labelled files -> study -> report under ``out_dir`` -> artifact at ``thresholds_path`` (module rules)."""
    rows = load_label_files(paths, scale=scale)
    datasets = cell_data(rows)
    warnings = size_warnings(datasets, alphas)
    too_small = [d for d in datasets if len(d.item_ids) < 4]
    if too_small:
        d = too_small[0]
        raise DataError(paths[0], None, f"cell {d.judge} / {d.prompt_family} / {d.criterion} has "
                        f"{len(d.item_ids)} labelled items: at least 4 are needed for calibration/test splits "
                        f"(and {min_items_for(min(alphas))} for a finite threshold at alpha={min(alphas)})")
    summary = run_conformal_study(datasets, alphas=alphas, n_splits=n_splits, seed=seed, progress=progress,
                                  methods=None)
    out = Path(out_dir)
    summary_path = write_summary(summary, out / SUMMARY_FILES["conformal"])
    headline = min(alphas, key=lambda a: (abs(a - HEADLINE_ALPHA), a))
    heldout = [calibrate_cell(cell, alphas=alphas, n_splits=n_splits, seed=seed, headline_alpha=headline)
               for cell in labelled_cells(rows)]
    defaults = {(d.judge, d.prompt_family, d.criterion): d.method for d in summary.default_methods}
    reasons = {(d.judge, d.prompt_family, d.criterion): d.reason for d in summary.default_methods}
    index, heldout_path, figure = write_labelled_report(
        out, heldout, defaults=defaults, reasons=reasons, warnings=warnings, headline_alpha=headline,
        thresholds=Path(thresholds_path), files=list(paths),
    )
    names = ", ".join(Path(p).name for p in paths)
    artifact: ThresholdsArtifact = build_artifact(
        datasets, summary, seed=seed, data_hash=labels_hash(paths), code_version=code_version(),
        source=f"offline calibrate --labels {names}: y* = human rounded to the nearest integer (halves up), fitted "
        f"on all labelled items with seed {seed}; held-out figures from {n_splits} seeded 50/50 splits; default "
        f"method per cell by the conformal study's rule ({PAPER_METHOD} when none qualifies)",
    )
    save_artifact(artifact, thresholds_path)
    Path(thresholds_path).chmod(0o644)
    return LabelledRun(
        index=index, summary=summary_path, thresholds=Path(thresholds_path), tables=(heldout_path,),
        figures=(figure,), warnings=tuple(warnings),
        cells=tuple((d.judge, d.prompt_family, d.criterion, d.n_labels, len(d.item_ids)) for d in datasets),
    )
