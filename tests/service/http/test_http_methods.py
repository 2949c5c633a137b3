"""HEAD on every GET route (RFC 9110 9.3.2), the Allow lists that name it, and /metrics' one charset."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from service.config.settings import Settings
from service.http.edge import allow_table
from tests.service.conftest import AppHarness

VARYING = {"date", "x-request-id", "content-length"}  # content-length compared apart (/metrics grows)


def _get_paths(harness: AppHarness) -> list[str]:
    """Every GET route of the app with its path parameters filled."""
    table = allow_table(harness.app.inner)
    return sorted(re.sub(r"\{[^}]+\}", "x1", path) for path, allow in table.items() if b"GET" in allow.split(b", "))


def test_every_get_route_answers_head_with_gets_status_and_headers_and_no_body(app: AppHarness):
    paths = _get_paths(app)
    assert {"/healthz", "/readyz", "/metrics", "/v1/judges", "/v1/calibration", "/schema/redoc"} <= set(paths)
    assert "/v1/jobs/x1" in paths and "/v1/calibrations/x1" in paths
    for path in paths:
        get = app.client.get(path)
        head = app.client.head(path)
        assert head.status_code == get.status_code, path
        assert head.content == b"", path
        assert {k: v for k, v in head.headers.items() if k not in VARYING} == {
            k: v for k, v in get.headers.items() if k not in VARYING
        }, path
        if path != "/metrics":
            assert head.headers.get("content-length") == get.headers.get("content-length"), path


def test_head_is_counted_and_logged_as_head(
    start_app: Callable[[Settings], AppHarness], make_settings: Callable[..., Settings]
):
    app = start_app(make_settings(access_log="all"))
    assert app.client.head("/healthz", headers={"X-Request-ID": "head-1"}).status_code == 200
    metrics = app.client.get("/metrics").text
    assert 'cj_http_requests_total{method="HEAD",route="/healthz",status="200"} 1.0' in metrics
    lines = [line for line in app.log_lines() if line.get("request_id") == "head-1" and line["event"] == "request"]
    assert [line["method"] for line in lines] == ["HEAD"]


def test_allow_names_head_beside_get_and_head_elsewhere_is_405(app: AppHarness):
    options = app.client.options("/v1/jobs/x1")
    assert options.status_code == 204 and options.headers["allow"] == "DELETE, GET, HEAD, OPTIONS"
    refused = app.client.post("/v1/judges")
    assert refused.status_code == 405 and refused.headers["allow"] == "GET, HEAD, OPTIONS"
    head_on_post = app.client.head("/v1/score")
    assert head_on_post.status_code == 405 and head_on_post.headers["allow"] == "OPTIONS, POST"
    assert head_on_post.content == b""


def test_head_without_a_key_is_refused_like_get(
    start_app: Callable[[Settings], AppHarness], make_settings: Callable[..., Settings]
):
    keyed = start_app(make_settings(api_keys=("k1",)))
    assert keyed.client.head("/v1/calibration").status_code == 401
    assert keyed.client.head("/v1/calibration", headers={"Authorization": "Bearer k1"}).status_code == 200
    assert keyed.client.head("/healthz").status_code == 200  # public, as GET


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_metrics_content_type_names_one_charset(app: AppHarness, method: str):
    reply = app.client.request(method, "/metrics")
    assert reply.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert len(reply.headers.get_list("content-type")) == 1
