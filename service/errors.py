"""Every problem the service answers with, and the exception -> problem table for all but the HTTP framework's own.

A leaf: no web framework, no Redis, nothing of ``service`` but the wire type ``Problem``. The domains raise these
exceptions; the HTTP package (``service.http.problems``) adds the Litestar exceptions on top of
:func:`problem_from_exception`, and the worker records a per-item problem with it directly.

====================================== ====== ======================================================
exception                              status problem type (``urn:conformal-judge:problem:<slug>``)
====================================== ====== ======================================================
``ServiceProblem`` subclasses          own    own slug (invalid-request, judge-not-configured, ...);
                                              ``allowed`` lists accepted values, also in the detail
``OwnershipConflictError``             409    cell-owned (a ``ServiceProblem``: names the cell and both artifacts)
``calibration.errors.ArtifactError``   422    invalid-artifact (names the file and the problem)
other ``CalibrationError``             422    calibration-error
``msgspec.ValidationError``            422    validation-error (a batch item that does not decode)
``UnknownPromptError``                 422    unknown-prompt
``JudgeCallError``                     502    judge-call-failed
``JudgeReplyError``                    502    judge-reply-unreadable, ``raw_reply`` cut to 300 chars
anything else                          500    internal-error (the detail hides it; it is logged)
====================================== ====== ======================================================

A problem never carries a document, a summary or a key; the judge's raw reply is shortened.
"""

from __future__ import annotations

from typing import Any

import msgspec

from calibration.errors import ArtifactError, CalibrationError
from judges.errors import JudgeCallError, JudgeReplyError, UnknownPromptError
from service.wire.common import Problem, ProblemError

__all__ = [
    "ENABLE_JOBS_HELP",
    "ENABLE_MONITORS_HELP",
    "PROBLEM_TYPE_PREFIX",
    "RAW_REPLY_LIMIT",
    "BadRequestError",
    "CalibrationUnavailableError",
    "ChunkAbandonedError",
    "ConflictError",
    "ForbiddenError",
    "IdempotencyConflictError",
    "InvalidRequestError",
    "JobCancelledError",
    "JobNotFinishedError",
    "JobNotFoundError",
    "JobStoreFullError",
    "JobTooLargeError",
    "JobsUnavailableError",
    "JudgeCircuitOpenError",
    "JudgeNotConfiguredError",
    "NotFoundError",
    "OverloadedError",
    "OwnershipConflictError",
    "ServiceProblem",
    "StoreUnavailableError",
    "UnauthorizedError",
    "UnsupportedMediaTypeError",
    "known_problem",
    "make_problem",
    "problem_from_exception",
    "shorten",
    "store_unavailable",
    "with_instance",
]

PROBLEM_TYPE_PREFIX = "urn:conformal-judge:problem:"
RAW_REPLY_LIMIT = 300
ENABLE_JOBS_HELP = (
    "durable jobs need Redis: set REDIS_URL (for example redis://127.0.0.1:6379/0) for the API and start one "
    "or more workers with `python -m service.worker` (or `make worker`) on the same REDIS_URL; "
    "/v1/score and /v1/score/batch work without it"
)
# Feedback and the monitors live in Redis and are updated by the API itself: no worker takes part.
ENABLE_MONITORS_HELP = (
    "feedback and the monitors need Redis: set REDIS_URL (for example redis://127.0.0.1:6379/0) for the API and "
    "restart it (no worker is needed for them); /v1/score and /v1/score/batch work without it"
)


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


# --------------------------------------------------------------------------------------------- requests


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
    """The request needs a live judge call but no judge is configured (422, says how to configure one).

    Not a 503: nothing is temporarily unavailable, so a retry (which clients do on a 503) gets the same answer; the
    request as sent cannot be served here, and the same request carrying its own verdict can."""

    status = 422
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


