"""When to send a request again: 429 and 503 after their Retry-After, lost connections of idempotent calls.

Bounded twice: at most ``max_attempts`` sends and at most ``max_total_s`` seconds from the first send (a
Retry-After that would pass that bound is not waited for; the error is raised at once, carrying it).
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import httpx

from .errors import TransportError
from .transport import HttpRequest, Plan, Sleep

__all__ = ["RetryPolicy", "parse_retry_after", "send"]


@dataclass(frozen=True)
class RetryPolicy:
    """Bounds and pacing of retries; ``RetryPolicy(max_attempts=1)`` never retries."""

    max_attempts: int = 4
    max_total_s: float = 60.0
    backoff_s: float = 0.5  # the first wait without a Retry-After; doubled each attempt (full jitter)
    max_backoff_s: float = 8.0
    statuses: tuple[int, ...] = (429, 503)

    def backoff(self, attempt: int) -> float:
        """A jittered exponential wait after ``attempt`` failed sends."""
        return random.uniform(0, min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1)))


def parse_retry_after(value: str | None, now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date); None when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now()).total_seconds())


def _retriable_error(error: httpx.TransportError, request: HttpRequest) -> bool:
    # A connection never made carried no request, so any call may try again; a lost one only if idempotent.
    return request.idempotent or isinstance(error, httpx.ConnectError | httpx.ConnectTimeout)


def send(
    request: HttpRequest, policy: RetryPolicy, clock: Callable[[], float] = time.monotonic
) -> Plan[httpx.Response]:
    """Send ``request``, retrying as the policy allows; the final response (any status) or ``TransportError``."""
    started = clock()
    attempt = 1
    while True:
        outcome = yield request
        elapsed = clock() - started
        if isinstance(outcome, httpx.TransportError):
            if attempt >= policy.max_attempts or not _retriable_error(outcome, request):
                raise TransportError(f"{request.method} {request.path}: {outcome!r} (attempt {attempt})") from outcome
            delay = policy.backoff(attempt)
        else:
            assert isinstance(outcome, httpx.Response)
            if outcome.status_code not in policy.statuses or outcome.status_code in request.answers:
                return outcome
            if attempt >= policy.max_attempts:
                return outcome
            hinted = parse_retry_after(outcome.headers.get("retry-after"))
            delay = hinted if hinted is not None else policy.backoff(attempt)
        if elapsed + delay > policy.max_total_s:
            if isinstance(outcome, httpx.TransportError):
                raise TransportError(f"{request.method} {request.path}: {outcome!r} (retry budget spent)") from outcome
            return outcome
        yield Sleep(delay)
        attempt += 1
