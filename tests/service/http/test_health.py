"""/healthz, /readyz, /metrics, request ids and the JSON logs."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest
from litestar.testing import TestClient
from prometheus_client.parser import text_string_to_metric_families

from judges.errors import JudgeConfigError
from service.config.jobs import JobSettings
from service.config.settings import Settings, SettingsError
from service.http.app import create_app
from tests.fakes.judge_server import JudgeServer
from tests.service.conftest import STAND_IN, AppHarness


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_healthz(app: AppHarness):
    reply = app.client.get("/healthz")
    assert reply.status_code == 200 and reply.json()["status"] == "ok"


def test_readyz_when_ready(app: AppHarness):
    data = app.client.get("/readyz").json()
    assert data["status"] == "ready"
    assert {check["name"]: check["ok"] for check in data["checks"]} == {"calibration": True, "judges": True}
    assert data["degraded"] == []


def test_readyz_without_calibration_is_503_problem(start_app: Callable[[Settings], AppHarness], tmp_path: Path):
    harness = start_app(Settings(thresholds_path=tmp_path / "absent.json", admin_api_key="health-admin"))
    reply = harness.client.get("/readyz")
    assert reply.status_code == 503
    assert reply.headers["content-type"].startswith("application/problem+json")
    problem = reply.json()
    assert problem["status"] == 503 and "calibration" in problem["detail"]
    check = next(c for c in problem["checks"] if c["name"] == "calibration")
    assert check["ok"] is False and "absent.json" not in check["detail"] and str(tmp_path) not in reply.text
    admin = harness.client.get("/readyz", headers={"Authorization": "Bearer health-admin"}).json()
    check = next(c for c in admin["checks"] if c["name"] == "calibration")
    assert "absent.json" in check["detail"]  # the operator sees why
    assert harness.client.get("/healthz").status_code == 200


def test_readyz_shows_paths_and_redis_addresses_only_with_the_admin_key(
    start_app: Callable[[Settings], AppHarness], make_settings, artifact_path: Path
):
    port = _free_port()
    harness = start_app(
        make_settings(redis_url=f"redis://127.0.0.1:{port}/0", admin_api_key="health-admin", api_keys=("client",))
    )
    for headers in ({}, {"Authorization": "Bearer client"}, {"Authorization": "Bearer wrong"}):
        reply = harness.client.get("/readyz", headers=headers)
        assert reply.status_code == 200
        assert str(artifact_path.parent) not in reply.text and str(port) not in reply.text, reply.text
    admin = harness.client.get("/readyz", headers={"Authorization": "Bearer health-admin"}).text
    assert str(artifact_path) in admin


def test_readyz_with_unreachable_redis_is_ready_and_degraded(
    start_app: Callable[[Settings], AppHarness], make_settings
):
    # Redis is a soft dependency: a shared Redis outage must not take every replica out of the load balancer.
    harness = start_app(make_settings(redis_url=f"redis://127.0.0.1:{_free_port()}/0"))
    reply = harness.client.get("/readyz")
    assert reply.status_code == 200
    assert reply.json()["status"] == "ready" and reply.json()["degraded"] == ["redis"]
    redis = next(c for c in reply.json()["checks"] if c["name"] == "redis")
    assert redis["ok"] is False and "unreachable" in redis["detail"]
    assert 'cj_dependency_degraded{dependency="redis"} 1.0' in harness.client.get("/metrics").text
    # the cache falls back to memory: caller verdicts keep working
    scored = harness.client.post("/v1/score", json={"criterion": "relevance", "judge": STAND_IN, "judge_score": 3})
    assert scored.status_code == 200


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_metrics_count_requests_decisions_errors_and_judge_calls(judge_app: AppHarness, stand_in: JudgeServer):
    client = judge_app.client
    client.post("/v1/score", json={"criterion": "relevance", "judge": STAND_IN, "judge_score": 1})
    client.post("/v1/score", json={"criterion": "consistency", "judge": STAND_IN, "judge_score": 1})
    client.post("/v1/score", json={"criterion": "relevance", "document": "D.", "summary": "S."})
    client.post("/v1/score", json={"criterion": "relevance", "document": "D.", "summary": "S."})
    client.post("/v1/score", json={"criterion": "no such name"})  # not a name: a validation error
    client.get("/nowhere")
    reply = client.get("/metrics")
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/plain")
    samples = _samples(reply.text)
    route = (("method", "POST"), ("route", "/v1/score"), ("status", "200"))
    assert samples[("cj_http_requests_total", route)] == 4
    assert samples[("cj_http_requests_total", (("method", "POST"), ("route", "/v1/score"), ("status", "422")))] == 1
    assert samples[("cj_http_request_duration_seconds_count", (("method", "POST"), ("route", "/v1/score")))] == 5
    assert samples[("cj_http_errors_total", (("status", "422"), ("type", "validation-error")))] == 1
    assert samples[("cj_http_errors_total", (("status", "404"), ("type", "http-404")))] == 1
    decision = (("calibrated", "false"), ("criterion", "consistency"), ("decision", "escalate"))
    assert samples[("cj_decisions_total", decision)] == 1
    assert samples[("cj_judge_calls_total", (("judge", STAND_IN), ("kind", "score"), ("outcome", "ok")))] == 1
    assert samples[("cj_cache_requests_total", (("result", "hit"),))] == 1
    assert samples[("cj_cache_requests_total", (("result", "miss"),))] == 1


def test_each_app_has_its_own_registry(start_app: Callable[[Settings], AppHarness], make_settings):
    first, second = start_app(make_settings()), start_app(make_settings())
    first.client.get("/healthz")
    first.client.get("/healthz")
    key = ("cj_http_requests_total", (("method", "GET"), ("route", "/healthz"), ("status", "200")))
    assert _samples(first.client.get("/metrics").text)[key] == 2
    assert key not in _samples(second.client.get("/metrics").text)


def test_request_id_is_echoed_or_made(app: AppHarness):
    echoed = app.client.get("/healthz", headers={"X-Request-ID": "abc-123"})
    assert echoed.headers["x-request-id"] == "abc-123"
    made = app.client.get("/healthz")
    assert len(made.headers["x-request-id"]) == 32
    unsafe = app.client.get("/healthz", headers={"X-Request-ID": "bad id\twith spaces"})
    assert unsafe.headers["x-request-id"] != "bad id\twith spaces"
    missing = app.client.get("/no/such/route", headers={"X-Request-ID": "r-404"})
    assert missing.status_code == 404 and missing.headers["x-request-id"] == "r-404"


def test_logs_are_json_with_request_id_and_no_documents_or_keys(
    start_app: Callable[[Settings], AppHarness], make_settings, judges_file: Path, stand_in: JudgeServer
):
    harness = start_app(make_settings(judges_file=judges_file, api_keys=("top-secret-key",), access_log="all"))
    secret_document = "CONFIDENTIAL-ARTICLE-TEXT " * 20
    reply = harness.client.post(
        "/v1/score",
        json={"criterion": "relevance", "document": secret_document, "summary": "PRIVATE-SUMMARY"},
        headers={"Authorization": "Bearer top-secret-key", "X-Request-ID": "trace-42"},
    )
    assert reply.status_code == 200
    harness.client.post("/v1/score", json={"criterion": "relevance"}, headers={"Authorization": "Bearer wrong"})
    lines = harness.log_lines()
    request_lines = [line for line in lines if line.get("request_id") == "trace-42"]
    assert request_lines and all(line["level"] for line in request_lines)
    access = next(line for line in request_lines if line["event"] == "request")
    assert (access["status"], access["route"], access["method"]) == (200, "/v1/score", "POST")
    text = "\n".join(map(str, lines))
    for secret in ("CONFIDENTIAL-ARTICLE-TEXT", "PRIVATE-SUMMARY", "top-secret-key", "Bearer"):
        assert secret not in text


@pytest.mark.parametrize(("mode", "logged_statuses"), [("all", [200, 422]), ("errors", [422]), ("off", [])])
def test_access_log_setting_selects_which_requests_get_a_line(
    start_app: Callable[[Settings], AppHarness], make_settings, mode: str, logged_statuses: list[int]
):
    harness = start_app(make_settings(access_log=mode))
    assert harness.client.get("/healthz").status_code == 200
    assert harness.client.post("/v1/score", json={"criterion": "relevance", "judge_score": 9}).status_code == 422
    access = [line["status"] for line in harness.log_lines() if line["event"] == "request"]
    assert access == logged_statuses
    problems = [line for line in harness.log_lines() if line["event"] == "request.problem"]
    assert len(problems) == 1  # a problem is logged by the handler whatever ACCESS_LOG says


def test_access_log_setting_is_validated():
    with pytest.raises(SettingsError, match="ACCESS_LOG"):
        Settings.from_env({"ACCESS_LOG": "sometimes"})
    assert Settings.from_env({"ACCESS_LOG": "ERRORS"}).access_log == "errors"


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


def test_a_broken_judges_file_stops_the_start(make_settings, tmp_path: Path, stand_in: JudgeServer):
    broken = tmp_path / "judges.json"
    broken.write_text('[{"name": 1}]')
    keyed = tmp_path / "keyed.json"
    config = stand_in.judge_config(name=STAND_IN, api_key_env="CJ_TEST_SURELY_UNSET_KEY")
    keyed.write_bytes(msgspec.json.encode([config]))
    for path, named in ((broken, "judges.json"), (keyed, "CJ_TEST_SURELY_UNSET_KEY")):
        with pytest.raises(BaseException) as caught, TestClient(create_app(make_settings(judges_file=path))):
            pass
        (leaf,) = _leaves(caught.value)
        assert isinstance(leaf, JudgeConfigError) and named in str(leaf)


def test_readyz_stays_ready_and_names_a_judge_whose_breaker_opened(
    start_app: Callable[[Settings], AppHarness], make_settings, judges_file, stand_in
):
    harness = start_app(make_settings(judges_file=judges_file, jobs=JobSettings(breaker_failures=2)))
    stand_in.inject("error_500", times=20)  # the judge fails every call
    body = {"criterion": "relevance", "document": "Doc.", "summary": "Summary."}
    for k in range(3):
        assert harness.client.post("/v1/score", json={**body, "summary": f"S{k}."}).status_code in (502, 503)
    reply = harness.client.get("/readyz")
    assert reply.status_code == 200  # caller verdicts still work: not a reason to leave the load balancer
    data = reply.json()
    assert data["status"] == "ready" and data["degraded"] == [f"judge:{STAND_IN}"]
    judges = next(c for c in data["checks"] if c["name"] == "judges")
    assert judges["ok"] is False and "circuit open" in judges["detail"]
    assert f'cj_dependency_degraded{{dependency="judge:{STAND_IN}"}} 1.0' in harness.client.get("/metrics").text
    own = {"criterion": "relevance", "judge": STAND_IN, "judge_score": 3}
    assert harness.client.post("/v1/score", json=own).status_code == 200


def test_options_names_every_method_of_every_path(app: AppHarness):
    """OPTIONS answers the path's full Allow list, also where two handlers share a path (GET and DELETE), with HEAD
    wherever GET is (the edge answers it)."""
    from litestar.routes import HTTPRoute

    for route in app.app.inner.routes:
        if not isinstance(route, HTTPRoute):
            continue
        path = route.path.replace("{job_id:str}", "abc")
        reply = app.client.options(path)
        assert reply.status_code == 204, path
        expected = set(route.methods) | ({"HEAD"} if "GET" in route.methods else set())
        assert sorted(m.strip() for m in reply.headers["allow"].split(",")) == sorted(expected), path
