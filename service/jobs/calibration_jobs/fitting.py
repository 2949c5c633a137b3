"""Running one calibration job: each (cell, input kind) fitted by
:func:`calibration.input_kinds.fit.fit_input_kind` in a thread
or a child process, then each cell's decision rules, then the artifact (rules: ``service.jobs.calibration_jobs.jobs``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio.to_process
import anyio.to_thread
import numpy as np

from artifact.input_kinds import (
    DEFAULT_DELTA,
    FitKey,
    fit_keys,
    fit_modes,
    kind_artifact,
    labelled_label_rules,
    labelled_rules,
)
from artifact.labels import LabelledCell
from artifact.report_evidence import ReportOptions, build_report_card
from artifact.thresholds import ThresholdsArtifact
from calibration.decisions.rule import DecisionRule
from calibration.errors import CalibrationError
from calibration.input_kinds.fit import InputKindFit, KindData
from calibration.per_label.rule import LabelRule
from calibration.report_card.card import ReportCard

__all__ = [
    "JOB_REPORT_OPTIONS",
    "CalibrationJob",
    "Fitter",
    "Reporter",
    "RuleFitter",
    "cards_in_process",
    "cards_in_thread",
    "cell_name",
    "fit_in_process",
    "fit_in_thread",
    "now_iso",
    "rules_in_process",
    "rules_in_thread",
    "run_calibration",
]

# a fitter returns the cell's fits in both guarantee modes: (pac, expected)
Fitter = Callable[[KindData, tuple[float, ...], int, int, int], Awaitable[tuple[InputKindFit, InputKindFit]]]
# a rule fitter takes the cell and the job's uniform seed (the expected rows' draw, fresh per job)
RuleFitter = Callable[[LabelledCell, int], Awaitable[list[DecisionRule]]]
# a reporter computes a cell's report card from the cell and the job's artifact (artifact.report_evidence)
Reporter = Callable[[LabelledCell, ThresholdsArtifact], Awaitable[ReportCard]]
# A job's report cards: the shipped cards' rules with fewer resamples and planner draws (a job's cost is the caller's
# wait; the spread the planner shows says how much its points can move)
JOB_REPORT_OPTIONS = ReportOptions(n_resamples=300, planner_draws=4, planner_sizes=(10, 30, 100))


@dataclass(kw_only=True)
class CalibrationJob:
    """One calibration job's state (mutated only by its own task and the event loop)."""

    id: str
    name: str
    created_at: str
    n_rows: int
    cells_planned: list[tuple[str, str, str, int, int]]  # (judge, prompt_family, criterion, K, items)
    levels: tuple[float, ...]
    warnings: list[str]
    status: str = "queued"  # queued | running | done | failed
    done: int = 0
    total: int = 0
    error: str | None = None
    results: list[tuple[FitKey, int, InputKindFit]] = field(default_factory=list)  # (cell + kind, K, fit)
    artifact: ThresholdsArtifact | None = None
    activated: bool = False
    finished_at: str | None = None
    scale: int = 5  # K of rows without scale_max (the queued path reads the body again in a worker)
    report_cards: list[ReportCard] = field(default_factory=list)  # one per cell whose card could be computed


def cell_name(cell: LabelledCell) -> str:
    """The cell as errors name it. Defined here, not in ``cells`` (which uses it): the child process of
    ``fit_in_process`` imports this module to unpickle ``_fit``, and ``cells`` pulls in ``service.errors`` and
    through it ``judges`` and the OpenAI SDK, 1.1 s of CPU in every new child and none of it used there."""
    return f"{cell.judge!r} / {cell.prompt_family!r} / {cell.criterion!r}"


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _fit(
    data: KindData, levels: tuple[float, ...], n_splits: int, accept_max: int, escalate_min: int
) -> tuple[InputKindFit, InputKindFit]:
    """``fit_input_kind`` in both guarantee modes (pac at DEFAULT_DELTA, expected) with the job's fixed settings
    (``jobs`` rules); top level so a child process can run it."""
    return fit_modes(
        data,
        alphas=levels,
        delta=DEFAULT_DELTA,
        n_splits=n_splits,
        seed=0,
        accept_max=accept_max,
        escalate_min=escalate_min,
    )


