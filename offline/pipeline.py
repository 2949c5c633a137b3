"""``calibrate``: the artifact build, then the studies and the report on what it built (``make calibrate``'s work).

Steps: (1) the build (:func:`offline.build.build.build_artifacts`: the recorded answers into the answer store, every
fit, ``artifact/thresholds.json`` and ``artifact/pairwise_decisions.json``); then the studies, which read what the
build fitted and the answer store and never feed the artifacts: (2) the validity reports of the build's fits
(``conformal/validity.{json,md}``; the sentence fact-checks' ``factuality/llm_sentences_validity.{json,md}``) and the
paper's item-level conformal study; (3) position bias on the stored pairwise verdicts; (4) transitivity on stored
full tournaments when some judge has them (collected with ``python -m offline collect``), otherwise on tournaments
simulated from the recorded score distributions (labelled as such), then on the real Vicuna80 tournaments
(``offline.studies.vicuna80.study``: its verdicts into the store, ``transitivity/vicuna80.json``); (5) the FRANK
baselines and the study of the recorded sentence-level LLM fact-checks (``factuality/llm_sentences.{json,md}``);
(6) when the answer store holds LLM factuality answers (``python -m offline collect --task
factuality_direct|factuality_qa``): the LLM factuality tables (``factuality/llm.{json,md}``) and the report of the
faithfulness fits (``factuality/faithfulness.{json,md}``), otherwise nothing for them (a previous run's files are
removed and ``index.md`` says how to collect); (7) the report.

The factuality reports of (5) and (6) are :mod:`offline.pipeline_factuality`'s steps; that module also runs the
factuality part alone (``calibrate_factuality``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import structlog
from tqdm import tqdm

from artifact.input_kinds import FitKey, ModeFits
from calibration.input_kinds.fit import InputKindFit
from offline.build.answers.ingest import IngestReport
from offline.build.answers.store import AnswerStore
from offline.build.build import DEFAULT_PAIRWISE, BuiltArtifacts, build_artifacts
from offline.build.inputs.frank import Frank
from offline.build.inputs.summeval import load_summeval
from offline.build.modes import DEFAULT_DELTA
from offline.pipeline_factuality import factuality_step, sentences_step
from offline.report import SUMMARY_FILES, build_report, write_summary
from offline.report.index import IngestRow, IngestSummary
from offline.studies.conformal.study import run_conformal_study
from offline.studies.conformal.validity import validity_summary, write_validity
from offline.studies.factuality import sentences_validity as factuality_sentences_validity
from offline.studies.factuality.report import write_baselines_json, write_baselines_markdown
from offline.studies.factuality.sentences_validity import sentence_validity, write_sentence_validity
from offline.studies.factuality.study import baseline_tables
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
    pairwise: Path
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


def _pac(fits: Mapping[FitKey, ModeFits]) -> dict[FitKey, InputKindFit]:
    """The fits of one mode per key: the pac fit when both modes were fitted, else the only one."""
    return {key: value[0] if isinstance(value, tuple) else value for key, value in fits.items()}


def _frank_baselines(frank: Frank, out: Path) -> tuple[tuple[Path, ...], int]:
    """FRANK baseline tables (stats-frank's study) written under ``out/factuality``; (paths, metrics)."""
    tables = baseline_tables(frank)
    return (write_baselines_json(tables, out), write_baselines_markdown(tables, out)), len(tables)


def calibrate(
    *,
    data_dir: Path,
    out_dir: Path,
    thresholds_path: Path,
    pairwise_path: Path = DEFAULT_PAIRWISE,
    store_path: Path | None = None,
    n_splits: int = 20,
    seed: int = 0,
    delta: float | None = DEFAULT_DELTA,
    progress: bool = True,
    log: Any = None,
) -> CalibrateResult:
    """The build, then every study (module docstring) on ``data_dir``; the report under ``out_dir``."""
    log = log or structlog.get_logger("offline.calibrate")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    store_file = Path(store_path) if store_path is not None else out / "answers.sqlite"
    built = build_artifacts(
        data_dir=Path(data_dir),
        store_path=store_file,
        thresholds_path=Path(thresholds_path),
        pairwise_path=Path(pairwise_path),
        n_splits=n_splits,
        seed=seed,
        delta=delta,
        progress=progress,
        log=log,
    )
    return _studies(built, data_dir=Path(data_dir), out=out, n_splits=n_splits, seed=seed, progress=progress, log=log)


def _studies(
    built: BuiltArtifacts, *, data_dir: Path, out: Path, n_splits: int, seed: int, progress: bool, log: Any
) -> CalibrateResult:
    seconds = {f"build: {step}": value for step, value in built.seconds.items()}
    clock = time.perf_counter()

    def lap(step: str, **fields: object) -> None:
        nonlocal clock
        now = time.perf_counter()
        seconds[step] = round(now - clock, 3)
        clock = now
        log.info("step done", step=step, seconds=seconds[step], **fields)

    def bar(iterable: Iterable, desc: str) -> Iterable:
        return tqdm(iterable, desc=desc, disable=not progress, leave=False)

    # The FRANK baselines are independent of every other step and spend their time in LAPACK (which releases
    # the GIL), so they run in a worker thread while the SummEval studies run here.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="frank") as workers:
        frank_job = workers.submit(_frank_baselines, built.frank, out)
        return _study_steps(built, data_dir, out, n_splits, seed, frank_job.result, lap, bar, seconds)


def _study_steps(
    built: BuiltArtifacts,
    data_dir: Path,
    out: Path,
    n_splits: int,
    seed: int,
    frank_result: Callable[[], tuple[tuple[Path, ...], int]],
    lap: Callable[..., None],
    bar: Callable[[Iterable, str], Iterable],
    seconds: dict[str, float],
) -> CalibrateResult:
    summaries: dict[str, Path] = {}
    summeval = load_summeval(data_dir)
    store_file, datasets = built.store, built.datasets
    summaries["ingest"] = write_summary(ingest_summary(built.ingest, store_file), out / SUMMARY_FILES["ingest"])
    validity = validity_summary(_pac(built.fits), n_splits=n_splits, seed=seed, delta=built.delta)
    summaries["validity"] = write_validity(validity, out)[0]
    lap("validity (the build's fits, by document, per input kind)", cells=len(validity.cells))

    conformal = run_conformal_study(datasets, n_splits=n_splits, seed=seed, progress=lambda t: bar(t, "conformal"))
    summaries["conformal"] = write_summary(conformal, out / SUMMARY_FILES["conformal"])
    lap("conformal", cells=len(conformal.cells), datasets=len(datasets))

    with AnswerStore(store_file) as store:
        pairwise = pairwise_answers_from_store(store)
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

    factuality, n_metrics = frank_result()
    lap("factuality (waited for the worker)", metrics=n_metrics)

    sentence_files = sentences_step(built.frank, data_dir, out, built.sentence_stats)
    lap("llm sentences", files=len(sentence_files))
    with AnswerStore(store_file) as store:
        llm = factuality_step(store, built.frank, out, built.faithfulness)
    lap(
        "llm factuality",
        answers=llm.n_answers,
        note="" if llm.n_answers else "no LLM factuality answers collected: nothing written for them",
    )
    sentences = sentence_validity(_pac(built.sentence_fits), n_splits=n_splits, seed=seed, delta=built.delta)
    if sentences.cells:
        sentence_files = (*sentence_files, *write_sentence_validity(sentences, out))
    else:
        for name in (
            factuality_sentences_validity.VALIDITY_JSON_FILE,
            factuality_sentences_validity.VALIDITY_MARKDOWN_FILE,
        ):
            (out / name).unlink(missing_ok=True)
    lap("llm sentences validity", cells=len(sentences.cells))

    files = build_report(out)
    lap("report", figures=len(files.figures))
    return CalibrateResult(
        out_dir=out,
        store=store_file,
        thresholds=built.thresholds,
        pairwise=built.pairwise,
        index=files.index,
        summaries=summaries,
        tables=files.tables,
        figures=files.figures,
        factuality=(*factuality, *sentence_files, *llm.files),
        seconds=seconds,
    )
