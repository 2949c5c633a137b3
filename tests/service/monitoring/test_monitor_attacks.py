"""The monitor routes under attack: spellings of their paths, missing and wrong keys, oversized bodies and too many
items, malformed items, no Redis configured and a Redis that does not answer (503 with Retry-After, never a 500),
and /v1/score without Redis exactly as before."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import pytest

from service.config.settings import Settings
from tests.service.conftest import AppHarness
from tests.service.monitoring.conftest import feedback_item
from tests.service.monitoring.test_feedback_api import ADMIN, SCORE

pytestmark = pytest.mark.redis
KEY = "tenant-one-key-7c1d"
ROUTES = (
    ("POST", "/v1/feedback"),
    ("GET", "/v1/monitor"),
    ("POST", "/v1/monitor/reset"),
    ("POST", "/v1/monitor/recalibrate"),
)


def _dead_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _body(path: str) -> dict[str, Any] | None:
    if path == "/v1/feedback":
        return {"items": [feedback_item("x1", 3)]}
    if path in ("/v1/monitor/reset", "/v1/monitor/recalibrate"):
        return {"monitor_id": "0" * 32}
    return None


def test_keys_are_required_on_every_spelling(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    client = start_app(jobs_settings({"api_keys": (KEY,), "admin_api_key": ADMIN})).client
    for method, path in ROUTES:
        for spelling in (path, path + "/", path.upper(), "/" + path, path.replace("/v1/", "/v1//")):
            for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": f"Basic {KEY}"}):
                answer = client.request(method, spelling, json=_body(path), headers=headers)
                assert answer.status_code in (401, 404), (method, spelling, headers, answer.status_code)
                assert answer.status_code != 200
        assert client.request(method, path, json=_body(path)).status_code == 401
    keyed = {"authorization": f"Bearer {KEY}"}
    assert client.post("/v1/feedback", json=_body("/v1/feedback"), headers=keyed).status_code == 200
    assert client.get("/v1/monitor", headers=keyed).status_code == 200
    assert client.post("/v1/monitor/reset", json=_body("/v1/monitor/reset"), headers=keyed).status_code == 403
    admin = {"authorization": f"Bearer {ADMIN}"}
    assert client.post("/v1/monitor/reset", json=_body("/v1/monitor/reset"), headers=admin).status_code == 404
    assert client.post("/v1/monitor/recalibrate", json=_body("/v1/monitor/reset"), headers=keyed).status_code == 403
    assert client.post("/v1/monitor/recalibrate", json=_body("/v1/monitor/reset"), headers=admin).status_code == 404
    assert client.delete("/v1/monitor", headers=keyed).status_code == 405


def test_bodies_too_large_too_many_items_and_malformed(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    client = start_app(jobs_settings({"max_body_bytes": 4096, "max_batch_items": 5, "admin_api_key": ADMIN})).client
    huge = client.post("/v1/feedback", json={"items": [feedback_item(f"i{n}" * 40, 3) for n in range(40)]})
    assert huge.status_code == 413 and huge.headers["content-type"] == "application/problem+json"
    many = client.post("/v1/feedback", json={"items": [feedback_item(f"i{n}", 3) for n in range(6)]})
    assert many.status_code == 422 and "MAX_BATCH_ITEMS" in many.json()["detail"]
    for bad in (b"{", b"[]", b'{"items": 3}', b'{"items": [], "extra": 1}'):
        answer = client.post("/v1/feedback", content=bad, headers={"content-type": "application/json"})
        assert answer.status_code in (400, 422), (bad, answer.status_code)
    text = client.post("/v1/feedback", content=b'{"items": []}', headers={"content-type": "text/plain"})
    assert text.status_code == 415
    odd = [None, "x", {"item_id": "z"}, {**feedback_item("y", 3), "judge_score": "4"}, feedback_item("", 3)]
    answer = client.post("/v1/feedback", json={"items": odd})
    assert answer.status_code == 200 and answer.json()["refused"] == len(odd)
    assert all(r["error"]["status"] == 422 for r in answer.json()["refusals"])
    for monitor_id in ("", "../x", "Z" * 32, "0" * 65):
        reset = client.post(
            "/v1/monitor/reset", json={"monitor_id": monitor_id}, headers={"authorization": f"Bearer {ADMIN}"}
        )
        assert reset.status_code == 422, monitor_id
    assert 'status="500"' not in client.get("/metrics").text


def _unavailable(answer: Any, *, retry_after: bool) -> None:
    assert answer.status_code == 503, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["type"].endswith("jobs-unavailable")
    assert ("retry-after" in answer.headers) is retry_after


def test_without_redis_the_monitor_routes_answer_503_and_scoring_is_unchanged(
    start_app: Callable[[Settings], AppHarness], make_settings: Callable[..., Settings]
) -> None:
    client = start_app(make_settings(admin_api_key=ADMIN)).client
    admin = {"authorization": f"Bearer {ADMIN}"}
    for method, path in ROUTES:
        answer = client.request(method, path, json=_body(path), headers=admin)
        _unavailable(answer, retry_after=False)
        detail = answer.json()["detail"]  # what is missing is Redis; the monitors need no worker
        assert "REDIS_URL is not set" in detail and "need Redis" in detail and "service.worker" not in detail
    assert client.post("/v1/score", json=SCORE).json()["rule_failed"] is False


def test_a_dead_redis_is_503_with_retry_after_and_scoring_still_answers(
    start_app: Callable[[Settings], AppHarness], make_settings: Callable[..., Settings]
) -> None:
    settings = make_settings(redis_url=f"redis://127.0.0.1:{_dead_port()}/0", admin_api_key=ADMIN)
    client = start_app(settings).client
    admin = {"authorization": f"Bearer {ADMIN}"}
    for method, path in ROUTES:
        answer = client.request(method, path, json=_body(path), headers=admin)
        _unavailable(answer, retry_after=True)
        assert answer.headers["retry-after"] == str(settings.jobs.retry_after_s)
        assert "Redis does not answer" in answer.json()["detail"]
    # started while Redis does not answer: the alarms were never read, so any cell may be in alarm: fail closed
    score = client.post("/v1/score", json=SCORE)
    assert score.status_code == 200 and score.json()["decision"] == "escalate" and score.json()["rule_failed"]
    assert "have not been read since this process started" in score.json()["reason"]
    assert score.json()["prediction_set"]  # the set is still served
    assert 'status="500"' not in client.get("/metrics").text
