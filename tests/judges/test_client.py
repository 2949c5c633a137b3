"""The judge client against the judge stand-in over real HTTP (no mocked OpenAI client)."""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import math
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import httpx
import openai
import pytest

import judges as judge_pkg
from judges import client as client_module
from judges import config as config_module
from judges import transport as transport_module
from judges.client import JudgeClient
from judges.config import JudgeConfig, load_judge_configs
from judges.errors import (
    JudgeCallError,
    JudgeConfigError,
    JudgeReplyError,
    JudgeReplyTooLarge,
    UnknownPromptError,
)
from judges.parsing.distribution import TokenLogprobs, score_distribution
from judges.results import DirectVerdict
from tests.fakes.judge_server import NO_SCORE_REPLY, JudgeServer, ScriptedReply, peaked_logprobs

T = TypeVar("T")
DOCUMENT = "Rain closed the harbour road on Monday; ferries ran late and two shops flooded."
SUMMARY = "Heavy rain shut the harbour road and flooded two shops."


def run_with(config: JudgeConfig, call: Callable[[JudgeClient], Awaitable[T]], **kwargs: Any) -> T:
    """Make a client for ``config``, await ``call(client)`` and close the client."""

    async def main() -> T:
        async with JudgeClient(config, **kwargs) as judge:
            return await call(judge)

    return asyncio.run(main())


def score_once(config: JudgeConfig, criterion: str = "coherence") -> Any:
    return run_with(config, lambda judge: judge.score(criterion, DOCUMENT, SUMMARY))


# -- scores and distributions ---------------------------------------------------------------------------


def test_score_and_logprob_distribution(judge_server: JudgeServer) -> None:
    judge_server.default_score = 2
    verdict = score_once(judge_server.judge_config())
    assert verdict.judge_score == 2
    assert verdict.raw_reply == "2" and verdict.parse_rule == "bare"
    expected = peaked_logprobs(2)  # already sums to 1 over "1".."5", so renormalising changes nothing
    assert verdict.probabilities == pytest.approx([math.exp(expected[str(k)]) for k in range(1, 6)])
    assert verdict.logprobs == pytest.approx(expected)
    (request,) = judge_server.requests
    assert request.body["logprobs"] is True and request.body["top_logprobs"] == 20
    assert request.body["model"] == "stand-in-judge" and request.body["temperature"] == 0.0
    assert DOCUMENT in request.prompt_text and SUMMARY in request.prompt_text and "coherence" in request.prompt_text
    assert request.headers["authorization"] == "Bearer not-needed"
    assert verdict.completion_tokens == 1
    assert verdict.prompt_tokens == sum(len(str(m["content"]).split()) for m in request.messages)


def test_distribution_is_taken_at_the_score_the_parser_read(judge_server: JudgeServer) -> None:
    text = "The 2-0 win is covered.\nScore: 4"
    dist = {" 4": math.log(0.3), "4": math.log(0.3), "5": math.log(0.3), "2": math.log(0.1), "x": -0.1}
    judge_server.responder = lambda body: ScriptedReply(text, dist, logprobs_at=text.rindex("4"))
    verdict = score_once(judge_server.judge_config(prompt_family="rts"))
    assert verdict.judge_score == 4 and verdict.parse_rule == "labelled"
    # " 4" and "4" both mean 4; "x" is no label; 1 and 3 are absent -> 0; then renormalised over 1..5.
    assert verdict.probabilities == pytest.approx([0.0, 0.1, 0.0, 0.6, 0.3])
    assert verdict.logprobs is not None
    assert verdict.logprobs["1"] is None and verdict.logprobs["4"] == pytest.approx(math.log(0.6))


def test_no_score_token_among_top_logprobs_gives_no_distribution(judge_server: JudgeServer) -> None:
    judge_server.responder = lambda body: ScriptedReply("Score: four", {"four": 0.0})
    verdict = score_once(judge_server.judge_config(prompt_family="rts"))
    assert verdict.judge_score == 4 and verdict.probabilities is None and verdict.logprobs is None


