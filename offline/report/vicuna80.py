"""The report of the real-tournament transitivity study (Vicuna80): tables, figures and the ``index.md`` section.

Everything is drawn from the saved ``transitivity/vicuna80.json``; nothing here computes a statistic.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from offline.report.tables import ci, fmt, markdown_table
from offline.studies.vicuna80.rankings import PANEL, RANKING_METHODS
from offline.studies.vicuna80.results import Vicuna80RankingRow, Vicuna80Summary
from offline.studies.vicuna80.study import HUMAN
from offline.studies.vicuna80.verdicts import AGGREGATIONS

__all__ = ["RATES_FIGURE", "TAU_FIGURE", "vicuna80_figures", "vicuna80_section", "vicuna80_tables"]

RATES_FIGURE = "transitivity/vicuna80_violation_rates.png"
TAU_FIGURE = "transitivity/vicuna80_kendall_tau.png"
_DPI = 110


def _sources(s: Vicuna80Summary) -> list[str]:
    return [*s.judges, PANEL, HUMAN]


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _tau_cell(r: Vicuna80RankingRow | None, scope: str) -> str:
    if r is None:
        return ""
    if scope == "pooled":
        return fmt(r.mean_tau, 2, signed=True)
    text = f"{fmt(r.mean_tau, 3, signed=True)} ± {fmt(r.std_tau, 2)}"
    if r.mean_tau_ci:
        text += f" CI [{r.mean_tau_ci[0]:+.2f}, {r.mean_tau_ci[1]:+.2f}]"
    return text + (f" ({r.n_undefined} undef.)" if r.n_undefined else "")


def vicuna80_tables(s: Vicuna80Summary) -> str:
    """Markdown: parse rates, violation rates per source x aggregation, ranking agreement, position bias."""
    out = [
        f"# Transitivity on real tournaments — {s.label}\n",
        f"Source: {s.source}\n",
        f"{s.n_questions} questions × {len(s.assistants)} assistants ({', '.join(s.assistants)}); judges: "
        f"{', '.join(s.judges)}; {s.n_human_votes} human votes ({s.n_human_votes_left_out} left out, naming "
        "assistants no item answers: "
        + (", ".join(f"{k} {v}" for k, v in s.human_votes_left_out.items()) or "none")
        + ").\n",
        "Rules: " + "; ".join(f"**{k}**: {v}" for k, v in s.rules.items()) + "\n",
    ]
    out.append("## Verdicts: parsed replies and recorded labels\n")
    out.append(
        markdown_table(
            ["Judge", "verdicts", "parsed", "parse rate", "agreement with label", "recorded label used", "rules"],
            [
                [
                    p.judge,
                    str(p.n_rows),
                    str(p.n_parsed),
                    _pct(p.parse_rate),
                    fmt(p.agreement_with_label),
                    str(p.n_from_label),
                    ", ".join(f"{k} {v}" for k, v in p.rules.items()),
                ]
                for p in s.parse
            ],
        )
    )
    out.append("## Per-question violation rates ρ(x) (real tournaments)\n")
    out.append(
        markdown_table(
            [
                "Source",
                "Aggregation",
                "mean ρ̄",
                "95% CI",
                "median",
                "max",
                "% questions ≥1 cycle",
                "95% CI",
                "3-cycles",
                "tied pairs",
                "missing pairs",
                "verdicts",
            ],
            [
                [
                    r.judge,
                    r.aggregation,
                    fmt(r.mean, 4),
                    ci(r.violation_rate_ci, 4),
                    _pct(r.median),
                    _pct(r.max),
                    _pct(r.share_with_cycle),
                    ci(r.share_with_cycle_ci, percent=True),
                    str(r.n_cycles),
                    str(r.n_tied_pairs),
                    str(r.n_missing_pairs),
                    str(r.n_verdicts),
                ]
                for r in s.rows
            ],
        )
    )
    out.append(f"Random-tournament baseline ρ = {s.random_baseline}.\n")
    for scope, title in (
        ("per_question", "per question, mean ± std over questions, 95% CI of the mean (bootstrap over questions)"),
        ("pooled", "pooled: one tournament per source over all questions"),
    ):
        for reference in ("same_method", "win_rate"):
            rows = [r for r in s.rankings if r.scope == scope and r.reference == reference]
            if not rows:
                continue
            lookup = {(r.judge, r.method): r for r in rows}
            judges = [j for j in _sources(s) if any(r.judge == j for r in rows)]
            ref = "the same method" if reference == "same_method" else "win rate"
            out.append(f"## Kendall τ-b vs the human ranking ({title}; human ranked by {ref})\n")

            out.append(
                markdown_table(
                    ["Method", *judges],
                    [[m, *(_tau_cell(lookup.get((j, m)), scope) for j in judges)] for m in RANKING_METHODS],
                )
            )
    best = s.best_method
    out.append(
        "Best method (mean per-question τ over the five judges): "
        + "; ".join(f"human by {ref.replace('_', ' ')}: `{info['method']}`" for ref, info in best.items())
        + ".\n"
    )
    versus: Mapping[str, Any] = s.mfas_vs_copeland.get("same_method", {})
    out.append(
        "Exact MFAS vs Copeland (per-question mean τ, human by the same method): ILP better for "
        f"{versus.get('ilp_better') or 'none'}, Copeland better for {versus.get('copeland_better') or 'none'}"
        ".\n"
    )
    out.append("## Position bias (both orders, per judge)\n")
    out.append(
        markdown_table(
            [
                "Judge",
                "consistency",
                "95% CI",
                "pairs in both orders",
                "consistent",
                "first-shown wins",
                "95% CI",
                "tie rate",
                "verdicts",
            ],
            [
                [
                    p.judge,
                    fmt(p.consistency),
                    ci(p.consistency_ci),
                    str(p.n_pairs_both_orders),
                    str(p.n_consistent),
                    fmt(p.first_win_rate),
                    ci(p.first_win_rate_ci),
                    fmt(p.tie_rate),
                    str(p.n_verdicts),
                ]
                for p in s.position_bias
            ],
        )
    )
    return "\n".join(out)


def _save(figure: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(figure)
    figure.savefig(path, dpi=_DPI, format="png")
    return path


def rates_figure(s: Vicuna80Summary) -> Figure:
    """Strip plot: per-question ρ(x) per source, one panel per aggregation, with each source's mean."""
    sources = _sources(s)
    figure = Figure(figsize=(4.2 * len(AGGREGATIONS), 4), layout="constrained")
    axes = figure.subplots(1, len(AGGREGATIONS), sharey=True)
    rng = np.random.default_rng(0)  # jitter only; the numbers are in the tables
    for ax, aggregation in zip(axes, AGGREGATIONS, strict=True):
        labels = []
        for position, source in enumerate(sources):
            rates = [x.violation_rate for x in s.inputs if x.judge == source and x.aggregation == aggregation]
            row = next((r for r in s.rows if r.judge == source and r.aggregation == aggregation), None)
            labels.append(source if row is None else f"{source}\nρ̄={row.mean:.3f}\n{_pct(row.share_with_cycle)}≥1")
            if not rates:
                continue
            ax.scatter(position + rng.uniform(-0.25, 0.25, len(rates)), rates, s=8, alpha=0.5)
            ax.scatter([position], [float(np.mean(rates))], marker="_", s=300, color="black")
        ax.axhline(s.random_baseline, linestyle="--", color="grey", label="random tournament")
        ax.set_xticks(range(len(sources)), labels, fontsize=6)
        ax.set_title(aggregation, fontsize=10)
    axes[0].set_ylabel("per-question violation rate ρ(x)")
    axes[0].legend(fontsize=7)
    figure.suptitle("Vicuna80 real tournaments: per-question 3-cycle rates (bar = mean)", fontsize=10)
    return figure


