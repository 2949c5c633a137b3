"""Every error is RFC 9457 problem+json; the exception -> problem tables of ``service.errors`` (the domains' and
the worker's) and ``service.http.problems`` (Litestar's exceptions on top)."""

from __future__ import annotations

import msgspec
import pytest
from litestar.exceptions import MethodNotAllowedException, NotFoundException, ValidationException
from litestar.exceptions.http_exceptions import RequestEntityTooLarge

import service.errors
from calibration.errors import ArtifactError, InvalidAlphaError, UnknownCandidateError
from judges.errors import JudgeCallError, JudgeReplyError, UnknownPromptError
from service.errors import (
    CalibrationUnavailableError,
    ForbiddenError,
    InvalidRequestError,
    JudgeNotConfiguredError,
    OwnershipConflictError,
    UnauthorizedError,
    shorten,
)
from service.http.problems import problem_from_exception
from service.wire.score import ScoreRequest
from tests.service.conftest import AppHarness

PROBLEM_KEYS = {"type", "title", "status", "detail"}


def _assert_problem(reply, status: int) -> dict:
    assert reply.status_code == status, reply.text
    assert reply.headers["content-type"].startswith("application/problem+json")
    problem = reply.json()
    assert PROBLEM_KEYS <= problem.keys() and problem["status"] == status
    assert problem["type"].startswith("urn:conformal-judge:problem:")
    return problem


def test_malformed_json_is_400(app: AppHarness):
    reply = app.client.post("/v1/score", content=b"{not json", headers={"Content-Type": "application/json"})
    _assert_problem(reply, 400)


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ({"criterion": "coherence", "judge_score": 11}, "judge_score"),  # scales go up to 1..10
        ({"criterion": "coherence", "alpha": 0}, "alpha"),
        ({"criterion": "coherence", "alpha": 1.5}, "alpha"),
        ({"criterion": "two words"}, "criterion"),  # a name the calibration lacks is a 422 with allowed
        ({"criterion": "coherence", "judge_logprobs": {"1": 0.5}}, "judge_logprobs"),
        ({"criterion": "coherence", "judge_logprobs": {"11": -1}}, "judge_logprobs"),
        ({"criterion": "coherence", "surprise": 1}, "surprise"),
        ({}, "criterion"),
        ([1, 2], "data"),
    ],
)
def test_validation_errors_are_422_with_errors(app: AppHarness, body, key: str):
    problem = _assert_problem(app.client.post("/v1/score", json=body), 422)
    assert problem["type"].endswith("validation-error")
    assert problem["errors"] and all("message" in error for error in problem["errors"])
    assert key in problem["detail"]
    assert problem["instance"] == "/v1/score"


def test_logprobs_without_any_token_are_422(app: AppHarness):
    body = {"criterion": "coherence", "judge": "stand-in", "judge_logprobs": {}}
    problem = _assert_problem(app.client.post("/v1/score", json=body), 422)
    assert "no token" in problem["detail"]


def test_unknown_route_and_method(app: AppHarness):
    _assert_problem(app.client.get("/v1/nothing"), 404)
    _assert_problem(app.client.get("/v1/score"), 405)


