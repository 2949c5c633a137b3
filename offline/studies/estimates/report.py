"""The estimates study's outputs: SummEval gains, the markdown tables (SummEval and Arena), the figures, and the
files written under ``estimates/``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from offline.jsonfile import write_json
from offline.studies.estimates.arena import INTERVAL_ALPHA
from offline.studies.estimates.results import EstimatesStudy, SummEvalRow
from offline.studies.estimates.study import JSON_FILE, MARKDOWN_FILE
from offline.studies.estimates.summeval import METHODS

__all__ = [
    "markdown",
    "summeval_gains",
    "write_estimates_study",
]


def _summeval_summary(rows: Sequence[SummEvalRow]) -> dict[tuple[str, str, int, str], tuple[float, float, float]]:
    """(judge, criterion, n, method) -> (mean coverage over systems, min coverage, mean width)."""
    groups: dict[tuple[str, str, int, str], list[SummEvalRow]] = {}
    for row in rows:
        groups.setdefault((row.judge, row.criterion, row.n, row.method), []).append(row)
    return {
        key: (
            float(np.mean([r.coverage for r in g])),
            float(min(r.coverage for r in g)),
            float(np.mean([r.mean_width for r in g])),
        )
        for key, g in groups.items()
    }


def summeval_gains(rows: Sequence[SummEvalRow]) -> dict[tuple[str, str, int], float]:
    """(judge, criterion, n) -> PPI++'s effective sample gain averaged over systems (see RULES)."""
    widths = {(r.judge, r.criterion, r.system, r.n, r.method): r.mean_width for r in rows}
    gains: dict[tuple[str, str, int], list[float]] = {}
    for (judge, criterion, system, n, method), width in widths.items():
        if method == "ppi++" and width > 0:
            gains.setdefault((judge, criterion, n), []).append(
                (widths[(judge, criterion, system, n, "classical")] / width) ** 2
            )
    return {key: float(np.mean(v)) for key, v in gains.items()}


def markdown(study: EstimatesStudy) -> str:
    """The study's tables: SummEval coverage and width per method and n, gains, Arena coverage and set size."""
    lines = [
        "# Estimates and rankings with valid intervals",
        "",
        f"Seed {study.seed}. Rules:",
        "",
        *[f"- **{k}**: {v}" for k, v in study.rules.items()],
        "",
    ]
    if study.summeval:
        summary = _summeval_summary(study.summeval)
        ns = sorted({r.n for r in study.summeval})
        lines += [
            f"## SummEval: coverage of the system mean at 1 - alpha = {1 - study.alpha:.2f}",
            "",
            f"{study.summeval_resamples} resamples per (system, n); betting on the first "
            f"{study.betting_resamples} (served: all). Cells: mean coverage over the 16 systems / lowest "
            "system / mean width.",
            "",
            "| judge | criterion | n | " + " | ".join(METHODS) + " |",
            "|---|---|---|" + "---|" * len(METHODS),
        ]
        for judge, criterion in sorted({(r.judge, r.criterion) for r in study.summeval}):
            for n in ns:
                cells = []
                for method in METHODS:
                    mean, low, width = summary[(judge, criterion, n, method)]
                    cells.append(f"{mean:.3f} / {low:.3f} / {width:.2f}")
                lines.append(f"| {judge} | {criterion} | {n} | " + " | ".join(cells) + " |")
        served_min = min(v[1] for k, v in summary.items() if k[3] == "served")
        lines += [
            "",
            f"Lowest served coverage of any (judge, criterion, system, n): **{served_min:.3f}**.",
            "",
            "## SummEval: PPI++ effective sample gain (labels the judge is worth per human label)",
            "",
            "| judge | criterion | " + " | ".join(f"n = {n}" for n in ns) + " |",
            "|---|---|" + "---|" * len(ns),
        ]
        gains = summeval_gains(study.summeval)
        for judge, criterion in sorted({(r.judge, r.criterion) for r in study.summeval}):
            lines.append(
                f"| {judge} | {criterion} | " + " | ".join(f"{gains[(judge, criterion, n)]:.2f}" for n in ns) + " |"
            )
        lines.append("")
    if study.arena:
        lines += _arena_markdown(study)
    return "\n".join(lines) + "\n"


