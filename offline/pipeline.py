"""``calibrate``: ingest -> studies -> report -> export, in one call (the CLI's and ``make calibrate``'s work).

Steps: (1) recorded answers into the SQLite answer store (``offline.answers.ingest``); (2) the conformal study on every
judge's direct answers; (3) position bias on the stored pairwise verdicts; (4) transitivity on stored full
tournaments when some judge has them (collected with ``python -m offline collect``), otherwise on tournaments
simulated from the recorded score distributions (labelled as such), then on the real Vicuna80 tournaments
(``offline.studies.vicuna80.study``: its verdicts into the store, ``transitivity/vicuna80.json``); (5) the FRANK
baselines, and the recorded sentence-level LLM fact-checks (``frank/llm/finesure``, ``offline.studies.
factuality_sentences``): into the store under ``factuality_sentences``, their study
(``factuality/llm_sentences.{json,md}``) and their faithfulness cells by the validity rules (PAC, splits by FRANK
article: ``factuality/llm_sentences_validity.{json,md}``, exported with the SummEval fits); (6) when the
answer store holds LLM factuality answers (``python -m offline collect --task factuality_direct|factuality_qa``):
the LLM factuality tables (``factuality/llm.{json,md}``) and the faithfulness calibration
(``factuality/faithfulness.{json,md}``), otherwise nothing for them (a previous run's files are removed and
``index.md`` says how to collect); (7) the report; (8) the thresholds artifact (faithfulness entries only when
(6) ran; the panel {gpt-3.5-turbo-0301, gpt-4o-mini-2024-07-18, llama-2-70b-chat, qwen2.5-72b-instruct} and
its sub-panels as ``panel:<members>`` cells, ``offline.studies.panels.study``; one certified decision rule per recorded
SummEval (judge, criterion, input kind), ``offline.studies.decisions.study.export_rules``).

The sentence fact-checks' study of (5) and the LLM factuality of (6) are :mod:`offline.pipeline_factuality`'s
steps; that module also runs the factuality part alone (``calibrate_factuality``).
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import structlog
from tqdm import tqdm

from offline.answers.ingest import IngestReport, ingest_recorded
from offline.answers.store import AnswerStore
from offline.data.frank import Frank, load_frank
from offline.data.summeval import load_summeval
from offline.export import export_thresholds
from offline.label_rules import export_label_rules
from offline.pipeline_factuality import factuality_step, sentences_step
from offline.report import SUMMARY_FILES, build_report, write_summary
from offline.report.index import IngestRow, IngestSummary, unusable_judges
from offline.studies.conformal.cell_data import cell_data_from_store as conformal_data
from offline.studies.conformal.study import run_conformal_study
from offline.studies.conformal.validity import DEFAULT_DELTA, run_validity_study, write_validity
from offline.studies.decisions.study import export_rules
from offline.studies.factuality import sentences_validity as factuality_sentences_validity
from offline.studies.factuality.report import write_baselines_json, write_baselines_markdown
from offline.studies.factuality.sentences_store import sentence_answers_from_store
from offline.studies.factuality.sentences_validity import (
    sentence_validity,
    without_prompt_family,
    write_sentence_validity,
)
from offline.studies.factuality.study import baseline_tables
from offline.studies.panels.study import export_panel_fits
from offline.studies.tournaments.position_bias import PairwiseAnswer, pairwise_answers_from_store, run_position_bias
from offline.studies.tournaments.simulate import SimulationConfig, simulate_tournaments
from offline.studies.tournaments.transitivity import has_triangles, run_transitivity
from offline.studies.vicuna80.study import vicuna80_step

__all__ = [
    "CalibrateResult",
    "calibrate",
    "ingest_summary",
]


@dataclass(frozen=True)
class CalibrateResult:
    """Where a calibrate run wrote its outputs, and how long each step took (seconds)."""

    out_dir: Path
    store: Path
    thresholds: Path
    index: Path
    summaries: dict[str, Path]
    tables: tuple[Path, ...]
    figures: tuple[Path, ...]
    factuality: tuple[Path, ...]
    seconds: dict[str, float] = field(default_factory=dict)


def ingest_summary(report: IngestReport, store: Path) -> IngestSummary:
    """The ingest report as the saved summary (with each judge's parse rate)."""
    return IngestSummary(
        store=str(store),
        judges=[
            IngestRow(
                judge=c.judge,
                prompt_family=c.prompt_family,
                task=c.task,
                rows=c.rows,
                recorded=c.recorded,
                parsed=c.parsed,
                unparsed=c.unparsed,
                missing=c.missing,
                parse_rate=c.parse_rate,
                unparsed_examples=list(c.unparsed_examples),
            )
            for c in report.judges
        ],
        inserted=report.inserted,
        updated=report.updated,
        unchanged=report.unchanged,
        seconds=report.seconds,
    )


def _tournament_answers(answers: list[PairwiseAnswer]) -> list[PairwiseAnswer]:
    """The stored answers of the judges whose pairwise answers contain full triangles (collected tournaments)."""
    judges = sorted({a.judge for a in answers})
    keep = {j for j in judges if has_triangles(a for a in answers if a.judge == j)}
    return [a for a in answers if a.judge in keep]


def calibrate(
    *,
    data_dir: Path,
    out_dir: Path,
    thresholds_path: Path,
    store_path: Path | None = None,
    n_splits: int = 20,
    seed: int = 0,
    delta: float | None = DEFAULT_DELTA,
    progress: bool = True,
    log: Any = None,
) -> CalibrateResult:
    """Run every step (module docstring) on ``data_dir``; write the report under ``out_dir`` and the artifact."""
    log = log or structlog.get_logger("offline.calibrate")
    out = Path(out_dir)
    store_file = Path(store_path) if store_path is not None else out / "answers.sqlite"
    seconds: dict[str, float] = {}
    clock = time.perf_counter()

    cpu_clock = time.process_time()

    def lap(step: str, **fields: object) -> None:
        # Wall seconds and this process's CPU seconds (its threads; not the validity child): on a shared machine
        # the CPU figure says what the step costs, the wall figure what the machine's load made of it.
        nonlocal clock, cpu_clock
        now, cpu_now = time.perf_counter(), time.process_time()
        seconds[step] = round(now - clock, 3)
        cpu = round(cpu_now - cpu_clock, 3)
        clock, cpu_clock = now, cpu_now
        log.info("step done", step=step, seconds=seconds[step], cpu_seconds=cpu, **fields)

    def bar(iterable: Iterable, desc: str) -> Iterable:
        return tqdm(iterable, desc=desc, disable=not progress, leave=False)

    out.mkdir(parents=True, exist_ok=True)
    # The FRANK baselines are independent of every other step and spend their time in LAPACK (which releases
    # the GIL), so they run in a worker thread while the SummEval studies run here.
    workers = ThreadPoolExecutor(max_workers=1, thread_name_prefix="frank")
    frank_job = workers.submit(_frank_baselines, Path(data_dir), out)
    try:
        return _calibrate_steps(
            data_dir=Path(data_dir),
            out=out,
            thresholds_path=Path(thresholds_path),
            store_file=store_file,
            n_splits=n_splits,
            seed=seed,
            delta=delta,
            frank_job=frank_job,
            lap=lap,
            bar=bar,
            seconds=seconds,
        )
    finally:
        workers.shutdown(wait=True, cancel_futures=True)


def _both_modes(pac: dict, expected: dict | None) -> dict:
    """The artifact's fits per key: (pac, expected) when both were fitted, else the one."""
    return dict(pac) if expected is None else {key: (fit, expected[key]) for key, fit in pac.items()}


def _validity_in_child(datasets: list, **options: Any) -> tuple[Any, Any, float]:
    """run_validity_study in the child process in both guarantee modes (the summary is the pac one, or the only
    one when ``delta`` is None), with the CPU seconds it took there."""
    started = time.process_time()
    summary, fits = run_validity_study(datasets, **options)
    expected = None if options.get("delta") is None else run_validity_study(datasets, **{**options, "delta": None})[1]
    return summary, _both_modes(fits, expected), time.process_time() - started


def _panels_in_child(datasets: list, **options: Any) -> dict:
    """export_panel_fits in both guarantee modes (only the one when ``delta`` is None)."""
    fits = export_panel_fits(datasets, **options)
    expected = None if options.get("delta") is None else export_panel_fits(datasets, **{**options, "delta": None})
    return _both_modes(fits, expected)


def _frank_baselines(data_dir: Path, out: Path) -> tuple[tuple[Path, ...], int, Frank]:
    """FRANK baseline tables (stats-frank's study) written under ``out/factuality``; (paths, metrics, FRANK)."""
    frank = load_frank(data_dir)
    tables = baseline_tables(frank)
    return (write_baselines_json(tables, out), write_baselines_markdown(tables, out)), len(tables), frank


def _calibrate_steps(
    *,
    data_dir: Path,
    out: Path,
    thresholds_path: Path,
    store_file: Path,
    n_splits: int,
    seed: int,
    delta: float | None,
    frank_job: Future,
    lap: Callable[..., None],
    bar: Callable[[Iterable, str], Iterable],
    seconds: dict[str, float],
) -> CalibrateResult:
    summaries: dict[str, Path] = {}
    summeval = load_summeval(data_dir)
    with AnswerStore(store_file) as store:
        report = ingest_recorded(store, data_dir)
        summaries["ingest"] = write_summary(ingest_summary(report, store_file), out / SUMMARY_FILES["ingest"])
        for row in unusable_judges(ingest_summary(report, store_file)):
            structlog.get_logger("offline.calibrate").error(
                "judge yielded no usable row: it gets no cells and no thresholds",
                judge=row.judge,
                rows=row.rows,
                missing=row.missing,
                unreadable=row.unparsed,
            )
        lap("ingest", inserted=report.inserted, unchanged=report.unchanged, store=str(store_file))
        datasets = conformal_data(store, summeval.items)
        pairwise = pairwise_answers_from_store(store)

    # The validity study (what the artifact is built from) and the paper's item-level study are independent and
    # CPU-bound: the first runs in a child process while the second runs here, so a 2-core machine does both at
    # once. Same inputs, same seeds: the result does not depend on where it runs.
    # The four-judge panel and its sub-panels (the full panel study is ``python -m offline panels``) go to a second
    # child for the same reason.
    with ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn")) as pool:
        validity_job = pool.submit(_validity_in_child, datasets, n_splits=n_splits, seed=seed, delta=delta)
        panels_job = pool.submit(_panels_in_child, datasets, n_splits=n_splits, seed=seed, delta=delta)
        conformal = run_conformal_study(datasets, n_splits=n_splits, seed=seed, progress=lambda t: bar(t, "conformal"))
        summaries["conformal"] = write_summary(conformal, out / SUMMARY_FILES["conformal"])
        lap("conformal", cells=len(conformal.cells), datasets=len(datasets))
        panel_fits = panels_job.result()
        lap("panels (exported panel and its sub-panels; waited for its process)", cells=len(panel_fits))
        validity_summary, fits, validity_cpu = validity_job.result()
    summaries["validity"] = write_validity(validity_summary, out)[0]
    lap(
        "validity (by document, per input kind; waited for its process)",
        cells=len(validity_summary.cells),
        child_cpu_seconds=round(validity_cpu, 3),
    )

    position = run_position_bias(pairwise, source="recorded pairwise verdicts in the answer store")
    summaries["position_bias"] = write_summary(position, out / SUMMARY_FILES["position_bias"])
    lap("position_bias", verdicts=len(pairwise))

    tournaments = _tournament_answers(pairwise)
    if tournaments:
        transitivity = run_transitivity(
            tournaments,
            summeval.items,
            simulated=False,
            label="collected tournaments",
            source="pairwise answers in the answer store",
        )
    else:
        simulation = simulate_tournaments(datasets, summeval.items, config=SimulationConfig(seed=seed))
        transitivity = run_transitivity(
            simulation.answers,
            summeval.items,
            simulated=True,
            label=simulation.label,
            source="the stored pairwise data holds no triangles (a chain), so tournaments are "
            f"{simulation.label} (offline/studies/tournaments/simulate.py, seed {seed})",
            simulation={
                "config": msgspec.to_builtins(simulation.config),
                "judges": msgspec.to_builtins(simulation.judges),
            },
        )
    summaries["transitivity"] = write_summary(transitivity, out / SUMMARY_FILES["transitivity"])
    lap("transitivity", simulated=transitivity.simulated, inputs=len(transitivity.inputs))

    with AnswerStore(store_file) as store:
        vicuna80 = vicuna80_step(store, data_dir, out, progress=lambda t: bar(t, "vicuna80"))
    lap("transitivity on real tournaments (vicuna80)", questions=vicuna80.n_questions if vicuna80 else 0)

    factuality, n_metrics, frank = frank_job.result()
    lap("factuality (waited for the worker)", metrics=n_metrics)

    with AnswerStore(store_file) as store:
        sentence_files = sentences_step(store, frank, data_dir, out)
        lap("llm sentences", files=len(sentence_files))
        llm = factuality_step(store, frank, out, seed=seed)
        lap(
            "llm factuality",
            answers=llm.n_answers,
            note="" if llm.n_answers else "no LLM factuality answers collected: nothing written for them",
        )
        # The sentence-level cells reach the artifact through the validity rules (PAC, splits by FRANK article),
        # not through the faithfulness study's one FRANK valid/test split (which stays in its report).
        sentence_answers = sentence_answers_from_store(store, frank.items)
        validity, sentence_fits = sentence_validity(
            frank.items, sentence_answers, n_splits=n_splits, seed=seed, delta=delta
        )
        if delta is not None:  # the expected mode's entries beside the pac ones
            _, expected_sentence_fits = sentence_validity(
                frank.items, sentence_answers, n_splits=n_splits, seed=seed, delta=None
            )
            sentence_fits = _both_modes(sentence_fits, expected_sentence_fits)
    if validity.cells:
        sentence_files = (*sentence_files, *write_sentence_validity(validity, out))
    else:
        for name in (
            factuality_sentences_validity.VALIDITY_JSON_FILE,
            factuality_sentences_validity.VALIDITY_MARKDOWN_FILE,
        ):
            (out / name).unlink(missing_ok=True)
    lap("llm sentences validity", cells=len(validity.cells))

    files = build_report(out)
    lap("report", figures=len(files.figures))

    rules = export_rules(datasets, seed=seed)
    lap("decision rules (certified accept/escalate, fitted on all items)", rules=len(rules))

    export_thresholds(
        datasets,
        conformal,
        data_dir=data_dir,
        path=thresholds_path,
        seed=seed,
        faithfulness=without_prompt_family(llm.faithfulness),
        store=store_file,
        fits={**fits, **sentence_fits, **panel_fits},
        delta=delta,
        decision_rules=rules,
        label_rules=export_label_rules(datasets),
    )
    lap("export", path=str(thresholds_path))
    return CalibrateResult(
        out_dir=out,
        store=store_file,
        thresholds=thresholds_path,
        index=files.index,
        summaries=summaries,
        tables=files.tables,
        figures=files.figures,
        factuality=(*factuality, *sentence_files, *llm.files),
        seconds=seconds,
    )
