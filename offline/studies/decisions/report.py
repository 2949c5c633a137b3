"""The certified-decisions study's outputs: its markdown tables, the operating curve and the score-vs-label
figure, written under ``decisions/``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from offline.build.cell_data import JudgeCriterionData
from offline.jsonfile import write_json
from offline.studies.decisions.cells import cell_input_kinds
from offline.studies.decisions.results import DecisionStudy
from offline.studies.decisions.study import (
    CURVE_ALPHAS,
    DIRECTORY,
    GATE,
    HEADLINE_ALPHA,
    HEADLINE_TOLERANCE,
    TABLE_ALPHAS,
    TOLERANCES,
)

__all__ = [
    "markdown",
    "write_decision_study",
]


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


def markdown(study: DecisionStudy) -> str:
    """The study's tables."""
    lines = [
        "# Certified decisions on unseen documents",
        "",
        f"{study.n_splits} splits by document, seed {study.seed}, delta {study.delta}. Rules:",
        "",
        *[f"- **{k}**: {v}" for k, v in study.rules.items()],
        "",
        "## Done-when figures (headline kind per cell)",
        "",
        "| bound | calibration documents | tolerance | accept_alpha | accept share, 8 log-prob cells | "
        "accept share, all cells | cells with mean error <= alpha | cells with share_ok >= 0.95 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for h in study.headlines:
        lines.append(
            f"| {h.bound} | {h.cal_fraction:.0%} | {h.tolerance} | {h.accept_alpha:g} | "
            f"{_fmt(h.logprob_mean_accept_share)} | {_fmt(h.all_mean_accept_share)} | "
            f"{h.cells_mean_error_ok} / {h.n_cells} | {h.cells_share_ok} / {h.n_cells} |"
        )
    for fraction in sorted({r.cal_fraction for r in study.rows}):
        for tolerance in TOLERANCES:
            for alpha in TABLE_ALPHAS:
                lines += [
                    "",
                    f"## tolerance {tolerance}, accept_alpha {alpha:g}, calibrate on {fraction:.0%} of the documents",
                    "",
                    "| judge | criterion | kind | bound | signal | accept share | mean error "
                    "(splits accepting) | pooled error | share of splits error <= alpha + 0.02 | "
                    "certified error | failed splits | why not accepted |",
                    "|---|---|---|---|---|---|---|---|---|---|---|---|",
                ]
                for r in study.rows:
                    if r.cal_fraction != fraction or r.tolerance != tolerance or abs(r.accept_alpha - alpha) > 1e-9:
                        continue
                    lines.append(
                        f"| {r.judge} | {r.criterion} | {r.kind}{' *' if r.headline else ''} | {r.bound} | "
                        f"{r.signal} | {r.mean_accept_share:.3f} | {_fmt(r.mean_error)} "
                        f"({r.splits_accepting}) | {_fmt(r.pooled_error)} | {r.share_ok:.2f} | "
                        f"{_fmt(r.mean_certified_error)} | {r.failed_splits} | {'; '.join(r.reasons)} |"
                    )
    lines += [
        "",
        f"## Quality gate tau = {GATE} (pass = point >= tau in a certified pass bin)",
        "",
        "| judge | criterion | kind | bound | accept_alpha | pass share | false passes among accepted | "
        "certified false-pass | failed splits | why not |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {g.judge} | {g.criterion} | {g.kind} | {g.bound} | {g.accept_alpha:g} | {g.mean_pass_share:.3f} | "
        f"{_fmt(g.pooled_false_pass)} | {_fmt(g.mean_certified_false_pass)} | {g.failed_splits} | "
        f"{'; '.join(g.reasons)} |"
        for g in study.gates
    ]
    if study.resampling:
        lines += [
            "",
            "## Document resampling on the real cells (50 documents per draw, tolerance 2)",
            "",
            "| judge | criterion | kind | bound | accept_alpha | draws | failure rate | limit (delta + MC) | "
            "mean accept share |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {r.judge} | {r.criterion} | {r.kind} | {r.bound} | {r.accept_alpha:g} | {r.draws} | "
            f"{r.failure_rate:.3f}{' **over**' if r.failure_rate > r.mc_limit else ''} | {r.mc_limit:.3f} | "
            f"{r.mean_accept_share:.3f} |"
            for r in study.resampling
        ]
    lines += [
        "",
        "## Per human label (never pooled; tolerance 2, accept_alpha 0.1)",
        "",
        "| judge | criterion | kind | bound | label | items per served half | certifiable | accept share | "
        "error among accepted |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.judge} | {r.criterion} | {r.kind} | {r.bound} | {r.label} | {r.items_per_split:.1f} | "
        f"{'yes' if r.certifiable else 'no'} | {_fmt(r.accept_share)} | {_fmt(r.error_among_accepted)} |"
        for r in study.labels
        if r.tolerance == HEADLINE_TOLERANCE and abs(r.accept_alpha - HEADLINE_ALPHA) < 1e-9
    ]
    return "\n".join(lines) + "\n"


def _curve(study: DecisionStudy, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(TOLERANCES), figsize=(6 * len(TOLERANCES), 8), squeeze=False)
    styles = {
        "betting": ("tab:blue", "document-level (betting)"),
        "clopper_pearson_items": ("tab:gray", "item-level CP (not group-valid)"),
    }
    for column, tolerance in enumerate(TOLERANCES):
        for bound, (color, name) in styles.items():
            for group, marker in (("probabilities", "o"), (None, "s")):
                rows = [
                    r
                    for r in study.rows
                    if r.bound == bound
                    and r.signal == "fit_error"
                    and r.headline
                    and r.cal_fraction == 0.5
                    and r.tolerance == tolerance
                    and (group is None or r.kind == group)
                ]
                alphas = sorted({r.accept_alpha for r in rows})
                if not alphas:
                    continue
                share = [np.mean([r.mean_accept_share for r in rows if r.accept_alpha == a]) for a in alphas]
                held = [
                    np.mean(
                        [r.pooled_error for r in rows if r.accept_alpha == a and r.pooled_error is not None] or [np.nan]
                    )
                    for a in alphas
                ]
                cert = [
                    np.mean(
                        [
                            r.mean_certified_error
                            for r in rows
                            if r.accept_alpha == a and r.mean_certified_error is not None
                        ]
                        or [np.nan]
                    )
                    for a in alphas
                ]
                label = f"{name}, {'log-prob cells' if group else 'all cells'}"
                axes[0][column].plot(
                    alphas, share, marker=marker, color=color, label=label, linestyle="-" if group else ":"
                )
                axes[1][column].plot(
                    alphas,
                    held,
                    marker=marker,
                    color=color,
                    linestyle="-" if group else ":",
                    label=f"held-out, {label}",
                )
                axes[1][column].plot(
                    alphas, cert, marker=marker, color=color, alpha=0.4, linestyle="--", label=f"certified, {label}"
                )
        axes[0][column].set_title(f"tolerance {tolerance}: accept share (calibrate on 50 documents)")
        axes[1][column].plot(CURVE_ALPHAS, CURVE_ALPHAS, color="red", linewidth=0.8, label="error = accept_alpha")
        axes[1][column].set_title(f"tolerance {tolerance}: error among accepted")
        for row in (0, 1):
            axes[row][column].set_xlabel("accept_alpha")
            axes[row][column].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _score_vs_label(datasets: Sequence[JudgeCriterionData], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = [c for data in datasets for c in cell_input_kinds(data) if c.headline]
    columns = 4
    rows = max(1, math.ceil(len(cells) / columns))
    fig, axes = plt.subplots(rows, columns, figsize=(3.2 * columns, 2.8 * rows), squeeze=False)
    for axis, cell in zip(axes.ravel(), cells, strict=False):
        k = cell.data.n_labels
        width = 1.0 if cell.feature == "score" else 0.25
        edges = np.arange(1 - width / 2, k + width / 2 + 1e-9, width)
        counts, _, _ = np.histogram2d(cell.data.features, cell.data.labels, bins=[edges, np.arange(0.5, k + 1)])
        axis.imshow(counts.T, origin="lower", aspect="auto", cmap="Blues", extent=(edges[0], edges[-1], 0.5, k + 0.5))
        axis.plot([1, k], [1, k], color="red", linewidth=0.6)
        axis.set_title(f"{cell.judge[:20]} {cell.criterion[:5]}", fontsize=7)
        axis.set_xlabel(cell.feature.replace("_", " "), fontsize=6)
        axis.set_ylabel("human label y*", fontsize=6)
        axis.tick_params(labelsize=6)
    for axis in axes.ravel()[len(cells) :]:
        axis.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_decision_study(study: DecisionStudy, datasets: Sequence[JudgeCriterionData], out: Path) -> tuple[Path, ...]:
    """Write the study's JSON, markdown and two figures under ``out/decisions``."""
    folder = Path(out) / DIRECTORY
    folder.mkdir(parents=True, exist_ok=True)
    paths = (
        folder / "decisions.json",
        folder / "decisions.md",
        folder / "operating_curve.png",
        folder / "score_vs_label.png",
    )
    write_json(study, paths[0])
    paths[1].write_text(markdown(study))
    _curve(study, paths[2])
    _score_vs_label(datasets, paths[3])
    return paths
