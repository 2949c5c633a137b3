"""The offline report: Markdown tables, PNG figures and ``index.md``, rebuilt from the saved study summaries.

=========================================  ==========================================================
call                                       result
=========================================  ==========================================================
``write_summary(obj, path)``               a study summary (msgspec Struct) as indented JSON
``build_report(out_dir)``                  ``ReportFiles``: reads ``<out>/*/summary.json``, writes the rest
=========================================  ==========================================================

Layout under the report folder: ``index.md``; ``conformal/{summary.json,tables.md,*.png}``;
``transitivity/{summary.json,tables.md,violation_rates.png}``; ``position_bias/{summary.json,tables.md}``;
``factuality/baselines.{json,md}`` (written by the FRANK study); ``factuality/llm.{json,md}`` and
``factuality/faithfulness.{json,md}`` (written by the LLM factuality and faithfulness studies, only when LLM
factuality answers were collected) with the figure ``factuality/llm_vs_baselines.png`` drawn here from
``llm.json``; ``factuality/llm_sentences.{json,md}`` (the recorded sentence-level fact-checks) with the figure
``factuality/llm_sentences_confusion.png`` and a section at the end of ``index.md``; ``ingest/summary.json``;
``transitivity/vicuna80.json`` (real tournaments) with its tables appended to ``transitivity/tables.md``, the
figures ``transitivity/vicuna80_{violation_rates,kendall_tau}.png`` and a section in ``index.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import msgspec

from offline.build.factuality.faithfulness import FaithfulnessSummary
from offline.jsonfile import write_json
from offline.report import conformal_tables, figures, tables
from offline.report.index import IngestSummary, render_index
from offline.report.sentences import confusion_figure, sentences_section
from offline.report.validity import FIGURE_FILE as VALIDITY_FIGURE
from offline.report.validity import validity_figure, validity_section
from offline.report.vicuna80 import vicuna80_figures, vicuna80_section, vicuna80_tables
from offline.studies.conformal.results import ConformalSummary
from offline.studies.conformal.validity import JSON_FILE as VALIDITY_JSON
from offline.studies.conformal.validity import MARKDOWN_FILE as VALIDITY_MARKDOWN
from offline.studies.conformal.validity import ValiditySummary
from offline.studies.factuality import faithfulness_report as faithfulness
from offline.studies.factuality import llm as factuality_llm
from offline.studies.factuality import sentences as factuality_sentences
from offline.studies.factuality import sentences_validity as factuality_sentences_validity
from offline.studies.factuality.llm import LLMFactualitySummary
from offline.studies.factuality.sentences_results import SentenceStudySummary
from offline.studies.tournaments.position_bias import PositionBiasSummary
from offline.studies.tournaments.transitivity import TransitivitySummary
from offline.studies.vicuna80.results import Vicuna80Summary
from offline.studies.vicuna80.study import JSON_FILE as VICUNA80_JSON

__all__ = ["SUMMARY_FILES", "ReportFiles", "build_report", "read_summary", "write_summary"]

SUMMARY_FILES = {
    "conformal": "conformal/summary.json",
    "transitivity": "transitivity/summary.json",
    "position_bias": "position_bias/summary.json",
    "ingest": "ingest/summary.json",
}
T = TypeVar("T")


@dataclass(frozen=True)
class ReportFiles:
    """The files a report build wrote (paths under the report folder)."""

    index: Path
    tables: tuple[Path, ...]
    figures: tuple[Path, ...]


def write_summary(summary: msgspec.Struct, path: Path) -> Path:
    """Write a study summary as indented JSON (NaN-free: undefined statistics are null); return the path."""
    return write_json(summary, path)


def read_summary(path: Path, kind: type[T]) -> T | None:
    """Decode a saved summary into its type, or None when the file does not exist."""
    if not path.exists():
        return None
    return msgspec.json.decode(path.read_bytes(), type=kind)


def _index_links(out: Path, written_tables: list[Path]) -> dict[str, str]:
    """The index's links: the tables just written and every study file present under ``out``."""
    links = {p.relative_to(out).as_posix(): p.relative_to(out).as_posix() for p in written_tables}
    factuality_files = (
        "factuality/baselines.md",
        "factuality/baselines.json",
        factuality_llm.MARKDOWN_FILE,
        factuality_llm.JSON_FILE,
        faithfulness.MARKDOWN_FILE,
        faithfulness.JSON_FILE,
        factuality_sentences.MARKDOWN_FILE,
        factuality_sentences.JSON_FILE,
        factuality_sentences_validity.VALIDITY_MARKDOWN_FILE,
        factuality_sentences_validity.VALIDITY_JSON_FILE,
    )
    for name in (
        VALIDITY_MARKDOWN,
        VALIDITY_JSON,
        "conformal/halves.md",
        *factuality_files,
        *SUMMARY_FILES.values(),
        VICUNA80_JSON,
    ):
        if (out / name).exists():
            links[name] = name
    return links


def _with_sections(
    text: str,
    validity: ValiditySummary | None,
    halves: dict | None,
    vicuna80: Vicuna80Summary | None,
    sentences: SentenceStudySummary | None,
) -> str:
    """The rendered index with the sections of the studies present: validity first (what is served comes before
    the paper's reproduction), the Vicuna80 tournaments and the sentence-level study last."""
    if validity is not None:
        title, rest = text.split("\n", 1)
        text = title + "\n\n" + validity_section(validity, halves) + rest
    if vicuna80 is not None:
        text = text.rstrip("\n") + "\n\n" + vicuna80_section(vicuna80)
    if sentences is not None:
        text = text.rstrip("\n") + "\n\n" + sentences_section(sentences)
    return text


