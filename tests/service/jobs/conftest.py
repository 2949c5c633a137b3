"""Fixtures of the job tests: a Redis queue name of their own (keys removed afterwards), settings on it, and
chunks run in-process by the worker's own runner (``service.worker.make_runner``).

Redis: ``REDIS_TEST_URL`` (tests/redis_url.py: the one database every test uses).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from service.config.jobs import JobSettings
from service.config.settings import Settings
from service.jobs.queue import JobQueue
from service.observability.logging import make_logs
from service.worker import make_runner
from tests.redis_url import REDIS_TEST_URL

REDIS_URL = REDIS_TEST_URL


def delete_queue_keys(url: str, queue: str) -> int:
    """Remove every key of queue ``queue`` (the job store's and SAQ's); how many there were."""
    client = redis.Redis.from_url(url)
    try:
        keys = [*client.scan_iter(f"cj:{queue}:*"), *client.scan_iter(f"saq:*{queue}*")]
        if keys:
            client.delete(*keys)
        return len(keys)
    finally:
        client.close()


@pytest.fixture
def queue_name() -> Iterator[str]:
    """A queue (key prefix) of this test alone; its keys are deleted afterwards."""
    name = f"test-{uuid.uuid4().hex[:12]}"
    yield name
    delete_queue_keys(REDIS_URL, name)


@pytest.fixture
def jobs_settings(artifact_path: Path, queue_name: str) -> Callable[..., Settings]:
    """Settings on the test artifact and REDIS_URL with this test's queue; keywords override JobSettings."""

    def make(settings_overrides: dict[str, Any] | None = None, **job_overrides: Any) -> Settings:
        jobs = JobSettings(queue=queue_name, **job_overrides)
        return Settings(thresholds_path=artifact_path, redis_url=REDIS_URL, jobs=jobs, **(settings_overrides or {}))

    return make


def run_chunks(settings: Settings, job_id: str, chunks: list[int], *, attempt: int = 1) -> list[str]:
    """Run the given chunks of a job in-process with the worker's runner; their outcomes."""

    async def main() -> list[str]:
        jobs = JobQueue.connect(settings.redis_url, settings.jobs)
        runner, judges, _ = make_runner(settings, jobs, make_logs("WARNING").logger)
        await judges.start()
        try:
            return [await runner.run_chunk(job_id, chunk, attempt=attempt) for chunk in chunks]
        finally:
            await judges.aclose()
            await jobs.aclose()

    return asyncio.run(main())
