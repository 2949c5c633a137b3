"""Per-judge circuit breakers: the state machine on a fake clock, and through the judge pool on the stand-in:
only provider faults count, and after the cool-down callers wait for the probe instead of failing 503."""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgspec
import pytest

from judges.errors import JudgeCallError, JudgeReplyError, JudgeReplyTooLarge
from service.config.jobs import JobSettings
from service.config.settings import Settings
from service.errors import JudgeCircuitOpenError
from service.http.problems import problem_from_exception
from service.judging.breaker import CircuitBreaker, CircuitBreakers, is_provider_fault
from service.judging.pool import JudgePool
from service.observability.logging import make_logs
from service.observability.metrics import ServiceMetrics
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


# -- what counts, and the half-open wait (issue 22, D6) -----------------------------------------------------


def _pool(judge_server: JudgeServer, tmp_path: Path, artifact_path: Path, **jobs: float) -> JudgePool:
    judges_file = tmp_path / "judges.json"
    judges_file.write_bytes(msgspec.json.encode([judge_server.judge_config(name="stand-in", max_retries=0)]))
    settings = Settings(
        thresholds_path=artifact_path,
        judges_file=judges_file,
        jobs=JobSettings(**jobs),  # type: ignore[arg-type]
        breaker_probe_wait_s=10.0,
    )
    return JudgePool(settings, ServiceMetrics(), make_logs("ERROR").logger)


def test_provider_faults_are_timeouts_connection_failures_408_429_and_5xx() -> None:
    assert is_provider_fault(JudgeCallError("x", judge="j", status=None))  # timed out / connection failed
    for status in (408, 429, 500, 502, 503, 504):
        assert is_provider_fault(JudgeCallError("x", judge="j", status=status))
    for status in (400, 401, 403, 404, 409, 413, 422):
        assert not is_provider_fault(JudgeCallError("x", judge="j", status=status))
    assert not is_provider_fault(JudgeReplyError("x", judge="j", raw_reply="", reason="no_score_statement"))
    assert not is_provider_fault(JudgeReplyTooLarge("x", judge="j", max_bytes=1024))
    assert not is_provider_fault(RuntimeError("a bug"))


def test_one_callers_bad_input_and_unreadable_replies_never_open_the_breaker(
    judge_server: JudgeServer, tmp_path: Path, artifact_path: Path
) -> None:
    """A 400 "context too long" for one caller's long documents, replies that are not chat completions, replies
    without a score and oversized replies are the provider answering: the breaker stays closed for everyone
    (every exception used to count, and 3 of them opened it)."""
    judge_server.bad_request_marker = "VERY-LONG-DOCUMENT"

    async def main() -> None:
        pool = _pool(judge_server, tmp_path, artifact_path, breaker_failures=3, breaker_cooldown_s=30)
        await pool.start()
        try:
            for n in range(10):
                with pytest.raises(JudgeCallError) as caught:
                    await pool.direct("stand-in", "coherence", f"VERY-LONG-DOCUMENT {n}", "sum")
                assert caught.value.status == 400
            judge_server.inject("garbage_reply", times=3)
            judge_server.inject("no_score", times=6)  # three verdicts: each ask and its format retry
            judge_server.inject("huge_reply", times=3, size_bytes=1_000_000)
            for n in range(9):
                with pytest.raises(JudgeReplyError):
                    await pool.direct("stand-in", "coherence", f"doc {n}", "sum")
            assert pool.breakers.states() == {"stand-in": "closed"}
            answer = await pool.direct("stand-in", "coherence", "another caller's doc", "sum")
            assert answer.value.judge_score == 4
        finally:
            await pool.aclose()

    asyncio.run(main())


def test_after_the_cool_down_callers_wait_for_the_probe_and_all_succeed(
    judge_server: JudgeServer, tmp_path: Path, artifact_path: Path
) -> None:
    """An outage opens the breaker; once the judge is back and the cool-down is over, a burst of 30 calls
    gets 30 verdicts: one is the probe, the others wait for its success (they used to fail 503 at once)."""

    async def main() -> list[object]:
        pool = _pool(judge_server, tmp_path, artifact_path, breaker_failures=2, breaker_cooldown_s=0.3)
        await pool.start()
        try:
            judge_server.outage = "unavailable_503"
            for n in range(2):
                with pytest.raises(JudgeCallError):
                    await pool.direct("stand-in", "coherence", f"outage {n}", "sum")
            with pytest.raises(JudgeCircuitOpenError):
                await pool.direct("stand-in", "coherence", "outage 9", "sum")
            judge_server.outage = None  # recovery
            judge_server.latency_s = 0.3  # the probe is in flight while the others arrive
            await asyncio.sleep(0.35)
            calls = [pool.direct("stand-in", "coherence", f"after {n}", "sum") for n in range(30)]
            return await asyncio.gather(*calls, return_exceptions=True)
        finally:
            await pool.aclose()

    outcomes = asyncio.run(main())
    errors = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
    assert errors == []
    assert all(outcome.value.judge_score == 4 for outcome in outcomes)  # type: ignore[union-attr]


def test_when_the_probe_fails_its_waiters_fail_fast_without_calling(
    judge_server: JudgeServer, tmp_path: Path, artifact_path: Path
) -> None:
    async def main() -> list[object]:
        pool = _pool(judge_server, tmp_path, artifact_path, breaker_failures=1, breaker_cooldown_s=0.3)
        await pool.start()
        try:
            judge_server.outage = "unavailable_503"
            with pytest.raises(JudgeCallError):
                await pool.direct("stand-in", "coherence", "outage", "sum")
            judge_server.latency_s = 0.2
            await asyncio.sleep(0.35)
            calls = [pool.direct("stand-in", "coherence", f"still down {n}", "sum") for n in range(10)]
            return await asyncio.gather(*calls, return_exceptions=True)
        finally:
            await pool.aclose()

    outcomes = asyncio.run(main())
    assert sum(isinstance(outcome, JudgeCallError) for outcome in outcomes) == 1  # the probe
    assert sum(isinstance(outcome, JudgeCircuitOpenError) for outcome in outcomes) == 9
    assert judge_server.call_count == 2  # the first failure and the probe; the waiters never called


def test_a_waiter_takes_over_an_abandoned_probe() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker("j", failures=1, cooldown_s=10, clock=clock, probe_wait_s=5)
    breaker.record_failure()
    clock.now += 10

    async def main() -> str:
        await breaker.before_call()  # the probe
        waiter = asyncio.create_task(breaker.before_call())
        await asyncio.sleep(0.01)
        assert not waiter.done()  # waiting for the probe's outcome
        breaker.abandon()  # the probe was cancelled: the waiter becomes the probe
        await asyncio.wait_for(waiter, 1)
        third = asyncio.create_task(breaker.before_call())
        await asyncio.sleep(0.01)
        assert not third.done()
        breaker.record_outcome(JudgeCallError("x", judge="j", status=400))  # an answer: closed
        await asyncio.wait_for(third, 1)
        return breaker.state

    assert asyncio.run(main()) == "closed"