async def fit_in_thread(
    data: KindData, levels: tuple[float, ...], n_splits: int, accept_max: int, escalate_min: int
) -> tuple[InputKindFit, InputKindFit]:
    """One fit in a thread of this process (a job worker: its memory is the worker's)."""
    return await anyio.to_thread.run_sync(_fit, data, levels, n_splits, accept_max, escalate_min)


async def fit_in_process(
    data: KindData, levels: tuple[float, ...], n_splits: int, accept_max: int, escalate_min: int
) -> tuple[InputKindFit, InputKindFit]:
    """One fit in a child process (the API without workers: neither its event loop nor its memory carries the fit;
    a cancelled job kills the child)."""
    return await anyio.to_process.run_sync(_fit, data, levels, n_splits, accept_max, escalate_min, cancellable=True)


def cells_seed(cells: list[LabelledCell]) -> int:
    """A 32-bit seed from the labelled cells' content (names, items, labels, verdicts, groups): same file, same seed."""
    digest = hashlib.sha256()
    for cell in cells:
        digest.update(cell_name(cell).encode("utf-8"))
        digest.update("\x1f".join(map(str, cell.item_ids)).encode("utf-8"))
        digest.update("\x1f".join(map(str, cell.groups)).encode("utf-8"))
        for values in (cell.labels, cell.judge_scores, cell.probabilities, cell.means):
            if values is not None:
                digest.update(np.ascontiguousarray(np.asarray(values, dtype=float)).tobytes())
    return int.from_bytes(digest.digest()[:4], "big")


async def rules_in_thread(cell: LabelledCell, uniform_seed: int) -> list[DecisionRule]:
    """The cell's decision rules fitted in a thread of this process (a job worker)."""
    return await anyio.to_thread.run_sync(labelled_rules, cell, uniform_seed)


async def rules_in_process(cell: LabelledCell, uniform_seed: int) -> list[DecisionRule]:
    """The cell's decision rules fitted in a child process (the API without workers, as ``fit_in_process``)."""
    return await anyio.to_process.run_sync(labelled_rules, cell, uniform_seed, cancellable=True)


def _card(cell: LabelledCell, artifact: ThresholdsArtifact) -> ReportCard:
    """The cell's report card at the job's options (top level so a child process can run it)."""
    return build_report_card(cell, artifact, JOB_REPORT_OPTIONS)


async def cards_in_thread(cell: LabelledCell, artifact: ThresholdsArtifact) -> ReportCard:
    """A cell's report card in a thread of this process (a job worker)."""
    return await anyio.to_thread.run_sync(_card, cell, artifact)


async def cards_in_process(cell: LabelledCell, artifact: ThresholdsArtifact) -> ReportCard:
    """A cell's report card in a child process (the API without workers, as ``fit_in_process``)."""
    return await anyio.to_process.run_sync(_card, cell, artifact, cancellable=True)


def _fit_failure(cell: LabelledCell, data: KindData, error: Exception) -> str:
    where = f"cell {cell_name(cell)} ({data.kind}): {len(cell.item_ids)} items in {len(set(cell.groups))} group(s)"
    if isinstance(error, CalibrationError):
        return f"{where} cannot be calibrated: {error}; label more items or documents for this cell"
    return f"{where}: the fit failed ({type(error).__name__}: {error})"


