"""Per-judge circuit breakers: a judge that fails every call stops being called for a cool-down.

Rule (one ``CircuitBreaker`` per judge name, clock injected):

* **closed**: calls go through; ``failures`` consecutive failed calls (BREAKER_FAILURES) open it;
  a success resets the count.
* **open**: ``before_call`` raises ``JudgeCircuitOpenError`` (503, ``Retry-After`` = the cool-down left)
  without calling, so items fail fast instead of burning retries and latency.
* **half-open**: once BREAKER_COOLDOWN_S has passed, exactly one call (the probe) goes through; the others
  still fail fast. The probe's success closes the breaker, its failure opens it for another cool-down.

Updated from one event loop's thread only (the judge pool's), so no lock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

from service.jobs.errors import JudgeCircuitOpenError

__all__ = ["CircuitBreaker", "CircuitBreakers"]

State = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    """The breaker of one judge (see the module rule)."""

    def __init__(self, name: str, failures: int, cooldown_s: float, clock: Callable[[], float]) -> None:
        self.name = name
        self._threshold = failures
        self._cooldown_s = cooldown_s
        self._clock = clock
        self._failures = 0
        self._opened_at: float | None = None
        self._probing = False

    @property
    def state(self) -> State:
        """closed, open (cooling down) or half_open (cool-down over: the next call is the probe)."""
        if self._opened_at is None:
            return "closed"
        return "half_open" if self._clock() - self._opened_at >= self._cooldown_s else "open"

    def before_call(self) -> None:
        """Let a call through, or raise ``JudgeCircuitOpenError`` while open or while the probe is out."""
        if self._opened_at is None:
            return
        left = self._cooldown_s - (self._clock() - self._opened_at)
        if left <= 0 and not self._probing:
            self._probing = True
            return
        raise JudgeCircuitOpenError(
            f"judge {self.name!r} failed its last {self._threshold} calls; it is not called for "
            f"{max(left, 0):.0f} s more (BREAKER_COOLDOWN_S), then one probe call decides",
            retry_after_s=max(left, 1.0),
        )

    def record_success(self) -> None:
        """A call succeeded: close the breaker."""
        self._failures = 0
        self._opened_at = None
        self._probing = False

    def abandon(self) -> None:
        """A call was cancelled before it answered: it proves nothing, so a probe slot is given back."""
        self._probing = False

    def record_failure(self) -> None:
        """A call failed: count it; open at the threshold, or re-open when the probe failed."""
        self._failures += 1
        if self._probing or self._failures >= self._threshold:
            self._opened_at = self._clock()
            self._probing = False


class CircuitBreakers:
    """One breaker per judge name, made on first use."""

    def __init__(self, failures: int, cooldown_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._failures = failures
        self._cooldown_s = cooldown_s
        self._clock = clock
        self._breakers: dict[str, CircuitBreaker] = {}

    def of(self, name: str) -> CircuitBreaker:
        """The breaker of judge ``name``."""
        breaker = self._breakers.get(name)
        if breaker is None:
            breaker = self._breakers[name] = CircuitBreaker(name, self._failures, self._cooldown_s, self._clock)
        return breaker

    def states(self) -> dict[str, State]:
        """Every judge's breaker state (for metrics)."""
        return {name: breaker.state for name, breaker in self._breakers.items()}