class OwnershipConflictError(ServiceProblem):
    """An artifact claims a cell another artifact owns (409 ``cell-owned``); the message names the cell and both
    artifacts (raised by ``service.artifacts.registry``)."""

    status = 409
    slug = "cell-owned"
    title = "Cell owned by another artifact"

    def __init__(self, cell: tuple[str, str, str], owner: str, newcomer: str) -> None:
        self.cell, self.owner, self.newcomer = cell, owner, newcomer
        super().__init__(
            f"cell (judge={cell[0]!r}, prompt_family={cell[1]!r}, criterion={cell[2]!r}) is owned by artifact "
            f"{owner!r}; artifact {newcomer!r} may not take it (remove {owner!r} first, or calibrate under "
            "another judge name or prompt family)"
        )


# ------------------------------------------------------------- jobs, admission control, the judges' breakers


class JobsUnavailableError(ServiceProblem):
    """No REDIS_URL, or Redis does not answer: jobs cannot be stored (503, says how to enable them)."""

    status = 503
    slug = "jobs-unavailable"
    title = "Durable jobs are not enabled"


class StoreUnavailableError(JobsUnavailableError):
    """REDIS_URL is set but Redis does not answer (connection refused, reset, timed out): 503 with Retry-After,
    the same ``jobs-unavailable`` type, so a client retries later instead of seeing a 500."""

    title = "Durable jobs are temporarily unavailable"

    def __init__(self, detail: str, *, retry_after_s: int) -> None:
        super().__init__(detail, headers={"Retry-After": str(max(1, int(retry_after_s)))})


def store_unavailable(error: BaseException, retry_after_s: int) -> StoreUnavailableError:
    """The 503 for a Redis-backed route whose Redis call failed with ``error`` (a ``RedisError``/``OSError``): the
    one title, detail and Retry-After of every route while Redis does not answer (jobs, calibration jobs, estimates
    from a job)."""
    wait = max(1, int(retry_after_s))
    return StoreUnavailableError(
        f"Redis does not answer ({type(error).__name__}); retry after {wait} s. Jobs, calibration jobs and their "
        "results are kept there; /v1/score and /v1/score/batch work without it",
        retry_after_s=wait,
    )


class JobNotFoundError(ServiceProblem):
    """No job with this id (never created, or removed after JOB_RESULTS_TTL_S) (404)."""

    status = 404
    slug = "job-not-found"
    title = "Job not found"


class JobNotFinishedError(ServiceProblem):
    """The job's results are not those of its whole run yet (queued, running) or never will be (cancelled) (409)."""

    status = 409
    slug = "job-not-finished"
    title = "Job not finished"


class IdempotencyConflictError(ServiceProblem):
    """The Idempotency-Key was used before with a different body (409)."""

    status = 409
    slug = "idempotency-conflict"
    title = "Idempotency-Key reused with another body"


class JobTooLargeError(ServiceProblem):
    """More items than MAX_JOB_ITEMS, or a body past MAX_JOB_BODY_BYTES (413)."""

    status = 413
    slug = "job-too-large"
    title = "Job too large"


class OverloadedError(ServiceProblem):
    """Admission control refused the work: a bound on queued or in-flight items is reached (429 + Retry-After)."""

    status = 429
    slug = "overloaded"
    title = "Too many items in progress"

    def __init__(self, detail: str, *, retry_after_s: int) -> None:
        super().__init__(detail, headers={"Retry-After": str(int(retry_after_s))})


class MonitorQuotaError(ServiceProblem):
    """A tenant's feedback monitors reached a bound: MONITOR_MAX_PER_TENANT monitors or MONITOR_TENANT_MAX_BYTES of
    kept rows (429, the detail names the limit)."""

    status = 429
    slug = "monitor-quota"
    title = "Monitor quota reached"


class JobStoreFullError(ServiceProblem):
    """Admission control: the jobs kept in Redis hold JOB_STORE_MAX_BYTES already (503 + Retry-After: when the
    earliest kept job expires, at least RETRY_AFTER_S)."""

    status = 503
    slug = "job-store-full"
    title = "Job storage budget reached"

    def __init__(self, detail: str, *, retry_after_s: int) -> None:
        super().__init__(detail, headers={"Retry-After": str(int(retry_after_s))})