def tau_figure(s: Vicuna80Summary) -> Figure:
    """Mean per-question Kendall τ-b vs humans (same method) per source and method, with ±1 std bars."""
    sources = [*s.judges, PANEL]
    figure = Figure(figsize=(10, 3.8), layout="constrained")
    ax = figure.subplots()
    width = 0.8 / len(RANKING_METHODS)
    lookup = {(r.judge, r.method): r for r in s.rankings if r.scope == "per_question" and r.reference == "same_method"}
    for k, method in enumerate(RANKING_METHODS):
        means = [lookup[j, method].mean_tau if (j, method) in lookup else None for j in sources]
        stds = [lookup[j, method].std_tau if (j, method) in lookup else None for j in sources]
        ax.bar(
            np.arange(len(sources)) + (k - 2) * width,
            [m or 0.0 for m in means],
            width,
            yerr=[d or 0.0 for d in stds],
            capsize=2,
            label=method,
        )
    ax.set_xticks(range(len(sources)), sources, fontsize=8)
    ax.set_ylabel("Kendall τ-b vs human (per question)")
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.legend(fontsize=7, ncols=5)
    figure.suptitle("Vicuna80: ranking agreement with the human votes (mean ± std over questions)", fontsize=10)
    return figure


def vicuna80_figures(s: Vicuna80Summary, out: Path) -> list[tuple[str, Path]]:
    """Write both figures under ``out``; (title, path) pairs."""
    return [
        (
            "Vicuna80 (real tournaments) — per-question violation rates per judge and aggregation",
            _save(rates_figure(s), out / RATES_FIGURE),
        ),
        (
            "Vicuna80 (real tournaments) — Kendall τ-b vs human per ranking method",
            _save(tau_figure(s), out / TAU_FIGURE),
        ),
    ]