def test_distribution_rule_without_server() -> None:
    tokens = [
        TokenLogprobs(token="Score", logprob=0.0, top_logprobs={}),
        TokenLogprobs(token=":", logprob=0.0, top_logprobs={}),
        TokenLogprobs(token=" 3", logprob=-0.5, top_logprobs={"2": -1.5}),
    ]
    probabilities, logprobs = score_distribution(tokens, "Score: 3", 7)
    total = math.exp(-1.5) + math.exp(-0.5)  # the token itself counts as a candidate
    assert probabilities == pytest.approx([0.0, math.exp(-1.5) / total, math.exp(-0.5) / total, 0.0, 0.0])
    assert logprobs == {"1": None, "2": -1.5, "3": -0.5, "4": None, "5": None}
    # tokens that do not add up to the text: fall back to the first score-digit token
    assert score_distribution(tokens, "Score:3", 6)[0] is not None
    assert score_distribution(None, "3", 0) == (None, None)


def test_config_without_logprobs_does_not_ask_for_them(judge_server: JudgeServer) -> None:
    verdict = score_once(judge_server.judge_config(logprobs=False))
    assert verdict.judge_score == 4 and verdict.probabilities is None
    assert "logprobs" not in judge_server.requests[0].body


# -- retries, timeouts, refusals --------------------------------------------------------------------------


def test_retry_on_500_then_success(judge_server: JudgeServer) -> None:
    judge_server.inject("error_500", times=2)
    verdict = score_once(judge_server.judge_config(max_retries=2))
    assert verdict.judge_score == 4
    assert judge_server.call_count == 3


def test_500_beyond_retries_raises_call_error_with_status(judge_server: JudgeServer) -> None:
    judge_server.inject("error_500", times=5)
    with pytest.raises(JudgeCallError) as caught:
        score_once(judge_server.judge_config(max_retries=2))
    assert caught.value.status == 500 and caught.value.attempts == 3
    assert judge_server.call_count == 3


def test_backoff_waits_grow(judge_server: JudgeServer) -> None:
    judge_server.inject("error_500", times=2)
    started = time.monotonic()
    score_once(judge_server.judge_config(max_retries=2, backoff_base_s=0.1, backoff_max_s=1.0))
    # equal jitter: attempt 0 waits >= 0.05 s, attempt 1 waits >= 0.1 s
    assert time.monotonic() - started >= 0.15
    first, second, third = (r.received_at for r in judge_server.requests)
    assert second - first >= 0.05 and third - second >= 0.1


@pytest.mark.parametrize("fault", ["rate_limit_429", "unavailable_503"])
def test_retry_after_is_honoured(judge_server: JudgeServer, fault: str) -> None:
    judge_server.inject(fault, retry_after_s=0.2)
    started = time.monotonic()
    verdict = score_once(judge_server.judge_config(max_retries=1, backoff_base_s=0.0, backoff_max_s=0.0))
    assert verdict.judge_score == 4
    assert time.monotonic() - started >= 0.2
    first, second = (r.received_at for r in judge_server.requests)
    assert second - first >= 0.2


def test_retry_after_header_forms() -> None:
    read = transport_module.retry_after_s
    assert read(httpx.Headers({"Retry-After": "0.25"})) == 0.25
    assert read(httpx.Headers({"retry-after-ms": "150", "Retry-After": "9"})) == pytest.approx(0.15)
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= read(httpx.Headers({"Retry-After": later})) <= 31
    assert read(httpx.Headers({"Retry-After": "soon"})) is None
    assert read(httpx.Headers({})) is None


def test_retry_after_beyond_the_limit_fails_at_once(judge_server: JudgeServer) -> None:
    judge_server.inject("rate_limit_429", retry_after_s=30)
    started = time.monotonic()
    with pytest.raises(JudgeCallError, match="Retry-After") as caught:
        score_once(judge_server.judge_config(max_retries=3, max_retry_after_s=1.0))
    assert caught.value.status == 429
    assert judge_server.call_count == 1 and time.monotonic() - started < 5


def test_timeout_s_is_a_deadline_over_all_attempts_not_one_per_attempt(judge_server: JudgeServer) -> None:
    """timeout_s bounds the verdict: a hang uses it up, so no retry starts after it (it used to be per attempt,
    so max_retries=3 made a hung judge cost 4 x timeout_s plus backoff)."""
    judge_server.inject("hang", times=4, hang_s=10)
    started = time.monotonic()
    with pytest.raises(JudgeCallError, match="timed out") as caught:
        score_once(judge_server.judge_config(timeout_s=0.5, max_retries=3))
    elapsed = time.monotonic() - started
    assert caught.value.status is None and caught.value.attempts == 1
    assert judge_server.call_count == 1
    assert 0.5 <= elapsed < 2.0  # the old policy took >= 4 x 0.5 s