def _arena_markdown(study: EstimatesStudy) -> list[str]:
    lines = [
        f"## Arena PPR: rank-set coverage of the all-human ranking ({study.arena_iterations} iterations)",
        "",
        "Cells: joint coverage / mean rank-set size. The paper's n and alpha grid; one table per construction.",
        "",
    ]
    by_key = {(r.judge, r.method, r.construction, r.n, r.alpha): r for r in study.arena}
    ns = sorted({r.n for r in study.arena})
    alphas = sorted({r.alpha for r in study.arena})
    judges = ["-"] + sorted({r.judge for r in study.arena if r.method == "ppr"})
    for construction in ("ellipsoid", "bonferroni"):
        lines += [
            f"### {construction}",
            "",
            "| method | n | " + " | ".join(f"alpha {a:g}" for a in alphas) + " |",
            "|---|---|" + "---|" * len(alphas),
        ]
        for judge in judges:
            method = "human only" if judge == "-" else "ppr"
            for n in ns:
                cells = [by_key[(judge, method, construction, n, a)] for a in alphas]
                lines.append(
                    f"| {'human only' if judge == '-' else 'PPR ' + judge} | {n} | "
                    + " | ".join(f"{c.coverage:.3f} / {c.mean_set_size:.2f}" for c in cells)
                    + " |"
                )
        lines.append("")
        for judge in judges[1:]:
            worst = min(
                (by_key[(judge, "ppr", construction, n, a)].coverage - (1 - a), n, a) for n in ns for a in alphas
            )
            smaller = sum(
                by_key[(judge, "ppr", construction, n, a)].mean_set_size
                < by_key[("-", "human only", construction, n, a)].mean_set_size
                for n in ns
                for a in alphas
            )
            lines.append(
                f"- {judge}: worst coverage - (1 - alpha) = {worst[0]:+.3f} (n = {worst[1]}, alpha = "
                f"{worst[2]:g}); set smaller than human-only in {smaller} of {len(ns) * len(alphas)} "
                "(n, alpha)"
            )
        lines.append("")
    lines += [
        f"### Win-rate intervals at alpha = {INTERVAL_ALPHA} (mean over models)",
        "",
        "| judge | n | PPR coverage | human-only coverage | PPR width | human-only width | effective sample "
        "gain | mean lambda |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in sorted(study.arena_intervals, key=lambda r: (r.judge, r.n)):
        lines.append(
            f"| {row.judge} | {row.n} | {row.ppr_coverage:.3f} | {row.human_coverage:.3f} | "
            f"{row.ppr_mean_width:.3f} | {row.human_mean_width:.3f} | {row.effective_sample_gain:.2f} | "
            f"{row.mean_lambda:.2f} |"
        )
    return lines


def _figures(study: EstimatesStudy, out: Path) -> list[Path]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    paths = []
    if study.summeval:
        summary = _summeval_summary(study.summeval)
        criteria = sorted({r.criterion for r in study.summeval})
        ns = sorted({r.n for r in study.summeval})
        for judge in sorted({r.judge for r in study.summeval}):
            figure = Figure(figsize=(4 * len(criteria), 6.5))
            axes = figure.subplots(2, len(criteria), squeeze=False)
            for col, criterion in enumerate(criteria):
                for method in METHODS:
                    axes[0][col].plot(
                        ns, [summary[(judge, criterion, n, method)][1] for n in ns], marker="o", label=method
                    )
                    axes[1][col].plot(
                        ns, [summary[(judge, criterion, n, method)][2] for n in ns], marker="o", label=method
                    )
                axes[0][col].axhline(1 - study.alpha, color="grey", linestyle=":")
                axes[0][col].set_title(f"{criterion}: lowest coverage over systems")
                axes[1][col].set_title(f"{criterion}: mean width")
                for ax in (axes[0][col], axes[1][col]):
                    ax.set_xscale("log")
                    ax.set_xlabel("human labels n")
            axes[0][0].legend(fontsize=8)
            figure.tight_layout()
            path = out / "estimates" / f"summeval_{judge}.png"
            paths.append(_save(figure, path, FigureCanvasAgg))
    if study.arena:
        by_key = {(r.judge, r.method, r.construction, r.n, r.alpha): r for r in study.arena}
        ns = sorted({r.n for r in study.arena})
        alphas = sorted({r.alpha for r in study.arena})
        judges = sorted({r.judge for r in study.arena if r.method == "ppr"})
        figure = Figure(figsize=(12, 4.5))
        size_ax, cov_ax = figure.subplots(1, 2)
        alpha = 0.05 if 0.05 in alphas else alphas[0]
        _human_and_ppr(
            size_ax, ns, judges, lambda who, method, n: by_key[(who, method, "ellipsoid", n, alpha)].mean_set_size
        )
        size_ax.set(xlabel="human votes n", ylabel="mean rank-set size", title=f"rank-set size, alpha = {alpha:g}")
        size_ax.legend(fontsize=8)
        n_mid = 1000 if 1000 in ns else ns[len(ns) // 2]
        cov_ax.plot(alphas, [1 - a for a in alphas], color="grey", linestyle=":", label="1 - alpha")
        _human_and_ppr(
            cov_ax, alphas, judges, lambda who, method, a: by_key[(who, method, "ellipsoid", n_mid, a)].coverage
        )
        cov_ax.set(xlabel="alpha", ylabel="joint coverage of the true ranking", title=f"coverage, n = {n_mid}")
        cov_ax.legend(fontsize=8)
        figure.tight_layout()
        paths.append(_save(figure, out / "estimates" / "arena_rank_sets.png", FigureCanvasAgg))
    return paths


def _human_and_ppr(axis: Any, xs: list, judges: list[str], value: Callable[[str, str, Any], float]) -> None:
    """On ``axis`` over ``xs``: the human-only line (black, dashed, on top), then one PPR line per judge;
    ``value(judge or "-", method, x)`` reads the row's figure."""
    axis.plot(
        xs,
        [value("-", "human only", x) for x in xs],
        marker="s",
        color="black",
        linestyle="--",
        zorder=5,
        label="human only",
    )
    for judge in judges:
        axis.plot(xs, [value(judge, "ppr", x) for x in xs], marker="o", label=f"PPR {judge}")


def _save(figure: object, path: Path, canvas: type) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    canvas(figure)
    figure.savefig(path, dpi=110, format="png")  # type: ignore[attr-defined]
    return path


def write_estimates_study(study: EstimatesStudy, out: Path) -> list[Path]:
    """Write the JSON, the Markdown tables and the figures under ``out/estimates/``."""
    json_path, md_path = out / JSON_FILE, out / MARKDOWN_FILE
    write_json(study, json_path)
    md_path.write_text(markdown(study))
    return [json_path, md_path, *_figures(study, out)]
