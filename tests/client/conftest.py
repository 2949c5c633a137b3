"""The real service for the client tests: uvicorn in a thread on the seeded test artifact, with API keys, an admin
key, Redis jobs on a queue of this session and one real worker process (``python -m service.worker``).

Redis: ``REDIS_TEST_URL`` (tests/redis_url.py); the queue's keys are deleted afterwards.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from artifact.thresholds import save_artifact
from service.config.jobs import JobSettings
from service.config.limits import LimitSettings
from service.config.settings import Settings
from tests.redis_url import REDIS_TEST_URL
from tests.service.conftest import build_artifact
from tests.service.jobs.conftest import delete_queue_keys
from tests.service.servers import serve_in_thread

REDIS_URL = REDIS_TEST_URL
REPO = Path(__file__).resolve().parents[2]
API_KEY = "client-tests-key"
ADMIN_KEY = "client-tests-admin"


@dataclass(frozen=True)
class Service:
    """The running service: its base URL and keys."""

    url: str
    api_key: str
    admin_key: str


@pytest.fixture(scope="session")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """The API (auth on, Redis jobs) and one worker on the same queue, for the whole session."""
    folder = tmp_path_factory.mktemp("client-service")
    thresholds = folder / "thresholds.json"
    save_artifact(build_artifact(), thresholds)
    queue = f"test-client-{uuid.uuid4().hex[:10]}"
    artifacts = folder / "activated"
    settings = Settings(
        thresholds_path=thresholds,
        api_keys=(API_KEY,),
        admin_api_key=ADMIN_KEY,
        redis_url=REDIS_URL,
        artifacts_dir=artifacts,
        jobs=JobSettings(queue=queue, chunk_size=4),
        # The exact MFAS of a few candidates solves in milliseconds, but CBC's start can pass the 2 s default on a
        # loaded machine, and then two identical compare requests differ (exact order vs the Copeland fallback).
        limits=LimitSettings(mfas_time_limit_s=30.0),
        log_level="WARNING",
    )
    environ = {key: value for key, value in os.environ.items() if not key.startswith(("JOB", "WORKER", "JUDGES"))}
    environ.update(
        THRESHOLDS_PATH=str(thresholds),
        REDIS_URL=REDIS_URL,
        JOB_QUEUE=queue,
        JOB_CHUNK_SIZE="4",
        ARTIFACTS_DIR=str(artifacts),
        LOG_LEVEL="WARNING",
        PYTHONPATH=str(REPO),
    )
    with open(folder / "worker.log", "wb") as log:
        worker = subprocess.Popen(
            [sys.executable, "-m", "service.worker"], cwd=REPO, env=environ, stdout=log, stderr=subprocess.STDOUT
        )
    try:
        with serve_in_thread(settings) as served:
            yield Service(served.url, API_KEY, ADMIN_KEY)
    finally:
        worker.kill()
        worker.wait(timeout=30)
        delete_queue_keys(REDIS_URL, queue)