def test_attempt_timeout_lets_a_hung_attempt_be_retried_within_the_deadline(judge_server: JudgeServer) -> None:
    judge_server.inject("hang", hang_s=10)
    verdict = score_once(judge_server.judge_config(timeout_s=5.0, attempt_timeout_s=0.3, max_retries=2))
    assert verdict.judge_score == 4 and judge_server.call_count == 2


def test_a_retry_wait_beyond_the_deadline_fails_at_once(judge_server: JudgeServer) -> None:
    """A Retry-After (or backoff) that ends past the deadline is not waited for: the verdict fails now."""
    judge_server.inject("unavailable_503", retry_after_s=1.5)
    started = time.monotonic()
    with pytest.raises(JudgeCallError, match="no time left") as caught:
        score_once(judge_server.judge_config(timeout_s=1.0, max_retries=3))
    assert caught.value.status == 503 and caught.value.attempts == 1
    assert judge_server.call_count == 1 and time.monotonic() - started < 1.0


def test_the_format_retry_shares_the_verdicts_deadline(judge_server: JudgeServer) -> None:
    """The first ask takes 1.2 s of timeout_s 2 s and is unreadable; the format retry (which hangs) gets only
    what is left, so the verdict fails at about 2 s, not 1.2 + 2 s."""
    judge_server.responder = lambda body: NO_SCORE_REPLY
    judge_server.inject("hang", hang_s=1.2)  # then the unreadable reply
    judge_server.inject("hang", hang_s=10)  # the format retry
    started = time.monotonic()
    with pytest.raises(JudgeCallError, match="timed out"):
        score_once(judge_server.judge_config(timeout_s=2.0, max_retries=0))
    assert judge_server.call_count == 2  # the format retry was sent, and cut at the verdict's deadline
    assert time.monotonic() - started < 3.0


# -- oversized, dripping and unreadable replies -------------------------------------------------------------


def test_a_reply_over_the_cap_is_cut_while_it_streams_in(judge_server: JudgeServer) -> None:
    """A chunked 16 MB reply (no Content-Length) that still reads as a score: refused, the read stopped at the
    cap, not retried. It used to be read whole and accepted as a score."""
    size = 16_000_000
    judge_server.inject("huge_reply", size_bytes=size)
    with pytest.raises(JudgeReplyTooLarge) as caught:
        score_once(judge_server.judge_config(max_retries=3))
    assert caught.value.reason == "reply_too_large" and caught.value.max_bytes == config_module.DEFAULT_MAX_REPLY_BYTES
    assert judge_server.call_count == 1  # neither a retry nor a format retry
    judge_server.stop()  # the writer ends, so its count is final
    assert judge_server.reply_bytes_sent < size // 2  # the client closed the connection early (kernel buffers)


def test_a_declared_length_over_the_cap_is_refused_and_the_cap_is_configurable(judge_server: JudgeServer) -> None:
    judge_server.responder = lambda body: "4" + " " * 300_000  # Content-Length about 300 KB: over 256 KiB
    with pytest.raises(JudgeReplyTooLarge, match="larger than 262144 bytes"):
        score_once(judge_server.judge_config())
    judge_server.responder = lambda body: "4" + " " * 5_000  # Content-Length about 6 KB
    with pytest.raises(JudgeReplyTooLarge, match="larger than 4096 bytes"):
        run_with(
            judge_server.judge_config(), lambda judge: judge.score("coherence", DOCUMENT, SUMMARY), max_reply_bytes=4096
        )
    assert score_once(judge_server.judge_config()).judge_score == 4  # under the default cap


def test_a_reply_that_is_not_a_chat_completion_is_an_unreadable_reply(judge_server: JudgeServer) -> None:
    judge_server.inject("garbage_reply")
    with pytest.raises(JudgeReplyError) as caught:
        score_once(judge_server.judge_config(max_retries=3))
    assert caught.value.reason == "not_a_chat_completion" and "502 Bad Gateway" in caught.value.raw_reply
    assert judge_server.call_count == 1


