"""The report of :mod:`research.panels.why_missed`: ``conformal/panels_why_missed.json`` and its Markdown (the gap
one validity rule at a time, the screened candidate, the learned model), and the plain gap table the command prints.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from offline.jsonfile import write_json
from research.panels.why_missed import WhyMissed

__all__ = [
    "JSON_FILE",
    "MARKDOWN_FILE",
    "gap_markdown",
    "gap_table",
    "learned_markdown",
    "markdown",
    "write_why_missed",
]

JSON_FILE = "conformal/panels_why_missed.json"
MARKDOWN_FILE = "conformal/panels_why_missed.md"


def gap_table(study: WhyMissed) -> list[str]:
    """The decomposition as plain lines: one per step, each criterion's ratio and their mean."""
    criteria = sorted({r.criterion for r in study.gap})
    lines = []
    for key in dict.fromkeys(r.step for r in study.gap):
        rows = {r.criterion: r for r in study.gap if r.step == key}
        ratios = [rows[c].ratio for c in criteria if c in rows]
        lines.append(
            f"{key:>2s} {next(iter(rows.values())).description:62s} "
            + "  ".join(f"{c[:4]} {rows[c].ratio:.2f}" for c in criteria if c in rows)
            + f"  mean {np.mean(ratios):.2f}"
        )
    return lines


def gap_markdown(study: WhyMissed) -> list[str]:
    """The decomposition and the screened candidate, as markdown lines (empty when the study has none)."""
    if not study.gap:
        return []
    criteria = sorted({r.criterion for r in study.gap})
    lines = [
        "",
        "### Where the target is lost: the ratio to the best member, one validity rule at a time",
        "",
        "Served recipe on the panel's common items, members refitted on the same items under the same rules "
        "(research.panels.gap). Cell: panel size / best member's size = ratio (panel method; best "
        "member, its kind and method).",
        "",
        "| step | " + " | ".join(criteria) + " | mean ratio |",
        "|---|" + "---|" * (len(criteria) + 1),
    ]
    for key in dict.fromkeys(r.step for r in study.gap):
        rows = {r.criterion: r for r in study.gap if r.step == key}
        cells = [
            f"{rows[c].panel_set_size:.2f} / {rows[c].best_member_set_size:.2f} = **{rows[c].ratio:.2f}** "
            f"({rows[c].panel_method}; {rows[c].best_member}, {rows[c].best_member_kind}, "
            f"{rows[c].best_member_method})"
            if c in rows
            else "n/a"
            for c in criteria
        ]
        mean = np.mean([rows[c].ratio for c in criteria if c in rows])
        lines.append(f"| {key}: {next(iter(rows.values())).description} | " + " | ".join(cells) + f" | {mean:.2f} |")
    if study.candidate:
        lines += [
            "",
            "### A screened candidate (not served): balanced LAC on a multinomial model, Mondrian by pooled score bin",
            "",
            "Held-out figures of the fixed method (no nested selection); chosen by screening "
            "about 40 variants on these data, so optimistic by that search. Cell: set size, coverage, min "
            "label / min bin coverage, * = meets the selection rule.",
            "",
            "| who | " + " | ".join(criteria) + " |",
            "|---|" + "---|" * len(criteria),
        ]
        for who in dict.fromkeys(r.who for r in study.candidate):
            row_of = {r.criterion: r for r in study.candidate if r.who == who}
            lines.append(
                f"| {who} | "
                + " | ".join(
                    f"{row_of[c].set_size:.2f}, {row_of[c].coverage:.3f}, {row_of[c].min_label_coverage:.2f} / "
                    f"{row_of[c].min_bin_coverage:.2f}{' *' if row_of[c].qualifies else ''}"
                    if c in row_of
                    else "n/a"
                    for c in criteria
                )
                + " |"
            )
    return lines


def learned_markdown(study: WhyMissed) -> list[str]:
    """The learned model's rows as markdown lines (empty when the study has none)."""
    lines: list[str] = []
    if study.learned:
        lines += [
            "",
            "### A learned model of the human label (multinomial logistic regression on the members' "
            "expected scores; study only, fixed methods)",
            "",
            "Model fitted on half of each split's calibration documents, thresholds (PAC) on the other half.",
            "",
            "| criterion | method | coverage | 5th pct | min label coverage | set size | ratio |",
            "|---|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {r.criterion} | {r.method} | {r.coverage:.3f} | {r.coverage_p5:.3f} | "
            f"{r.min_label_coverage:.3f} | {r.set_size:.2f} | {r.ratio_to_best_member:.3f} |"
            for r in study.learned
        ]
    return lines


def markdown(study: WhyMissed) -> str:
    """The whole page: settings, the gap decomposition with the candidate, the learned model."""
    lines = [
        f"# Why the panel {{{', '.join(study.members)}}} misses its target (alpha = {study.alpha}, PAC delta = "
        f"{study.delta}, {study.n_splits} splits by document, seed {study.seed}; research, nothing here is served)",
    ]
    return "\n".join(lines + gap_markdown(study) + learned_markdown(study)) + "\n"


def write_why_missed(study: WhyMissed, out: Path) -> tuple[Path, Path]:
    """Write ``conformal/panels_why_missed.json`` and ``.md`` under ``out``."""
    json_path, md_path = out / JSON_FILE, out / MARKDOWN_FILE
    write_json(study, json_path)
    md_path.write_text(markdown(study))
    return json_path, md_path
