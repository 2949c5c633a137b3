"""The artifact build (``python -m offline build``, ``make artifact``): ingest -> fit -> export, in one place.

Steps, each a function of the build package, nothing from the studies:

1. **Ingest.** The recorded judges' answers (:func:`offline.build.answers.ingest.ingest_recorded`) and the recorded
   sentence-level fact-checks (``frank/llm/finesure``, :func:`offline.build.factuality.sentences.ingest_sentences`)
   into the answer store; the SummEval cells read back from it (:mod:`offline.build.cell_data`), and the FRANK
   factuality answers (collected with ``python -m offline collect --task factuality_direct|factuality_qa``).
2. **Fit**, every fit in both guarantee modes (:func:`offline.build.modes.both_modes`): every SummEval cell per
   input kind (:mod:`offline.build.input_kinds`) and the exported judge panel with its sub-panels
   (:mod:`offline.build.panels`), each in a child process while the rest runs here (the result does not depend on
   where it runs: same inputs, same seeds); the sentence fact-checks' cells (:mod:`offline.build.factuality.validity`);
   the faithfulness fits of the collected factuality answers (:mod:`offline.build.factuality.faithfulness`); the
   decision and per-label rules (:mod:`offline.build.rules`).
3. **Export.** ``thresholds.json`` (:func:`offline.build.export.export_thresholds`, no churn when nothing moved) and
   ``pairwise_decisions.json`` (:mod:`offline.build.pairwise`, rewritten only when its bytes change).

:class:`BuiltArtifacts` keeps what was fitted, so ``make calibrate`` reports on the build without fitting again.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
from tqdm import tqdm

from artifact.input_kinds import FitKey, ModeFits
from artifact.pairwise import DEFAULT_PATH as DEFAULT_PAIRWISE
from artifact.pairwise import encode_pairwise_artifact
from offline.build.answers.ingest import IngestReport, ingest_recorded
from offline.build.answers.store import AnswerStore
from offline.build.cell_data import JudgeCriterionData, cell_data_from_store
from offline.build.export import DEFAULT_THRESHOLDS, export_thresholds
from offline.build.factuality.answers import factuality_answers_from_store
from offline.build.factuality.faithfulness import FaithfulnessStudy, faithfulness_data, run_faithfulness_study
from offline.build.factuality.sentences import ParseStats, ingest_sentences, sentence_answers_from_store
from offline.build.factuality.validity import sentence_fits, without_prompt_family
from offline.build.input_kinds import fit_input_kinds
from offline.build.inputs.finesure import load_finesure
from offline.build.inputs.frank import Frank, load_frank
from offline.build.inputs.summeval import load_summeval
from offline.build.modes import DEFAULT_DELTA, both_modes
from offline.build.pairwise import DELTA as PAIRWISE_DELTA
from offline.build.pairwise import export_pairwise_artifact
from offline.build.pairwise_tables import load_tables
from offline.build.panels import export_panel_fits
from offline.build.rules import export_label_rules, export_rules

__all__ = [
    "DEFAULT_PAIRWISE",
    "DEFAULT_THRESHOLDS",
    "BuiltArtifacts",
    "build_artifacts",
    "build_faithfulness_artifact",
    "fit_faithfulness",
    "write_pairwise",
]


@dataclass(frozen=True)
class BuiltArtifacts:
    """What a build wrote and fitted: the two artifacts, the store, and the fits the reports describe."""

    thresholds: Path
    pairwise: Path
    store: Path
    ingest: IngestReport
    datasets: list[JudgeCriterionData]  # the SummEval cells as read from the store
    fits: Mapping[FitKey, ModeFits]  # SummEval cells per input kind: (pac, expected), or the one mode
    panel_fits: Mapping[FitKey, ModeFits]
    sentence_fits: Mapping[FitKey, ModeFits]
    sentence_stats: list[ParseStats]  # how each recorded fact-checker's replies parsed (empty without them)
    faithfulness: FaithfulnessStudy | None  # every factuality cell, sentence ones included (None: no answers)
    frank: Frank
    delta: float | None
    seconds: dict[str, float] = field(default_factory=dict)


def _kind_fits_in_child(datasets: list[JudgeCriterionData], n_splits: int, seed: int, delta: float | None) -> dict:
    return both_modes(lambda d: fit_input_kinds(datasets, n_splits=n_splits, seed=seed, delta=d), delta)


def _panel_fits_in_child(datasets: list[JudgeCriterionData], n_splits: int, seed: int, delta: float | None) -> dict:
    return both_modes(lambda d: export_panel_fits(datasets, n_splits=n_splits, seed=seed, delta=d), delta)


def fit_faithfulness(store: AnswerStore, frank: Frank, *, seed: int, label: str = "") -> FaithfulnessStudy | None:
    """The faithfulness fits of every factuality answer in the store (collected LLM answers and the sentence
    fact-checks, each under its prompt family); None when the store holds none."""
    answers = {**factuality_answers_from_store(store, frank.items), **sentence_answers_from_store(store, frank.items)}
    if not answers:
        return None
    return run_faithfulness_study(faithfulness_data(frank.items, answers), seed=seed, label=label)


def write_pairwise(data_dir: Path, path: Path, *, seed: int = 0) -> Path:
    """Fit the pairwise artifact on the data directory's pairwise datasets and write it at ``path`` (atomically,
    readable by the service), unless the file there already holds these bytes."""
    encoded = encode_pairwise_artifact(export_pairwise_artifact(load_tables(data_dir), delta=PAIRWISE_DELTA, seed=seed))
    target = Path(path)
    if target.exists() and target.read_bytes() == encoded:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    with os.fdopen(handle, "wb") as file:
        file.write(encoded)
    os.chmod(temporary, 0o644)
    os.replace(temporary, target)
    return target


def build_artifacts(
    *,
    data_dir: Path,
    store_path: Path,
    thresholds_path: Path = DEFAULT_THRESHOLDS,
    pairwise_path: Path = DEFAULT_PAIRWISE,
    n_splits: int = 20,
    seed: int = 0,
    delta: float | None = DEFAULT_DELTA,
    progress: bool = True,
    log: Any = None,
) -> BuiltArtifacts:
    """Run the build (module docstring) on ``data_dir``: both artifacts written, the store filled."""
    log = log or structlog.get_logger("offline.build")
    seconds: dict[str, float] = {}
    clock, cpu_clock = time.perf_counter(), time.process_time()

    def lap(step: str, **fields: object) -> None:
        # Wall seconds and this process's CPU seconds (not the children's): on a shared machine the CPU figure
        # says what the step costs, the wall figure what the machine's load made of it.
        nonlocal clock, cpu_clock
        now, cpu_now = time.perf_counter(), time.process_time()
        seconds[step] = round(now - clock, 3)
        cpu = round(cpu_now - cpu_clock, 3)
        clock, cpu_clock = now, cpu_now
        log.info("step done", step=step, seconds=seconds[step], cpu_seconds=cpu, **fields)

    def bar(iterable: Iterable, desc: str) -> Iterable:
        return tqdm(iterable, desc=desc, disable=not progress, leave=False)

    data_dir, store_file = Path(data_dir), Path(store_path)
    summeval, frank = load_summeval(data_dir), load_frank(data_dir)
    with AnswerStore(store_file) as store:
        report = ingest_recorded(store, data_dir)
        for count in report.judges:
            if count.task == "direct" and count.rows > 0 and count.parsed + count.recorded == 0:
                log.error(
                    "judge yielded no usable row: it gets no cells and no thresholds",
                    judge=count.judge,
                    rows=count.rows,
                    missing=count.missing,
                    unreadable=count.unparsed,
                )
        checks = load_finesure(data_dir, frank)
        stats = ingest_sentences(store, checks) if checks else []
        lap("ingest", inserted=report.inserted, unchanged=report.unchanged, store=str(store_file))
        datasets = cell_data_from_store(store, summeval.items)
        sentence_answers = sentence_answers_from_store(store, frank.items)
        faithfulness = fit_faithfulness(store, frank, seed=seed)
    lap("faithfulness", cells=0 if faithfulness is None else len(faithfulness.summary.cells))

    # The SummEval cells and the panels are CPU-bound and independent: each fits in a child process while the
    # rules, the sentence cells and the pairwise artifact are fitted here, so a 2-core machine does both at once.
    with ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn")) as pool:
        kinds_job = pool.submit(_kind_fits_in_child, datasets, n_splits, seed, delta)
        panels_job = pool.submit(_panel_fits_in_child, datasets, n_splits, seed, delta)
        rules = export_rules(datasets, seed=seed, progress=lambda t: bar(t, "decision rules"))
        label_rules = export_label_rules(datasets)
        lap("decision and per-label rules", rules=len(rules), label_rules=len(label_rules))
        sentences = both_modes(
            lambda d: sentence_fits(frank.items, sentence_answers, n_splits=n_splits, seed=seed, delta=d), delta
        )
        lap("sentence fact-check cells", cells=len(sentences))
        pairwise = write_pairwise(data_dir, pairwise_path, seed=seed)
        lap("pairwise artifact", path=str(pairwise))
        panel_fits = panels_job.result()
        lap("panel cells (waited for their process)", cells=len(panel_fits))
        fits = kinds_job.result()
        lap("SummEval cells per input kind (waited for their process)", cells=len(fits))

    export_thresholds(
        fits={**fits, **sentences, **panel_fits},
        data_dir=data_dir,
        path=Path(thresholds_path),
        seed=seed,
        faithfulness=without_prompt_family(faithfulness),
        store=store_file,
        delta=delta,
        decision_rules=rules,
        label_rules=label_rules,
    )
    lap("export", path=str(thresholds_path))
    return BuiltArtifacts(
        thresholds=Path(thresholds_path),
        pairwise=pairwise,
        store=store_file,
        ingest=report,
        datasets=datasets,
        fits=fits,
        panel_fits=panel_fits,
        sentence_fits=sentences,
        sentence_stats=stats,
        faithfulness=faithfulness,
        frank=frank,
        delta=delta,
        seconds=seconds,
    )


def build_faithfulness_artifact(
    *, data_dir: Path, store_path: Path, thresholds_path: Path, seed: int = 0, label: str = ""
) -> tuple[FaithfulnessStudy | None, Frank]:
    """The factuality part alone: the faithfulness fits of the store's factuality answers and an artifact at
    ``thresholds_path`` holding only their entries (none without answers); (the fits, FRANK)."""
    frank = load_frank(Path(data_dir))
    with AnswerStore(store_path) as store:
        faithfulness = fit_faithfulness(store, frank, seed=seed, label=label)
    export_thresholds(
        fits=None,
        data_dir=Path(data_dir),
        path=Path(thresholds_path),
        seed=seed,
        faithfulness=faithfulness,
        store=Path(store_path),
    )
    return faithfulness, frank
