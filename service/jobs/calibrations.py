"""Calibrate over HTTP: a labelled JSON Lines body -> a background calibration job -> an artifact to activate.

Rules, stated once:

* **Submit** validates the whole body before answering, in a worker thread (never on the event loop), with
  :func:`artifact.labels.read_labels` (a bad line is a 422 naming the line and field; nothing is queued), and
  refuses up front (422, nothing queued) what could not be fitted or would cost too much:

  - a cell (judge, prompt family, criterion) with fewer than ``MIN_CELL_GROUPS`` = 4 distinct groups, fewer than
    ``MIN_CELL_ITEMS`` = 8 items, or whose floor(G / 4) smallest of its G groups hold fewer than 2 items together:
    held-out figures split by group, the default method is chosen by cross-fitting two halves of the groups, each
    split by group again, and ``learned_lac`` splits a part once more (model and threshold), so a part of a
    quarter of the groups must hold 2 items; smaller cells fail inside the fit (the rule is sufficient on every
    configuration tried, 4-13 groups of 1-3 items; it is not a characterisation);
  - a cell with more than ``max_cell_rows`` rows (MAX_CALIBRATION_CELL_ROWS): a fit's memory grows with its cell;
  - a judge, prompt family or criterion name that is not printable text (control, bidi or zero-width characters:
    ``service.calibrations.registry.is_printable_name``);
  - an artifact name that is malformed or reserved (``primary``: ``service.calibrations.activated.check_name``).

  Then it runs the job (**Where jobs run**): each (cell, input kind) is calibrated by
  :func:`calibration.kind_fit.fit_kind`, exactly as ``make calibrate`` and ``calibrate --labels`` do (PAC
  thresholds at delta = 0.05, splits by group, the default chosen by cross-fitting), and the artifact is written by
  :func:`artifact.kinds.kind_artifact` (pure functions: the service never imports ``offline``). The
  levels are the primary artifact's (so DEFAULT_ALPHA and every level a request may name work for the new cells
  too), seed 0, ``CALIBRATION_SPLITS`` = 20 splits by group. After those fits each cell's certified decision
  rules are fitted (:func:`artifact.kinds.labelled_rules`: one per input kind over the shipped artifact's grid,
  tolerances 1-2 x accept_alpha 0.05 / 0.10 / 0.20, gates 3 and 4, the document-level bound at delta 0.05, the
  rows' groups the unit; the function ``offline`` exports the shipped rules with) and go into the artifact's
  ``decision_rules``, so /v1/score can accept an activated cell's verdicts; a cell too small to certify gets a
  rule whose certifications fail with the reason (its verdicts escalate saying so). A fit that fails anyway ends
  the job ``failed`` with an error naming the cell, its items and groups and the reason (never an unexplained
  internal error).
* **Where jobs run.** With REDIS_URL (durable jobs configured) a job is a task on the same SAQ queue as scoring
  chunks, run by any ``python -m service.worker``; its record lives in Redis for JOB_RESULTS_TTL_S
  (:mod:`service.jobs.calibration_records`), so it survives an API restart and every API process sees it, and a
  worker lost mid-fit is replaced by another (the fits are seeded: the same artifact). Without workers it waits,
  queued; the fits run in the worker (in a thread). Without REDIS_URL jobs run as background tasks of this
  process, each fit in a child process (``anyio.to_process``), so neither the API's event loop nor its memory
  carries a fit: at most ``MAX_JOBS`` are kept (the oldest finished one is dropped beyond that) and a restart
  forgets them. Either way activated
  artifacts do not depend on the job: they persist in ARTIFACTS_DIR under the name ``cal-<id>`` (or the
  ``name`` given at submission).
* **Activate** hands the job's artifact to the calibration holder (:mod:`service.calibrations.registry` rules: a cell
another
  artifact owns is a 409 and nothing changes). A job that is not done is a 409.
* **Delete** removes the job and, when it was activated, its artifact (its cells answer uncalibrated again).
* **Activate and delete are atomic with respect to each other**: in one process they run one at a time (a lock),
  and an activation whose job was deleted meanwhile (by another replica) is undone and answers 404, so no artifact
  is ever left live without a job to delete it by.
* **Redis down**: every route that reads or writes the job records answers 503 ``jobs-unavailable`` with
  Retry-After (never a 500).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import datetime as dt
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field

import anyio.to_process
import anyio.to_thread
from redis.exceptions import RedisError

from artifact.kinds import DEFAULT_DELTA, FitKey, fit_keys, kind_artifact, labelled_rules
from artifact.labels import LabelledCell, LabelRow, labelled_cells, min_items_for, read_labels
from artifact.thresholds import ThresholdsArtifact
from calibration.decision_rule import DecisionRule
from calibration.errors import CalibrationError
from calibration.kind_fit import KindData, KindFit, fit_kind
from service.calibrations.activated import check_name
from service.calibrations.registry import is_printable_name
from service.calibrations.state import CalibrationHolder, CalibrationSnapshot
from service.errors import ENABLE_JOBS_HELP, ConflictError, InvalidRequestError, JobsUnavailableError, NotFoundError
from service.jobs.calibration_records import CalibrationPlan, beating
from service.jobs.queue import JobQueue
from service.judging.families import live_family_warnings
from service.judging.pool import JudgePool

__all__ = [
    "CALIBRATION_SPLITS",
    "DEFAULT_LEVELS",
    "MAX_JOBS",
    "MIN_CELL_GROUPS",
    "MIN_CELL_ITEMS",
    "REDIS_RETRY_AFTER_S",
    "CalibrationJob",
    "CalibrationJobs",
    "check_cells",
    "fit_in_process",
    "fit_in_thread",
    "rules_in_process",
    "rules_in_thread",
    "run_calibration",
    "run_queued_calibration",
]

CALIBRATION_SPLITS = 20
MAX_JOBS = 50
DEFAULT_LEVELS = (0.05, 0.10, 0.15, 0.20)
MIN_CELL_GROUPS = 4  # outer splits by group, and cross-fitting halves that are split by group again
MIN_CELL_ITEMS = 8  # learned_lac splits each calibration half again (model and threshold)
REDIS_RETRY_AFTER_S = 5

Fitter = Callable[[KindData, tuple[float, ...], int, int, int], Awaitable[KindFit]]
RuleFitter = Callable[[LabelledCell], Awaitable[list[DecisionRule]]]


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
    results: list[tuple[FitKey, int, KindFit]] = field(default_factory=list)  # (cell + kind, K, fit)
    artifact: ThresholdsArtifact | None = None
    activated: bool = False
    finished_at: str | None = None
    scale: int = 5  # K of rows without scale_max (the queued path reads the body again in a worker)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _warnings(cells: Sequence[LabelledCell], levels: Sequence[float]) -> list[str]:
    lines = []
    for cell in cells:
        n = len(cell.item_ids)
        for alpha in levels:
            need = min_items_for(alpha)
            if n < need:
                lines.append(
                    f"{cell.judge} / {cell.prompt_family} / {cell.criterion}: {n} labelled items; "
                    f"alpha={alpha} needs at least {need} for a finite threshold (its sets are the full "
                    "scale)"
                )
    return lines


def job_cells(body: bytes, scale: int) -> tuple[int, list[LabelledCell]]:
    """(rows, the labelled cells) of a body (LabelsError names the line and field of a bad row)."""
    rows: list[LabelRow] = read_labels([("body", body)], default_scale=scale)
    return len(rows), labelled_cells(rows)


def _cell_name(cell: LabelledCell) -> str:
    return f"{cell.judge!r} / {cell.prompt_family!r} / {cell.criterion!r}"


def check_cells(cells: Sequence[LabelledCell], *, max_cell_rows: int | None) -> None:
    """InvalidRequestError (422) naming the first cell that cannot be fitted here (module rules: printable names,
    at least MIN_CELL_GROUPS groups and MIN_CELL_ITEMS items, at most ``max_cell_rows`` rows)."""
    for cell in cells:
        bad = [name for name in (cell.judge, cell.prompt_family, cell.criterion) if not is_printable_name(name)]
        if bad:
            raise InvalidRequestError(
                f"cell {_cell_name(cell)}: {', '.join(repr(b) for b in bad)} is not printable text; judge, "
                "prompt_family and criterion may not contain control, bidi-override or zero-width characters"
            )
        n_items, sizes = len(cell.item_ids), sorted(collections.Counter(cell.groups).values())
        n_groups = len(sizes)
        quarter = sum(sizes[: n_groups // 4])
        if n_groups < MIN_CELL_GROUPS or n_items < MIN_CELL_ITEMS or quarter < 2:
            raise InvalidRequestError(
                f"cell {_cell_name(cell)} has {n_items} items in {n_groups} group(s) (smallest {sizes[:4]}): a "
                f"calibration needs at least {MIN_CELL_ITEMS} items in at least {MIN_CELL_GROUPS} distinct groups, "
                "and at least 2 items in its smallest quarter of the groups (held-out figures and the default method "
                "are chosen on splits by group, document or source); give a group per row, or label more documents"
            )
        if max_cell_rows is not None and n_items > max_cell_rows:
            raise InvalidRequestError(
                f"cell {_cell_name(cell)} has {n_items} rows; at most MAX_CALIBRATION_CELL_ROWS={max_cell_rows} "
                "are fitted per cell (a fit's memory grows with its cell): subsample its items, or raise the limit"
            )


def _fit(data: KindData, levels: tuple[float, ...], n_splits: int, accept_max: int, escalate_min: int) -> KindFit:
    """``fit_kind`` with the job's fixed settings (module rules); top level so a child process can run it."""
    return fit_kind(
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
) -> KindFit:
    """One fit in a thread of this process (a job worker: its memory is the worker's)."""
    return await anyio.to_thread.run_sync(_fit, data, levels, n_splits, accept_max, escalate_min)


