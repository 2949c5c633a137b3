"""Per-judge circuit breakers: the state machine on a fake clock, and through the judge pool on the stand-in."""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgspec
import pytest

from service.breaker import CircuitBreaker, CircuitBreakers
from service.jobs.errors import JudgeCircuitOpenError
from service.jobs.settings import JobSettings
from service.judge.errors import JudgeCallError
from service.judging import JudgePool
from service.logging import make_logs
from service.metrics import ServiceMetrics
from service.problems import problem_from_exception
from service.settings import Settings
from tests.fakes.judge_server import JudgeServer


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def before_call(breaker: CircuitBreaker) -> None:
    """Run the async ``before_call`` to its end (no probe in flight, so it never waits)."""
    asyncio.run(breaker.before_call())


def test_opens_after_consecutive_failures_and_a_success_resets_the_count() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker("j", failures=3, cooldown_s=10, clock=clock)
    for _ in range(2):
        before_call(breaker)
        breaker.record_failure()
    before_call(breaker)
    breaker.record_success()  # the count starts again
    for _ in range(2):
        before_call(breaker)
        breaker.record_failure()
    assert breaker.state == "closed"
    before_call(breaker)
    breaker.record_failure()
    assert breaker.state == "open"
    with pytest.raises(JudgeCircuitOpenError) as raised:
        before_call(breaker)
    problem, headers = problem_from_exception(raised.value)
    assert problem.status == 503 and problem.type.endswith("judge-circuit-open") and headers["Retry-After"] == "10"


def test_half_open_lets_one_probe_through_which_closes_or_reopens() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker("j", failures=1, cooldown_s=10, clock=clock, probe_wait_s=0.05)
    breaker.record_failure()
    clock.now += 9.9
    with pytest.raises(JudgeCircuitOpenError):
        before_call(breaker)
    clock.now += 0.1
    assert breaker.state == "half_open"
    before_call(breaker)  # the probe
    with pytest.raises(JudgeCircuitOpenError, match="BREAKER_PROBE_WAIT_S"):
        before_call(breaker)  # only one probe at a time: the others wait for it, here longer than the bound
    breaker.record_failure()  # the probe failed: open for another cool-down
    assert breaker.state == "open"
    clock.now += 10
    before_call(breaker)
    breaker.abandon()  # a cancelled probe gives its slot back
    before_call(breaker)
    breaker.record_success()
    assert breaker.state == "closed"
    before_call(breaker)
    before_call(breaker)


def test_breakers_are_per_judge() -> None:
    breakers = CircuitBreakers(failures=1, cooldown_s=5, clock=FakeClock())
    breakers.of("a").record_failure()
    before_call(breakers.of("b"))
    assert breakers.states() == {"a": "open", "b": "closed"}


def test_a_failing_judge_trips_its_breaker_and_items_fail_fast_without_calls(
    judge_server: JudgeServer, tmp_path: Path, artifact_path: Path
) -> None:
    judges_file = tmp_path / "judges.json"
    judges_file.write_bytes(msgspec.json.encode([judge_server.judge_config(name="stand-in", max_retries=0)]))
    settings = Settings(
        thresholds_path=artifact_path,
        judges_file=judges_file,
        jobs=JobSettings(breaker_failures=3, breaker_cooldown_s=0.3),
    )

    async def main() -> None:
        pool = JudgePool(settings, ServiceMetrics(), make_logs("ERROR").logger)
        await pool.start()
        try:
            judge_server.inject("error_500", times=3)
            for n in range(3):
                with pytest.raises(JudgeCallError):
                    await pool.direct("stand-in", "coherence", f"doc {n}", "sum")
            calls = judge_server.call_count
            with pytest.raises(JudgeCircuitOpenError):
                await pool.direct("stand-in", "coherence", "doc 9", "sum")
            assert judge_server.call_count == calls  # failed fast: the judge was not asked
            await asyncio.sleep(0.35)
            answer = await pool.direct("stand-in", "coherence", "doc 10", "sum")  # the probe succeeds: closed
            assert answer.value.judge_score == 4 and pool.breakers.states() == {"stand-in": "closed"}
            assert judge_server.call_count == calls + 1
        finally:
            await pool.aclose()

    asyncio.run(main())
