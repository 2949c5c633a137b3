"""The conformal study's Markdown tables, in the layout of the paper's Tables 3-5 (Gupta & Kumar 2026), then the
tables beyond the paper (pooled width-error, variance shares, headline, default methods, bin validity, exclusions).

Every function takes the decoded study summary and returns Markdown text; nothing here computes a statistic.
"""

from __future__ import annotations

from offline.build.cell_results import CorrelationResult
from offline.build.inputs.summeval import CRITERIA
from offline.report.tables import fmt, markdown_table
from offline.studies.conformal.results import ConformalSummary
from offline.studies.conformal.rules import HEADLINE_ALPHA, PAPER_METHOD

__all__ = ["conformal_tables"]

# The paper's Table 3 column order: the reliable criteria first.
TABLE3_CRITERIA = ("coherence", "relevance", "consistency", "fluency")
SHORT = {"coherence": "Coh.", "consistency": "Con.", "fluency": "Flu.", "relevance": "Rel."}


def _p(p_value: float | None) -> str:
    if p_value is None:
        return "n/a"
    return "<1e-300" if p_value == 0 else f"{p_value:.2g}"


def _mark(c: CorrelationResult) -> str:
    if c.statistic is None:
        return "n/a"
    mark = (
        "‡" if c.p_value is not None and c.p_value < 0.01 else "†" if c.p_value is not None and c.p_value < 0.05 else ""
    )
    text = f"{c.statistic:+.2f}{mark}"
    return f"**{text}**" if c.statistic > 0.5 else text


def _judges(summary: ConformalSummary) -> list[str]:
    return sorted({c.judge for c in summary.cells})


def _table3(s: ConformalSummary, method: str) -> str:
    header = (
        ["Judge"]
        + [f"{SHORT[c]} {k}" for c in TABLE3_CRITERIA for k in ("size", "cov.")]
        + ["rs(w,e) " + "/".join(SHORT[c] for c in CRITERIA)]
    )
    rows = []
    for judge in _judges(s):
        row = [judge]
        for criterion in TABLE3_CRITERIA:
            cell = s.cell(judge, criterion, method, HEADLINE_ALPHA)
            row += [fmt(cell.set_size, 2), fmt(cell.coverage)] if cell else ["", ""]
        rs = [s.cell(judge, c, method, HEADLINE_ALPHA) for c in CRITERIA]
        row.append(" / ".join(fmt(c.spearman_width_error, 2, signed=True) if c else "" for c in rs))
        rows.append(row)
    return markdown_table(header, rows)


def _table5(s: ConformalSummary, method: str) -> str:
    header = ["Judge", "Criterion"] + [f"α={a:.2f} {k}" for a in s.alphas for k in ("cov.", "size")]
    rows = []
    for judge in _judges(s):
        for criterion in CRITERIA:
            cells = [s.cell(judge, criterion, method, a) for a in s.alphas]
            if not any(cells):
                continue
            row = [judge, criterion]
            for alpha, cell in zip(s.alphas, cells, strict=True):
                if cell is None:
                    row += ["", ""]
                    continue
                cov = fmt(cell.coverage)
                row += [f"**{cov}**" if cell.coverage >= 1 - alpha else cov, fmt(cell.set_size, 2)]
            rows.append(row)
    return markdown_table(header, rows)


def _table4(s: ConformalSummary) -> str:
    pairs = sorted({(a.judge_a, a.judge_b) for a in s.inter_judge})
    lookup = {(a.judge_a, a.judge_b, a.criterion): a for a in s.inter_judge}
    rows = []
    for a, b in pairs:
        rows.append(
            [f"{a} / {b}"]
            + [_mark(lookup[a, b, c].correlation) if (a, b, c) in lookup else "" for c in CRITERIA]
            + [str(next(x.n_items for x in s.inter_judge if (x.judge_a, x.judge_b) == (a, b)))]
        )
    means = []
    for criterion in CRITERIA:
        values = [
            x.correlation.statistic
            for x in s.inter_judge
            if x.criterion == criterion and x.correlation.statistic is not None
        ]
        means.append(fmt(sum(values) / len(values), 2, signed=True) if values else "n/a")
    rows.append(["**Mean**", *means, ""])
    return markdown_table(["Judge pair", *[SHORT[c] for c in CRITERIA], "common items"], rows)


def _methods_table(s: ConformalSummary) -> str:
    header = [
        "Judge",
        "Criterion",
        "Method",
        "cov.",
        "± std",
        "size",
        "min judge-bin cov.",
        "min label cov.",
        "valid",
        "keeps bins",
        "rs(w,e)",
    ]
    rows = []
    for judge in _judges(s):
        for criterion in CRITERIA:
            for c in s.cells:
                if (c.judge, c.criterion) == (judge, criterion) and abs(c.alpha - HEADLINE_ALPHA) < 1e-9:
                    rows.append(
                        [
                            judge,
                            criterion,
                            c.method,
                            fmt(c.coverage),
                            fmt(c.coverage_std),
                            fmt(c.set_size, 2),
                            fmt(c.min_bin_coverage),
                            fmt(c.min_label_coverage),
                            "yes" if c.valid_coverage else "**no**",
                            "yes" if c.keeps_bin_coverage else "no",
                            fmt(c.spearman_width_error, 2, signed=True),
                        ]
                    )
    return markdown_table(header, rows)


