"""The report of ``calibrate --labels``: what the user's cells mean for their pipeline, then the figures behind it.

Written under the report folder: ``index.md`` (opens with "What this means for your pipeline"), ``pipeline/
heldout.json`` (every cell's held-out figures by group, :class:`calibration.cell_calibration.CellCalibration`
without entries), ``pipeline/coverage.png`` (held-out coverage and set size against alpha per cell, default method),
and ``conformal/summary.json`` from the conformal study (written by the caller).

A cell is flagged *almost always the full scale* when, with its default method at the headline alpha, at least half
of the held-out sets are the full scale 1..K or the mean set size is >= K - 0.5.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from calibration.cell_calibration import CellCalibration, HeldoutFigures
from offline.report.tables import fmt, markdown_table

__all__ = ["FULL_SCALE_SHARE", "full_scale_flag", "write_labelled_report"]

FULL_SCALE_SHARE = 0.5


def full_scale_flag(figures: HeldoutFigures, n_labels: int) -> bool:
    """True when the sets are (almost) always the whole scale (module rule)."""
    return figures.share_full_scale >= FULL_SCALE_SHARE or figures.set_size >= n_labels - 0.5


def _at(cell: CellCalibration, method: str, alpha: float) -> HeldoutFigures | None:
    return next((f for f in cell.figures if f.method == method and abs(f.alpha - alpha) < 1e-9), None)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"


def _pipeline(cells: Sequence[CellCalibration], defaults: dict[tuple[str, str, str], str], alpha: float) -> list[str]:
    lines = ["## What this means for your pipeline", "",
             f"Per cell, with its default method at α = {alpha} (target: the human label lies in the set for "
             f"{1 - alpha:.0%} of items), on **documents the calibration never saw** (held-out splits by `group`): "
             "of 100 new items, how many the service would accept (set of ≤ 2 labels), send to review, or escalate "
             "to a human, and how often an accepted set holds the human label.", ""]
    rows, flagged = [], []
    for cell in cells:
        method = defaults.get((cell.judge, cell.prompt_family, cell.criterion), cell.default.method)
        figures = _at(cell, method, alpha)
        if figures is None:
            rows.append([cell.judge, cell.prompt_family, cell.criterion, f"1..{cell.n_labels}", f"`{method}`",
                         "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "too few groups for held-out figures"])
            continue
        flag = full_scale_flag(figures, cell.n_labels)
        if flag:
            flagged.append(f"{cell.judge} / {cell.criterion}")
        rows.append([
            cell.judge, cell.prompt_family, cell.criterion, f"1..{cell.n_labels}", f"`{method}`",
            fmt(figures.coverage), fmt(figures.set_size, 2), _pct(figures.share_accept), _pct(figures.share_review),
            _pct(figures.share_escalate), _pct(figures.accept_accuracy),
            "**sets are (almost) always the full scale**" if flag else "",
        ])
    lines.append(markdown_table(
        ["judge", "prompt family", "criterion", "scale", "method", "coverage", "set size", "accept", "review",
         "escalate", "accepted sets holding the human label", "flag"], rows))
    if flagged:
        lines += [f"Flagged ({', '.join(flagged)}): the judge's verdict says little about the human label at this "
                  "level; expect escalation, collect more labels, try a larger alpha, or improve the prompt.", ""]
    lines += ["Pick α knowingly: a larger α gives smaller sets (more accepts) and a weaker guarantee. Every α is in "
              "the table below.", ""]
    return lines


def _figures_table(cells: Sequence[CellCalibration]) -> str:
    rows = []
    for cell in cells:
        for f in sorted(cell.figures, key=lambda f: (f.alpha, f.method)):
            rows.append([cell.judge, cell.criterion, fmt(f.alpha, 2), f"`{f.method}`", fmt(f.coverage),
                         fmt(f.coverage_std), fmt(f.set_size, 2), _pct(f.share_empty), _pct(f.share_full_scale),
                         _pct(f.share_accept), _pct(f.share_review), _pct(f.share_escalate),
                         _pct(f.accept_accuracy), fmt(f.min_label_coverage)])
    return markdown_table(["judge", "criterion", "α", "method", "coverage", "std", "set size", "empty", "full scale",
                           "accept", "review", "escalate", "accept holds label", "min label cov."], rows)


def _coverage_figure(cells: Sequence[CellCalibration], defaults: dict[tuple[str, str, str], str], path: Path) -> Path:
    figure = Figure(figsize=(9, 3.6), layout="constrained")
    cover, size = figure.subplots(1, 2)
    for cell in cells:
        method = defaults.get((cell.judge, cell.prompt_family, cell.criterion), cell.default.method)
        points = sorted((f.alpha, f.coverage, f.set_size / cell.n_labels) for f in cell.figures if f.method == method)
        if not points:
            continue
        label = f"{cell.judge} / {cell.criterion} ({method})"
        cover.plot([1 - a for a, _, _ in points], [c for _, c, _ in points], marker="o", label=label)
        size.plot([a for a, _, _ in points], [s for _, _, s in points], marker="o", label=label)
    cover.plot([0.6, 1.0], [0.6, 1.0], color="grey", linestyle="--", linewidth=0.8)
    cover.set_xlabel("1 − α (target)")
    cover.set_ylabel("held-out coverage (by group)")
    size.set_xlabel("α")
    size.set_ylabel("mean set size / K")
    size.legend(fontsize=6)
    figure.suptitle("Your cells on unseen documents (default method)", fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(figure)
    figure.savefig(path, dpi=110, format="png")
    return path


def write_labelled_report(
    out: Path,
    cells: Sequence[CellCalibration],
    *,
    defaults: dict[tuple[str, str, str], str],
    reasons: dict[tuple[str, str, str], str],
    warnings: Sequence[str],
    headline_alpha: float,
    thresholds: Path,
    files: Sequence[Path],
) -> tuple[Path, Path, Path]:
    """Write index.md, pipeline/heldout.json and pipeline/coverage.png; return their paths (module layout)."""
    heldout = out / "pipeline" / "heldout.json"
    heldout.parent.mkdir(parents=True, exist_ok=True)
    stripped = [msgspec.structs.replace(cell, entries=[]) for cell in cells]
    heldout.write_bytes(msgspec.json.format(msgspec.json.encode(stripped), indent=1) + b"\n")
    figure = _coverage_figure(cells, defaults, out / "pipeline" / "coverage.png")
    lines = ["# Calibration report — your labelled data", "",
             f"Labelled files: {', '.join(f'`{p}`' for p in files)}. Artifact (only these cells): `{thresholds}`; "
             "activate it with `POST /v1/calibration/reload` and a `name`, or by pointing `THRESHOLDS_PATH` at it.", ""]
    lines += _pipeline(cells, defaults, headline_alpha)
    if warnings:
        lines += ["## Too few labels", "", *(f"- {w}" for w in warnings), ""]
    lines += ["## Held-out figures by group, every α and method", "",
              "Means over seeded splits by `group` (all items of a document on one side); `empty` sets are "
              "escalated, never accepted.", "", _figures_table(cells),
              "![coverage and set size against alpha](pipeline/coverage.png)", "",
              "## Default method per cell (the artifact's), and why", "",
              markdown_table(["judge", "prompt family", "criterion", "method", "reason"],
                             [[*key, f"`{method}`", reasons.get(key, "")] for key, method in defaults.items()]),
              "The reasons come from the conformal study ([conformal/summary.json](conformal/summary.json)).", ""]
    index = out / "index.md"
    index.write_text("\n".join(lines))
    return index, heldout, figure
