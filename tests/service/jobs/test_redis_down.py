"""Job routes when REDIS_URL points at a Redis that does not answer: 503 problem+json with Retry-After, never a
500, also when Redis fails between a job's status and its results."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from service.config.settings import Settings
from tests.service.conftest import AppHarness
from tests.service.jobs.test_api import NDJSON, caller_item, ndjson

pytestmark = pytest.mark.redis


def _dead_port() -> int:
    """A local port nobody listens on (bound, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _assert_unavailable(response: Any, retry_after_s: int) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.headers["retry-after"] == str(retry_after_s)
    problem = response.json()
    assert problem["type"].endswith("jobs-unavailable") and "Redis does not answer" in problem["detail"]


def test_every_job_route_answers_503_with_retry_after_on_a_dead_redis(
    start_app: Callable[[Settings], AppHarness], make_settings: Callable[..., Settings]
) -> None:
    settings = make_settings(redis_url=f"redis://127.0.0.1:{_dead_port()}/0")
    client = start_app(settings).client
    retry = settings.jobs.retry_after_s
    _assert_unavailable(client.post("/v1/jobs", content=ndjson([caller_item(1)]), headers=NDJSON), retry)
    _assert_unavailable(client.post("/v1/jobs", json={"items": [caller_item(1)]}), retry)
    _assert_unavailable(
        client.post("/v1/jobs", content=ndjson([caller_item(1)]), headers={**NDJSON, "Idempotency-Key": "k"}), retry
    )
    for method, path in (("GET", ""), ("GET", "/results"), ("GET", "/results?after=3&limit=2"), ("DELETE", "")):
        _assert_unavailable(client.request(method, f"/v1/jobs/0123456789abcdef0123456789abcdef{path}"), retry)
    metrics = client.get("/metrics").text
    assert 'status="500"' not in metrics


def test_results_answer_503_when_redis_fails_after_the_status_read(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    settings = jobs_settings(retry_after_s=4)
    harness = start_app(settings)
    client = harness.client
    job_id = client.post("/v1/jobs", content=ndjson([caller_item(1)]), headers=NDJSON).json()["job_id"]

    async def refused(*_: Any, **__: Any) -> Any:
        raise RedisConnectionError("Connection refused")

    monkeypatch.setattr(harness.services.jobs.store.redis, "hmget", refused)
    _assert_unavailable(client.get(f"/v1/jobs/{job_id}/results"), 4)


def test_every_redis_backed_route_says_the_same_while_redis_does_not_answer(
    start_app: Callable[[Settings], AppHarness], make_settings: Callable[..., Settings]
) -> None:
    """Jobs, calibration jobs and estimates from a job: one title, one detail, one Retry-After (RETRY_AFTER_S)."""
    admin = {"Authorization": "Bearer down-admin"}
    settings = make_settings(redis_url=f"redis://127.0.0.1:{_dead_port()}/0", admin_api_key="down-admin")
    client = start_app(settings).client
    retry = settings.jobs.retry_after_s
    calibration_job, job = "0" * 16, "0123456789abcdef0123456789abcdef"
    rows = b"".join(
        b'{"item_id": "i%d", "criterion": "tone", "judge": "j", "human": %d, "judge_score": %d, "group": "d%d"}\n'
        % (i, 1 + i % 5, 1 + (2 * i) % 5, i // 3)
        for i in range(40)
    )
    answers = [
        client.get(f"/v1/jobs/{job}"),
        client.post("/v1/jobs", json={"items": [caller_item(1)]}),
        client.get(f"/v1/calibrations/{calibration_job}", headers=admin),
        client.post(f"/v1/calibrations/{calibration_job}/activate", headers=admin),
        client.delete(f"/v1/calibrations/{calibration_job}", headers=admin),
        client.post("/v1/calibrations", content=rows, headers={**admin, "Content-Type": "application/x-ndjson"}),
        client.post("/v1/estimates", json={"metric": "mean", "alpha": 0.1, "job": job, "labelled": []}),
    ]
    titles = set()
    for response in answers:
        if response.request.url.path == "/v1/estimates" and response.status_code == 422:
            continue  # the body's own checks come first (job_samples); the job form is covered above
        _assert_unavailable(response, retry)
        problem = response.json()
        titles.add(problem["title"])
        assert problem["detail"].startswith("Redis does not answer ("), problem["detail"]
        assert "set REDIS_URL" not in problem["detail"]  # it is set: the outage is not a missing setting
    assert titles == {"Durable jobs are temporarily unavailable"}