async def fit_in_process(
    data: KindData, levels: tuple[float, ...], n_splits: int, accept_max: int, escalate_min: int
) -> KindFit:
    """One fit in a child process (the API without workers: neither its event loop nor its memory carries the fit;
    a cancelled job kills the child)."""
    return await anyio.to_process.run_sync(_fit, data, levels, n_splits, accept_max, escalate_min, cancellable=True)


async def rules_in_thread(cell: LabelledCell) -> list[DecisionRule]:
    """The cell's decision rules fitted in a thread of this process (a job worker)."""
    return await anyio.to_thread.run_sync(labelled_rules, cell)


async def rules_in_process(cell: LabelledCell) -> list[DecisionRule]:
    """The cell's decision rules fitted in a child process (the API without workers, as ``fit_in_process``)."""
    return await anyio.to_process.run_sync(labelled_rules, cell, cancellable=True)


def _fit_failure(cell: LabelledCell, data: KindData, error: Exception) -> str:
    where = f"cell {_cell_name(cell)} ({data.kind}): {len(cell.item_ids)} items in {len(set(cell.groups))} group(s)"
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
) -> None:
    """Fit every (cell, input kind) of ``job`` with ``fitter`` (a thread, or a child process), then each cell's
    decision rules with ``rule_fitter``, then build its artifact; ``job`` is updated in place (status, done,
    results, artifact or an error naming the cell) and ``progress(job)`` awaited after each step."""
    job.status = "running"
    tasks = fit_keys(cells)
    job.total = len(tasks) + len(cells)
    if progress is not None:
        await progress(job)

    try:
        for cell, data in tasks:
            try:
                fit = await fitter(data, job.levels, n_splits, accept_max, escalate_min)
            except Exception as error:  # noqa: BLE001 - named with its cell below
                raise _CellFailedError(_fit_failure(cell, data, error)) from error
            job.results.append(((cell.judge, cell.prompt_family, cell.criterion, data.kind), cell.n_labels, fit))
            job.done += 1
            if progress is not None and job.done < job.total:
                await progress(job)
        rules: list[DecisionRule] = []
        for cell in cells:
            try:
                rules += await rule_fitter(cell)
            except Exception as error:  # noqa: BLE001 - named with its cell below
                raise _CellFailedError(
                    f"cell {_cell_name(cell)}: fitting its decision rules failed ({type(error).__name__}: {error})"
                ) from error
            job.done += 1
            if progress is not None and job.done < job.total:
                await progress(job)
        job.artifact = kind_artifact(
            {key: fit for key, _, fit in job.results},
            created_at=_now(),
            code_version="service POST /v1/calibrations",
            data_hash=f"job {job.id}",
            decision_rules=rules,
            source=f"POST /v1/calibrations job {job.id}: {job.n_rows} labelled rows, y* = human rounded to the "
            f"nearest integer (halves up); per (cell, input kind) calibration.kind_fit.fit_kind: PAC thresholds "
            f"at delta={DEFAULT_DELTA} fitted on all items with seed 0, held-out figures from {n_splits} "
            "seeded splits by group, default method by cross-fitting by group; decision rules by "
            "calibration.cell_rules.fit_cell_rules over the shipped grid (document-level bound, delta 0.05, seed 0)",
        )
        job.status = "done"
    except _CellFailedError as error:
        job.status = "failed"
        job.error = str(error)
    except Exception as error:  # noqa: BLE001 - a failed job reports its error, never the process
        job.status = "failed"
        job.error = f"building the artifact failed: {type(error).__name__}: {error}"
    job.finished_at = _now()
    if progress is not None:
        await progress(job)


