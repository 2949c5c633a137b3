"""The problems the job endpoints, admission control and the judges' circuit breakers answer with.

All are ``ServiceProblem`` subclasses, so ``service.http.problems.problem_from_exception`` maps them (status, slug,
headers such as ``Retry-After``) like every other problem; a per-item error in job results or a batch carries
the same problem object.
"""

from __future__ import annotations

from service.http.problems import ServiceProblem

__all__ = [
    "ENABLE_JOBS_HELP",
    "ChunkAbandonedError",
    "IdempotencyConflictError",
    "JobCancelledError",
    "JobNotFoundError",
    "JobStoreFullError",
    "JobTooLargeError",
    "JobsUnavailableError",
    "JudgeCircuitOpenError",
    "OverloadedError",
    "StoreUnavailableError",
    "store_unavailable",
]

ENABLE_JOBS_HELP = (
    "durable jobs need Redis: set REDIS_URL (for example redis://127.0.0.1:6379/0) for the API and start one "
    "or more workers with `python -m service.worker` (or `make worker`) on the same REDIS_URL; "
    "/v1/score and /v1/score/batch work without it"
)


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
    """The 503 for a Redis-backed route whose Redis call failed with ``error`` (a ``RedisError``/``OSError``)."""
    wait = max(1, int(retry_after_s))
    return StoreUnavailableError(
        f"Redis does not answer ({type(error).__name__}); retry after {wait} s. {ENABLE_JOBS_HELP}",
        retry_after_s=wait,
    )


class JobNotFoundError(ServiceProblem):
    """No job with this id (never created, or removed after JOB_RESULTS_TTL_S) (404)."""

    status = 404
    slug = "job-not-found"
    title = "Job not found"


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