class JudgeCircuitOpenError(ServiceProblem):
    """The judge failed its last calls; its breaker is open, so the item fails fast without a call (503)."""

    status = 503
    slug = "judge-circuit-open"
    title = "Judge temporarily unavailable"

    def __init__(self, detail: str, *, retry_after_s: float) -> None:
        super().__init__(detail, headers={"Retry-After": str(max(1, round(retry_after_s)))})


class ChunkAbandonedError(ServiceProblem):
    """A chunk's worker was lost JOB_CHUNK_ATTEMPTS times; its items fail with this instead of vanishing (500)."""

    status = 500
    slug = "chunk-abandoned"
    title = "Item abandoned after repeated worker loss"


class JobCancelledError(ServiceProblem):
    """The job was cancelled before this item was started: it was not judged (409)."""

    status = 409
    slug = "job-cancelled"
    title = "Job cancelled before this item was judged"


# ------------------------------------------------------------------------------------ exception -> problem


def shorten(text: str | None, limit: int = RAW_REPLY_LIMIT) -> str | None:
    """The text cut to ``limit`` characters with a marker saying how much was cut; None stays None."""
    if text is None or len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters]"


def make_problem(status: int, slug: str, title: str, detail: str, **extra: Any) -> Problem:
    """The problem object of type ``urn:conformal-judge:problem:<slug>``."""
    return Problem(type=PROBLEM_TYPE_PREFIX + slug, title=title, status=status, detail=detail, **extra)


def _service_problem(exc: ServiceProblem) -> Problem:
    allowed = list(exc.allowed) if exc.allowed is not None else None
    detail = exc.detail
    if allowed and not all(value in detail for value in allowed):
        detail = f"{detail} (allowed: {', '.join(allowed)})"
    return make_problem(exc.status, exc.slug, exc.title, detail, allowed=allowed)


def _item_validation_problem(exc: msgspec.ValidationError) -> Problem:
    message = str(exc)
    key, at, _ = message.rpartition(" - at `")
    key = at and message[len(key) + len(at) :].rstrip("`").removeprefix("$.")
    detail = message if key else f"data (the request body): {message}"
    error = ProblemError(message=message, key=key or "data", source="body")
    return make_problem(422, "validation-error", "Request validation failed", detail, errors=[error])


def known_problem(exc: BaseException) -> tuple[Problem, dict[str, str]] | None:
    """The problem object and extra response headers for an exception of the module table; None for others."""
    if isinstance(exc, ServiceProblem):
        return _service_problem(exc), dict(exc.headers)
    if isinstance(exc, ArtifactError):
        problem = make_problem(422, "invalid-artifact", "Invalid thresholds artifact", str(exc))
    elif isinstance(exc, CalibrationError):
        # Raised by the statistical core on input it cannot analyse (a self-comparison, a bad order): the input
        # is at fault, not the calibration.
        problem = make_problem(422, "calibration-error", "The input cannot be analysed", str(exc))
    elif isinstance(exc, msgspec.ValidationError):
        problem = _item_validation_problem(exc)
    elif isinstance(exc, UnknownPromptError):
        problem = make_problem(422, "unknown-prompt", "No prompt for this criterion or prompt family", str(exc))
    elif isinstance(exc, JudgeReplyError):
        problem = make_problem(
            502,
            "judge-reply-unreadable",
            "The judge's reply could not be read",
            shorten(str(exc), 500) or "",
            raw_reply=shorten(exc.raw_reply),
        )
    elif isinstance(exc, JudgeCallError):
        problem = make_problem(502, "judge-call-failed", "The judge call failed", shorten(str(exc), 500) or "")
    else:
        return None
    return problem, {}


def with_instance(problem: Problem, instance: str | None) -> Problem:
    """``problem`` with its ``instance`` (the request path) set, when one is given."""
    return problem if instance is None else msgspec.structs.replace(problem, instance=instance)


def problem_from_exception(exc: BaseException, *, instance: str | None = None) -> tuple[Problem, dict[str, str]]:
    """The problem object and extra response headers for an exception (the module table; 500 for any other)."""
    known = known_problem(exc)
    if known is None:
        detail = "an unexpected error occurred; it was logged"
        known = make_problem(500, "internal-error", "Internal server error", detail), {}
    problem, headers = known
    return with_instance(problem, instance), headers