class _CellFailedError(Exception):
    """A fit failed; the message names the cell and the reason (the job's error)."""


@contextlib.contextmanager
def _redis_answers() -> Iterator[None]:
    """Redis errors (the job records' store does not answer) as a 503 jobs-unavailable with Retry-After."""
    try:
        yield
    except (RedisError, OSError) as error:
        raise JobsUnavailableError(
            f"Redis does not answer ({type(error).__name__}); calibration jobs live there: retry later. "
            f"{ENABLE_JOBS_HELP}",
            headers={"Retry-After": str(REDIS_RETRY_AFTER_S)},
        ) from error


class CalibrationJobs:
    """The app's calibration jobs: on the job queue when ``queue`` is given, else in-process background tasks."""

    def __init__(
        self, *, accept_max: int, escalate_min: int, n_splits: int = CALIBRATION_SPLITS, queue: JobQueue | None = None
    ) -> None:
        self.accept_max = accept_max
        self.escalate_min = escalate_min
        self.n_splits = n_splits
        self.jobs: dict[str, CalibrationJob] = {}  # the in-process path's jobs
        self._tasks: set[asyncio.Task[None]] = set()
        self.queue = queue
        self._changing = asyncio.Lock()  # activate / delete, one at a time (module rules)

    async def submit(
        self,
        body: bytes,
        *,
        scale: int,
        name: str | None,
        snapshot: CalibrationSnapshot | None,
        max_cell_rows: int | None = None,
        judges: JudgePool | None = None,
    ) -> CalibrationJob:
        """Validate the labelled body off the event loop and start its job; LabelsError (422) names the line and
        field, InvalidRequestError (422) a cell that cannot be fitted (module rules); 503 when Redis is down.
        With ``judges``, a cell of a configured judge under a family its live calls never use is a warning."""
        n_rows, cells = await anyio.to_thread.run_sync(job_cells, body, scale)
        check_cells(cells, max_cell_rows=max_cell_rows)
        job_id = uuid.uuid4().hex[:16]
        try:
            artifact_name = check_name(name or f"cal-{job_id}")
        except ValueError as error:
            raise InvalidRequestError(str(error)) from None
        levels = tuple(snapshot.levels()) if snapshot is not None and snapshot.levels() else DEFAULT_LEVELS
        job = CalibrationJob(
            id=job_id,
            name=artifact_name,
            created_at=_now(),
            n_rows=n_rows,
            levels=levels,
            scale=scale,
            cells_planned=[(c.judge, c.prompt_family, c.criterion, c.n_labels, len(c.item_ids)) for c in cells],
            warnings=_warnings(cells, levels)
            + (
                []
                if judges is None
                else live_family_warnings(judges, [(c.judge, c.prompt_family, c.criterion) for c in cells])
            ),
        )
        if self.queue is not None:
            with _redis_answers():
                await self.queue.enqueue_calibration(_plan_of(job), body)
            return job
        self._evict()
        self.jobs[job.id] = job
        task = asyncio.get_running_loop().create_task(self._run(job, cells))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return job

    def _evict(self) -> None:
        finished = [j for j in self.jobs.values() if j.status in ("done", "failed") and not j.activated]
        while len(self.jobs) >= MAX_JOBS and finished:
            self.jobs.pop(finished.pop(0).id, None)

    async def _run(self, job: CalibrationJob, cells: list[LabelledCell]) -> None:
        await run_calibration(job, cells, n_splits=self.n_splits, accept_max=self.accept_max,
                              escalate_min=self.escalate_min, fitter=fit_in_process,
                              rule_fitter=rules_in_process)  # fmt: skip

    async def get(self, job_id: str) -> CalibrationJob:
        """The job (from the queue's records when jobs run there), or NotFoundError (404); 503 when Redis is down."""
        if self.queue is None:
            job = self.jobs.get(job_id)
        else:
            with _redis_answers():
                job = await _queued_job(self.queue, job_id)
        if job is None:
            raise NotFoundError(f"no calibration job {job_id!r} (unknown, deleted, expired, or from before a restart)")
        return job

    async def activate(
        self, job_id: str, holder: CalibrationHolder
    ) -> tuple[CalibrationJob, CalibrationSnapshot, CalibrationSnapshot | None]:
        """Make the job's artifact live; 409 when the job is not done or a cell is owned elsewhere; 404 (and
        nothing live) when the job was deleted while it was being activated."""
        async with self._changing:
            job = await self.get(job_id)
            if job.status != "done" or job.artifact is None:
                raise ConflictError(f"calibration job {job_id!r} is {job.status}: only a done job can be activated")
            previous, snapshot = await holder.activate(job.name, job.artifact, source=f"POST /v1/calibrations/{job.id}")
            if self.queue is None:
                kept = self.jobs.get(job_id) is job
            else:
                try:
                    kept = await self.queue.calibrations.mark_activated(job.id)
                except (RedisError, OSError):
                    kept = False
            if not kept:  # deleted meanwhile (another replica), or its record cannot be marked: undo
                await holder.remove(job.name)
                with _redis_answers():
                    await self.get(job_id)  # 503 when Redis is down, 404 when the job is gone
                raise NotFoundError(f"calibration job {job_id!r} was deleted while it was being activated")
            job.activated = True
            return job, snapshot, previous

    async def delete(self, job_id: str, holder: CalibrationHolder) -> None:
        """Forget the job and remove its artifact if it is live (also an artifact ``cal-<id>`` after a restart)."""
        async with self._changing:
            if self.queue is None:
                job = self.jobs.pop(job_id, None)
            else:
                with _redis_answers():
                    job = await _queued_job(self.queue, job_id)
                    await self.queue.calibrations.delete(job_id)
            name = job.name if job is not None else f"cal-{job_id}"
            if holder.artifacts.get(name) is not None and (job is None or job.activated):
                await holder.remove(name)
            elif job is None:
                raise NotFoundError(f"no calibration job {job_id!r} and no artifact {name!r}")

    async def aclose(self) -> None:
        """Cancel running jobs (at shutdown)."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            try:
                await task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - shutting down
                pass


async def _queued_job(queue: JobQueue, job_id: str) -> CalibrationJob | None:
    """The queued calibration job as its record says now, or None when there is none."""
    found = await queue.calibration_record(job_id)
    if found is None:
        return None
    plan, state = found
    return CalibrationJob(
        id=plan.id, name=plan.name, created_at=plan.created_at, n_rows=plan.n_rows,
        cells_planned=[tuple(cell) for cell in plan.cells_planned],  # type: ignore[misc]
        levels=tuple(plan.levels), warnings=list(plan.warnings), scale=plan.scale, **state,
    )  # fmt: skip


def _plan_of(job: CalibrationJob) -> CalibrationPlan:
    return CalibrationPlan(id=job.id, name=job.name, created_at=job.created_at, n_rows=job.n_rows,
                           cells_planned=job.cells_planned, levels=job.levels, warnings=job.warnings,
                           scale=job.scale)  # fmt: skip


async def run_queued_calibration(
    queue: JobQueue,
    calibration_id: str,
    *,
    n_splits: int,
    accept_max: int,
    escalate_min: int,
    heartbeat: Callable[[], Awaitable[object]] | None = None,
) -> str:
    """A worker's ``run_calibration`` task: fit the stored job, writing its progress and result to its record;
    the outcome (``done``, ``failed``, or why nothing ran: ``gone``, ``finished``)."""
    job = await _queued_job(queue, calibration_id)
    body = await queue.calibrations.body(calibration_id)
    if job is None:
        return "gone"
    if job.status in ("done", "failed") or body is None:
        return "finished"
    job.results, job.done = [], 0  # a re-run after a lost worker starts again (the fits are seeded)
    _, cells = job_cells(body, job.scale)

    async def progress(state: CalibrationJob) -> None:
        final = state.status in ("done", "failed")
        await queue.calibrations.save(
            state.id, status=state.status, done=state.done, total=state.total, error=state.error,
            finished_at=state.finished_at, results=state.results if final else None,
            artifact=state.artifact if final else None,
        )  # fmt: skip

    work = run_calibration(job, cells, n_splits=n_splits, accept_max=accept_max, escalate_min=escalate_min,
                           progress=progress)  # fmt: skip
    await beating(work, heartbeat, queue.settings.heartbeat_s / 3)
    return job.status
