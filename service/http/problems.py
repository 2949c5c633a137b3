"""The HTTP side of problems: Litestar's own exceptions mapped to RFC 9457 problem objects, on top of
:mod:`service.errors` (every other exception, and the problem types themselves).

====================================== ====== ======================================================
exception                              status problem type (``urn:conformal-judge:problem:<slug>``)
====================================== ====== ======================================================
Litestar ``ValidationException``       422    validation-error, ``errors``: [{message, key, source}]
malformed JSON (``ClientException``)   400    bad-request
``RequestEntityTooLarge``              413    body-too-large
``NotAuthorizedException``             401    unauthorized
other Litestar ``HTTPException``       own    http-<status> (404, 405, ...)
anything else                          ...    as :func:`service.errors.problem_from_exception` (500 when unknown)
====================================== ====== ======================================================
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from litestar.exceptions import ClientException, HTTPException, NotAuthorizedException, ValidationException
from litestar.exceptions.http_exceptions import RequestEntityTooLarge

from service.errors import make_problem, with_instance
from service.errors import problem_from_exception as service_problem_from_exception
from service.wire.schemas import Problem, ProblemError

__all__ = ["PROBLEM_MEDIA_TYPE", "problem_from_exception"]

PROBLEM_MEDIA_TYPE = "application/problem+json"


def _validation_errors(extra: Any) -> list[ProblemError]:
    items = extra if isinstance(extra, list) else [extra] if extra else []
    errors: list[ProblemError] = []
    for item in items:
        if isinstance(item, dict):
            errors.append(
                ProblemError(
                    message=str(item.get("message", "")),
                    key=None if item.get("key") is None else str(item["key"]),
                    source=None if item.get("source") is None else str(item["source"]),
                )
            )
        else:
            errors.append(ProblemError(message=str(item)))
    return errors


def _litestar_problem(exc: BaseException) -> tuple[Problem, dict[str, str]] | None:
    """The problem and extra headers for one of Litestar's exceptions (module table); None for any other."""
    if isinstance(exc, ValidationException):
        found = _validation_errors(exc.extra)
        detail = "; ".join(f"{e.key}: {e.message}" if e.key else e.message for e in found) or str(exc.detail)
        return make_problem(422, "validation-error", "Request validation failed", detail, errors=found), {}
    if isinstance(exc, RequestEntityTooLarge):
        detail = "the request body exceeds MAX_BODY_BYTES"
        return make_problem(413, "body-too-large", "Request body too large", detail), {}
    if isinstance(exc, NotAuthorizedException):
        return make_problem(401, "unauthorized", "Unauthorized", str(exc.detail)), {}
    if isinstance(exc, ClientException) and exc.status_code == 400:
        return make_problem(400, "bad-request", "Bad request", str(exc.detail)), {}
    if isinstance(exc, HTTPException):
        status = exc.status_code
        problem = make_problem(status, f"http-{status}", HTTPStatus(status).phrase, str(exc.detail))
        return problem, dict(exc.headers or {})
    return None


def problem_from_exception(exc: BaseException, *, instance: str | None = None) -> tuple[Problem, dict[str, str]]:
    """The problem object and extra response headers for an exception (this module's table, then service.errors')."""
    found = _litestar_problem(exc)
    if found is None:
        return service_problem_from_exception(exc, instance=instance)
    problem, headers = found
    return with_instance(problem, instance), headers
