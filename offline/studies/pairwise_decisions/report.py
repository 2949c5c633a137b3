"""The pairwise certified-decisions study's outputs: the accept-vs-agreement figure, the summary files under
``pairwise_decisions/`` (``summary.json``, the modes table ``modes.md``) and the lines the command prints.
"""

from __future__ import annotations

from pathlib import Path

from calibration.decisions.pairwise import (
    BOUNDS,
)
from offline.jsonfile import write_json
from offline.studies.pairwise_decisions.results import ModeRow, PairwiseDecisionSummary
from offline.studies.pairwise_decisions.study import FIGURE_FILE, JSON_FILE

MODES_FILE = "pairwise_decisions/modes.md"

__all__ = [
    "MODES_FILE",
    "mode_lines",
    "print_lines",
    "write_pairwise_decisions",
]


def _figure(summary: PairwiseDecisionSummary, path: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    names = list(summary.datasets)
    figure = Figure(figsize=(5.2 * len(names), 4.4))
    for k, name in enumerate(names):
        ax = figure.add_subplot(1, len(names), k + 1)
        for k_source, source in enumerate(summary.datasets[name]["sources"]):
            color = f"C{k_source}"
            for bound, marker in (("group_betting", "o"), ("pair_binomial", "x")):
                pts = [
                    r
                    for r in summary.rows
                    if r.dataset == name
                    and r.source == source
                    and r.bound == bound
                    and r.ties == "exclude"
                    and r.agreement is not None
                ]
                if pts:
                    agreement = [r.agreement for r in pts if r.agreement is not None]  # pts hold no None
                    ax.plot(
                        [r.accept_share for r in pts],
                        agreement,
                        marker=marker,
                        color=color,
                        linestyle="-" if bound == "group_betting" else ":",
                        label=f"{source} ({'group bound' if bound == 'group_betting' else 'pair CP'})",
                    )
                    for r in pts:
                        ax.annotate(
                            f"{r.alpha:g}",
                            (r.accept_share, r.agreement),
                            fontsize=6,
                            color=color,
                            xytext=(3, 3),
                            textcoords="offset points",
                        )
        for alpha in summary.alphas:
            ax.axhline(1 - alpha, color="grey", linewidth=0.6, linestyle="--")
        ax.set_xlim(0, 1)
        ax.set_ylim(0.5, 1.0)
        ax.set_xlabel("accept share (held-out)")
        ax.set_ylabel("human agreement among accepted")
        ax.set_title(
            f"{name}: held-out, {summary.n_splits} splits; points labelled by alpha (dashed: 1 - alpha)", fontsize=9
        )
        ax.legend(fontsize=6, loc="lower left")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(figure)
    figure.savefig(path, dpi=110, format="png")
    return path


def _mode_cell(row: ModeRow | None) -> str:
    if row is None:
        return "-"
    return f"{row.accept_share:.3f} / {row.disagreement_mean:.3f} / {row.share_nothing_accepted:.2f}"


def mode_lines(summary: PairwiseDecisionSummary) -> list[str]:
    """The modes table (Markdown): per dataset, source and alpha, accept share / mean disagreement among accepted
    / share of calibrations accepting nothing, expected beside pac."""
    if not summary.modes:
        return []
    lines = [
        f"# Pairwise decisions: expected vs pac mode ({summary.n_splits} splits by group, seed {summary.seed}, "
        "human ties excluded)",
        "",
        "Each cell: mean accept share (held-out pairs) / mean disagreement with the human majority among accepted "
        "held-out pairs (a split accepting nothing counts 0) / share of calibrations accepting nothing. Expected "
        "mode's unit: Vicuna80 question, Arena battle; pac: the group bound at delta "
        f"{summary.delta:g}.",
        "",
    ]
    for name in summary.datasets:
        lines += [f"## {name}", ""]
        header = "| source | " + " | ".join(f"{m} a={a:.2f}" for a in summary.alphas for m in ("expected", "pac"))
        lines += [header + " |", "|---" * (1 + 2 * len(summary.alphas)) + "|"]
        for source in summary.datasets[name]["sources"]:
            cells = [
                _mode_cell(
                    next(
                        (
                            r
                            for r in summary.modes
                            if r.dataset == name and r.source == source and r.mode == mode and r.alpha == alpha
                        ),
                        None,
                    )
                )
                for alpha in summary.alphas
                for mode in ("expected", "pac")
            ]
            lines.append(f"| {source} | " + " | ".join(cells) + " |")
        lines.append("")
    check = summary.done_when.get("modes", {})
    for mode in ("expected", "pac"):
        d = check.get(mode)
        if d:
            lines.append(
                f"- target ({check['check']}), {mode}: accept {d['accept_share']:.3f}, mean disagreement "
                f"{d['disagreement_mean']:.3f}, nothing accepted in {d['share_nothing_accepted']:.2f} of "
                f"calibrations -> {'met' if d['met'] else 'not met'}"
            )
    return lines


def write_pairwise_decisions(summary: PairwiseDecisionSummary, out: Path) -> list[Path]:
    """``<out>/pairwise_decisions/summary.json`` (indented), the accept-vs-agreement PNG and the modes table."""
    paths = [write_json(summary, out / JSON_FILE), _figure(summary, out / FIGURE_FILE)]
    lines = mode_lines(summary)
    if lines:
        path = out / MODES_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
        paths.append(path)
    return paths


def _pct(value: float | None) -> str:
    return "   -  " if value is None else f"{value:6.3f}"


def print_lines(summary: PairwiseDecisionSummary) -> list[str]:
    """The console table: accept share / agreement among accepted per dataset, source and alpha, both bounds
    (ties excluded), then the validity simulation and the done-when check."""
    lines = [
        f"held-out accept share / human agreement among accepted ({summary.n_splits} splits by group, "
        f"delta {summary.delta}, human ties excluded)"
    ]
    header = "".join(f"   alpha {a:.2f} pair CP    alpha {a:.2f} group  " for a in summary.alphas)
    for name, info in summary.datasets.items():
        lines.append(f"{name:26s}{header}")
        for source in info["sources"]:
            cells = []
            for alpha in summary.alphas:
                for bound in BOUNDS[::-1]:
                    r = next(
                        r
                        for r in summary.rows
                        if r.dataset == name
                        and r.source == source
                        and r.alpha == alpha
                        and r.bound == bound
                        and r.ties == "exclude"
                    )
                    cells.append(f" {r.accept_share:6.3f} / {_pct(r.agreement)}")
            lines.append(f"{source:26s}" + "  ".join(cells))
    for bound in BOUNDS:
        sims = [r for r in summary.simulation if r.bound == bound]
        if sims:
            worst = max(sims, key=lambda r: r.failure_rate)
            lines.append(
                f"validity ({bound}): {sum(r.within_delta for r in sims)} of {len(sims)} cells fail in <= "
                f"delta + 2 MC se of draws; worst {worst.failure_rate:.3f} ({worst.dataset} {worst.source} "
                f"{worst.ties} alpha {worst.alpha})"
            )
    lines += [line for line in mode_lines(summary) if line.startswith(("|", "##", "- target"))]
    for bound in BOUNDS:
        d = summary.done_when.get(bound)
        if d:
            lines.append(
                f"done-when (Vicuna80 panel, alpha 0.20, {bound}): accept {d['accept_share']:.3f}, "
                f"agreement {_pct(d['agreement']).strip()} -> {'met' if d['met'] else 'not met'}"
            )
    return lines
