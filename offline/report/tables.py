"""Markdown tables of the studies: the number, interval and table formatting every report module shares, and the
transitivity (the paper's Tables 1, 2 and 6, Gupta & Kumar 2026) and position-bias tables. The conformal study's
tables (the paper's Tables 3-5) are :mod:`offline.report.conformal_tables`'.

Every function takes a decoded study summary and returns Markdown text; nothing here computes a statistic.
"""

from __future__ import annotations

from collections.abc import Sequence

from offline.build.inputs.summeval import CRITERIA
from offline.studies.tournaments.position_bias import PositionBiasSummary
from offline.studies.tournaments.transitivity import RANKING_METHODS, TransitivitySummary

__all__ = [
    "fmt",
    "markdown_table",
    "position_bias_tables",
    "transitivity_tables",
]


def fmt(value: float | None, digits: int = 3, *, signed: bool = False) -> str:
    """A number with fixed digits ("n/a" for None); ``signed`` adds "+" to positives."""
    if value is None:
        return "n/a"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def ci(bounds: Sequence[float] | None, digits: int = 3, *, percent: bool = False) -> str:
    """A 95% interval as ``[low, high]`` ("" when the summary has none)."""
    if not bounds:
        return ""
    if percent:
        return f"[{100 * bounds[0]:.{max(digits - 2, 0)}f}, {100 * bounds[1]:.{max(digits - 2, 0)}f}]%"
    return f"[{bounds[0]:.{digits}f}, {bounds[1]:.{digits}f}]"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def transitivity_tables(t: TransitivitySummary) -> str:
    """Tables 1/6 (violation rates per judge x criterion) and Table 2 (ranking agreement), labelled."""
    tag = f" ({t.label})" if t.simulated else ""
    out = [f"# Transitivity{tag}\n", f"Source: {t.source}\n"]
    out.append("Rules: " + "; ".join(f"**{k}**: {v}" for k, v in t.rules.items()) + "\n")
    out.append(f"## Tables 1 and 6 — per-input violation rates ρ(x){tag}\n")
    out.append(
        markdown_table(
            [
                "Judge",
                "Criterion",
                "Agg. ρ̄",
                "ρ̄ 95% CI",
                "% inputs ≥1 cycle",
                "95% CI",
                "Max ρ",
                "Med. ρ",
                "inputs",
                "tied pairs",
            ],
            [
                [
                    r.judge,
                    r.criterion,
                    fmt(r.mean),
                    ci(r.violation_rate_ci),
                    f"{100 * r.share_with_cycle:.1f}%",
                    ci(r.share_with_cycle_ci, percent=True),
                    f"{100 * r.max:.1f}%",
                    f"{100 * r.median:.1f}%",
                    str(r.n_inputs),
                    str(r.n_tied_pairs),
                ]
                for r in t.rows
            ],
        )
    )
    out.append(f"Random-tournament baseline ρ = {t.random_baseline}.\n")
    out.append(f"## Table 2 — ranking agreement with the human ranking (Kendall τ-b){tag}\n")
    lookup = {(r.judge, r.criterion, r.method): r for r in t.rankings}
    for criterion in [c for c in CRITERIA if any(r.criterion == c for r in t.rankings)]:
        judges = sorted({r.judge for r in t.rankings if r.criterion == criterion})
        out.append(f"### {criterion.capitalize()}\n")
        out.append(
            markdown_table(
                ["Method", *judges],
                [
                    [method]
                    + [
                        fmt(lookup[j, criterion, method].kendall_tau) if (j, criterion, method) in lookup else ""
                        for j in judges
                    ]
                    for method in RANKING_METHODS
                ],
            )
        )
    return "\n".join(out)


def position_bias_tables(p: PositionBiasSummary) -> str:
    """Position consistency and tie rates per judge and criterion."""
    tag = " (simulated)" if p.simulated else ""
    out = [
        f"# Position bias{tag}\n",
        f"Source: {p.source}\n",
        "Rules: " + "; ".join(f"**{k}**: {v}" for k, v in p.rules.items()) + "\n",
    ]
    out.append(
        markdown_table(
            [
                "Judge",
                "Criterion",
                "consistency",
                "95% CI",
                "pairs in both orders",
                "consistent",
                "tie rate",
                "first-shown wins",
                "95% CI",
                "verdicts",
                "unparsed",
            ],
            [
                [
                    r.judge,
                    r.criterion,
                    fmt(r.consistency),
                    ci(r.consistency_ci),
                    str(r.n_pairs_both_orders),
                    str(r.n_consistent),
                    fmt(r.tie_rate),
                    fmt(r.first_win_rate),
                    ci(r.first_win_rate_ci),
                    str(r.n_verdicts),
                    str(r.n_unparsed),
                ]
                for r in p.rows
            ],
        )
    )
    return "\n".join(out)