@pytest.mark.parametrize(
    ("exception", "status", "slug"),
    [
        (InvalidRequestError("bad", allowed=["a"]), 422, "invalid-request"),
        (JudgeNotConfiguredError("none"), 422, "judge-not-configured"),
        (CalibrationUnavailableError("none"), 503, "calibration-unavailable"),
        (UnauthorizedError("who"), 401, "unauthorized"),
        (ForbiddenError("no"), 403, "forbidden"),
        (OwnershipConflictError(("j", "p", "c"), "mine", "other"), 409, "cell-owned"),
        (ArtifactError("/x.json: broken"), 422, "invalid-artifact"),
        (InvalidAlphaError("alpha=2"), 422, "calibration-error"),
        (UnknownCandidateError("who is z"), 422, "calibration-error"),
        (UnknownPromptError("prompt?"), 422, "unknown-prompt"),
        (JudgeCallError("down", judge="j", status=500, attempts=3), 502, "judge-call-failed"),
        (JudgeReplyError("unreadable", judge="j", raw_reply="x" * 1000, reason="none"), 502, "judge-reply-unreadable"),
        (
            ValidationException(detail="bad", extra=[{"message": "m", "key": "k", "source": "body"}]),
            422,
            "validation-error",
        ),
        (RequestEntityTooLarge(), 413, "body-too-large"),
        (NotFoundException(), 404, "http-404"),
        (MethodNotAllowedException(), 405, "http-405"),
        (RuntimeError("secret internals"), 500, "internal-error"),
    ],
)
def test_exception_table(exception: Exception, status: int, slug: str):
    problem, _ = problem_from_exception(exception, instance="/here")
    assert (problem.status, problem.type) == (status, f"urn:conformal-judge:problem:{slug}")
    assert problem.instance == "/here"
    assert "secret internals" not in problem.detail


LITESTAR_EXCEPTIONS = (ValidationException, RequestEntityTooLarge, NotFoundException, MethodNotAllowedException)


@pytest.mark.parametrize(
    "exception",
    [
        InvalidRequestError("bad", allowed=["a"]),
        UnauthorizedError("who"),
        OwnershipConflictError(("j", "p", "c"), "mine", "other"),
        ArtifactError("/x.json: broken"),
        JudgeReplyError("unreadable", judge="j", raw_reply="x" * 1000, reason="none"),
        RuntimeError("secret internals"),
        ValidationException(detail="bad"),
        NotFoundException(),
    ],
)
def test_the_http_table_is_the_service_table_plus_litestar(exception: Exception):
    http_problem, http_headers = problem_from_exception(exception, instance="/here")
    problem, headers = service.errors.problem_from_exception(exception, instance="/here")
    if isinstance(exception, LITESTAR_EXCEPTIONS):  # the worker has no Litestar: these are internal errors there
        assert problem.status == 500 and http_problem.status != 500
    else:
        assert msgspec.json.encode(problem) == msgspec.json.encode(http_problem) and headers == http_headers


def test_a_cell_owned_problem_names_the_cell_and_both_artifacts():
    problem, _ = problem_from_exception(OwnershipConflictError(("j", "p", "c"), "mine", "other"))
    assert problem.title == "Cell owned by another artifact"
    assert "judge='j'" in problem.detail and "'mine'" in problem.detail and "'other'" in problem.detail


def test_item_validation_error_maps_to_422():
    with pytest.raises(msgspec.ValidationError) as caught:
        msgspec.convert({"criterion": 5}, ScoreRequest)
    problem, _ = problem_from_exception(caught.value)
    assert problem.status == 422 and problem.errors


def test_raw_reply_is_shortened():
    problem, _ = problem_from_exception(JudgeReplyError("x", judge="j", raw_reply="y" * 5000, reason="r"))
    assert problem.raw_reply is not None and len(problem.raw_reply) < 400
    assert shorten("short") == "short" and shorten(None) is None


def test_unauthorized_carries_www_authenticate():
    _, headers = problem_from_exception(UnauthorizedError("who"))
    assert headers["WWW-Authenticate"].startswith("Bearer")


def test_allowed_values_reach_the_detail():
    problem, _ = problem_from_exception(InvalidRequestError("unknown thing", allowed=["x", "y"]))
    assert problem.allowed == ["x", "y"] and "x, y" in problem.detail


def test_internal_error_in_a_route_is_a_logged_500_problem(app: AppHarness, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("unexpected internals")

    monkeypatch.setattr("service.artifacts.snapshot.CalibrationSnapshot.prediction_set", boom)
    body = {"criterion": "relevance", "judge": "stand-in", "judge_score": 3}
    problem = _assert_problem(app.client.post("/v1/score", json=body), 500)
    assert "unexpected internals" not in problem["detail"]
    failure = next(line for line in app.log_lines() if line["event"] == "request.failed")
    assert failure["level"] == "error" and "unexpected internals" in failure["exception"]
