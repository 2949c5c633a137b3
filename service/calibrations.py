"""Calibrate over HTTP: a labelled JSON Lines body -> a background calibration job -> an artifact to activate.

Rules, stated once:

* **Submit** validates the whole body synchronously (:func:`calibration.labels.read_labels`; a bad line is a 422
  naming the line and field; a cell with fewer than 2 groups is a 422: held-out figures split by group; nothing is
  queued), then runs the job (**Where jobs run**): each (cell, input kind) is calibrated by
  :func:`calibration.kind_fit.fit_kind` in a worker thread, exactly as ``make calibrate`` and ``calibrate
  --labels`` do (PAC thresholds at delta = 0.05, splits by group, the default chosen by cross-fitting), and the
  artifact is written by :func:`calibration.kind_artifact.kind_artifact` (pure functions: the service never imports
  ``offline``). The levels are the primary artifact's (so DEFAULT_ALPHA and every level a request may name work for
  the new cells too), seed 0, ``CALIBRATION_SPLITS`` = 20 splits by group.
* **Where jobs run.** With REDIS_URL (durable jobs configured) a job is a task on the same SAQ queue as scoring
  chunks, run by any ``python -m service.worker``; its record lives in Redis for JOB_RESULTS_TTL_S
  (:mod:`service.jobs.calibration_records`), so it survives an API restart and every API process sees it, and a
  worker lost mid-fit is replaced by another (the fits are seeded: the same artifact). Without workers it waits,
  queued. Without REDIS_URL jobs run as background tasks of this process, as before: at most ``MAX_JOBS`` are
  kept (the oldest finished one is dropped beyond that) and a restart forgets them. Either way activated
  artifacts do not depend on the job: they persist in ARTIFACTS_DIR under the name ``cal-<id>`` (or the
  ``name`` given at submission).
* **Activate** hands the job's artifact to the calibration holder (:mod:`service.registry` rules: a cell another
  artifact owns is a 409 and nothing changes). A job that is not done is a 409.
* **Delete** removes the job and, when it was activated, its artifact (its cells answer uncalibrated again).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio.to_thread

from calibration.kind_artifact import DEFAULT_DELTA, FitKey, fit_keys, kind_artifact
from calibration.kind_fit import KindData, KindFit, fit_kind
from calibration.labels import LabelledCell, LabelRow, labelled_cells, min_items_for, read_labels
from calibration.thresholds import ThresholdsArtifact
from service.activated import check_name
from service.problems import ConflictError, InvalidRequestError, NotFoundError
from service.state import CalibrationHolder, CalibrationSnapshot

if TYPE_CHECKING:
    from service.jobs.calibration_records import CalibrationPlan
    from service.jobs.queue import JobQueue

__all__ = [
    "CALIBRATION_SPLITS",
    "DEFAULT_LEVELS",
    "MAX_JOBS",
    "CalibrationJob",
    "CalibrationJobs",
    "run_calibration",
    "run_queued_calibration",
]

CALIBRATION_SPLITS = 20
MAX_JOBS = 50
DEFAULT_LEVELS = (0.05, 0.10, 0.15, 0.20)


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
                lines.append(f"{cell.judge} / {cell.prompt_family} / {cell.criterion}: {n} labelled items; "
                             f"alpha={alpha} needs at least {need} for a finite threshold (its sets are the full "
                             "scale)")
    return lines


def job_cells(body: bytes, scale: int) -> tuple[int, list[LabelledCell]]:
    """(rows, the labelled cells) of a body (LabelsError names the line and field of a bad row)."""
    rows: list[LabelRow] = read_labels([("body", body)], default_scale=scale)
    return len(rows), labelled_cells(rows)


async def run_calibration(
    job: CalibrationJob, cells: list[LabelledCell], *, n_splits: int, accept_max: int, escalate_min: int,
    progress: Callable[[CalibrationJob], Awaitable[object]] | None = None,
) -> None:
    """Fit every (cell, input kind) of ``job`` in a worker thread, then build its artifact; ``job`` is updated
    in place (status, done, results, artifact or error) and ``progress(job)`` awaited after each step."""
    job.status = "running"
    tasks = fit_keys(cells)
    job.total = len(tasks)
    if progress is not None:
        await progress(job)

    def calibrate(data: KindData, levels: tuple[float, ...]) -> KindFit:
        return fit_kind(data, alphas=levels, delta=DEFAULT_DELTA, n_splits=n_splits, seed=0,
                        accept_max=accept_max, escalate_min=escalate_min)

    try:
        for cell, data in tasks:
            fit = await anyio.to_thread.run_sync(calibrate, data, job.levels)
            job.results.append(((cell.judge, cell.prompt_family, cell.criterion, data.kind), cell.n_labels, fit))
            job.done += 1
            if progress is not None and job.done < job.total:
                await progress(job)
        job.artifact = kind_artifact(
            {key: fit for key, _, fit in job.results}, created_at=_now(),
            code_version="service POST /v1/calibrations", data_hash=f"job {job.id}",
            source=f"POST /v1/calibrations job {job.id}: {job.n_rows} labelled rows, y* = human rounded to the "
            f"nearest integer (halves up); per (cell, input kind) calibration.kind_fit.fit_kind: PAC thresholds "
            f"at delta={DEFAULT_DELTA} fitted on all items with seed 0, held-out figures from {n_splits} "
            "seeded splits by group, default method by cross-fitting by group",
        )
        job.status = "done"
    except Exception as error:  # noqa: BLE001 - a failed job reports its error, never the process
        job.status = "failed"
        job.error = f"{type(error).__name__}: {error}"
    job.finished_at = _now()
    if progress is not None:
        await progress(job)


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

    async def submit(self, body: bytes, *, scale: int, name: str | None, snapshot: CalibrationSnapshot | None
                     ) -> CalibrationJob:
        """Validate the labelled body and start its job; LabelsError (422) names the line and field."""
        n_rows, cells = job_cells(body, scale)
        for cell in cells:
            if len(set(cell.groups)) < 2:
                raise InvalidRequestError(
                    f"cell {cell.judge} / {cell.prompt_family} / {cell.criterion} has {len(set(cell.groups))} group: "
                    "held-out figures split by group (document or source); give a group per row, or at least two "
                    "distinct documents"
                )
        job_id = uuid.uuid4().hex[:16]
        try:
            artifact_name = check_name(name or f"cal-{job_id}")
        except ValueError as error:
            raise InvalidRequestError(str(error)) from None
        levels = tuple(snapshot.levels()) if snapshot is not None and snapshot.levels() else DEFAULT_LEVELS
        job = CalibrationJob(
            id=job_id, name=artifact_name, created_at=_now(), n_rows=n_rows,
            levels=levels, scale=scale,
            cells_planned=[(c.judge, c.prompt_family, c.criterion, c.n_labels, len(c.item_ids)) for c in cells],
            warnings=_warnings(cells, levels),
        )
        if self.queue is not None:
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
                              escalate_min=self.escalate_min)  # fmt: skip

    async def get(self, job_id: str) -> CalibrationJob:
        """The job (from the queue's records when jobs run there), or NotFoundError (404)."""
        job = self.jobs.get(job_id) if self.queue is None else await self.queue.calibration(job_id)
        if job is None:
            raise NotFoundError(f"no calibration job {job_id!r} (unknown, deleted, expired, or from before a restart)")
        return job

    async def activate(self, job_id: str, holder: CalibrationHolder) -> tuple[CalibrationJob, CalibrationSnapshot,
                                                                              CalibrationSnapshot | None]:
        """Make the job's artifact live; 409 when the job is not done or a cell is owned elsewhere."""
        job = await self.get(job_id)
        if job.status != "done" or job.artifact is None:
            raise ConflictError(f"calibration job {job_id!r} is {job.status}: only a done job can be activated")
        previous = holder.current
        snapshot = await holder.activate(job.name, job.artifact, source=f"POST /v1/calibrations/{job.id}")
        job.activated = True
        if self.queue is not None:
            await self.queue.calibrations.mark_activated(job.id)
        return job, snapshot, previous

    async def delete(self, job_id: str, holder: CalibrationHolder) -> None:
        """Forget the job and remove its artifact if it is live (also an artifact ``cal-<id>`` after a restart)."""
        if self.queue is None:
            job = self.jobs.pop(job_id, None)
        else:
            job = await self.queue.calibration(job_id)
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


def _plan_of(job: CalibrationJob) -> CalibrationPlan:
    from service.jobs.calibration_records import CalibrationPlan

    return CalibrationPlan(id=job.id, name=job.name, created_at=job.created_at, n_rows=job.n_rows,
                           cells_planned=job.cells_planned, levels=job.levels, warnings=job.warnings,
                           scale=job.scale)  # fmt: skip


async def run_queued_calibration(
    queue: JobQueue, calibration_id: str, *, n_splits: int, accept_max: int, escalate_min: int,
    heartbeat: Callable[[], Awaitable[object]] | None = None,
) -> str:
    """A worker's ``run_calibration`` task: fit the stored job, writing its progress and result to its record;
    the outcome (``done``, ``failed``, or why nothing ran: ``gone``, ``finished``)."""
    from service.jobs.calibration_records import beating

    job = await queue.calibration(calibration_id)
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