async def run_calibration(
    job: CalibrationJob,
    cells: list[LabelledCell],
    *,
    n_splits: int,
    accept_max: int,
    escalate_min: int,
    progress: Callable[[CalibrationJob], Awaitable[object]] | None = None,
    fitter: Fitter = fit_in_thread,
    rule_fitter: RuleFitter = rules_in_thread,
    reporter: Reporter = cards_in_thread,
) -> None:
    """Fit every (cell, input kind) of ``job`` with ``fitter`` (a thread, or a child process), then each cell's
    decision rules with ``rule_fitter``, then build its artifact, then each cell's report card with ``reporter`` (a
    cell whose card cannot be computed is named in ``warnings``; the job is still done); ``job`` is updated in place
    (status, done, results, artifact, report cards or an error naming the cell) and ``progress(job)`` awaited after
    each step."""
    job.status = "running"
    tasks = fit_keys(cells)
    job.total = len(tasks) + len(cells)
    if progress is not None:
        await progress(job)

    both: dict[FitKey, tuple[InputKindFit, InputKindFit]] = {}
    try:
        for cell, data in tasks:
            try:
                fit, expected = await fitter(data, job.levels, n_splits, accept_max, escalate_min)
            except Exception as error:  # noqa: BLE001 - named with its cell below
                raise _CellFailedError(_fit_failure(cell, data, error)) from error
            key = (cell.judge, cell.prompt_family, cell.criterion, data.kind)
            job.results.append((key, cell.n_labels, expected))  # the job shows the default guarantee's figures
            both[key] = (fit, expected)
            job.done += 1
            if progress is not None and job.done < job.total:
                await progress(job)
        rules: list[DecisionRule] = []
        label_rules: list[LabelRule] = []
        # The expected rows accept with a seeded uniform; the seed is the labelled file's own digest, so the same
        # file always gives the same rules (recorded in every row, SelectiveEvidence.seed, so a refit reproduces it).
        uniform_seed = cells_seed(cells)
        for cell in cells:
            try:
                rules += await rule_fitter(cell, uniform_seed)
                label_rules += await anyio.to_thread.run_sync(labelled_label_rules, cell)
            except Exception as error:  # noqa: BLE001 - named with its cell below
                raise _CellFailedError(
                    f"cell {cell_name(cell)}: fitting its decision rules failed ({type(error).__name__}: {error})"
                ) from error
            job.done += 1
            if progress is not None and job.done < job.total:
                await progress(job)
        job.artifact = kind_artifact(
            both,
            created_at=now_iso(),
            code_version="service POST /v1/calibrations",
            data_hash=f"job {job.id}",
            decision_rules=rules,
            label_rules=label_rules,
            source=f"POST /v1/calibrations job {job.id}: {job.n_rows} labelled rows, y* = human rounded to the "
            f"nearest integer (halves up); per (cell, input kind) calibration.input_kinds.fit.fit_input_kind in "
            f"both guarantee "
            f"modes: PAC thresholds at delta={DEFAULT_DELTA} and expected-mode thresholds (document-level conformal "
            "risk control), fitted on all items with seed 0, held-out figures from {n_splits} "
            "seeded splits by group, default method by cross-fitting by group; decision rules by "
            "calibration.decisions.cell_rules.fit_cell_rules over the shipped grid (document-level bound, delta 0.05, "
            "seed 0)",
        )
        await _report_cards(job, cells, reporter)
        job.status = "done"
    except _CellFailedError as error:
        job.status = "failed"
        job.error = str(error)
    except Exception as error:  # noqa: BLE001 - a failed job reports its error, never the process
        job.status = "failed"
        job.error = f"building the artifact failed: {type(error).__name__}: {error}"
    job.finished_at = now_iso()
    if progress is not None:
        await progress(job)


async def _report_cards(job: CalibrationJob, cells: list[LabelledCell], reporter: Reporter) -> None:
    """Each cell's report card into ``job.report_cards``; a cell whose card fails is a warning (the card is evidence
    about the calibration, not the calibration)."""
    assert job.artifact is not None
    job.report_cards = []
    for cell in cells:
        try:
            job.report_cards.append(await reporter(cell, job.artifact))
        except Exception as error:  # noqa: BLE001 - named in the warning
            job.warnings.append(f"cell {cell_name(cell)}: no report card ({type(error).__name__}: {error})")


class _CellFailedError(Exception):
    """A fit failed; the message names the cell and the reason (the job's error)."""
