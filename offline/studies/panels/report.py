"""The panel study's outputs: markdown tables, the set-size figure, and the files written under ``conformal/``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from offline.build.panels import EXPORTED_PANEL
from offline.jsonfile import write_json
from offline.studies.panels.results import PanelStudy
from offline.studies.panels.study import FIGURE_FILE, JSON_FILE, MARKDOWN_FILE, defaults, headline

__all__ = [
    "figure",
    "markdown",
    "write_panel_study",
]


def markdown(study: PanelStudy) -> str:
    """The panel tables: the exported four-judge panel first, then every panel's default, leave-one-out per member."""
    target = 1 - study.alpha
    lines = [
        f"# Judge panels on SummEval (alpha = {study.alpha}, PAC delta = {study.delta}, {study.n_splits} splits by "
        f"document, seed {study.seed})",
        "",
        "Rules:",
        "",
        *[f"- **{k}**: {v}" for k, v in study.rules.items()],
        "",
        f"## The panel {{{', '.join(EXPORTED_PANEL)}}}",
        "",
        "| criterion | items | default | served coverage | min label coverage | served set size | best member | "
        "its set size | ratio |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    rows = headline(study)
    for row in rows:
        lines.append(
            f"| {row.criterion} | {row.n_items} | {row.method} | {row.served_coverage:.3f} | "
            f"{row.min_label_coverage:.3f} | {row.served_set_size:.2f} | {row.best_member} | "
            f"{row.best_member_set_size:.2f} | {row.ratio_to_best_member:.3f} |"
        )
    if rows:
        mean_ratio = float(np.mean([r.ratio_to_best_member for r in rows]))
        covered = all((r.served_coverage or 0) >= target - 0.01 for r in rows)
        lines += [
            "",
            f"Mean ratio over the criteria: **{mean_ratio:.3f}** (target <= 0.85); served coverage >= "
            f"{target - 0.01:.2f} on every criterion: **{'yes' if covered else 'no'}**.",
        ]
    if study.members_on_panel_items:
        lines += [
            "",
            "### The same comparison on the panel's own items (each member refitted on them)",
            "",
            "| criterion | panel served size | best member on these items | its kind | its served size | "
            "its coverage | ratio |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in rows:
            found = [m for m in study.members_on_panel_items if m.criterion == row.criterion]
            if found and row.served_set_size is not None:
                top = min(found, key=lambda m: m.served_set_size)
                lines.append(
                    f"| {row.criterion} | {row.served_set_size:.2f} | {top.member} | {top.kind} | "
                    f"{top.served_set_size:.2f} | {top.served_coverage:.3f} | "
                    f"{row.served_set_size / top.served_set_size:.3f} |"
                )
    lines += [
        "",
        "## Mean ratio to the best member by panel size (default method, served recipe)",
        "",
        "| panel size | panels | " + " | ".join(sorted({r.criterion for r in study.rows})) + " |",
        "|---|---|" + "---|" * len({r.criterion for r in study.rows}),
    ]
    criteria = sorted({r.criterion for r in study.rows})
    for size in sorted({len(r.members) for r in study.rows}):
        cells = []
        for criterion in criteria:
            ratios = [
                r.ratio_to_best_member
                for r in defaults(study)
                if len(r.members) == size and r.criterion == criterion and r.ratio_to_best_member is not None
            ]
            cells.append(f"{np.mean(ratios):.3f} (min {np.min(ratios):.3f})" if ratios else "n/a")
        n_panels = len({r.panel for r in study.rows if len(r.members) == size})
        lines.append(f"| {size} | {n_panels} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Which members add information (leave-one-out: mean served set size gained by keeping the member)",
        "",
        "| member | " + " | ".join(criteria) + " |",
        "|---|" + "---|" * len(criteria),
    ]
    for judge in study.judges:
        cells = []
        for criterion in criteria:
            gains = [r.gain for r in study.leave_one_out if r.dropped == judge and r.criterion == criterion]
            cells.append(f"{np.mean(gains):+.3f}" if gains else "n/a")
        lines.append(f"| {judge} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Every panel's default",
        "",
        "| panel | criterion | items | default | held-out coverage | served coverage | served size | "
        "accept / review / escalate | best member (size) | ratio |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in defaults(study):
        lines.append(
            f"| {row.panel} | {row.criterion} | {row.n_items} | {row.method} | {row.coverage:.3f} | "
            f"{row.served_coverage:.3f} | {row.served_set_size:.2f} | {row.accept_share:.0%} / "
            f"{row.review_share:.0%} / {row.escalate_share:.0%} | {row.best_member} "
            f"({row.best_member_set_size:.2f}) | {row.ratio_to_best_member:.3f} |"
        )
    return "\n".join(lines) + "\n"


def figure(study: PanelStudy) -> Figure:
    """Served set size / best member's against panel size, one panel of the figure per criterion."""
    criteria = sorted({r.criterion for r in study.rows})
    fig = Figure(figsize=(3.2 * max(1, len(criteria)), 3.6))
    for position, criterion in enumerate(criteria, start=1):
        axes = fig.add_subplot(1, max(1, len(criteria)), position)
        rows = [r for r in defaults(study) if r.criterion == criterion]
        sizes = np.array([len(r.members) for r in rows])
        ratios = np.array([r.ratio_to_best_member for r in rows], dtype=float)
        axes.scatter(sizes, ratios, s=10, alpha=0.5)
        levels = sorted(set(sizes.tolist()))
        axes.plot(levels, [ratios[sizes == s].mean() for s in levels], color="black", marker="o")
        axes.axhline(1.0, color="grey", linestyle="--", linewidth=0.8)
        axes.set_title(criterion)
        axes.set_xlabel("judges in the panel")
        if position == 1:
            axes.set_ylabel("set size / best member's")
    fig.suptitle(f"Panels at alpha = {study.alpha} (served recipe, unseen documents)")
    fig.subplots_adjust(top=0.80, bottom=0.18, wspace=0.35)
    return fig


def write_panel_study(study: PanelStudy, out: Path) -> tuple[Path, Path, Path]:
    """Write ``conformal/panels.json``, ``conformal/panels.md`` and the figure under ``out``."""
    json_path, md_path, png_path = out / JSON_FILE, out / MARKDOWN_FILE, out / FIGURE_FILE
    write_json(study, json_path)
    md_path.write_text(markdown(study))
    fig = figure(study)
    FigureCanvasAgg(fig)
    fig.savefig(png_path, dpi=120)
    return json_path, md_path, png_path
