"""Activated artifacts kept in Redis (ARTIFACTS_REDIS_KEY with REDIS_URL): shared by a restarted (or another)
replica, removed on DELETE, and a Redis that is down at start-up reported, not fatal. Needs Redis on 127.0.0.1.

With REDIS_URL a calibration job waits on the job queue for a worker: the first test starts a real one
(``python -m service.worker``) on a queue of its own."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator

import pytest
import redis

from service.config.jobs import JobSettings
from service.config.settings import Settings
from tests.service.conftest import STAND_IN, AppHarness
from tests.service.jobs.conftest import REDIS_URL, queue_name  # noqa: F401 - the fixture
from tests.service.jobs.test_worker import Workers, all_results, wait_for, workers  # noqa: F401 - the fixture

ADMIN = "redis-admin"
HEADERS = {"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/x-ndjson"}


@pytest.fixture
def key() -> Iterator[str]:
    name = f"cj:test-activated:{uuid.uuid4().hex}"
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.RedisError:
        pytest.fail("these tests need Redis on 127.0.0.1:6379 (make test documents it)")
    yield name
    client.delete(name, f"{name}:version")  # the hash and its change counter (service.artifacts.activated)
    client.close()


def _body() -> bytes:
    rows = [
        {
            "item_id": f"i{i}",
            "criterion": "tone",
            "judge": "shared-judge",
            "human": 1 + i % 5,
            "judge_score": 1 + (i + i // 7) % 5,
            "group": f"d{i // 4}",
        }
        for i in range(160)
    ]
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _job(harness: AppHarness) -> str:
    job_id = harness.client.post("/v1/calibrations", headers=HEADERS, content=_body()).json()["id"]
    for _ in range(600):
        if harness.client.get(f"/v1/calibrations/{job_id}", headers=HEADERS).json()["status"] == "done":
            return job_id
        time.sleep(0.05)
    raise AssertionError("job did not finish")


def test_activated_in_redis_reaches_another_replica_and_delete_removes_it(
    start_app: Callable[[Settings], AppHarness],
    make_settings,
    key: str,
    queue_name: str,  # noqa: F811 - the fixture
    workers: Callable[..., Workers],  # noqa: F811 - the fixture
) -> None:
    settings = make_settings(
        admin_api_key=ADMIN,
        redis_url=REDIS_URL,
        artifacts_redis_key=key,
        jobs=JobSettings(queue=queue_name, heartbeat_s=5, sweep_s=1),
    )
    first = start_app(settings)
    # the calibration job runs on a worker of this test's queue, which serves the API's artifacts (the same key)
    workers(settings).start(ARTIFACTS_REDIS_KEY=key)
    job_id = _job(first)
    assert first.client.post(f"/v1/calibrations/{job_id}/activate", headers=HEADERS).status_code == 200
    assert redis.Redis.from_url(REDIS_URL).hexists(key, f"cal-{job_id}")

    # a job item on the running worker is calibrated as /v1/score calibrates it (issue 22, D4: it was a 422)
    item = {"criterion": "tone", "judge": "shared-judge", "judge_score": 3}
    accepted = first.client.post("/v1/jobs", json={"items": [item]})
    assert accepted.status_code == 202, accepted.text
    scored_job = wait_for(
        first.client, accepted.json()["job_id"], lambda s: s["status"] not in ("queued", "running"), 60
    )
    assert scored_job["status"] == "succeeded", scored_job
    [line] = all_results(first.client, accepted.json()["job_id"])
    assert line["ok"] is True and line["result"] == first.client.post("/v1/score", json=item).json()

    replica = start_app(settings)  # no ARTIFACTS_DIR: the artifact comes from Redis
    artifacts = {a["name"]: a for a in replica.client.get("/v1/calibration", headers=HEADERS).json()["artifacts"]}
    assert artifacts[f"cal-{job_id}"]["path"] == f"redis:{key}/cal-{job_id}"
    scored = replica.client.post("/v1/score", json={"criterion": "tone", "judge": "shared-judge", "judge_score": 3})
    assert scored.json()["calibrated"] is True

    # the replica never ran the job, yet it can remove the artifact by the job's id
    assert replica.client.delete(f"/v1/calibrations/{job_id}", headers=HEADERS).status_code == 204
    assert not redis.Redis.from_url(REDIS_URL).hexists(key, f"cal-{job_id}")


def test_redis_down_at_start_up_is_reported_not_fatal(
    start_app: Callable[[Settings], AppHarness], make_settings
) -> None:
    harness = start_app(
        make_settings(admin_api_key=ADMIN, redis_url="redis://127.0.0.1:1/0", artifacts_redis_key="cj:unreachable")
    )
    assert harness.client.get("/v1/calibration").status_code == 200
    assert any("unreachable" in s for s in harness.services.calibration.skipped)
    # a calibration job needs the queue, which lives in that Redis: a 503 that says so, nothing half-created
    refused = harness.client.post("/v1/calibrations", headers=HEADERS, content=_body())
    assert refused.status_code == 503, refused.text
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert "Redis" in refused.json()["detail"] or "redis" in refused.json()["detail"]
    assert [a["name"] for a in harness.client.get("/v1/calibration").json()["artifacts"]] == ["primary"]
    scored = harness.client.post("/v1/score", json={"criterion": "relevance", "judge": STAND_IN, "judge_score": 4})
    assert scored.status_code == 200 and scored.json()["calibrated"] is True  # scoring never depends on Redis