def test_a_dropped_connection_is_a_provider_fault_and_is_retried(judge_server: JudgeServer) -> None:
    judge_server.inject("disconnect", times=2)
    # The SDK's aiohttp transport reports a dropped connection as a connect timeout: either is a provider fault.
    with pytest.raises(JudgeCallError, match="timed out|connection failed") as caught:
        score_once(judge_server.judge_config(max_retries=1))
    assert caught.value.status is None and caught.value.provider_fault and judge_server.call_count == 2
    judge_server.inject("disconnect")
    assert score_once(judge_server.judge_config(max_retries=1)).judge_score == 4


def test_a_slow_drip_is_cut_at_the_deadline_and_its_slot_freed_within_the_drain_bound(
    judge_server: JudgeServer,
) -> None:
    """A reply dripped one byte per 50 ms (about 30 s in all) never trips the transport's per-read timeout; the
    attempt fails at the deadline and the request is cancelled at DRAIN_FACTOR x timeout_s, so the next call
    gets the only slot long before the drip would end."""
    judge_server.inject("slow_drip", drip_s=0.05)
    config = judge_server.judge_config(timeout_s=0.3, max_retries=0, max_concurrency=1)

    async def main() -> int:
        async with JudgeClient(config) as judge:
            with pytest.raises(JudgeCallError, match="timed out"):
                await judge.score("coherence", DOCUMENT, SUMMARY)
            verdict = await judge.score("coherence", DOCUMENT, SUMMARY + " again")  # waits for the slot
            return verdict.judge_score

    assert asyncio.run(main()) == 4
    judge_server.stop()
    full = len(json.dumps(judge_server.requests[0].body))  # the dripped reply is longer than the request's body
    assert judge_server.reply_bytes_sent < min(full, 200)  # cut after about 1.2 s of 50 ms bytes


def test_unreadable_reply_raises_reply_error_with_raw_text(judge_server: JudgeServer) -> None:
    judge_server.inject("no_score", times=2)  # the reply and the one format retry both unreadable
    with pytest.raises(JudgeReplyError) as caught:
        score_once(judge_server.judge_config(max_retries=3))
    assert caught.value.raw_reply == NO_SCORE_REPLY
    assert caught.value.reason == "no_score_statement"
    assert judge_server.call_count == 2  # one format retry, never one of max_retries


def test_an_unreadable_reply_is_asked_once_more_with_a_format_reminder(judge_server: JudgeServer) -> None:
    judge_server.inject("no_score")
    kinds: list[str] = []

    async def main() -> DirectVerdict:
        async with JudgeClient(judge_server.judge_config(), on_format_retry=kinds.append) as judge:
            return await judge.score("relevance", DOCUMENT, SUMMARY)

    verdict = asyncio.run(main())
    assert verdict.judge_score == 4 and kinds == ["score"]
    retry = judge_server.requests[-1].messages
    assert retry[-2] == {"role": "assistant", "content": NO_SCORE_REPLY}
    assert retry[-1]["role"] == "user" and "from 1 to 5" in retry[-1]["content"]
    assert retry[: len(retry) - 2] == judge_server.requests[0].messages


def test_other_4xx_fails_without_retry(judge_server: JudgeServer) -> None:
    judge_server.inject("bad_request_400")
    with pytest.raises(JudgeCallError) as caught:
        score_once(judge_server.judge_config(max_retries=3))
    assert caught.value.status == 400 and judge_server.call_count == 1


def test_logprob_refusal_falls_back_and_is_remembered(judge_server: JudgeServer) -> None:
    judge_server.refuse_logprobs = True

    async def twice(judge: JudgeClient) -> tuple[Any, Any, bool]:
        first = await judge.score("coherence", DOCUMENT, SUMMARY)
        second = await judge.score("relevance", DOCUMENT, SUMMARY)
        return first, second, judge.logprobs_available

    first, second, available = run_with(judge_server.judge_config(max_retries=0), twice)
    assert first.judge_score == second.judge_score == 4
    assert first.probabilities is None and second.probabilities is None
    assert not available
    asked = [r.wants_logprobs for r in judge_server.requests]
    assert asked == [True, False, False]  # refused once, retried without, never asked again


def test_one_off_logprob_refusal_also_falls_back(judge_server: JudgeServer) -> None:
    judge_server.inject("refuse_logprobs")
    verdict = score_once(judge_server.judge_config(max_retries=0))
    assert verdict.judge_score == 4 and verdict.probabilities is None
    assert [r.wants_logprobs for r in judge_server.requests] == [True, False]


