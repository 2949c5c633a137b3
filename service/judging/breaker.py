"""Per-judge circuit breakers: a judge whose provider keeps failing stops being called for a cool-down.

Rule (one ``CircuitBreaker`` per judge name, clock injected):

* **what counts**: only failures that tell of the provider's health (``is_provider_fault``: a timeout or
  connection failure, HTTP 408, 429 or 5xx once the client's retries are spent). A refusal of one call's own
  input (400 "context too long", 422, ...) or an unreadable / oversized reply proves the provider answered:
  it counts as a success, so one caller's bad input never opens the breaker for all. ``record_outcome``
  applies this rule to a finished call.
* **closed**: calls go through; ``failures`` consecutive provider faults (BREAKER_FAILURES) open it;
  an answer resets the count.
* **open**: ``before_call`` raises ``JudgeCircuitOpenError`` (503, ``Retry-After`` = the cool-down left)
  without calling, so items fail fast instead of burning retries and latency.
* **half-open**: once BREAKER_COOLDOWN_S has passed, exactly one call (the probe) goes through. The others
  WAIT for the probe's outcome, at most BREAKER_PROBE_WAIT_S: an answer closes the breaker and they all go
  through; a provider fault re-opens it for another cool-down and they fail 503; a probe that ends without
  an outcome (cancelled, or an error before any call) hands the probe to one of them. A caller still waiting
  when the bound passes fails 503. So the first batch after an outage is served once the judge is back,
  instead of every item but the probe failing 503.

Updated from one event loop's thread only (the judge pool's), so no lock; the probe's outcome is an
``asyncio.Event`` of that loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Literal

from judges.errors import JudgeCallError, JudgeError
from service.errors import JudgeCircuitOpenError

__all__ = ["CircuitBreaker", "CircuitBreakers", "is_provider_fault"]

State = Literal["closed", "open", "half_open"]


def is_provider_fault(error: BaseException) -> bool:
    """True when ``error`` tells of the provider's health (see the module rule); False for anything else."""
    return isinstance(error, JudgeCallError) and error.provider_fault


class CircuitBreaker:
    """The breaker of one judge (see the module rule)."""

    def __init__(
        self,
        name: str,
        failures: int,
        cooldown_s: float,
        clock: Callable[[], float],
        probe_wait_s: float = 30.0,
    ) -> None:
        self.name = name
        self._threshold = failures
        self._cooldown_s = cooldown_s
        self._clock = clock
        self._probe_wait_s = probe_wait_s
        self._failures = 0
        self._opened_at: float | None = None
        self._probe_done: asyncio.Event | None = None  # set while a probe is in flight

    @property
    def state(self) -> State:
        """closed, open (cooling down) or half_open (cool-down over: a probe is due or in flight)."""
        if self._opened_at is None:
            return "closed"
        return "half_open" if self._clock() - self._opened_at >= self._cooldown_s else "open"

    async def before_call(self) -> None:
        """Let a call through (maybe as the probe), wait for the probe in flight, or raise
        ``JudgeCircuitOpenError`` (open, the probe failed, or its outcome took longer than the wait bound)."""
        waited_until: float | None = None
        while True:
            if self._opened_at is None:
                return
            left = self._cooldown_s - (self._clock() - self._opened_at)
            if left > 0:
                raise self._open_error(left)
            if self._probe_done is None:
                self._probe_done = asyncio.Event()  # this call is the probe
                return
            loop = asyncio.get_running_loop()
            if waited_until is None:
                waited_until = loop.time() + self._probe_wait_s
            remaining = waited_until - loop.time()
            try:
                if remaining <= 0:
                    raise TimeoutError
                await asyncio.wait_for(self._probe_done.wait(), remaining)
            except TimeoutError:
                raise JudgeCircuitOpenError(
                    f"judge {self.name!r} is being probed after failing its last {self._threshold} calls; the "
                    f"probe gave no outcome within {self._probe_wait_s:g} s (BREAKER_PROBE_WAIT_S)",
                    retry_after_s=1.0,
                ) from None

    def _open_error(self, left: float) -> JudgeCircuitOpenError:
        return JudgeCircuitOpenError(
            f"judge {self.name!r} failed its last {self._threshold} calls; it is not called for "
            f"{max(left, 0):.0f} s more (BREAKER_COOLDOWN_S), then one probe call decides",
            retry_after_s=max(left, 1.0),
        )

    def _end_probe(self) -> None:
        """Wake the callers waiting for the probe's outcome (they re-read the state)."""
        probe_done, self._probe_done = self._probe_done, None
        if probe_done is not None:
            probe_done.set()

    def record_success(self) -> None:
        """The provider answered (a verdict, or a refusal of this call's input, or an unreadable reply): close
        the breaker and let the probe's waiters through."""
        self._failures = 0
        self._opened_at = None
        self._end_probe()

    def abandon(self) -> None:
        """A call ended without an outcome (cancelled, or failed before any call): it proves nothing, so the
        probe slot is handed to one of the waiters (or to the next caller)."""
        if self._probe_done is not None and self._opened_at is not None:
            self._end_probe()

    def record_failure(self) -> None:
        """A provider fault: count it; open at the threshold, or re-open when the probe failed."""
        self._failures += 1
        if self._probe_done is not None or self._failures >= self._threshold:
            self._opened_at = self._clock()
            self._end_probe()

    def record_outcome(self, error: BaseException | None) -> None:
        """Record a finished call: None (a verdict) or another judge error (an answer) is a success, a provider
        fault a failure, anything else (cancelled, a bug) no outcome."""
        if error is not None and is_provider_fault(error):
            self.record_failure()
        elif error is None or isinstance(error, JudgeError):
            self.record_success()
        else:
            self.abandon()


class CircuitBreakers:
    """One breaker per judge name, made on first use."""

    def __init__(
        self,
        failures: int,
        cooldown_s: float,
        clock: Callable[[], float] = time.monotonic,
        probe_wait_s: float = 30.0,
    ) -> None:
        self._failures = failures
        self._cooldown_s = cooldown_s
        self._clock = clock
        self._probe_wait_s = probe_wait_s
        self._breakers: dict[str, CircuitBreaker] = {}

    def of(self, name: str) -> CircuitBreaker:
        """The breaker of judge ``name``."""
        breaker = self._breakers.get(name)
        if breaker is None:
            breaker = self._breakers[name] = CircuitBreaker(
                name, self._failures, self._cooldown_s, self._clock, self._probe_wait_s
            )
        return breaker

    def states(self) -> dict[str, State]:
        """Every judge's breaker state (for metrics)."""
        return {name: breaker.state for name, breaker in self._breakers.items()}
