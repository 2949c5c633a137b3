"""Judge calls (issue 13, defect 7): a timed-out request keeps its concurrency slot until the provider is done,
retry and failure events are JSON lines with the request id, judge and attempt, and no error names the URL."""

from __future__ import annotations

import asyncio
import io
import time

import msgspec
import pytest

from judges.client import JudgeClient
from judges.errors import JudgeCallError
from service.observability.logging import RequestContext, current_request, make_logs
from tests.fakes.judge_server import JudgeServer

DOCUMENT = "Rain closed the harbour road on Monday; ferries ran late and two shops flooded."
SUMMARY = "Heavy rain shut the harbour road and flooded two shops."


def test_timed_out_requests_keep_their_slot_until_the_provider_is_done(judge_server: JudgeServer) -> None:
    for _ in range(6):
        judge_server.inject("hang", hang_s=0.4)  # ends before the transport gives up (DRAIN_FACTOR x 0.15 s)
    config = judge_server.judge_config(max_concurrency=2, timeout_s=0.15, max_retries=2, backoff_base_s=0.0)

    async def main() -> list[object]:
        async with JudgeClient(config) as judge:
            calls = [judge.score("relevance", DOCUMENT, f"{SUMMARY} {k}") for k in range(6)]
            return await asyncio.gather(*calls, return_exceptions=True)

    outcomes = asyncio.run(main())
    assert judge_server.max_in_flight <= 2  # abandoned requests used to pile up at the provider
    assert all(not isinstance(outcome, BaseException) or isinstance(outcome, JudgeCallError) for outcome in outcomes)


def test_a_cancelled_caller_frees_its_slot(judge_server: JudgeServer) -> None:
    judge_server.inject("hang", hang_s=5)
    config = judge_server.judge_config(max_concurrency=1, timeout_s=10, max_retries=0)

    async def main() -> float:
        async with JudgeClient(config) as judge:
            stuck = asyncio.create_task(judge.score("relevance", DOCUMENT, SUMMARY))
            await asyncio.sleep(0.2)
            stuck.cancel()
            started = time.perf_counter()
            await judge.score("relevance", DOCUMENT, SUMMARY)  # gets the slot once the cancelled call is closed
            return time.perf_counter() - started

    assert asyncio.run(main()) < 2


def test_retry_and_failure_events_are_json_with_request_id_judge_and_attempt(judge_server: JudgeServer) -> None:
    judge_server.inject("error_500", times=3)
    stream = io.StringIO()
    logs = make_logs("INFO", stream, access_log="off", flush_interval_s=0)
    config = judge_server.judge_config(max_retries=1, backoff_base_s=0.0)

    async def main() -> None:
        token = current_request.set(RequestContext(request_id="req-judge-1", started=0.0, scope={"path": "/v1/score"}))
        try:
            async with JudgeClient(config, logger=logs.logger) as judge:
                with pytest.raises(JudgeCallError) as caught:
                    await judge.score("relevance", DOCUMENT, SUMMARY)
        finally:
            current_request.reset(token)
        assert config.base_url not in str(caught.value) and "127.0.0.1" not in str(caught.value)
        assert repr(config.name) in str(caught.value)

    asyncio.run(main())
    logs.flush()
    events = [msgspec.json.decode(line) for line in stream.getvalue().splitlines()]
    retry = next(event for event in events if event["event"] == "judge.retry")
    failed = next(event for event in events if event["event"] == "judge.failed")
    for event in (retry, failed):
        assert event["request_id"] == "req-judge-1" and event["judge"] == config.name
    assert retry["attempt"] == 1 and failed["attempt"] == 2 and failed["status"] == 500
