"""API keys (401), size limits (413/422) and the settings read from the environment."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from service.__main__ import curl_example
from service.config.settings import HARD_MAX_BATCH_ITEMS, Settings, SettingsError, default_thresholds_path
from tests.service.conftest import STAND_IN, AppHarness

VERDICT = {"criterion": "relevance", "judge": STAND_IN, "judge_score": 3}


@pytest.fixture
def keyed_app(start_app: Callable[[Settings], AppHarness], make_settings) -> AppHarness:
    """An app requiring one of two API keys, with an admin key too."""
    return start_app(make_settings(api_keys=("key-one", "key-two"), admin_api_key="admin-key"))


@pytest.mark.parametrize("header", [None, "Bearer wrong", "Basic a2V5LW9uZQ==", "Bearer", "key-one"])
def test_v1_needs_a_valid_bearer_key(keyed_app: AppHarness, header: str | None):
    headers = {} if header is None else {"Authorization": header}
    for method, path, body in (
        ("post", "/v1/score", VERDICT),
        ("get", "/v1/calibration", None),
        ("get", "/v1/judges", None),
        ("post", "/v1/compare", {"criterion": "coherence"}),
        ("post", "/v1/score/batch", {"items": []}),
    ):
        reply = getattr(keyed_app.client, method)(path, headers=headers, **({"json": body} if body else {}))
        assert reply.status_code == 401, (path, header)
        assert reply.headers["content-type"].startswith("application/problem+json")
        assert reply.headers["www-authenticate"].startswith("Bearer")


def test_a_refused_key_is_answered_before_routing_with_id_metrics_and_log(keyed_app: AppHarness):
    unknown = keyed_app.client.get("/v1/no-such-route", headers={"X-Request-ID": "r-401"})
    assert unknown.status_code == 401  # an unauthenticated caller learns nothing about which routes exist
    assert unknown.headers["x-request-id"] == "r-401"
    problem = unknown.json()
    assert problem["status"] == 401 and problem["instance"] == "/v1/no-such-route" and "Bearer" in problem["detail"]
    assert int(unknown.headers["content-length"]) == len(unknown.content)
    head = keyed_app.client.head("/v1/judges")
    assert head.status_code == 401 and head.content == b""
    metrics = keyed_app.client.get("/metrics").text
    assert 'cj_http_requests_total{method="GET",route="<unmatched>",status="401"} 1.0' in metrics
    assert 'cj_http_errors_total{status="401",type="unauthorized"} 2.0' in metrics
    lines = [line for line in keyed_app.log_lines() if line.get("request_id") == "r-401"]
    assert {line["event"] for line in lines} == {"request", "request.problem"}


@pytest.mark.parametrize("key", ["key-one", "key-two", "admin-key"])
def test_valid_keys_pass(keyed_app: AppHarness, key: str):
    reply = keyed_app.client.post("/v1/score", json=VERDICT, headers={"Authorization": f"Bearer {key}"})
    assert reply.status_code == 200


def test_health_metrics_and_schema_stay_open(keyed_app: AppHarness):
    for path in ("/healthz", "/readyz", "/metrics", "/schema/openapi.json"):
        assert keyed_app.client.get(path).status_code == 200, path


def test_reload_with_an_api_key_that_is_not_admin_is_403(keyed_app: AppHarness):
    reply = keyed_app.client.post("/v1/calibration/reload", headers={"Authorization": "Bearer key-one"})
    assert reply.status_code == 403


def test_no_keys_configured_means_open(app: AppHarness):
    assert app.client.post("/v1/score", json=VERDICT).status_code == 200


def test_oversize_body_is_413(start_app: Callable[[Settings], AppHarness], make_settings):
    harness = start_app(make_settings(max_body_bytes=2048))
    body = {**VERDICT, "document": "x" * 4096}
    reply = harness.client.post("/v1/score", json=body)
    assert reply.status_code == 413
    assert reply.headers["content-type"].startswith("application/problem+json")
    assert "MAX_BODY_BYTES" in reply.json()["detail"]
    assert harness.client.post("/v1/score", json=VERDICT).status_code == 200


def test_long_document_and_summary_are_422(start_app: Callable[[Settings], AppHarness], make_settings):
    harness = start_app(make_settings(max_document_chars=100, max_summary_chars=10))
    long_document = harness.client.post("/v1/score", json={**VERDICT, "document": "d" * 101})
    assert long_document.status_code == 422 and "MAX_DOCUMENT_CHARS=100" in long_document.json()["detail"]
    long_summary = harness.client.post("/v1/score", json={**VERDICT, "summary": "s" * 11})
    assert long_summary.status_code == 422 and "MAX_SUMMARY_CHARS=10" in long_summary.json()["detail"]


def test_candidate_limit_is_422(start_app: Callable[[Settings], AppHarness], make_settings):
    harness = start_app(make_settings(max_candidates=4))
    preferences = [{"winner": f"c{k}", "loser": f"c{k + 1}"} for k in range(5)]
    reply = harness.client.post("/v1/compare", json={"criterion": "coherence", "preferences": preferences})
    assert reply.status_code == 422 and "MAX_CANDIDATES=4" in reply.json()["detail"]
    candidates = [{"id": f"c{k}", "text": "t"} for k in range(21)]
    body = {"criterion": "coherence", "document": "d", "candidates": candidates}
    over = harness.client.post("/v1/compare", json=body)
    assert over.status_code == 422


# ---------------------------------------------------------------------------------------------- settings


def test_settings_from_the_environment(tmp_path: Path):
    env = {
        "THRESHOLDS_PATH": str(tmp_path / "t.json"),
        "JUDGES_FILE": str(tmp_path / "j.json"),
        "DEFAULT_JUDGE": "judge-a",
        "DEFAULT_ALPHA": "0.2",
        "ACCEPT_MAX_SET_SIZE": "1",
        "ESCALATE_MIN_SET_SIZE": "4",
        "API_KEYS": " k1, k2 ,,",
        "ADMIN_API_KEY": "adm",
        "MAX_BODY_BYTES": "4096",
        "MAX_BATCH_ITEMS": "10",
        "REDIS_URL": "redis://localhost:6379/0",
        "LOG_LEVEL": "debug",
        "PORT": "9000",
    }
    settings = Settings.from_env(env)
    assert settings.thresholds_path == tmp_path / "t.json"
    assert settings.judges_file == tmp_path / "j.json"
    assert (settings.default_judge, settings.default_alpha) == ("judge-a", 0.2)
    assert (settings.accept_max_set_size, settings.escalate_min_set_size) == (1, 4)
    assert settings.api_keys == ("k1", "k2") and settings.admin_api_key == "adm"
    assert (settings.max_body_bytes, settings.max_batch_items, settings.port) == (4096, 10, 9000)
    assert settings.log_level == "DEBUG" and settings.redis_url == "redis://localhost:6379/0"


def test_settings_defaults_on_a_fresh_machine():
    settings = Settings.from_env({})
    assert settings.thresholds_path == default_thresholds_path()
    assert settings.thresholds_path.parts[-2:] == ("artifact", "thresholds.json")
    assert settings.judges_file is None and settings.api_keys == () and settings.admin_api_key is None
    assert (settings.default_alpha, settings.accept_max_set_size, settings.escalate_min_set_size) == (0.10, 2, 5)
    assert settings.max_batch_items == HARD_MAX_BATCH_ITEMS and (settings.host, settings.port) == ("127.0.0.1", 8000)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DEFAULT_ALPHA", "1.5"),
        ("DEFAULT_ALPHA", "ten"),
        ("ACCEPT_MAX_SET_SIZE", "5"),
        ("MAX_BATCH_ITEMS", "5000"),
        ("MAX_CANDIDATES", "2"),
        ("PORT", "0"),
        ("LOG_LEVEL", "chatty"),
    ],
)
def test_bad_settings_name_the_variable(name: str, value: str):
    with pytest.raises(SettingsError, match=name):
        Settings.from_env({name: value})


def test_settings_repr_hides_keys():
    settings = Settings(thresholds_path=Path("t.json"), api_keys=("very-secret",), admin_api_key="admin-secret")
    assert "very-secret" not in repr(settings) and "admin-secret" not in repr(settings)


def test_curl_example_targets_the_configured_address():
    example = curl_example(Settings(thresholds_path=Path("t.json"), port=8123))
    assert example.startswith("curl -s -X POST http://127.0.0.1:8123/v1/score")
    assert "judge_score" in example and "Authorization" not in example
    keyed = curl_example(Settings(thresholds_path=Path("t.json"), api_keys=("k",)))
    assert "Authorization: Bearer $API_KEY" in keyed


def test_settings_repr_hides_the_redis_password():
    settings = Settings(thresholds_path=Path("t.json"), redis_url="redis://user:hunter2@cache:6379/0")
    assert "hunter2" not in repr(settings) and "redis://user:***@cache:6379/0" in repr(settings)
