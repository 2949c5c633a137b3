"""LLM judges on FRANK: their collected factuality answers -> the FRANK partial-correlation tables (paper 001).

========================================================  ==================================================
call                                                      result
========================================================  ==================================================
``factuality_answers_from_store(store, frank.items)``     ``{(judge, method): [FactualityAnswer, ...]}``
``run_llm_study(frank, answers, label=...)``              ``(LLMFactualitySummary, {metric: tables})``
``write_llm_study(summary, tables, report_dir)``          ``factuality/llm.json`` and ``factuality/llm.md``
``remove_llm_outputs(report_dir)``                        deletes those files (and the figure) if present
========================================================  ==================================================

Rules, stated once (also written into ``llm.json`` under ``rules``):

* **Answers.** The answer store's rows of task ``factuality_direct`` / ``factuality_qa`` stored under the prompt
  family of the same name (``judges.factuality.methods.FAITHFULNESS_PROMPT_FAMILIES``), criterion
  ``faithfulness``, repetition 0, ``item_id`` = ``"<hash>/<model_name>"``; an id naming no FRANK item is an
  error (a misaligned store must not pass silently).
* **Score.** direct: the judge's 1-5 ``judge_score``; qa: the QA score in [0, 1] (mean token F1), read from the
  stored ``QAFactuality`` JSON (``raw_reply``). A failed call or a missing/unreadable score is missing: the item
  is dropped from that judge's correlations and counted (``n_failed``, ``n_no_score``).
* **Tables.** :mod:`offline.studies.factuality.study`'s rules (partial Pearson/Spearman controlling for the system;
  overall, per dataset, per error category, Flip ablation) on the FRANK items the judge scored; metric name
  ``"<judge> (<method>)"``.
* **Comparison.** For the figure, every LLM run and every FRANK baseline metric is correlated (overall) on the
  *same* rows: the FRANK items that every LLM run scored.
* **Label.** ``label`` (e.g. the judge stand-in of the tests, whose answers are scripted) is written into both
  files and the figure; the models that answered are listed per run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from judges.factuality.methods import FAITHFULNESS_PROMPT_FAMILIES
from offline.build.factuality.answers import FactualityAnswer
from offline.build.inputs.frank import Frank, baseline_scores
from offline.studies.factuality.report import baselines_json, cell_json, render_tables_markdown
from offline.studies.factuality.study import FactualityTables, correlation_cell, llm_tables

__all__ = [
    "FIGURE_FILE",
    "JSON_FILE",
    "MARKDOWN_FILE",
    "RULES",
    "ComparisonCell",
    "LLMFactualitySummary",
    "LLMRun",
    "remove_llm_outputs",
    "render_llm_markdown",
    "run_llm_study",
    "write_llm_study",
]

JSON_FILE = "factuality/llm.json"
MARKDOWN_FILE = "factuality/llm.md"
FIGURE_FILE = "factuality/llm_vs_baselines.png"
RULES = {
    "answers": "answer-store rows of task factuality_direct|factuality_qa under the prompt family of the same "
    "name, criterion faithfulness, repetition 0, item_id '<hash>/<model_name>' of a FRANK item",
    "score": "direct: judge_score 1-5; qa: QA score in [0, 1] (mean token F1) from the stored QAFactuality JSON; "
    "failed calls and missing scores are dropped and counted",
    "tables": "FRANK partial correlation controlling for the system (one-hot model_name), overall, per dataset, "
    "per error category, Flip ablation, on the items the judge scored",
    "comparison": "overall partial Pearson/Spearman of every LLM run and FRANK baseline on the items every LLM "
    "run scored",
}


class LLMRun(msgspec.Struct, frozen=True, kw_only=True):
    """What one (judge, method) contributed: answers read, scored, failed; scored items per FRANK split."""

    judge: str
    method: str
    prompt_family: str
    metric: str
    models: list[str]
    n_answers: int
    n_scored: int
    n_failed: int
    n_no_score: int
    scored_per_split: dict[str, int]


class ComparisonCell(msgspec.Struct, frozen=True, kw_only=True):
    """Overall partial correlation of one metric on the common items; ``kind`` is ``"llm"`` or ``"baseline"``."""

    metric: str
    kind: str
    pearson: float | None
    spearman: float | None
    n: int
    problem: str | None = None


class LLMFactualitySummary(msgspec.Struct, frozen=True, kw_only=True):
    """``factuality/llm.json``: runs, tables (``baselines.json``'s layout, keyed by metric) and the comparison."""

    label: str
    rules: dict[str, str]
    runs: list[LLMRun]
    tables: dict[str, Any]
    comparison_n_items: int
    comparison: list[ComparisonCell]


def _comparison(frank: Frank, scored: Mapping[str, dict[str, float]]) -> tuple[int, list[ComparisonCell]]:
    common = set.intersection(*(set(run) for run in scored.values())) if scored else set()
    mask = np.array([item.item_id in common for item in frank.items])
    items = [item for item, keep in zip(frank.items, mask, strict=True) if keep]
    columns: list[tuple[str, str, np.ndarray]] = [
        (metric, "llm", np.array([values[item.item_id] for item in items], dtype=float))
        for metric, values in scored.items()
    ]
    columns += [(metric, "baseline", baseline_scores(frank, metric)[mask]) for metric in frank.metric_names]
    cells = []
    for metric, kind, values in columns:
        cell = cell_json(correlation_cell(items, values))
        cells.append(
            ComparisonCell(
                metric=metric,
                kind=kind,
                pearson=cell["pearson"],
                spearman=cell["spearman"],
                n=cell["n"],
                problem=cell.get("problem"),
            )
        )
    return len(items), cells


def run_llm_study(
    frank: Frank, answers: Mapping[tuple[str, str], Sequence[FactualityAnswer]], *, label: str = ""
) -> tuple[LLMFactualitySummary, dict[str, FactualityTables]]:
    """Tables per (judge, method) and the common-items comparison (module rules); runs in key order."""
    by_id = {item.item_id: item for item in frank.items}
    runs, tables, scored = [], {}, {}
    for (judge, method), group in sorted(answers.items()):
        values = {a.item_id: a.score for a in group if a.score is not None}
        table = llm_tables(frank.items, {by_id[i].key: v for i, v in values.items()}, judge=judge, method=method)
        tables[table.metric] = table
        scored[table.metric] = values
        per_split = {split: sum(by_id[i].split == split for i in values) for split in ("valid", "test")}
        runs.append(
            LLMRun(
                judge=judge,
                method=method,
                prompt_family=FAITHFULNESS_PROMPT_FAMILIES[method],
                metric=table.metric,
                models=sorted({a.model for a in group if a.model}),
                n_answers=len(group),
                n_scored=len(values),
                n_failed=sum(a.error is not None for a in group),
                n_no_score=sum(a.error is None and a.score is None for a in group),
                scored_per_split=per_split,
            )
        )
    n_common, comparison = _comparison(frank, scored)
    summary = LLMFactualitySummary(
        label=label,
        rules=dict(RULES),
        runs=runs,
        tables=baselines_json(tables),
        comparison_n_items=n_common,
        comparison=comparison,
    )
    return summary, tables


def render_llm_markdown(summary: LLMFactualitySummary, tables: Mapping[str, FactualityTables]) -> str:
    """``llm.md``: who answered (and the label), then the tables in the layout of the baselines and the paper."""
    notes = []
    if summary.label:
        notes.append(f"**Source: {summary.label}.**")
    notes.append(
        "Runs: "
        + "; ".join(
            f"{r.metric} — {r.n_scored} of {r.n_answers} answers scored ({r.n_failed} failed calls, {r.n_no_score} "
            f"without a score; valid {r.scored_per_split['valid']}, test {r.scored_per_split['test']}; model(s) "
            f"{', '.join(r.models) or 'unknown'})"
            for r in summary.runs
        )
        + "."
    )
    notes.append(
        "Scores: direct = the judge's 1-5 digit; qa = the QA score in [0, 1] (mean token F1 of the "
        "summary's and the article's answers). Rows: the FRANK items each judge scored (n per cell)."
    )
    text = render_tables_markdown(
        tables, title="FRANK: partial correlation of LLM judges with human factuality", notes=notes
    )
    rows = [f"| {c.metric} | {c.kind} | {_fmt(c.pearson)} | {_fmt(c.spearman)} | {c.n} |" for c in summary.comparison]
    return (
        text
        + "\n".join(
            [
                "",
                f"## LLM judges and FRANK baselines on the same {summary.comparison_n_items} items",
                "",
                "The items every LLM run scored; overall partial correlation controlling for the system.",
                "",
                "| Metric | Kind | Pearson | Spearman | n |",
                "| --- | --- | --- | --- | --- |",
                *rows,
            ]
        )
        + "\n"
    )


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def write_llm_study(
    summary: LLMFactualitySummary, tables: Mapping[str, FactualityTables], report_dir: Path
) -> tuple[Path, Path]:
    """Write ``<report_dir>/factuality/llm.json`` (the summary, NaN-free) and ``llm.md``; return both paths."""
    json_path, md_path = Path(report_dir) / JSON_FILE, Path(report_dir) / MARKDOWN_FILE
    json_path.parent.mkdir(parents=True, exist_ok=True)
    document = msgspec.to_builtins(summary)
    json_path.write_text(json.dumps(document, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    md_path.write_text(render_llm_markdown(summary, tables), encoding="utf-8")
    return json_path, md_path


def remove_llm_outputs(report_dir: Path) -> None:
    """Delete a previous run's LLM factuality files, so a report never shows answers the store no longer has."""
    for name in (JSON_FILE, MARKDOWN_FILE, FIGURE_FILE):
        (Path(report_dir) / name).unlink(missing_ok=True)
