"""The faithfulness fits' report (:mod:`offline.build.factuality.faithfulness`): ``factuality/faithfulness.json``
(the summary) and ``factuality/faithfulness.md``."""

from __future__ import annotations

from pathlib import Path

from offline.build.cell_figures import HEADLINE_ALPHA
from offline.build.factuality.faithfulness import FaithfulnessSummary
from offline.jsonfile import write_json

__all__ = ["JSON_FILE", "MARKDOWN_FILE", "render_faithfulness_markdown", "write_faithfulness_study"]

JSON_FILE = "factuality/faithfulness.json"
MARKDOWN_FILE = "factuality/faithfulness.md"


def _fmt(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def render_faithfulness_markdown(summary: FaithfulnessSummary) -> str:
    """``faithfulness.md``: data per cell, default methods with reasons, every cell's test-split figures."""
    lines = ["# Faithfulness calibration on FRANK (fit on valid, evaluated on test)", ""]
    if summary.label:
        lines += [f"**Source: {summary.label}.**", ""]
    lines += [
        f"One split (n_splits = 1), seed {summary.seed}; target round_half_up(1 + 4 x Factuality); verdict "
        "= the stored 1-5 judge score (qa: 1 + round_half_up(4 x QA score); sentences: "
        "1 + round_half_up(4 x share of sentences judged error-free)).",
        "",
        "| Judge | Prompt family | answered | excluded | fit (valid) | test | log-probs |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| {p.judge} | {p.prompt_family} | {p.n_answered} | {p.n_excluded} | {p.n_fit} | {p.n_test} | "
        f"{'yes' if p.has_probabilities else 'no'} |"
        for p in summary.parts
    ]
    lines += ["", *(f"- skipped: {reason}" for reason in summary.skipped)]
    lines += [
        "",
        f"## Default method per cell (α={HEADLINE_ALPHA})",
        "",
        "| Judge | Prompt family | method | test coverage | set size | reason |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| {d.judge} | {d.prompt_family} | `{d.method}` | {_fmt(d.coverage)} | {_fmt(d.set_size, 2)} | {d.reason} |"
        for d in summary.default_methods
    ]
    lines += [
        "",
        "## Every cell (test split)",
        "",
        "| Judge | Prompt family | α | method | coverage | set size | min judge-score-bin cov. | "
        "min human-label cov. | valid coverage | keeps bins |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| {c.judge} | {c.prompt_family} | {c.alpha:.2f} | `{c.method}` | {_fmt(c.coverage)} | "
        f"{_fmt(c.set_size, 2)} | {_fmt(c.min_bin_coverage)} | {_fmt(c.min_label_coverage)} | "
        f"{'yes' if c.valid_coverage else 'no'} | {'yes' if c.keeps_bin_coverage else 'no'} |"
        for c in summary.cells
    ]
    return "\n".join(lines) + "\n"


def write_faithfulness_study(summary: FaithfulnessSummary, report_dir: Path) -> tuple[Path, Path]:
    """Write ``<report_dir>/factuality/faithfulness.json`` (the summary) and ``faithfulness.md``; both paths."""
    json_path, md_path = Path(report_dir) / JSON_FILE, Path(report_dir) / MARKDOWN_FILE
    json_path.parent.mkdir(parents=True, exist_ok=True)
    write_json(summary, json_path)
    md_path.write_text(render_faithfulness_markdown(summary), encoding="utf-8")
    return json_path, md_path
