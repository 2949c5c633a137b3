"""Request bodies (issue 13, defects 2 and 9): nesting never reaches a 500, JSON only (415), strict types that
are the same in /v1/score and in a batch item, and the duplicate-key rule (last wins) the same everywhere."""

from __future__ import annotations

import json

import pytest

from service.http.body import is_json_media_type
from tests.service.conftest import STAND_IN, AppHarness

VERDICT = {"criterion": "relevance", "judge": STAND_IN, "judge_score": 3}
JSON = {"Content-Type": "application/json"}


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("path", ["/v1/score", "/v1/score/batch", "/v1/compare"])
@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_deeply_nested_field_is_a_4xx_problem(app: AppHarness, path: str, depth: int):
    body = '{"criterion":"relevance","judge":' + _deep(depth) + "}"
    reply = app.client.post(path, content=body, headers=JSON)
    assert reply.status_code in (400, 422), reply.text[:200]
    assert reply.headers["content-type"].startswith("application/problem+json")


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_deeply_nested_batch_item_is_400_and_logs_no_traceback(app: AppHarness, depth: int):
    reply = app.client.post("/v1/score/batch", content='{"items":[' + _deep(depth) + "]}", headers=JSON)
    assert reply.status_code == 400
    assert "nested too deeply" in reply.json()["detail"]
    assert not [line for line in app.log_lines() if "exception" in line or line.get("level") == "error"]


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"])
@pytest.mark.parametrize("path", ["/v1/score", "/v1/score/batch", "/v1/compare"])
def test_a_body_not_declared_json_is_415(app: AppHarness, path: str, content_type: str):
    body = {"/v1/score": VERDICT, "/v1/score/batch": {"items": [VERDICT]}}.get(path, {"criterion": "coherence"})
    reply = app.client.post(path, content=json.dumps(body), headers={"Content-Type": content_type})
    assert reply.status_code == 415
    assert reply.json()["type"].endswith("unsupported-media-type")


def test_json_media_types():
    assert is_json_media_type("application/json")
    assert is_json_media_type("Application/JSON; charset=utf-8")
    assert is_json_media_type("application/merge-patch+json")
    assert not is_json_media_type(None)
    assert not is_json_media_type("text/plain")
    assert not is_json_media_type("text/json")


@pytest.mark.parametrize(("field", "value"), [("judge_score", "4"), ("alpha", "0.1"), ("judge_score", 4.5)])
def test_types_are_strict_and_identical_in_score_and_batch(app: AppHarness, field: str, value: object):
    body = {**VERDICT, field: value}
    single = app.client.post("/v1/score", json=body)
    assert single.status_code == 422 and field in single.json()["detail"]
    batch = app.client.post("/v1/score/batch", json={"items": [body]}).json()
    item_error = batch["results"][0]["error"]
    assert item_error["status"] == 422 and item_error["detail"] == single.json()["detail"]


def test_duplicate_keys_last_wins_everywhere(app: AppHarness):
    raw = '{"criterion":"relevance","judge":"' + STAND_IN + '","judge_score":1,"judge_score":5}'
    single = app.client.post("/v1/score", content=raw, headers=JSON).json()
    batch = app.client.post("/v1/score/batch", content='{"items":[' + raw + "]}", headers=JSON).json()
    assert single["judge_score"] == 5
    assert batch["results"][0]["result"]["judge_score"] == 5


def test_a_self_comparison_is_no_longer_a_calibration_problem(app: AppHarness):
    # was a 422 titled "Calibration rejected the input"; now the pair is left out and listed (service.comparing.compare)
    prefs = [{"winner": "a", "loser": "a"}, {"winner": "a", "loser": "b"}, {"winner": "b", "loser": "c"}]
    data = app.client.post("/v1/compare", json={"criterion": "coherence", "preferences": prefs}).json()
    assert data["ignored_preferences"] == [
        {"index": 0, "reason": "a self-comparison: candidate 'a' against itself is no edge"}
    ]
    assert data["n_verdicts"] == 2


def test_an_integral_float_is_its_integer_everywhere(app: AppHarness):
    # JSON (and JSON Schema's "integer") reads 4.0 as the integer 4; 4.5 where an integer belongs stays a 422
    body = {"criterion": "relevance", "judge": STAND_IN, "judge_score": 4.0, "n_questions": 3.0}
    single = app.client.post("/v1/score", json=body)
    assert single.status_code == 200, single.text
    batch = app.client.post("/v1/score/batch", json={"items": [body, {**body, "judge_score": 4.5}]}).json()
    assert batch["results"][0]["result"] == single.json()
    assert batch["results"][1]["error"]["status"] == 422
    refused = app.client.post("/v1/score", json={**body, "judge_score": 4.5})
    assert refused.status_code == 422 and "judge_score" in refused.json()["detail"]
    compare = app.client.post("/v1/compare", json={"preferences": [{"winner": "a", "loser": "b"}], "repetitions": 2.0})
    assert compare.status_code == 200, compare.text


@pytest.mark.parametrize("path", ["/v1/score", "/v1/score/batch", "/v1/compare"])
@pytest.mark.parametrize("headers", [JSON, {}])
def test_an_empty_body_is_a_400_that_says_so(app: AppHarness, path: str, headers: dict[str, str]):
    """Issue 22, D21: not Litestar's "data: 'data'" (the missing handler argument)."""
    reply = app.client.post(path, content=b"", headers=headers)
    assert reply.status_code == 400, reply.text
    problem = reply.json()
    assert problem["detail"].startswith("the request body is empty: send a JSON object"), problem
    assert "'data'" not in reply.text and problem["type"].endswith(":bad-request")


def test_a_route_whose_body_is_optional_still_takes_an_empty_one(start_app, make_settings):
    harness = start_app(make_settings(admin_api_key="admin-key"))
    reply = harness.client.post("/v1/calibration/reload", content=b"", headers={"Authorization": "Bearer admin-key"})
    assert reply.status_code == 200, reply.text