# -- concurrency --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("limit", [3, 8])
def test_concurrency_limit_is_respected(judge_server: JudgeServer, limit: int) -> None:
    judge_server.latency_s = 0.1

    async def many(judge: JudgeClient) -> list[Any]:
        return await asyncio.gather(*(judge.score("fluency", DOCUMENT, SUMMARY) for _ in range(3 * limit)))

    verdicts = run_with(judge_server.judge_config(max_concurrency=limit), many)
    assert len(verdicts) == 3 * limit and judge_server.call_count == 3 * limit
    assert judge_server.max_in_flight == limit


# -- pairwise and raw completions ---------------------------------------------------------------------------


def test_prefer_reads_the_verdict_and_shows_first_as_a(judge_server: JudgeServer) -> None:
    judge_server.responder = lambda body: "B: Summary #2 is more coherent."
    verdict = run_with(
        judge_server.judge_config(), lambda judge: judge.prefer("coherence", DOCUMENT, "first text", "second text")
    )
    assert verdict.outcome == "second" and verdict.raw_reply.startswith("B:")
    prompt = judge_server.requests[0].prompt_text
    assert prompt.index("Summary A:\n<<<SUMMARY A>>>\nfirst text") < prompt.index("Summary B:\n<<<SUMMARY B>>>\nsecond")
    assert "logprobs" not in judge_server.requests[0].body


def test_prefer_unreadable_reply(judge_server: JudgeServer) -> None:
    judge_server.responder = lambda body: "Both have merits."
    with pytest.raises(JudgeReplyError) as caught:
        run_with(judge_server.judge_config(), lambda judge: judge.prefer("coherence", DOCUMENT, "x", "y"))
    assert caught.value.raw_reply == "Both have merits."


def test_complete_returns_text_tokens_and_usage(judge_server: JudgeServer) -> None:
    judge_server.responder = lambda body: "Answer: 3 people"
    judge_server.usage = (11, 4)
    messages = [{"role": "user", "content": "How many?"}]
    completion = run_with(
        judge_server.judge_config(), lambda judge: judge.complete(messages, max_tokens=7, logprobs=True)
    )
    assert completion.text == "Answer: 3 people"
    assert (completion.prompt_tokens, completion.completion_tokens) == (11, 4)
    assert completion.tokens is not None and "".join(t.token for t in completion.tokens) == completion.text
    assert judge_server.requests[0].body["max_tokens"] == 7
    assert judge_server.requests[0].messages == messages


# -- transport ------------------------------------------------------------------------------------------------


