"""``reports/index.md``: the findings a person should read first, computed from the saved study summaries."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import msgspec
import numpy as np

from offline.build.factuality.faithfulness import FaithfulnessSummary
from offline.build.inputs.summeval import CRITERIA
from offline.report.tables import ci, fmt, markdown_table
from offline.studies.conformal.results import ConformalSummary
from offline.studies.conformal.rules import COVERAGE_SLACK, HEADLINE_ALPHA, PAPER_METHOD
from offline.studies.factuality.llm import LLMFactualitySummary
from offline.studies.tournaments.position_bias import PositionBiasSummary
from offline.studies.tournaments.transitivity import TransitivitySummary

__all__ = ["NO_LLM_FACTUALITY", "IngestRow", "IngestSummary", "render_index"]

NO_LLM_FACTUALITY = (
    "no LLM factuality answers collected: run `python -m offline collect --task factuality_direct --judges-file "
    "<file> --judge <name>` (or `--task factuality_qa`; `--limit N` for a seeded sample), then `python -m offline "
    "calibrate`"
)


class IngestRow(msgspec.Struct, frozen=True, kw_only=True):
    """Ingest counts of one (judge, task), with the parse rate of its free-text replies (None = no free text)."""

    judge: str
    prompt_family: str
    task: str
    rows: int
    recorded: int
    parsed: int
    unparsed: int
    missing: int
    parse_rate: float | None
    unparsed_examples: list[str] = []


class IngestSummary(msgspec.Struct, frozen=True, kw_only=True):
    """What ingest put into the answer store; written as ``ingest/summary.json``."""

    store: str
    judges: list[IngestRow]
    inserted: int
    updated: int
    unchanged: int
    seconds: float


def _coverage_lines(s: ConformalSummary) -> list[str]:
    paper = [c for c in s.cells if c.method == PAPER_METHOD]
    strict = sum(c.coverage >= 1 - c.alpha for c in paper)
    valid = sum(c.valid_coverage for c in s.cells)
    failing = [c for c in s.cells if not c.valid_coverage]
    lines = [
        f"- **Coverage held** (mean over {s.n_splits} splits ≥ 1−α−{COVERAGE_SLACK}) in {valid} of {len(s.cells)} "
        f"judge × criterion × α × method cells; the paper's `{PAPER_METHOD}` reached ≥ 1−α exactly in {strict} of "
        f"{len(paper)} cells (lowest: {fmt(min(c.coverage - (1 - c.alpha) for c in paper), 3, signed=True)} "
        "relative to 1−α).",
    ]
    if failing:
        lines.append(
            "  Cells below the rule: "
            + ", ".join(f"{c.judge}/{c.criterion}/{c.method}/α={c.alpha:.2f} ({c.coverage:.3f})" for c in failing[:10])
        )
    return lines


def _set_size_lines(s: ConformalSummary) -> list[str]:
    cells = [c for c in s.cells if c.method == PAPER_METHOD and abs(c.alpha - HEADLINE_ALPHA) < 1e-9]
    per_criterion = {
        cr: float(np.mean([c.set_size for c in cells if c.criterion == cr]))
        for cr in CRITERIA
        if any(c.criterion == cr for c in cells)
    }
    ranked = sorted(per_criterion.items(), key=lambda kv: kv[1])
    best = sorted(cells, key=lambda c: c.set_size)[:3]
    lines = [
        f"- **Which criteria earn small sets** (`{PAPER_METHOD}`, α={HEADLINE_ALPHA:.2f}, mean over judges): "
        + ", ".join(f"{cr} {size:.2f}" for cr, size in ranked)
        + " labels (out of 5).",
        "- **Which judges earn small sets**: smallest cells "
        + ", ".join(f"{c.judge}/{c.criterion} {c.set_size:.2f}" for c in best)
        + "; per judge (mean over criteria) "
        + ", ".join(
            f"{j} {np.mean([c.set_size for c in cells if c.judge == j]):.2f}" for j in sorted({c.judge for c in cells})
        )
        + ".",
    ]
    for v in s.variance:
        if v.method == PAPER_METHOD:
            lines.append(
                f"- **Criterion vs judge**: the criterion explains η²={v.eta2_criterion:.2f} of the variance "
                f"in cell mean set size, the judge η²={v.eta2_judge:.2f} (residual {v.eta2_residual:.2f}; "
                f"{len(v.judges)} judges × {len(v.criteria)} criteria, `{PAPER_METHOD}`, α=0.10)."
            )
    return lines


def _width_lines(s: ConformalSummary) -> list[str]:
    pooled = {p.criterion: p.correlation for p in s.pooled_width_error}
    lines = []
    if "all" in pooled:
        a = pooled["all"]
        lines.append(
            f"- **Width predicts error?** Spearman(set width, |judge − y*|) pooled over all judges and "
            f"criteria = {fmt(a.statistic, 3, signed=True)} (n={a.n} judge × item observations, "
            f"p={a.p_value:.2g}); "
            "per criterion "
            + ", ".join(f"{c} {fmt(pooled[c].statistic, 2, signed=True)}" for c in CRITERIA if c in pooled)
            + " (paper: +0.576 pooled)."
        )
    means = []
    for criterion in CRITERIA:
        values = [
            x.correlation.statistic
            for x in s.inter_judge
            if x.criterion == criterion and x.correlation.statistic is not None
        ]
        if values:
            means.append(f"{criterion} {np.mean(values):+.2f}")
    if means:
        lines.append(
            "- **Inter-judge width agreement** (mean Spearman over judge pairs): "
            + ", ".join(means)
            + " (paper: coherence +0.10, others +0.32–0.38)."
        )
    return lines


def _headline_lines(s: ConformalSummary) -> list[str]:
    lines = [
        "- **Beyond the paper, item-level reproduction** (not what is served: the served artifact's figures are "
        "in the first section; α=0.10, mean over judges): set size of the item-level study's best method "
        "(valid coverage AND "
        "coverage within judge-score bins and human labels) relative to the paper's `residual`: "
        + ", ".join(f"{h.criterion} {h.best_set_size:.2f}/{h.paper_set_size:.2f} = ×{h.ratio:.2f}" for h in s.headline)
        + ". Requiring marginal coverage only would give "
        + ", ".join(f"{h.criterion} ×{h.marginal_ratio:.2f}" for h in s.headline)
        + " — but those sets (mostly "
        "`learned_lac`) miss low human labels: see the default-method table."
    ]
    counts = Counter(d.method for d in s.default_methods)
    lines.append(
        "- **Item-level best methods** (the served defaults are chosen by document, per input kind: see "
        "the first section): "
        + ", ".join(f"`{m}` × {n}" for m, n in counts.most_common())
        + f" of {len(s.default_methods)} (judge, prompt family, criterion); `conformal/tables.md`."
    )
    keeps = [m for m in s.method_bin_validity if abs(m.alpha - HEADLINE_ALPHA) < 1e-9]
    lines.append(
        "- **Methods that keep coverage within bins** at α=0.10 (cells passing / cells): "
        + ", ".join(f"`{m.method}` {m.n_both}/{m.n_cells}" for m in keeps)
        + "."
    )
    return lines


def unusable_judges(ingest: IngestSummary) -> list[IngestRow]:
    """Direct-scoring judges none of whose rows gave a score or a mean of samples (never dropped in silence)."""
    return [r for r in ingest.judges if r.task == "direct" and r.rows > 0 and r.recorded + r.parsed == 0]


def _ingest_lines(ingest: IngestSummary | None, s: ConformalSummary | None) -> list[str]:
    lines = []
    if ingest is not None:
        for r in unusable_judges(ingest):
            lines.append(
                f"- **Error: judge {r.judge} yielded no usable row** ({r.rows} rows: {r.missing} missing, "
                f"{r.unparsed} unreadable): it has no cells and no thresholds; fix its file."
            )
        text = [r for r in ingest.judges if r.task == "direct" and r.parse_rate is not None]
        if text:
            lines.append(
                "- **Parse rate per text judge** (free-text replies read by the parser): "
                + ", ".join(
                    f"{r.judge} {100 * rate:.2f}% ({r.unparsed} unparsed of {r.parsed + r.unparsed})"
                    for r in text
                    if (rate := r.parse_rate) is not None
                )
                + "."
            )
        pairwise = [r for r in ingest.judges if r.task == "pairwise"]
        for r in pairwise:
            lines.append(
                f"- Pairwise replies of {r.judge}: {r.parsed} read, {r.unparsed} unparsed, {r.missing} missing."
            )
    if s is not None:
        excluded = sum(e.n_excluded for e in s.exclusions)
        lines.append(
            f"- **Unparsed/missing judge scores excluded** from the conformal study: {excluded} items in all "
            "(" + ", ".join(f"{e.judge}/{e.criterion} {e.n_excluded}" for e in s.exclusions if e.n_excluded) + ")."
        )
    return lines


def _position_lines(p: PositionBiasSummary) -> list[str]:
    rows = [r for r in p.rows if r.criterion != "all"]
    pooled = [r for r in p.rows if r.criterion == "all"]
    lines = []
    for r in pooled:
        lines.append(
            f"- **Position consistency** of {r.judge} ({p.source}): {fmt(r.consistency)}"
            + (f" (95% CI {ci(r.consistency_ci)}, documents as the unit)" if r.consistency_ci else "")
            + f" of {r.n_pairs_both_orders} pairs keep their verdict when the order is swapped; per criterion "
            + ", ".join(
                f"{x.criterion} {fmt(x.consistency)} (ties {fmt(x.tie_rate)})" for x in rows if x.judge == r.judge
            )
            + f"; the first-shown summary wins {fmt(r.first_win_rate)} of decisive verdicts."
        )
    return lines


def _transitivity_lines(t: TransitivitySummary) -> list[str]:
    if not t.rows:
        return []
    means = [r.mean for r in t.rows]
    shares = [r.share_with_cycle for r in t.rows]
    tag = f" ({t.label})" if t.simulated else ""
    return [
        f"- **Transitivity{tag}**: mean ρ̄ per judge × criterion ranges {min(means):.3f}–{max(means):.3f}; "
        f"{100 * min(shares):.0f}–{100 * max(shares):.0f}% of inputs hold at least one 3-cycle."
    ]


def _factuality_lines(llm: LLMFactualitySummary | None, faithfulness: FaithfulnessSummary | None) -> list[str]:
    if llm is None and faithfulness is None:
        return [
            f"- **LLM factuality (FRANK)**: {NO_LLM_FACTUALITY}. Only FRANK's baseline metrics are reported "
            "(`factuality/baselines.md`), and faithfulness is not calibrated (the service answers it "
            "uncalibrated)."
        ]
    if llm is None:
        return [
            f"- **LLM factuality (FRANK), direct and QA prompts**: {NO_LLM_FACTUALITY}.",
            *_faithfulness_lines(faithfulness),
        ]
    tag = f" — {llm.label}" if llm.label else ""
    overall = {c.metric: c for c in llm.comparison}
    runs = []
    for run in llm.runs:
        cell = llm.tables.get(run.metric, {})
        runs.append(
            f"{run.metric} {fmt(cell.get('pearson'), 3, signed=True)} / "
            f"{fmt(cell.get('spearman'), 3, signed=True)} (n={cell.get('n', 0)})"
        )
    lines = [
        f"- **LLM factuality (FRANK){tag}**: partial Pearson / Spearman with human factuality, controlling "
        "for the system: " + "; ".join(runs) + " (tables: `factuality/llm.md`)."
    ]
    baselines = [c for c in overall.values() if c.kind == "baseline" and c.pearson is not None]
    if baselines:
        best = max(baselines, key=lambda c: c.pearson or 0.0)
        lines.append(
            f"  On the {llm.comparison_n_items} items every LLM run scored, the strongest baseline is "
            f"{best.metric} ({fmt(best.pearson, 3, signed=True)} / {fmt(best.spearman, 3, signed=True)})."
        )
    return lines + _faithfulness_lines(faithfulness)


def _faithfulness_lines(faithfulness: FaithfulnessSummary | None) -> list[str]:
    lines: list[str] = []
    if faithfulness is not None:
        tag = f" — {faithfulness.label}" if faithfulness.label else ""
        cells = []
        for d in faithfulness.default_methods:
            part = next(
                (p for p in faithfulness.parts if (p.judge, p.prompt_family) == (d.judge, d.prompt_family)), None
            )
            n_test = part.n_test if part is not None else 0
            cells.append(
                f"{d.judge}/{d.prompt_family} `{d.method}` coverage {fmt(d.coverage)} set size "
                f"{fmt(d.set_size, 2)} (test n={n_test})"
            )
        lines.append(
            f"- **Faithfulness calibration{tag}** (fit on FRANK valid, evaluated on FRANK test, one split; "
            f"default method at α={HEADLINE_ALPHA:.2f}): "
            + ("; ".join(cells) or "no cell had enough items")
            + " (`factuality/faithfulness.md`; the direct and QA cells are exported to the "
            "thresholds artifact, the `factuality_sentences` cells by the validity rules instead: "
            "`factuality/llm_sentences_validity.md`)."
        )
        if faithfulness.skipped:
            lines.append("  Skipped: " + "; ".join(faithfulness.skipped) + ".")
    return lines


def render_index(
    *,
    conformal: ConformalSummary | None,
    transitivity: TransitivitySummary | None,
    position_bias: PositionBiasSummary | None,
    ingest: IngestSummary | None,
    links: Mapping[str, str],
    figures: Sequence[tuple[str, str]],
    llm: LLMFactualitySummary | None = None,
    faithfulness: FaithfulnessSummary | None = None,
) -> str:
    """The report's front page: findings first (numbers computed from the summaries), then links and figures.
    Without ``llm`` it says that no LLM factuality answers were collected and how to collect them."""
    out = ["# Conformal Judge — offline calibration report\n", "## Read first\n"]
    lines: list[str] = []
    if conformal is not None:
        lines += _coverage_lines(conformal) + _set_size_lines(conformal) + _width_lines(conformal)
        lines += _headline_lines(conformal)
    if position_bias is not None:
        lines += _position_lines(position_bias)
    if transitivity is not None:
        lines += _transitivity_lines(transitivity)
    lines += _factuality_lines(llm, faithfulness)
    lines += _ingest_lines(ingest, conformal)
    out.append("\n".join(lines) + "\n")
    if conformal is not None and conformal.headline:
        out.append("## Headline per criterion (α=0.10)\n")
        out.append(
            markdown_table(
                ["Criterion", "residual size", "default size", "ratio", "marginal-only ratio"],
                [
                    [
                        h.criterion,
                        fmt(h.paper_set_size, 2),
                        fmt(h.best_set_size, 2),
                        fmt(h.ratio),
                        fmt(h.marginal_ratio),
                    ]
                    for h in conformal.headline
                ],
            )
        )
    out.append("## Files\n")
    out.append("\n".join(f"- [{name}]({target})" for name, target in links.items()) + "\n")
    out.append("## Figures\n")
    out.append("\n".join(f"### {title}\n\n![{title}]({target})\n" for title, target in figures))
    return "\n".join(out)