def vicuna80_section(s: Vicuna80Summary) -> str:
    """The ``index.md`` section: the real-tournament findings in a few lines."""
    rows = {(r.judge, r.aggregation): r for r in s.rows}

    def rates(aggregation: str) -> str:
        return ", ".join(
            f"{j} {rows[j, aggregation].mean:.3f} / {_pct(rows[j, aggregation].share_with_cycle)}"
            for j in [*s.judges, PANEL]
            if (j, aggregation) in rows
        )

    human = rows.get((HUMAN, "both_orders"))
    lines = [
        "## Transitivity on real tournaments (Vicuna80)\n",
        f"{s.n_questions} questions × {len(s.assistants)} assistants, {len(s.judges)} recorded LLM judges and human "
        "votes (`transitivity/vicuna80.json`, tables in `transitivity/tables.md`).\n",
        "- **Both orders** (net votes; a zero net is no edge), mean ρ̄ / questions with ≥1 cycle "
        "(95% intervals over questions in `transitivity/tables.md`): "
        f"{rates('both_orders')}.",
        f"- **One order alone**: order_a {rates('order_a')}; order_b {rates('order_b')}.",
    ]
    if human is not None:
        lines.append(
            f"- **Human votes** (majority per pair): ρ̄ {human.mean:.3f}"
            + (f" {ci(human.violation_rate_ci)}" if human.violation_rate_ci else "")
            + f", {_pct(human.share_with_cycle)}"
            + (f" {ci(human.share_with_cycle_ci, percent=True)}" if human.share_with_cycle_ci else "")
            + " of questions with ≥1 cycle."
        )
    best: Mapping[str, Any] = s.best_method.get("same_method", {})
    means = best.get("mean_tau_over_judges", {}) if isinstance(best, dict) else {}
    lines.append(
        "- **Rankings vs humans** (per question, mean τ-b over judges): "
        + ", ".join(f"{m} {fmt(v, 3, signed=True)}" for m, v in means.items())
        + f"; best: `{best.get('method')}`."
    )
    versus: Mapping[str, Any] = s.mfas_vs_copeland.get("same_method", {})
    lines.append(
        f"- **Exact MFAS vs Copeland**: ILP better for {len(versus.get('ilp_better', []))}, Copeland better "
        f"for {len(versus.get('copeland_better', []))} of {len(versus.get('ilp_minus_copeland', {}))} "
        "sources (judges and panel)."
    )
    lines.append(
        "- **Position bias**: "
        + ", ".join(
            f"{p.judge} consistency {fmt(p.consistency)}"
            + (f" {ci(p.consistency_ci)}" if p.consistency_ci else "")
            + f", first-shown wins {fmt(p.first_win_rate)}"
            for p in s.position_bias
        )
        + "."
    )
    lines.append(
        "- **Parse rate** (recorded label used otherwise): "
        + ", ".join(f"{p.judge} {_pct(p.parse_rate)} (agreement {fmt(p.agreement_with_label)})" for p in s.parse)
        + "."
    )
    return "\n".join(lines) + "\n"
