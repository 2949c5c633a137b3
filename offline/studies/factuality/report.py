"""The FRANK factuality study's outputs: its tables as JSON and Markdown, and the baselines' files.

=====================================================  ===============================================
call                                                   result
=====================================================  ===============================================
``write_baselines_json(tables, report_dir)``           ``<report_dir>/factuality/baselines.json``
``write_baselines_markdown(tables, report_dir)``       ``<report_dir>/factuality/baselines.md``
``render_tables_markdown(tables, title=)``             any metrics' tables as Markdown
``cell_json(cell)``, ``baselines_json(tables)``        the cells and tables as JSON values
=====================================================  ===============================================

The tables are :mod:`offline.studies.factuality.study`'s; nothing here computes a statistic.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from calibration.stats import Correlation
from offline.build.inputs.frank import CATEGORY_COLUMNS, FRANK_DATASETS
from offline.studies.factuality.study import CorrelationCell, FactualityTables

__all__ = [
    "baselines_json",
    "cell_json",
    "render_baselines_markdown",
    "render_tables_markdown",
    "write_baselines_json",
    "write_baselines_markdown",
]

_DATASET_TITLES = {"cnndm": "CNN/DM", "bbc": "BBC (XSum)"}


def cell_json(cell: CorrelationCell) -> dict[str, Any]:
    """One cell as JSON: pearson, spearman (statistics), their p-values, n, and ``problem`` when undefined."""
    out: dict[str, Any] = {
        "pearson": None if cell.pearson is None else cell.pearson.statistic,
        "pearson_p_value": None if cell.pearson is None else cell.pearson.p_value,
        "spearman": None if cell.spearman is None else cell.spearman.statistic,
        "spearman_p_value": None if cell.spearman is None else cell.spearman.p_value,
        "n": cell.n,
    }
    if cell.problem is not None:
        out["problem"] = cell.problem
    return out


def baselines_json(tables: Mapping[str, FactualityTables]) -> dict[str, Any]:
    """The JSON document of ``baselines.json``: keyed by metric name, overall numbers at the top level."""
    document: dict[str, Any] = {}
    for metric, table in tables.items():
        entry = cell_json(table.overall)
        entry["controls"] = list(table.controls)
        entry["per_dataset"] = {ds: cell_json(cell) for ds, cell in table.per_dataset.items()}
        entry["per_category"] = {c: cell_json(cell) for c, cell in table.per_category.items()}
        entry["ablation"] = {
            c: {
                "flip_column": cell.flip_column,
                "delta_pearson": cell.delta_pearson,
                "delta_spearman": cell.delta_spearman,
                "errors_ignored": cell_json(cell.errors_ignored),
            }
            for c, cell in table.ablation.items()
        }
        document[metric] = entry
    return document


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _p(correlation: Correlation | None) -> str:
    return "n/a" if correlation is None else f"{correlation.p_value:.2g}"


def _pair(cell: CorrelationCell) -> str:
    pearson = None if cell.pearson is None else cell.pearson.statistic
    spearman = None if cell.spearman is None else cell.spearman.statistic
    return f"{_number(pearson)} / {_number(spearman)}"


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(text.replace("|", "\\|") for text in cells) + " |"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return [_row(header), _row(["---"] * len(header)), *(_row(row) for row in rows)]


def render_baselines_markdown(tables: Mapping[str, FactualityTables]) -> str:
    """Markdown: overall and per-dataset table, per-category table, ablation table (3 decimals)."""
    return render_tables_markdown(tables, title="FRANK: partial correlation of metrics with human factuality")


def render_tables_markdown(tables: Mapping[str, FactualityTables], *, title: str, notes: Sequence[str] = ()) -> str:
    """Markdown under ``title`` (then ``notes``, one paragraph each): overall and per-dataset table,
    per-category table, ablation table (3 decimals), one row per metric."""
    controls = sorted({", ".join(table.controls) for table in tables.values()})
    lines = [f"# {title}", ""]
    for note in notes:
        lines += [note, ""]
    lines += [
        f"Controls (one-hot, residualised by least squares): {'; '.join(controls) or 'none'}. "
        "Cells give Pearson / Spearman of the residuals; p-values from the t-test with n - 2 - k df.",
        "",
        "## Overall and per dataset",
        "",
    ]
    header = ["Metric", "Pearson", "p", "Spearman", "p", "n"]
    header += [f"{_DATASET_TITLES.get(ds, ds)} P / S (n)" for ds in FRANK_DATASETS]
    rows = []
    for metric, table in tables.items():
        cell = table.overall
        row = [metric, _number(cell.pearson.statistic if cell.pearson else None), _p(cell.pearson)]
        row += [_number(cell.spearman.statistic if cell.spearman else None), _p(cell.spearman), str(cell.n)]
        row += [f"{_pair(table.per_dataset[ds])} ({table.per_dataset[ds].n})" for ds in FRANK_DATASETS]
        rows.append(row)
    lines += _table(header, rows)
    lines += ["", "## Per error category (human score = share of sentences without that error)", ""]
    lines += _table(
        ["Metric", *CATEGORY_COLUMNS],
        [[metric, *(_pair(table.per_category[c]) for c in CATEGORY_COLUMNS)] for metric, table in tables.items()],
    )
    lines += [
        "",
        "## Ablation: corr(metric, Factuality) - corr(metric, Flip_<category>)",
        "",
        "Positive: the correlation drops when the category's errors are ignored (the metric captures them).",
        "",
    ]
    lines += _table(
        ["Metric", *CATEGORY_COLUMNS],
        [
            [
                metric,
                *(
                    f"{_number(table.ablation[c].delta_pearson)} / {_number(table.ablation[c].delta_spearman)}"
                    for c in CATEGORY_COLUMNS
                ),
            ]
            for metric, table in tables.items()
        ],
    )
    return "\n".join(lines) + "\n"


def _write(report_dir: Path, name: str, text: str) -> Path:
    path = Path(report_dir) / "factuality" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_baselines_json(tables: Mapping[str, FactualityTables], report_dir: Path) -> Path:
    """Write ``<report_dir>/factuality/baselines.json`` (see :func:`baselines_json`); returns its path."""
    return _write(report_dir, "baselines.json", json.dumps(baselines_json(tables), indent=2, allow_nan=False) + "\n")


def write_baselines_markdown(tables: Mapping[str, FactualityTables], report_dir: Path) -> Path:
    """Write ``<report_dir>/factuality/baselines.md`` (see :func:`render_baselines_markdown`); returns its path."""
    return _write(report_dir, "baselines.md", render_baselines_markdown(tables))
