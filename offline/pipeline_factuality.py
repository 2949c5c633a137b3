"""The factuality part of ``calibrate`` (steps 5 and 6 of :mod:`offline.pipeline`), and that part alone.

:func:`sentences_step` stores the recorded sentence-level LLM fact-checks (``frank/llm/finesure``) and writes
their study; :func:`factuality_step` writes the LLM factuality tables and the faithfulness calibration from the
store's factuality answers (nothing, and a previous run's files removed, without them).

:func:`calibrate_factuality` runs the factuality part alone (FRANK baselines, step 6, the report and an artifact
with only the faithfulness entries), e.g. on a store of answers collected from a test stand-in, with ``label``
naming the source in every output.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from offline.answers.store import AnswerStore
from offline.data.finesure import load_finesure
from offline.data.frank import Frank, load_frank
from offline.export import export_thresholds
from offline.report import build_report
from offline.studies.factuality import faithfulness
from offline.studies.factuality import sentences as factuality_sentences
from offline.studies.factuality.faithfulness import (
    FaithfulnessStudy,
    faithfulness_data,
    run_faithfulness_study,
    write_faithfulness_study,
)
from offline.studies.factuality.llm import (
    factuality_answers_from_store,
    remove_llm_outputs,
    run_llm_study,
    write_llm_study,
)
from offline.studies.factuality.report import write_baselines_json, write_baselines_markdown
from offline.studies.factuality.sentences import run_sentence_study
from offline.studies.factuality.sentences_report import write_sentence_study
from offline.studies.factuality.sentences_store import ingest_sentences, sentence_answers_from_store
from offline.studies.factuality.study import baseline_tables

__all__ = ["FactualityResult", "calibrate_factuality", "factuality_step", "sentences_step"]


@dataclass(frozen=True)
class FactualityResult:
    """What the LLM factuality part wrote (nothing when no answers were collected) and its faithfulness study."""

    files: tuple[Path, ...]
    faithfulness: FaithfulnessStudy | None
    n_answers: int


def factuality_step(store: AnswerStore, frank: Frank, out: Path, *, seed: int, label: str = "") -> FactualityResult:
    """LLM factuality tables and faithfulness calibration from the store's factuality answers (step 6 of
    :mod:`offline.pipeline`); with none, remove a previous run's LLM files and write nothing."""
    answers = factuality_answers_from_store(store, frank.items)
    # The sentence-level fact-checks (recorded or collected) are calibrated with the others, under their family.
    calibrated = {**answers, **sentence_answers_from_store(store, frank.items)}
    if not calibrated:
        remove_llm_outputs(out)
        for name in (faithfulness.JSON_FILE, faithfulness.MARKDOWN_FILE):
            (out / name).unlink(missing_ok=True)
        return FactualityResult(files=(), faithfulness=None, n_answers=0)
    files: tuple[Path, ...] = ()
    if answers:
        summary, tables = run_llm_study(frank, answers, label=label)
        files = write_llm_study(summary, tables, out)
    else:
        remove_llm_outputs(out)
    study = run_faithfulness_study(faithfulness_data(frank.items, calibrated), seed=seed, label=label)
    files = (*files, *write_faithfulness_study(study.summary, out))
    return FactualityResult(files=files, faithfulness=study, n_answers=sum(len(a) for a in calibrated.values()))


def sentences_step(store: AnswerStore, frank: Frank, data_dir: Path, out: Path) -> tuple[Path, ...]:
    """The recorded sentence-level fact-checks (``frank/llm/finesure``): into the store, then their study
    (``factuality/llm_sentences.{json,md}``); without the folder, remove a previous run's files."""
    checks = load_finesure(data_dir, frank)
    if not checks:
        for name in (factuality_sentences.JSON_FILE, factuality_sentences.MARKDOWN_FILE):
            (out / name).unlink(missing_ok=True)
        return ()
    stats = ingest_sentences(store, checks)
    return write_sentence_study(run_sentence_study(frank, checks, stats), out)


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
    """The factuality part alone: FRANK baselines, step 6 on the store at ``store_path``, the report, and an
    artifact at ``thresholds_path`` holding only the faithfulness entries (none without answers)."""
    log = log or structlog.get_logger("offline.calibrate")
    out = Path(out_dir)
    frank = load_frank(Path(data_dir))
    tables = baseline_tables(frank)
    baselines = (write_baselines_json(tables, out), write_baselines_markdown(tables, out))
    with AnswerStore(store_path) as store:
        result = factuality_step(store, frank, out, seed=seed, label=label)
    build_report(out)
    export_thresholds(
        [],
        None,
        data_dir=Path(data_dir),
        path=Path(thresholds_path),
        seed=seed,
        faithfulness=result.faithfulness,
        store=Path(store_path),
    )
    log.info("factuality calibrated", answers=result.n_answers, out=str(out), thresholds=str(thresholds_path))
    return FactualityResult(
        files=(*baselines, *result.files), faithfulness=result.faithfulness, n_answers=result.n_answers
    )
