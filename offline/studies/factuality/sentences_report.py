"""The sentence-level factuality study's outputs: the judges' ranking, the markdown tables, and the files written
under ``factuality/``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from offline.build.inputs.frank import CATEGORY_COLUMNS, FRANK_DATASETS
from offline.jsonfile import write_json
from offline.studies.factuality.sentences import BASELINES, JSON_FILE, MARKDOWN_FILE, TYPE_CODES
from offline.studies.factuality.sentences_results import CorrelationRow, SentenceStudySummary

__all__ = [
    "ranking",
    "render_sentence_markdown",
    "write_sentence_study",
]


def _f(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2g}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join("---" for _ in header) + " |",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def ranking(summary: SentenceStudySummary) -> list[CorrelationRow]:
    """The judges' overall rows, highest partial Pearson first (undefined last)."""
    overall = [r for r in summary.rows if r.dataset == "all"]
    return sorted(overall, key=lambda r: (r.partial_pearson is None, -(r.partial_pearson or 0.0), r.judge))


def render_sentence_markdown(summary: SentenceStudySummary) -> str:
    """``llm_sentences.md``: parse, correlations with the baselines side by side, ablation, agreement, types."""
    lines = ["# FRANK: sentence-level fact-checks by eight recorded LLMs", "", f"**{summary.source}**", ""]
    lines += ["## Parsing (our parser on the raw replies)", ""]
    lines += _table(
        [
            "Judge",
            "rows",
            "parse rate",
            "included",
            "wrong count (excluded)",
            "unreadable",
            "\\' repaired",
            "agreement with recorded (rows / sentences)",
        ],
        [
            [
                p.judge,
                str(p.n_rows),
                _f(p.parse_rate, 4),
                str(p.n_included),
                str(p.n_wrong_count),
                str(p.n_unreadable),
                str(p.n_escapes_repaired),
                f"{_f(p.recorded_row_agreement, 4)} / {_f(p.recorded_sentence_agreement, 4)}",
            ]
            for p in summary.parse
        ],
    )
    base = {(b.judge, b.metric): b for b in summary.baselines}
    by = {(r.judge, r.dataset): r for r in summary.rows}
    lines += [
        "",
        "## Partial correlation with FRANK Factuality (controlling for the system)",
        "",
        "Pearson / Spearman; p of the Pearson; n items. Baselines on exactly the same items as the judge. "
        "95% CI: Fisher z, tanh(atanh(r) -+ 1.96 / sqrt(n - k - 3)) with k = systems - 1 (the partial "
        "correlation's df n - 2 - k, minus one); the same for Spearman (an approximation). The recorder's "
        "pred_error column: the same partial correlations on the recorder's own reading of the replies "
        "(its item score = share of sentences with pred_error 0), on rows where it gives one flag per "
        "sentence.",
        "",
    ]
    metrics = [m for m in BASELINES if any(b.metric == m for b in summary.baselines)]
    header = [
        "Judge (ranked)",
        "Pearson",
        "95% CI",
        "p",
        "Spearman",
        "95% CI",
        "n",
        "recorder's pred_error P / S (n)",
        "CNN/DM P / S (n)",
        "BBC P / S (n)",
        *(f"{m} P / S" for m in metrics),
    ]
    table_rows = []

    def ci(interval: tuple[float, float] | None) -> str:
        return "n/a" if interval is None else f"[{interval[0]:.3f}, {interval[1]:.3f}]"

    for r in ranking(summary):
        cells = [
            r.judge,
            _f(r.partial_pearson),
            ci(r.partial_pearson_ci),
            _p(r.p_value),
            _f(r.partial_spearman),
            ci(r.partial_spearman_ci),
            str(r.n),
            f"{_f(r.recorded_partial_pearson)} / {_f(r.recorded_partial_spearman)} ({r.recorded_n})",
        ]
        for ds in FRANK_DATASETS:
            d = by[(r.judge, ds)]
            cells.append(f"{_f(d.partial_pearson)} / {_f(d.partial_spearman)} ({d.n})")
        for m in metrics:
            b = base[(r.judge, m)]
            cells.append(f"{_f(b.partial_pearson)} / {_f(b.partial_spearman)}")
        table_rows.append(cells)
    lines += _table(header, table_rows)
    lines += [
        "",
        "## Ablation: corr(Factuality) - corr(Flip_<category>) (Pearson)",
        "",
        "Positive: the judge's correlation drops when that category's errors are ignored.",
        "",
    ]
    abl = {(a.judge, a.category): a for a in summary.ablation}
    lines += _table(
        ["Judge", *CATEGORY_COLUMNS],
        [[j, *(_f(abl[(j, c)].delta_pearson) for c in CATEGORY_COLUMNS)] for j in summary.judges],
    )
    lines += ["", '## Sentence level: "has an error" against the human majority', ""]
    lines += _table(
        ["Judge", "sentences", "human errors", "judge errors", "precision", "recall", "F1", "accuracy"],
        [
            [
                a.judge,
                str(a.n_sentences),
                str(a.n_human_error),
                str(a.n_judge_error),
                _f(a.precision),
                _f(a.recall),
                _f(a.f1),
                _f(a.accuracy),
            ]
            for a in summary.sentence_agreement
        ],
    )
    lines += [
        "",
        "## Error types: recall of the human majority type among the judge's categories",
        "",
        "Cells: recall (n sentences of that human type). Figure: `llm_sentences_confusion.png`.",
        "",
    ]
    typ = {(t.judge, t.error_type): t for t in summary.error_types}
    lines += _table(
        ["Judge", *TYPE_CODES],
        [[j, *(f"{_f(typ[(j, c)].recall, 2)} ({typ[(j, c)].n})" for c in TYPE_CODES)] for j in summary.judges],
    )
    return "\n".join(lines) + "\n"


def write_sentence_study(summary: SentenceStudySummary, report_dir: Path) -> tuple[Path, Path]:
    """Write ``<report_dir>/factuality/llm_sentences.json`` (NaN-free) and ``llm_sentences.md``; both paths."""
    json_path, md_path = Path(report_dir) / JSON_FILE, Path(report_dir) / MARKDOWN_FILE
    write_json(summary, json_path)
    md_path.write_text(render_sentence_markdown(summary), encoding="utf-8")
    return json_path, md_path