def build_report(out_dir: Path | str) -> ReportFiles:
    """Rebuild every table, figure and ``index.md`` under ``out_dir`` from the summary JSONs found there.

    Raises FileNotFoundError when no summary exists (run ``python -m offline calibrate`` first).
    """
    out = Path(out_dir)
    conformal = read_summary(out / SUMMARY_FILES["conformal"], ConformalSummary)
    transitivity = read_summary(out / SUMMARY_FILES["transitivity"], TransitivitySummary)
    position_bias = read_summary(out / SUMMARY_FILES["position_bias"], PositionBiasSummary)
    ingest = read_summary(out / SUMMARY_FILES["ingest"], IngestSummary)
    llm = read_summary(out / factuality_llm.JSON_FILE, LLMFactualitySummary)
    faithful = read_summary(out / faithfulness.JSON_FILE, FaithfulnessSummary)
    sentences = read_summary(out / factuality_sentences.JSON_FILE, SentenceStudySummary)
    vicuna80 = read_summary(out / VICUNA80_JSON, Vicuna80Summary)
    validity = read_summary(out / VALIDITY_JSON, ValiditySummary)
    halves_path = out / "conformal" / "halves.json"
    halves = msgspec.json.decode(halves_path.read_bytes()) if halves_path.exists() else None
    baselines = (out / "factuality" / "baselines.json").exists()
    if (
        conformal is None
        and transitivity is None
        and position_bias is None
        and llm is None
        and not baselines
        and sentences is None
    ):
        raise FileNotFoundError(f"no study summary under {out}: run `python -m offline calibrate --out {out}` first")
    written_tables: list[Path] = []
    written_figures: list[tuple[str, Path]] = []
    if conformal is not None:
        path = out / "conformal" / "tables.md"
        path.write_text(conformal_tables.conformal_tables(conformal), encoding="utf-8")
        written_tables.append(path)
        folder = out / "conformal"
        written_figures += [
            (
                "Figure 3 — set size and coverage (paper's method)",
                figures.set_size_heatmap(conformal, folder / "set_size_heatmap.png"),
            ),
            (
                "Set size and coverage (default method per cell)",
                figures.set_size_heatmap(conformal, folder / "set_size_heatmap_default.png", defaults=True),
            ),
            (
                "Figure 4 — width-error reliability",
                figures.width_error_reliability(conformal, folder / "width_error.png"),
            ),
            (
                "Figure 5 — inter-judge width agreement",
                figures.inter_judge_matrices(conformal, folder / "inter_judge.png"),
            ),
            ("Figure 6 — coverage vs 1−α", figures.coverage_vs_alpha(conformal, folder / "coverage_vs_alpha.png")),
        ]
    if validity is not None:
        written_figures.insert(
            0,
            (
                "The served artifact's coverage on unseen documents (validity study)",
                validity_figure(validity, out / VALIDITY_FIGURE),
            ),
        )
    if transitivity is not None:
        path = out / "transitivity" / "tables.md"
        path.write_text(tables.transitivity_tables(transitivity), encoding="utf-8")
        written_tables.append(path)
        title = "Figure 2 — per-input violation rates" + (f" ({transitivity.label})" if transitivity.simulated else "")
        written_figures.append(
            (title, figures.violation_violins(transitivity, out / "transitivity" / "violation_rates.png"))
        )
    if position_bias is not None:
        path = out / "position_bias" / "tables.md"
        path.write_text(tables.position_bias_tables(position_bias), encoding="utf-8")
        written_tables.append(path)
    if llm is not None:
        title = "FRANK — LLM judges vs baseline metrics (partial correlation, same items)"
        written_figures.append(
            (
                title + (f" — {llm.label}" if llm.label else ""),
                figures.factuality_comparison(llm, out / factuality_llm.FIGURE_FILE),
            )
        )
    if vicuna80 is not None:  # the real tournaments: a section after the (simulated) SummEval tables
        path = out / "transitivity" / "tables.md"
        before = path.read_text(encoding="utf-8").rstrip("\n") + "\n\n" if transitivity is not None else ""
        path.write_text(before + vicuna80_tables(vicuna80), encoding="utf-8")
        if transitivity is None:
            written_tables.append(path)
        written_figures += vicuna80_figures(vicuna80, out)
    if sentences is not None:
        written_figures.append(
            (
                "FRANK — error types: human majority type vs LLM category (FineSurE recordings)",
                confusion_figure(sentences, out / factuality_sentences.FIGURE_FILE),
            )
        )
    index = out / "index.md"
    text = render_index(
        conformal=conformal,
        transitivity=transitivity,
        position_bias=position_bias,
        ingest=ingest,
        links=_index_links(out, written_tables),
        figures=[(title, p.relative_to(out).as_posix()) for title, p in written_figures],
        llm=llm,
        faithfulness=faithful,
    )
    index.write_text(_with_sections(text, validity, halves, vicuna80, sentences), encoding="utf-8")
    return ReportFiles(index=index, tables=tuple(written_tables), figures=tuple(p for _, p in written_figures))
