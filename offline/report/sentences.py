"""The report's part for the sentence-level LLM fact-checks: the confusion-matrix figure and the index section.

Both are drawn from ``factuality/llm_sentences.json`` (:class:`SentenceStudySummary`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from offline.report.tables import fmt
from offline.studies.factuality.sentences import BASELINES
from offline.studies.factuality.sentences_report import ranking
from offline.studies.factuality.sentences_results import SentenceStudySummary

__all__ = ["PAPER_CLAIM", "confusion_figure", "sentences_section"]

PAPER_CLAIM = (
    "paper 001 (GPT-3.5, GPT-4, PaLM-2 with direct 1-5 and QA prompts) found no partial correlation "
    "above 0.3 with FRANK's human factuality for most LLMs"
)


def confusion_figure(summary: SentenceStudySummary, path: Path) -> Path:
    """One row-normalised heatmap per judge: human majority type (rows) x the judge's category (columns)."""
    n = len(summary.confusion)
    columns = min(4, max(1, n))
    rows = max(1, -(-n // columns))
    # Fixed margins rather than the constrained layout engine, which took most of the figure's time.
    figure = Figure(figsize=(4.2 * columns + 0.8, 4.0 * rows + 0.6))
    figure.subplots_adjust(left=0.07, right=0.93, bottom=0.1, top=0.9, wspace=0.35, hspace=0.45)
    axes = figure.subplots(rows, columns, squeeze=False)
    image = None
    for index, matrix in enumerate(summary.confusion):
        ax = axes[index // columns][index % columns]
        counts = np.array(matrix.counts, dtype=float)
        totals = counts.sum(axis=1, keepdims=True)
        shares = np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)
        image = ax.imshow(shares, vmin=0.0, vmax=1.0, cmap="Blues")
        ax.set_xticks(range(len(matrix.labels)), matrix.labels, rotation=90, fontsize=7)
        ax.set_yticks(
            range(len(matrix.labels)),
            [f"{label} ({int(t)})" for label, t in zip(matrix.labels, totals[:, 0], strict=True)],
            fontsize=7,
        )
        ax.set_title(matrix.judge, fontsize=9)
        ax.set_xlabel("judge's category", fontsize=7)
        if index % columns == 0:
            ax.set_ylabel("human majority type (n sentences)", fontsize=7)
    for index in range(n, rows * columns):
        axes[index // columns][index % columns].axis("off")
    if image is not None:
        figure.colorbar(image, cax=figure.add_axes((0.945, 0.3, 0.012, 0.4)), label="share of the row")
    figure.suptitle(
        "FRANK error types: human majority type vs the LLM's category (FineSurE-prompt recordings)", fontsize=10
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(figure)
    figure.savefig(path, dpi=110, format="png")
    return path


def sentences_section(summary: SentenceStudySummary) -> str:
    """``index.md``'s section: source caveat, ranked partial correlations beside the baselines, the paper's claim."""
    ranked = ranking(summary)
    base = {(b.judge, b.metric): b for b in summary.baselines}
    above = [r for r in ranked if r.partial_pearson is not None and r.partial_pearson > 0.3]
    lines = [
        "## Sentence-level fact-checks by eight recorded LLMs (FRANK)\n",
        f"**These are FineSurE-prompt recordings, not the paper's prompts.** {summary.source} Item score = "
        "share of sentences the LLM judged error-free; partial correlation with FRANK `Factuality` "
        "controlling for the system, each LLM on its own ~200 items, with the baselines on exactly the same "
        "items (`factuality/llm_sentences.md`).\n",
    ]
    rows = []
    for r in ranked:
        cells = [r.judge, fmt(r.partial_pearson), fmt(r.partial_spearman), str(r.n)]
        for metric in BASELINES:
            b = base.get((r.judge, metric))
            cells.append("n/a" if b is None else f"{fmt(b.partial_pearson)} / {fmt(b.partial_spearman)}")
        rows.append(cells)
    header = ["LLM (ranked by partial Pearson)", "Pearson", "Spearman", "n", *(f"{m} P / S" for m in BASELINES)]
    lines.append(
        "\n".join(
            [
                "| " + " | ".join(header) + " |",
                "| " + " | ".join("---" for _ in header) + " |",
                *("| " + " | ".join(row) + " |" for row in rows),
            ]
        )
        + "\n"
    )
    beaten = sum(
        1
        for r in ranked
        if r.partial_pearson is not None
        and all(
            (b := base.get((r.judge, m))) is None or b.partial_pearson is None or r.partial_pearson > b.partial_pearson
            for m in BASELINES
        )
    )
    defined = [r for r in ranked if r.partial_pearson is not None]
    spread = (
        (
            f" (highest {defined[0].judge} {fmt(defined[0].partial_pearson)}, lowest {defined[-1].judge} "
            f"{fmt(defined[-1].partial_pearson)})"
        )
        if defined
        else ""
    )
    verdict = (
        "so the paper's conclusion that LLMs are unreliable factuality judges does not carry over to these "
        "models with a sentence-level prompt"
        if 2 * len(above) > len(ranked)
        else "which agrees with the paper's conclusion"
    )
    lines.append(
        f"Against the paper's claims: {PAPER_CLAIM}. With the FineSurE sentence-level prompt, {len(above)} of "
        f"{len(ranked)} LLMs exceed 0.3 (partial Pearson){spread}, {verdict}; {beaten} of {len(ranked)} beat all "
        "three baselines on their own items. Its recommendation to control for the system is what these numbers "
        "use. Per dataset, BBC (mostly one-sentence XSum summaries, so a nearly binary item score) is much weaker, "
        "and undefined where an LLM flags every BBC summary.\n"
    )
    lines.append(
        "Calibration: each LLM's 1-5 verdict `1 + round_half_up(4 x item score)` is calibrated for the "
        "faithfulness target under prompt family `factuality_sentences` by the validity rules (PAC "
        "thresholds, splits that keep each FRANK article on one side): "
        "`factuality/llm_sentences_validity.md`; FRANK's own valid/test split is reported in "
        "`factuality/faithfulness.md`.\n"
    )
    parse = "; ".join(f"{p.judge} {fmt(p.parse_rate, 4)} ({p.n_wrong_count} excluded)" for p in summary.parse)
    lines.append(
        f"Parse rate of our parser on the raw replies (rows whose verdict count differs from the sentence "
        f"count are excluded and counted): {parse}.\n"
    )
    return "\n".join(lines)
