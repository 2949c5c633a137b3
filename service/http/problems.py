"""Every error the service answers, mapped to an RFC 9457 problem object in this one place.

====================================== ====== ======================================================
exception                              status problem type (``urn:conformal-judge:problem:<slug>``)
====================================== ====== ======================================================
``ServiceProblem`` subclasses          own    own slug (invalid-request, judge-not-configured, ...);
                                              ``allowed`` lists accepted values, also in the detail
``calibration.errors.ArtifactError``   422    invalid-artifact (names the file and the problem)
other ``CalibrationError``             422    calibration-error
``msgspec.ValidationError``            422    validation-error (a batch item that does not decode)
Litestar ``ValidationException``       422    validation-error, ``errors``: [{message, key, source}]
``UnknownPromptError``                 422    unknown-prompt
malformed JSON (``ClientException``)   400    bad-request
``RequestEntityTooLarge``              413    body-too-large
other Litestar ``HTTPException``       own    http-<status> (404, 405, ...)
``JudgeCallError``                     502    judge-call-failed
``JudgeReplyError``                    502    judge-reply-unreadable, ``raw_reply`` cut to 300 chars
anything else                          500    internal-error (the detail hides it; it is logged)
====================================== ====== ======================================================

A problem never carries a document, a summary or a key; the judge's raw reply is shortened.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import msgspec
from litestar.exceptions import ClientException, HTTPException, NotAuthorizedException, ValidationException
from litestar.exceptions.http_exceptions import RequestEntityTooLarge

from calibration.errors import ArtifactError, CalibrationError
from judges.errors import JudgeCallError, JudgeReplyError, UnknownPromptError
from service.calibrations.registry import OwnershipConflictError
from service.wire.schemas import Problem, ProblemError

__all__ = [
    "PROBLEM_MEDIA_TYPE",
    "BadRequestError",
    "CalibrationUnavailableError",
    "ConflictError",
    "ForbiddenError",
    "InvalidRequestError",
    "JudgeNotConfiguredError",
    "NotFoundError",
    "ServiceProblem",
    "UnauthorizedError",
    "UnsupportedMediaTypeError",
    "problem_from_exception",
    "shorten",
]

PROBLEM_MEDIA_TYPE = "application/problem+json"
_TYPE_PREFIX = "urn:conformal-judge:problem:"
RAW_REPLY_LIMIT = 300


class ServiceProblem(Exception):
    """A service-level failure with its own status, problem slug and title; the message is the detail."""

    status: int = 500
    slug: str = "internal-error"
    title: str = "Internal server error"

    def __init__(self, detail: str, *, allowed: list[str] | None = None, headers: dict[str, str] | None = None):
        super().__init__(detail)
        self.detail = detail
        self.allowed = allowed
        self.headers = headers or {}


class InvalidRequestError(ServiceProblem):
    """The request is well-formed JSON but asks for something the service cannot do (422)."""

    status = 422
    slug = "invalid-request"
    title = "Invalid request"


class BadRequestError(ServiceProblem):
    """The body is not JSON the service can read: malformed, or nested too deeply (400)."""

    status = 400
    slug = "bad-request"
    title = "Bad request"


class UnsupportedMediaTypeError(ServiceProblem):
    """The body is not declared as JSON (415): only application/json and application/*+json are read."""

    status = 415
    slug = "unsupported-media-type"
    title = "Unsupported media type"


class JudgeNotConfiguredError(ServiceProblem):
    """The request needs a live judge call but no judge is configured (503, says how to configure one)."""

    status = 503
    slug = "judge-not-configured"
    title = "No judge configured"


class CalibrationUnavailableError(ServiceProblem):
    """No thresholds artifact is loaded, so no prediction set can be formed (503)."""

    status = 503
    slug = "calibration-unavailable"
    title = "Calibration not loaded"


class UnauthorizedError(ServiceProblem):
    """No or an unknown bearer key (401, with ``WWW-Authenticate: Bearer``)."""

    status = 401
    slug = "unauthorized"
    title = "Unauthorized"

    def __init__(self, detail: str) -> None:
        super().__init__(detail, headers={"WWW-Authenticate": 'Bearer realm="conformal-judge"'})


class NotFoundError(ServiceProblem):
    """No such resource (404), e.g. an unknown calibration id."""

    status = 404
    slug = "not-found"
    title = "Not found"


class ConflictError(ServiceProblem):
    """The request conflicts with the service's state (409), e.g. a cell owned by another artifact."""

    status = 409
    slug = "conflict"
    title = "Conflict"


class ForbiddenError(ServiceProblem):
    """A valid key without the right to this operation (403)."""

    status = 403
    slug = "forbidden"
    title = "Forbidden"


def shorten(text: str | None, limit: int = RAW_REPLY_LIMIT) -> str | None:
    """The text cut to ``limit`` characters with a marker saying how much was cut; None stays None."""
    if text is None or len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters]"


def _problem(status: int, slug: str, title: str, detail: str, **extra: Any) -> Problem:
    return Problem(type=_TYPE_PREFIX + slug, title=title, status=status, detail=detail, **extra)


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


def problem_from_exception(exc: BaseException, *, instance: str | None = None) -> tuple[Problem, dict[str, str]]:
    """The problem object and extra response headers for an exception (see the module table)."""
    headers: dict[str, str] = {}
    if isinstance(exc, ServiceProblem):
        allowed = list(exc.allowed) if exc.allowed is not None else None
        detail = exc.detail
        if allowed and not all(value in detail for value in allowed):
            detail = f"{detail} (allowed: {', '.join(allowed)})"
        problem = _problem(exc.status, exc.slug, exc.title, detail, allowed=allowed)
        headers.update(exc.headers)
    elif isinstance(exc, OwnershipConflictError):
        problem = _problem(409, "cell-owned", "Cell owned by another artifact", str(exc))
    elif isinstance(exc, ArtifactError):
        problem = _problem(422, "invalid-artifact", "Invalid thresholds artifact", str(exc))
    elif isinstance(exc, CalibrationError):
        # Raised by the statistical core on input it cannot analyse (a self-comparison, a bad order): the input
        # is at fault, not the calibration.
        problem = _problem(422, "calibration-error", "The input cannot be analysed", str(exc))
    elif isinstance(exc, msgspec.ValidationError):
        message = str(exc)
        key, at, _ = message.rpartition(" - at `")
        key = at and message[len(key) + len(at) :].rstrip("`").removeprefix("$.")
        detail = message if key else f"data (the request body): {message}"
        error = ProblemError(message=message, key=key or "data", source="body")
        problem = _problem(422, "validation-error", "Request validation failed", detail, errors=[error])
    elif isinstance(exc, UnknownPromptError):
        problem = _problem(422, "unknown-prompt", "No prompt for this criterion or prompt family", str(exc))
    elif isinstance(exc, JudgeReplyError):
        raw = exc.raw_reply
        problem = _problem(
            502,
            "judge-reply-unreadable",
            "The judge's reply could not be read",
            shorten(str(exc), 500) or "",
            raw_reply=shorten(raw),
        )
    elif isinstance(exc, JudgeCallError):
        problem = _problem(502, "judge-call-failed", "The judge call failed", shorten(str(exc), 500) or "")
    elif isinstance(exc, ValidationException):
        errors = _validation_errors(exc.extra)
        detail = "; ".join(f"{e.key}: {e.message}" if e.key else e.message for e in errors) or str(exc.detail)
        problem = _problem(422, "validation-error", "Request validation failed", detail, errors=errors)
    elif isinstance(exc, RequestEntityTooLarge):
        problem = _problem(413, "body-too-large", "Request body too large", "the request body exceeds MAX_BODY_BYTES")
    elif isinstance(exc, NotAuthorizedException):
        problem = _problem(401, "unauthorized", "Unauthorized", str(exc.detail))
    elif isinstance(exc, ClientException) and exc.status_code == 400:
        problem = _problem(400, "bad-request", "Bad request", str(exc.detail))
    elif isinstance(exc, HTTPException):
        status = exc.status_code
        problem = _problem(status, f"http-{status}", HTTPStatus(status).phrase, str(exc.detail))
        headers.update(exc.headers or {})
    else:
        detail = "an unexpected error occurred; it was logged"
        problem = _problem(500, "internal-error", "Internal server error", detail)
    if instance is not None:
        problem = msgspec.structs.replace(problem, instance=instance)
    return problem, headers
