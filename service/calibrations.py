"""Calibrate over HTTP: a labelled JSON Lines body -> a background calibration job -> an artifact to activate.

Rules, stated once:

* **Submit** validates the whole body synchronously (:func:`calibration.labels.read_labels`; a bad line is a 422
  naming the line and field; a cell with fewer than 2 groups is a 422: held-out figures split by group; nothing is
  queued), then runs the job as an in-process background task: each (cell, input kind) is calibrated by
  :func:`calibration.kind_fit.fit_kind` in a worker thread, exactly as ``make calibrate`` and ``calibrate
  --labels`` do (PAC thresholds at delta = 0.05, splits by group, the default chosen by cross-fitting), and the
  artifact is written by :func:`calibration.kind_artifact.kind_artifact` (pure functions: the service never imports
  ``offline``). The levels are the primary artifact's (so DEFAULT_ALPHA and every level a request may name work for
  the new cells too), seed 0, ``CALIBRATION_SPLITS`` = 20 splits by group.
* **Jobs** live in this process (at most ``MAX_JOBS``; the oldest finished one is dropped beyond that; a restart
  forgets them). Activated artifacts do not depend on the job: they persist in ARTIFACTS_DIR under the name
  ``cal-<id>`` (or the ``name`` given at submission).
* **Activate** hands the job's artifact to the calibration holder (:mod:`service.registry` rules: a cell another
  artifact owns is a 409 and nothing changes). A job that is not done is a 409.
* **Delete** removes the job and, when it was activated, its artifact (its cells answer uncalibrated again).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

import anyio.to_thread

from calibration.kind_artifact import DEFAULT_DELTA, FitKey, fit_keys, kind_artifact
from calibration.kind_fit import KindData, KindFit, fit_kind
from calibration.labels import LabelledCell, LabelRow, labelled_cells, min_items_for, read_labels
from calibration.thresholds import ThresholdsArtifact
from service.activated import check_name
from service.problems import ConflictError, InvalidRequestError, NotFoundError
from service.state import CalibrationHolder, CalibrationSnapshot

__all__ = ["CALIBRATION_SPLITS", "DEFAULT_LEVELS", "MAX_JOBS", "CalibrationJob", "CalibrationJobs"]

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


class CalibrationJobs:
    """The app's calibration jobs and their background tasks."""

    def __init__(self, *, accept_max: int, escalate_min: int, n_splits: int = CALIBRATION_SPLITS) -> None:
        self.accept_max = accept_max
        self.escalate_min = escalate_min
        self.n_splits = n_splits
        self.jobs: dict[str, CalibrationJob] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def submit(self, body: bytes, *, scale: int, name: str | None, snapshot: CalibrationSnapshot | None
               ) -> CalibrationJob:
        """Validate the labelled body and start its job; LabelsError (422) names the line and field."""
        rows: list[LabelRow] = read_labels([("body", body)], default_scale=scale)
        cells = labelled_cells(rows)
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
            id=job_id, name=artifact_name, created_at=_now(), n_rows=len(rows), levels=levels,
            cells_planned=[(c.judge, c.prompt_family, c.criterion, c.n_labels, len(c.item_ids)) for c in cells],
            warnings=_warnings(cells, levels),
        )
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
        job.status = "running"
        tasks = fit_keys(cells)
        job.total = len(tasks)
        try:
            for cell, data in tasks:
                fit = await anyio.to_thread.run_sync(self._calibrate, data, job.levels)
                job.results.append(((cell.judge, cell.prompt_family, cell.criterion, data.kind), cell.n_labels, fit))
                job.done += 1
            job.artifact = kind_artifact(
                {key: fit for key, _, fit in job.results}, created_at=_now(),
                code_version="service POST /v1/calibrations", data_hash=f"job {job.id}",
                source=f"POST /v1/calibrations job {job.id}: {job.n_rows} labelled rows, y* = human rounded to the "
                f"nearest integer (halves up); per (cell, input kind) calibration.kind_fit.fit_kind: PAC thresholds "
                f"at delta={DEFAULT_DELTA} fitted on all items with seed 0, held-out figures from {self.n_splits} "
                "seeded splits by group, default method by cross-fitting by group",
            )
            job.status = "done"
        except Exception as error:  # noqa: BLE001 - a failed job reports its error, never the process
            job.status = "failed"
            job.error = f"{type(error).__name__}: {error}"
        job.finished_at = _now()

    def _calibrate(self, data: KindData, levels: tuple[float, ...]) -> KindFit:
        return fit_kind(data, alphas=levels, delta=DEFAULT_DELTA, n_splits=self.n_splits, seed=0,
                        accept_max=self.accept_max, escalate_min=self.escalate_min)

    def get(self, job_id: str) -> CalibrationJob:
        """The job, or NotFoundError (404)."""
        job = self.jobs.get(job_id)
        if job is None:
            raise NotFoundError(f"no calibration job {job_id!r} (unknown, deleted, or from before a restart)")
        return job

    async def activate(self, job_id: str, holder: CalibrationHolder) -> tuple[CalibrationJob, CalibrationSnapshot,
                                                                              CalibrationSnapshot | None]:
        """Make the job's artifact live; 409 when the job is not done or a cell is owned elsewhere."""
        job = self.get(job_id)
        if job.status != "done" or job.artifact is None:
            raise ConflictError(f"calibration job {job_id!r} is {job.status}: only a done job can be activated")
        previous = holder.current
        snapshot = await holder.activate(job.name, job.artifact, source=f"POST /v1/calibrations/{job.id}")
        job.activated = True
        return job, snapshot, previous

    async def delete(self, job_id: str, holder: CalibrationHolder) -> None:
        """Forget the job and remove its artifact if it is live (also an artifact ``cal-<id>`` after a restart)."""
        job = self.jobs.pop(job_id, None)
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
