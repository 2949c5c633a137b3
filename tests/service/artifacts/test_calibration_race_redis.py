"""Activate racing delete across two API replicas on one Redis (issue 22, D16): a job deleted by one replica while
another persists its activation is undone by the activating one, so no artifact stays live (or persisted) without a
job to delete it by. Needs Redis on 127.0.0.1."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from artifact.thresholds import ThresholdsArtifact
from service.artifacts.state import CalibrationHolder
from service.config.jobs import JobSettings
from service.errors import NotFoundError
from service.jobs.calibration_jobs.jobs import CalibrationJobs
from service.jobs.calibration_jobs.records import CalibrationPlan
from service.jobs.queue import JobQueue
from tests.service.artifacts.test_artifacts_merge import user_artifact
from tests.service.jobs.conftest import REDIS_URL, queue_name  # noqa: F401 - the fixture

pytestmark = pytest.mark.redis


def test_an_activation_whose_job_another_replica_deleted_is_undone(
    artifact_path: Path,
    tmp_path: Path,
    queue_name: str,  # noqa: F811 - the fixture
) -> None:
    holder = CalibrationHolder(artifact_path, artifacts_dir=tmp_path / "activated")
    holder.load_initial()
    other = CalibrationHolder(artifact_path)  # the second replica's (it never saw the artifact)
    other.load_initial()
    saving, release = threading.Event(), threading.Event()
    save = holder.activated.save

    def slow_save(name: str, artifact: ThresholdsArtifact) -> None:
        saving.set()
        release.wait(10)
        save(name, artifact)

    holder.activated.save = slow_save  # type: ignore[method-assign]

    async def main() -> BaseException | None:
        queue = JobQueue.connect(REDIS_URL, JobSettings(queue=queue_name))
        try:
            plan = CalibrationPlan(
                id="race", name="mine", created_at="t", n_rows=1, cells_planned=[], levels=(0.1,), warnings=[], scale=5
            )
            await queue.calibrations.put(plan, b"{}")
            await queue.calibrations.save("race", status="done", done=1, total=1, results=[], artifact=user_artifact())
            replica_a = CalibrationJobs(accept_max=2, escalate_min=5, queue=queue)
            replica_b = CalibrationJobs(accept_max=2, escalate_min=5, queue=queue)
            activating = asyncio.create_task(replica_a.activate("race", holder))
            while not saving.is_set():
                await asyncio.sleep(0.01)
            await replica_b.delete("race", other)  # its own lock: nothing orders it after the activation
            release.set()
            outcome = (await asyncio.gather(activating, return_exceptions=True))[0]
            return outcome if isinstance(outcome, BaseException) else None
        finally:
            await queue.aclose()

    error = asyncio.run(main())
    assert isinstance(error, NotFoundError), error
    assert holder.artifacts.names() == ["primary"]
    assert list((tmp_path / "activated").glob("*.json")) == []
