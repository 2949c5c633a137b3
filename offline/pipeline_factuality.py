"""The factuality reports of ``calibrate`` (steps of :mod:`offline.pipeline`), and the factuality part alone.

:func:`sentences_step` writes the study of the recorded sentence-level LLM fact-checks (``frank/llm/finesure``;
the build stored them); :func:`factuality_step` writes the LLM factuality tables from the store's factuality answers
and the report of the build's faithfulness fits (nothing, and a previous run's files removed, without them).

:func:`calibrate_factuality` runs the factuality part alone (the faithfulness fits and an artifact with only their
entries, :func:`offline.build.build.build_faithfulness_artifact`; the FRANK baselines, the reports), e.g. on a store
of answers collected from a test stand-in, with ``label`` naming the source in every output.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from offline.build.answers.store import AnswerStore
from offline.build.build import build_faithfulness_artifact
from offline.build.factuality.answers import factuality_answers_from_store
from offline.build.factuality.faithfulness import FaithfulnessStudy
from offline.build.factuality.sentences import ParseStats
from offline.build.inputs.finesure import load_finesure
from offline.build.inputs.frank import Frank
from offline.report import build_report
from offline.studies.factuality import faithfulness_report
from offline.studies.factuality import sentences as factuality_sentences
from offline.studies.factuality.faithfulness_report import write_faithfulness_study
from offline.studies.factuality.llm import remove_llm_outputs, run_llm_study, write_llm_study
from offline.studies.factuality.report import write_baselines_json, write_baselines_markdown
from offline.studies.factuality.sentences import run_sentence_study
from offline.studies.factuality.sentences_report import write_sentence_study
from offline.studies.factuality.study import baseline_tables

__all__ = ["FactualityResult", "calibrate_factuality", "factuality_step", "sentences_step"]


@dataclass(frozen=True)
class FactualityResult:
    """What the LLM factuality part wrote (nothing when no answers were collected) and the faithfulness fits."""

    files: tuple[Path, ...]
    faithfulness: FaithfulnessStudy | None
    n_answers: int


def factuality_step(
    store: AnswerStore, frank: Frank, out: Path, faithfulness: FaithfulnessStudy | None, *, label: str = ""
) -> FactualityResult:
    """LLM factuality tables from the store's factuality answers and the report of the build's faithfulness fits;
    with neither, remove a previous run's LLM files and write nothing."""
    answers = factuality_answers_from_store(store, frank.items)
    if faithfulness is None:
        remove_llm_outputs(out)
        for name in (faithfulness_report.JSON_FILE, faithfulness_report.MARKDOWN_FILE):
            (out / name).unlink(missing_ok=True)
        return FactualityResult(files=(), faithfulness=None, n_answers=0)
    files: tuple[Path, ...] = ()
    if answers:
        summary, tables = run_llm_study(frank, answers, label=label)
        files = write_llm_study(summary, tables, out)
    else:
        remove_llm_outputs(out)
    files = (*files, *write_faithfulness_study(faithfulness.summary, out))
    n_answers = sum(part.n_answered for part in faithfulness.summary.parts)
    return FactualityResult(files=files, faithfulness=faithfulness, n_answers=n_answers)


def sentences_step(frank: Frank, data_dir: Path, out: Path, stats: Sequence[ParseStats]) -> tuple[Path, ...]:
    """The study of the recorded sentence-level fact-checks (``factuality/llm_sentences.{json,md}``) with the parse
    statistics of their ingest; without the folder, remove a previous run's files."""
    checks = load_finesure(data_dir, frank)
    if not checks:
        for name in (factuality_sentences.JSON_FILE, factuality_sentences.MARKDOWN_FILE):
            (out / name).unlink(missing_ok=True)
        return ()
    return write_sentence_study(run_sentence_study(frank, checks, list(stats)), out)


def calibrate_factuality(
    *,
    data_dir: Path,
    out_dir: Path,
    thresholds_path: Path,
    store_path: Path,
    seed: int = 0,
    label: str = "",
    log: Any = None,
) -> FactualityResult:
    """The factuality part alone: the faithfulness fits of the store at ``store_path`` and an artifact at
    ``thresholds_path`` holding only their entries (none without answers), the FRANK baselines and the report."""
    log = log or structlog.get_logger("offline.calibrate")
    out = Path(out_dir)
    faithfulness, frank = build_faithfulness_artifact(
        data_dir=Path(data_dir),
        store_path=Path(store_path),
        thresholds_path=Path(thresholds_path),
        seed=seed,
        label=label,
    )
    tables = baseline_tables(frank)
    baselines = (write_baselines_json(tables, out), write_baselines_markdown(tables, out))
    with AnswerStore(store_path) as store:
        result = factuality_step(store, frank, out, faithfulness, label=label)
    build_report(out)
    log.info("factuality calibrated", answers=result.n_answers, out=str(out), thresholds=str(thresholds_path))
    return FactualityResult(
        files=(*baselines, *result.files), faithfulness=result.faithfulness, n_answers=result.n_answers
    )
