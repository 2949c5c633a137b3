"""A job worker serves the API's artifacts: the activated ones it finds at start (ARTIFACTS_DIR, the Redis hash
ARTIFACTS_REDIS_KEY) and those activated or deleted through the API while it runs (followed per chunk), so a job
item is calibrated exactly as /v1/score calibrates it. Needs Redis on 127.0.0.1 (the job queue lives there)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec
import pytest
import redis

from artifact.thresholds import ThresholdsArtifact, save_artifact
from service.config.jobs import JobSettings
from service.config.limits import LimitSettings
from service.config.settings import Settings
from service.errors import InvalidRequestError
from service.jobs.queue import JobQueue
from service.observability.logging import make_logs
from service.scoring.score import score_item
from service.wire.score import ScoreRequest
from service.worker import make_runner
from tests.service.conftest import STAND_IN, AppHarness
from tests.service.jobs.conftest import REDIS_URL, queue_name  # noqa: F401 - the fixture

pytestmark = pytest.mark.redis

ADMIN = "worker-admin"
MINE = "my-judge"


@pytest.fixture
def key() -> Iterator[str]:
    name = f"cj:test-worker-activated:{uuid.uuid4().hex}"
    yield name
    client = redis.Redis.from_url(REDIS_URL)
    client.delete(name, f"{name}:version")
    client.close()


def _mine(artifact: ThresholdsArtifact) -> ThresholdsArtifact:
    """The test artifact's stand-in / paper cells under another judge name (a judge the primary lacks)."""
    entries = [
        msgspec.structs.replace(e, judge=MINE)
        for e in artifact.entries
        if e.judge == STAND_IN and e.prompt_family == "paper"
    ]
    defaults = [
        msgspec.structs.replace(d, judge=MINE)
        for d in artifact.default_methods
        if d.judge == STAND_IN and d.prompt_family == "paper"
    ]
    return msgspec.structs.replace(artifact, entries=entries, default_methods=defaults, source="mine")


@pytest.mark.parametrize("store", ["redis", "directory"])
def test_a_running_worker_follows_activations_and_deletions(
    start_app: Callable[[Settings], AppHarness],
    artifact: ThresholdsArtifact,
    artifact_path: Path,
    tmp_path: Path,
    key: str,
    queue_name: str,  # noqa: F811
    store: str,  # noqa: F811 - the fixture
) -> None:
    save_artifact(_mine(artifact), tmp_path / "mine.json")
    settings = Settings(
        thresholds_path=artifact_path,
        admin_api_key=ADMIN,
        redis_url=REDIS_URL,
        artifacts_redis_key=key if store == "redis" else None,
        artifacts_dir=tmp_path / "activated" if store == "directory" else None,
        limits=LimitSettings(reload_dir=tmp_path),
        jobs=JobSettings(queue=queue_name),
    )
    api = start_app(settings)
    admin = {"Authorization": f"Bearer {ADMIN}"}
    item = msgspec.convert({"criterion": "relevance", "judge": MINE, "judge_score": 4, "alpha": 0.1}, ScoreRequest)

    async def main() -> None:
        jobs = JobQueue.connect(settings.redis_url, settings.jobs)
        runner, _, _ = make_runner(settings, jobs, make_logs("WARNING").logger)
        try:
            with pytest.raises(InvalidRequestError):  # not calibrated anywhere yet
                await score_item(runner.context(), item)
            activated = api.client.post(
                "/v1/calibration/reload", headers=admin, json={"path": "mine.json", "name": "cal-mine"}
            )
            assert activated.status_code == 200, activated.text
            served = api.client.post("/v1/score", json=msgspec.to_builtins(item)).json()
            answer = await score_item(runner.context(), item)  # the next chunk: the worker serves it as the API
            assert answer.calibrated is True and list(answer.prediction_set) == served["prediction_set"]
            assert api.client.delete("/v1/calibrations/mine", headers=admin).status_code == 204
            with pytest.raises(InvalidRequestError):  # deleted through the API: gone for the worker too
                await score_item(runner.context(), item)
        finally:
            await jobs.aclose()

    asyncio.run(main())


def test_a_worker_started_after_an_activation_serves_it(
    start_app: Callable[[Settings], AppHarness],
    artifact: ThresholdsArtifact,
    artifact_path: Path,
    tmp_path: Path,
    key: str,
    queue_name: str,  # noqa: F811 - the fixture
) -> None:
    save_artifact(_mine(artifact), tmp_path / "mine.json")
    settings = Settings(
        thresholds_path=artifact_path,
        admin_api_key=ADMIN,
        redis_url=REDIS_URL,
        artifacts_redis_key=key,
        limits=LimitSettings(reload_dir=tmp_path),
        jobs=JobSettings(queue=queue_name),
    )
    api = start_app(settings)
    reply = api.client.post(
        "/v1/calibration/reload",
        headers={"Authorization": f"Bearer {ADMIN}"},
        json={"path": "mine.json", "name": "mine"},
    )
    assert reply.status_code == 200, reply.text
    item = msgspec.convert({"criterion": "coherence", "judge": MINE, "judge_score": 2}, ScoreRequest)

    async def main() -> bool:
        jobs = JobQueue.connect(settings.redis_url, settings.jobs)
        try:
            runner, _, _ = make_runner(settings, jobs, make_logs("WARNING").logger)
            return (await score_item(runner.context(), item)).calibrated
        finally:
            await jobs.aclose()

    assert asyncio.run(main()) is True