def conformal_tables(s: ConformalSummary) -> str:
    """The conformal study as Markdown: Tables 3-5 in the paper's layout, then the beyond-the-paper tables."""
    out = [f"# Conformal prediction sets (paper's method: `{PAPER_METHOD}`, {s.n_splits} splits, seed {s.seed})\n"]
    out.append("Rules: " + "; ".join(f"**{k}**: {v}" for k, v in s.rules.items()) + "\n")
    out.append(f"## Table 3 — set size and coverage at α={HEADLINE_ALPHA:.2f} (`{PAPER_METHOD}`)\n")
    out.append(_table3(s, PAPER_METHOD))
    out.append("rs(w,e): Spearman of set width with |judge score − y*|, pooled over the test halves of all splits.\n")
    out.append(
        f"## Table 4 — inter-judge agreement on set width (Spearman, α={HEADLINE_ALPHA:.2f}, `{PAPER_METHOD}`)\n"
    )
    out.append(_table4(s))
    out.append("‡ p<.01, † p<.05, bold r>0.50; pooled over the test halves of common splits (p-values optimistic).\n")
    out.append(f"## Table 5 — coverage and set size at every α (`{PAPER_METHOD}`; bold = coverage ≥ 1−α)\n")
    out.append(_table5(s, PAPER_METHOD))
    out.append("## Width-error correlation pooled over judges (`residual`, α=0.10)\n")
    out.append(
        markdown_table(
            ["Criterion", "Spearman rs", "p", "n"],
            [
                [
                    p.criterion,
                    fmt(p.correlation.statistic, 3, signed=True),
                    _p(p.correlation.p_value),
                    str(p.correlation.n),
                ]
                for p in s.pooled_width_error
            ],
        )
    )
    out.append("## Criterion versus judge: share of variance in cell mean set size (α=0.10)\n")
    out.append(
        markdown_table(
            ["Method", "η² criterion", "η² judge", "η² residual", "judges"],
            [
                [v.method, fmt(v.eta2_criterion), fmt(v.eta2_judge), fmt(v.eta2_residual), str(len(v.judges))]
                for v in s.variance
            ],
        )
    )
    out.append(
        "## Beyond the paper — headline: best method with valid and within-bin coverage vs the paper's (α=0.10)\n"
    )
    out.append(
        markdown_table(
            [
                "Criterion",
                f"{PAPER_METHOD} size",
                "default size",
                "ratio",
                "marginal-only best size",
                "ratio",
                "judges",
            ],
            [
                [
                    h.criterion,
                    fmt(h.paper_set_size, 2),
                    fmt(h.best_set_size, 2),
                    fmt(h.ratio),
                    fmt(h.marginal_best_set_size, 2),
                    fmt(h.marginal_ratio),
                    str(h.n_judges),
                ]
                for h in s.headline
            ],
        )
    )
    out.append("## Default method per judge and criterion (chosen at α=0.10)\n")
    out.append(
        markdown_table(
            [
                "Judge",
                "Prompt family",
                "Criterion",
                "Method",
                "size",
                "cov.",
                "min judge-bin cov.",
                "min label cov.",
                "marginal-only best",
                "its min label cov.",
                "Reason",
            ],
            [
                [
                    d.judge,
                    d.prompt_family,
                    d.criterion,
                    f"`{d.method}`",
                    fmt(d.set_size, 2),
                    fmt(d.coverage),
                    fmt(d.min_bin_coverage),
                    fmt(d.min_label_coverage),
                    f"`{d.marginal_best_method}` {d.marginal_best_set_size:.2f}",
                    fmt(d.marginal_best_min_label_coverage),
                    d.reason,
                ]
                for d in s.default_methods
            ],
        )
    )
    out.append("## Which methods keep coverage within bins\n")
    out.append(
        markdown_table(
            [
                "Method",
                "α",
                "cells",
                "valid coverage",
                "keeps bins",
                "both",
                "mean min judge-bin cov.",
                "mean min label cov.",
            ],
            [
                [
                    m.method,
                    fmt(m.alpha, 2),
                    str(m.n_cells),
                    str(m.n_valid_coverage),
                    str(m.n_keeps_bins),
                    str(m.n_both),
                    fmt(m.mean_min_bin_coverage),
                    fmt(m.mean_min_label_coverage),
                ]
                for m in s.method_bin_validity
            ],
        )
    )
    out.append("## Every method at α=0.10\n")
    out.append(_methods_table(s))
    out.append("## Items used and excluded (missing or unreadable judge score)\n")
    out.append(
        markdown_table(
            ["Judge", "Prompt family", "Criterion", "answered", "used", "excluded", "log-probs"],
            [
                [
                    e.judge,
                    e.prompt_family,
                    e.criterion,
                    str(e.n_answered),
                    str(e.n_used),
                    str(e.n_excluded),
                    "yes" if e.has_probabilities else "no",
                ]
                for e in s.exclusions
            ],
        )
    )
    return "\n".join(out)
