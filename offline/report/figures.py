"""PNG figures of the studies, in the spirit of the paper's Figures 2-6 (matplotlib, Agg canvas, no pyplot state).

Each function draws one figure from a decoded study summary into ``path`` and returns the path.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from offline.build.inputs.summeval import CRITERIA
from offline.studies.conformal.results import ConformalSummary
from offline.studies.conformal.rules import HEADLINE_ALPHA, PAPER_METHOD
from offline.studies.factuality.llm import LLMFactualitySummary
from offline.studies.tournaments.transitivity import TransitivitySummary

__all__ = [
    "coverage_vs_alpha",
    "factuality_comparison",
    "inter_judge_matrices",
    "set_size_heatmap",
    "violation_figure",
    "violation_violins",
    "width_error_reliability",
]

DPI = 110


def _save(figure: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(figure)
    figure.savefig(path, dpi=DPI, format="png")
    return path


def _short(judge: str) -> str:
    return judge.replace("-instruct", "").replace("-2024-07-18", "").replace("-chat", "")


def set_size_heatmap(s: ConformalSummary, path: Path, *, method: str = PAPER_METHOD, defaults: bool = False) -> Path:
    """Figure 3: mean set size per judge x criterion at alpha=0.10 with coverage (paper's or default methods)."""
    judges = sorted({c.judge for c in s.cells})
    sizes = np.full((len(judges), len(CRITERIA)), np.nan)
    notes = [["" for _ in CRITERIA] for _ in judges]
    default_of = {(d.judge, d.criterion): d.method for d in s.default_methods}
    for i, judge in enumerate(judges):
        for k, criterion in enumerate(CRITERIA):
            chosen = default_of.get((judge, criterion), method) if defaults else method
            cell = s.cell(judge, criterion, chosen, HEADLINE_ALPHA)
            if cell is not None:
                sizes[i, k] = cell.set_size
                notes[i][k] = f"{cell.set_size:.2f}\ncov={cell.coverage:.3f}" + (f"\n{chosen}" if defaults else "")
    figure = Figure(figsize=(8.5, 1.0 + 0.75 * len(judges)), layout="constrained")
    ax = figure.add_subplot()
    image = ax.imshow(sizes, cmap="RdYlGn_r", vmin=1, vmax=5, aspect="auto")
    for i in range(len(judges)):
        for k in range(len(CRITERIA)):
            ax.text(k, i, notes[i][k], ha="center", va="center", fontsize=7)
    ax.set_xticks(range(len(CRITERIA)), [c.capitalize() for c in CRITERIA])
    ax.set_yticks(range(len(judges)), [_short(j) for j in judges])
    which = "default method per cell" if defaults else f"{method}"
    ax.set_title(
        f"Average prediction set size and coverage at α={HEADLINE_ALPHA:.2f} ({which}; smaller = more informative)",
        fontsize=9,
    )
    figure.colorbar(image, ax=ax, label="mean set size")
    return _save(figure, path)


def width_error_reliability(s: ConformalSummary, path: Path) -> Path:
    """Figure 4: MAE vs set width per criterion, pooled over judges (paper's method, alpha=0.10), 95% CI."""
    figure = Figure(figsize=(12, 3.4), layout="constrained")
    axes = figure.subplots(1, len(CRITERIA))
    pooled = {p.criterion: p for p in s.pooled_width_error}
    for ax, criterion in zip(axes, CRITERIA, strict=True):
        p = pooled.get(criterion)
        ax.set_title(criterion.capitalize(), fontsize=9)
        ax.set_xlabel("prediction set width")
        if p is None or not p.reliability:
            continue
        widths = [b.width for b in p.reliability]
        ax.errorbar(widths, [b.mae for b in p.reliability], yerr=[b.ci95 for b in p.reliability], marker="o", capsize=3)
        for b in p.reliability:
            ax.annotate(
                f"n={b.n}", (b.width, b.mae), textcoords="offset points", xytext=(0, 8), fontsize=7, ha="center"
            )
        rs = p.correlation
        label = "rs n/a" if rs.statistic is None else f"rs={rs.statistic:+.3f} p={rs.p_value:.2g} n={rs.n}"
        ax.set_title(f"{criterion.capitalize()}\n{label}", fontsize=9)
        ax.margins(y=0.15)
        ax.set_xticks(range(1, 6))
        ax.set_xlim(0.5, 5.5)
    axes[0].set_ylabel("mean |judge − y*|")
    figure.suptitle(
        f"Width-error reliability ({PAPER_METHOD}, α={HEADLINE_ALPHA:.2f}, all judges pooled over "
        "test halves of all splits)",
        fontsize=10,
    )
    return _save(figure, path)


def inter_judge_matrices(s: ConformalSummary, path: Path) -> Path:
    """Figure 5: Spearman width agreement between judges, one matrix per criterion (diagonal = 1)."""
    judges = sorted({a.judge_a for a in s.inter_judge} | {a.judge_b for a in s.inter_judge})
    figure = Figure(figsize=(4.2 * len(CRITERIA), 4.4), layout="constrained")
    axes = figure.subplots(1, len(CRITERIA))
    image = None
    for ax, criterion in zip(axes, CRITERIA, strict=True):
        matrix = np.eye(len(judges))
        index = {j: i for i, j in enumerate(judges)}
        values = []
        for a in s.inter_judge:
            if a.criterion == criterion:
                value = np.nan if a.correlation.statistic is None else a.correlation.statistic
                matrix[index[a.judge_a], index[a.judge_b]] = matrix[index[a.judge_b], index[a.judge_a]] = value
                if a.correlation.statistic is not None:
                    values.append(a.correlation.statistic)
        image = ax.imshow(matrix, cmap="RdBu_r", vmin=-1, vmax=1)
        for i in range(len(judges)):
            for k in range(len(judges)):
                text = "n/a" if np.isnan(matrix[i, k]) else f"{matrix[i, k]:+.2f}"
                ax.text(k, i, text, ha="center", va="center", fontsize=6)
        ax.set_xticks(range(len(judges)), [_short(j) for j in judges], rotation=60, fontsize=6)
        ax.set_yticks(range(len(judges)), [_short(j) for j in judges], fontsize=6)
        mean = f"{np.mean(values):+.2f}" if values else "n/a"
        ax.set_title(f"{criterion.capitalize()} r̄={mean}", fontsize=9)
    if image is not None:
        figure.colorbar(image, ax=list(axes), label="Spearman r", shrink=0.7)
    figure.suptitle(
        f"Inter-judge agreement on prediction set width ({PAPER_METHOD}, α={HEADLINE_ALPHA:.2f})", fontsize=10
    )
    return _save(figure, path)


def coverage_vs_alpha(s: ConformalSummary, path: Path, *, method: str = PAPER_METHOD) -> Path:
    """Figure 6: empirical coverage vs alpha per criterion, mean ± 1 std across judges, with the 1−α line."""
    figure = Figure(figsize=(12, 3.4), layout="constrained")
    axes = figure.subplots(1, len(CRITERIA), sharey=True)
    alphas = np.array(s.alphas)
    for ax, criterion in zip(axes, CRITERIA, strict=True):
        rows = [
            [c.coverage for a in s.alphas if (c := s.cell(j, criterion, method, a)) is not None]
            for j in sorted({c.judge for c in s.cells})
        ]
        rows = [r for r in rows if len(r) == len(s.alphas)]
        if rows:
            values = np.array(rows)
            mean, std = values.mean(axis=0), values.std(axis=0)
            ax.plot(alphas, mean, marker="o", label=f"{criterion} (mean over judges)")
            ax.fill_between(alphas, mean - std, mean + std, alpha=0.25)
        ax.plot(alphas, 1 - alphas, linestyle="--", color="black", label="1 − α guarantee")
        ax.set_title(criterion.capitalize(), fontsize=10)
        ax.set_xlabel("α (miscoverage level)")
        ax.legend(fontsize=7, loc="lower left")
    axes[0].set_ylabel("empirical coverage")
    figure.suptitle(f"Empirical coverage vs α ({method}; band = ±1 std across judges)", fontsize=10)
    return _save(figure, path)


def violation_violins(t: TransitivitySummary, path: Path) -> Path:
    """Figure 2 written to ``path`` (see :func:`violation_figure`)."""
    return _save(violation_figure(t), path)


def violation_figure(t: TransitivitySummary) -> Figure:
    """Figure 2: per-input violation rate distribution per judge and criterion (violin plots); simulated data
    says so in the title."""
    judges = sorted({r.judge for r in t.rows})
    figure = Figure(figsize=(4 * len(CRITERIA), 4), layout="constrained")
    axes = figure.subplots(1, len(CRITERIA), sharey=True)
    for ax, criterion in zip(axes, CRITERIA, strict=True):
        data, labels = [], []
        for judge in judges:
            rates = [x.violation_rate for x in t.inputs if x.judge == judge and x.criterion == criterion]
            if rates:
                data.append(rates)
                row = next(r for r in t.rows if r.judge == judge and r.criterion == criterion)
                labels.append(f"{_short(judge)}\nρ̄={row.mean:.2f} {100 * row.share_with_cycle:.0f}%≥1")
        if data:
            varied = [d if np.ptp(d) > 0 else [*d[:-1], d[-1] + 1e-9] for d in data]
            ax.violinplot(varied, showmedians=True)
            ax.set_xticks(range(1, len(labels) + 1), labels, fontsize=6, rotation=30)
        ax.axhline(t.random_baseline, linestyle="--", color="grey", label="random baseline")
        ax.set_title(criterion.capitalize(), fontsize=10)
    axes[0].set_ylabel("per-input violation rate ρ(x)")
    axes[0].legend(fontsize=7)
    title = "Per-input transitivity violation rates"
    if t.simulated:
        title += f" — {t.label}"
    figure.suptitle(title, fontsize=10)
    return figure


def factuality_comparison(s: LLMFactualitySummary, path: Path) -> Path:
    """LLM judges vs FRANK baseline metrics: partial Pearson and Spearman bars on the same items (the items every
    LLM run scored), LLM runs highlighted; an undefined correlation is drawn as an empty, marked bar."""
    cells = sorted(s.comparison, key=lambda c: (c.kind != "llm", c.metric))
    figure = Figure(figsize=(11, 1.6 + 0.32 * len(cells)), layout="constrained")
    axes = figure.subplots(1, 2, sharey=True)
    positions = np.arange(len(cells))
    colours = ["tab:orange" if c.kind == "llm" else "tab:blue" for c in cells]
    for ax, name in zip(axes, ("pearson", "spearman"), strict=True):
        values = [getattr(c, name) for c in cells]
        ax.barh(positions, [0.0 if v is None else v for v in values], color=colours)
        for y, value in zip(positions, values, strict=True):
            text = "n/a" if value is None else f"{value:+.3f}"
            ax.annotate(
                text,
                (0.0 if value is None else value, y),
                textcoords="offset points",
                xytext=(4 if (value or 0) >= 0 else -4, 0),
                ha="left" if (value or 0) >= 0 else "right",
                va="center",
                fontsize=7,
            )
        ax.axvline(0.0, color="black", linewidth=0.8)
        ax.set_title(f"partial {name.capitalize()} (controlling for the system)", fontsize=9)
        ax.set_xlim(-1.0, 1.0)
        ax.margins(y=0.02)
    axes[0].set_yticks(positions, [f"{c.metric}{' (LLM)' if c.kind == 'llm' else ''}" for c in cells], fontsize=7)
    axes[0].invert_yaxis()
    title = f"FRANK: LLM judges and baseline metrics vs human factuality, on the same {s.comparison_n_items} items"
    if s.label:
        title += f"\n{s.label}"
    figure.suptitle(title, fontsize=10)
    return _save(figure, path)