def test_default_transport_is_the_sdks_aiohttp_client(
    judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a caller's http_client every call goes out through aiohttp, and aclose() closes that client."""
    sent: list[str] = []
    request = aiohttp.ClientSession.request

    def spy(self: aiohttp.ClientSession, method: str, url: Any, **kwargs: Any) -> Any:
        sent.append(f"{method} {url}")
        return request(self, method, url, **kwargs)

    monkeypatch.setattr(aiohttp.ClientSession, "request", spy)

    async def main() -> tuple[list[int], Any]:
        judge = JudgeClient(judge_server.judge_config())
        try:
            verdicts = await asyncio.gather(*(judge.score("coherence", DOCUMENT, f"{SUMMARY} ({i})") for i in range(5)))
        finally:
            await judge.aclose()
        return [verdict.judge_score for verdict in verdicts], judge.http_client

    scores, http = asyncio.run(main())
    assert isinstance(http, openai.DefaultAioHttpClient) and http.is_closed
    assert scores == [4] * 5 and judge_server.call_count == 5
    assert sent == [f"POST {judge_server.base_url}/chat/completions"] * 5


def test_connections_are_kept_alive_for_the_whole_concurrency(judge_server: JudgeServer) -> None:
    """Waves of max_concurrency calls reuse the first wave's connections instead of opening new ones."""
    judge_server.latency_s = 0.05

    async def waves(judge: JudgeClient) -> None:
        for wave in range(3):
            await asyncio.gather(*(judge.score("coherence", DOCUMENT, f"{SUMMARY} ({wave}.{i})") for i in range(8)))

    run_with(judge_server.judge_config(max_concurrency=8), waves)
    assert judge_server.call_count == 24 and judge_server.max_in_flight == 8  # the waves really were 8 wide
    assert judge_server.connection_count == 8


def test_caller_owned_http_client_is_used_and_left_open(judge_server: JudgeServer) -> None:
    async def main() -> tuple[int, bool, bool]:
        async with httpx.AsyncClient() as http:
            async with JudgeClient(judge_server.judge_config(), http_client=http) as judge:
                verdict = await judge.score("relevance", DOCUMENT, SUMMARY)
            return verdict.judge_score, judge.http_client is http, http.is_closed

    assert asyncio.run(main()) == (4, True, False)


# -- keys and configuration ---------------------------------------------------------------------------------


def test_api_key_comes_from_the_named_variable_and_is_not_logged(
    judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("STAND_IN_JUDGE_KEY", "sk-test-secret-123")
    judge_server.inject("error_500")
    with caplog.at_level(logging.DEBUG):
        verdict = score_once(judge_server.judge_config(api_key_env="STAND_IN_JUDGE_KEY", max_retries=1))
    assert verdict.judge_score == 4
    assert judge_server.requests[-1].headers["authorization"] == "Bearer sk-test-secret-123"
    assert caplog.records and "sk-test-secret-123" not in caplog.text


def test_missing_key_variable_is_a_config_error(judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STAND_IN_MISSING_KEY", raising=False)
    with pytest.raises(JudgeConfigError, match="STAND_IN_MISSING_KEY"):
        JudgeClient(judge_server.judge_config(api_key_env="STAND_IN_MISSING_KEY"))


def test_unknown_prompt_family_is_refused(judge_server: JudgeServer) -> None:
    with pytest.raises(UnknownPromptError, match="nope"):
        JudgeClient(judge_server.judge_config(prompt_family="nope"))


ENTRY = {"model": "m", "base_url": "http://127.0.0.1:1/v1"}


def _write(tmp_path: Path, payload: Any) -> Path:
    path = tmp_path / "judges.json"
    path.write_text(payload if isinstance(payload, str) else json.dumps(payload), encoding="utf-8")
    return path


def test_load_configs_from_a_list_and_from_an_object(tmp_path: Path) -> None:
    listed = load_judge_configs(_write(tmp_path, [{"name": "a", **ENTRY}, {"name": "b", **ENTRY, "logprobs": False}]))
    assert list(listed) == ["a", "b"] and listed["b"].logprobs is False and listed["a"].prompt_family == "paper"
    keyed = load_judge_configs(_write(tmp_path, {"a": ENTRY, "b": {**ENTRY, "name": "b", "prompt_family": "rts"}}))
    assert keyed["a"].name == "a" and keyed["b"].prompt_family == "rts"
    assert keyed["a"] == listed["a"]


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ("{not json", "invalid judge configs"),
        ([{"name": "a"}], "model"),
        ([{"name": "a", **ENTRY, "timeout_s": -1}], "timeout_s"),
        ([{"name": "a", **ENTRY, "prompt_family": "fancy"}], "unknown prompt_family 'fancy'"),
        ([{"name": "a", **ENTRY}, {"name": "a", **ENTRY}], "configured twice"),
        ({"a": {**ENTRY, "name": "b"}}, "different name"),
        ({"a": {**ENTRY, "max_concurrency": 0}}, "max_concurrency"),
        ("42", "invalid judge configs"),
    ],
)
def test_config_file_errors_name_the_file_and_the_problem(tmp_path: Path, payload: Any, problem: str) -> None:
    path = _write(tmp_path, payload)
    with pytest.raises(JudgeConfigError) as caught:
        load_judge_configs(path)
    assert str(path) in str(caught.value) and problem in str(caught.value)


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(JudgeConfigError, match="cannot read"):
        load_judge_configs(tmp_path / "absent.json")


# -- package surface -----------------------------------------------------------------------------------------


def test_package_exports_are_sorted_and_complete() -> None:
    exported = judge_pkg.__all__
    assert exported == sorted(exported)
    modules = (
        "client",
        "config",
        "results",
        "errors",
        "parsing.distribution",
        "parsing.reply",
        "parsing.choice",
        "prompts.families",
    )
    public = {name for m in modules for name in __import__(f"judges.{m}", fromlist=["__all__"]).__all__}
    assert set(exported) == public
    assert all(getattr(judge_pkg, name) is not None for name in exported)
    assert client_module.JudgeClient is judge_pkg.JudgeClient
