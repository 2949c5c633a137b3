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
    ``service.artifacts.registry.is_printable_name``);
  - an artifact name that is malformed or reserved (``primary``: ``service.artifacts.activated.check_name``).

  Then it runs the job (**Where jobs run**): each (cell, input kind) is calibrated by
  :func:`calibration.input_kinds.fit.fit_input_kind`, exactly as ``make calibrate`` and ``calibrate --labels`` do (PAC
  thresholds at delta = 0.05, splits by group, the default chosen by cross-fitting), and the artifact is written by
  :func:`artifact.input_kinds.kind_artifact` (pure functions: the service never imports ``offline``). The
  levels are the primary artifact's (so DEFAULT_ALPHA and every level a request may name work for the new cells
  too), seed 0, ``CALIBRATION_SPLITS`` = 20 splits by group. After those fits each cell's certified decision
  rules are fitted (:func:`artifact.input_kinds.labelled_rules`: one per input kind over the shipped artifact's grid,
  tolerances 1-2 x accept_alpha 0.05 / 0.10 / 0.20, gates 3 and 4, the document-level bound at delta 0.05, the
  rows' groups the unit; the function ``offline`` exports the shipped rules with) and go into the artifact's
  ``decision_rules``, so /v1/score can accept an activated cell's verdicts; a cell too small to certify gets a
  rule whose certifications fail with the reason (its verdicts escalate saying so). A fit that fails anyway ends
  the job ``failed`` with an error naming the cell, its items and groups and the reason (never an unexplained
  internal error).
* **Where jobs run.** With REDIS_URL (durable jobs configured) a job is a task on the same SAQ queue as scoring
  chunks, run by any ``python -m service.worker``; its record lives in Redis for JOB_RESULTS_TTL_S
  (:mod:`service.jobs.calibration_jobs.records`), so it survives an API restart and every API process sees it, and a
  worker lost mid-fit is replaced by another (the fits are seeded: the same artifact). Without workers it waits,
  queued; the fits run in the worker (in a thread). Without REDIS_URL jobs run as background tasks of this
  process, each fit in a child process (``anyio.to_process``), so neither the API's event loop nor its memory
  carries a fit: at most ``MAX_JOBS`` are kept (the oldest finished one is dropped beyond that) and a restart
  forgets them. Either way activated
  artifacts do not depend on the job: they persist in ARTIFACTS_DIR under the name ``cal-<id>`` (or the
  ``name`` given at submission).
* **Activate** hands the job's artifact to the calibration holder (:mod:`service.artifacts.registry` rules: a cell
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
import contextlib
import uuid
from collections.abc import Awaitable, Callable, Iterator

import anyio.to_thread
from redis.exceptions import RedisError

from artifact.labels import LabelledCell
from service.artifacts.activated import check_name
from service.artifacts.snapshot import CalibrationSnapshot
from service.artifacts.state import CalibrationHolder
from service.errors import (
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    store_unavailable,
)
from service.jobs.calibration_jobs.cells import check_cells, job_cells, level_warnings
from service.jobs.calibration_jobs.fitting import (
    CalibrationJob,
    cards_in_process,
    fit_in_process,
    now_iso,
    rules_in_process,
    run_calibration,
)
from service.jobs.calibration_jobs.records import CalibrationPlan, beating
from service.jobs.queue import JobQueue
from service.judging.families import live_family_warnings
from service.judging.pool import JudgePool

__all__ = [
    "CALIBRATION_SPLITS",
    "DEFAULT_LEVELS",
    "MAX_JOBS",
    "REDIS_RETRY_AFTER_S",
    "CalibrationJobs",
    "run_queued_calibration",
]

CALIBRATION_SPLITS = 20
MAX_JOBS = 50
DEFAULT_LEVELS = (0.05, 0.10, 0.15, 0.20)
REDIS_RETRY_AFTER_S = 5


@contextlib.contextmanager
def _redis_answers(retry_after_s: int) -> Iterator[None]:
    """Redis errors (the job records' store does not answer) as the 503 every Redis-backed route answers
    (``service.errors.store_unavailable``: one title and detail, Retry-After)."""
    try:
        yield
    except (RedisError, OSError) as error:
        raise store_unavailable(error, retry_after_s) from error


class CalibrationJobs:
    """The app's calibration jobs: on the job queue when ``queue`` is given, else in-process background tasks."""

    def __init__(
        self,
        *,
        accept_max: int,
        escalate_min: int,
        n_splits: int = CALIBRATION_SPLITS,
        queue: JobQueue | None = None,
        retry_after_s: int = REDIS_RETRY_AFTER_S,
    ) -> None:
        self.accept_max = accept_max
        self.retry_after_s = retry_after_s  # Retry-After of the 503 while Redis does not answer (RETRY_AFTER_S)
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
            created_at=now_iso(),
            n_rows=n_rows,
            levels=levels,
            scale=scale,
            cells_planned=[(c.judge, c.prompt_family, c.criterion, c.n_labels, len(c.item_ids)) for c in cells],
            warnings=level_warnings(cells, levels)
            + (
                []
                if judges is None
                else live_family_warnings(judges, [(c.judge, c.prompt_family, c.criterion) for c in cells])
            ),
        )
        if self.queue is not None:
            with _redis_answers(self.retry_after_s):
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
                              rule_fitter=rules_in_process, reporter=cards_in_process)  # fmt: skip

    async def get(self, job_id: str) -> CalibrationJob:
        """The job (from the queue's records when jobs run there), or NotFoundError (404); 503 when Redis is down."""
        if self.queue is None:
            job = self.jobs.get(job_id)
        else:
            with _redis_answers(self.retry_after_s):
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
                with _redis_answers(self.retry_after_s):
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
                with _redis_answers(self.retry_after_s):
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
    run_warnings = state.pop("run_warnings", [])
    return CalibrationJob(
        id=plan.id, name=plan.name, created_at=plan.created_at, n_rows=plan.n_rows,
        cells_planned=[tuple(cell) for cell in plan.cells_planned],  # type: ignore[misc]
        levels=tuple(plan.levels), warnings=list(plan.warnings) + run_warnings, scale=plan.scale, **state,
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
    job_plan_warnings = list(job.warnings)
    _, cells = job_cells(body, job.scale)

    async def progress(state: CalibrationJob) -> None:
        final = state.status in ("done", "failed")
        await queue.calibrations.save(
            state.id, status=state.status, done=state.done, total=state.total, error=state.error,
            finished_at=state.finished_at, results=state.results if final else None,
            artifact=state.artifact if final else None, report_cards=state.report_cards if final else None,
            warnings=state.warnings[len(job_plan_warnings):] if final else None,
        )  # fmt: skip

    work = run_calibration(job, cells, n_splits=n_splits, accept_max=accept_max, escalate_min=escalate_min,
                           progress=progress)  # fmt: skip
    await beating(work, heartbeat, queue.settings.heartbeat_s / 3)
    return job.status
