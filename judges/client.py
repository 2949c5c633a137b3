"""The outbound judge client: one ``JudgeClient`` per configured judge, over any OpenAI-compatible endpoint.

=================================================================  ==========================================
call                                                               result
=================================================================  ==========================================
``load_judge_configs("judges.json")``                              ``{"gpt-4o-mini": JudgeConfig(...), ...}``
``async with JudgeClient(config) as judge: ...``                   one ``openai.AsyncOpenAI`` per judge
``judge.http_client``                                              ``DefaultAioHttpClient`` or the caller's
``await judge.score("coherence", document, summary)``              ``DirectVerdict`` (score + distribution)
``await judge.prefer("coherence", document, first, second)``       ``PreferenceVerdict`` (first/second/tie)
``await judge.complete(messages, max_tokens=64, logprobs=True)``   ``Completion`` (text + token log-probs)
=================================================================  ==========================================

Call policy (ours, not the SDK's: the ``AsyncOpenAI`` object gets ``max_retries=0``):

* at most ``max_concurrency`` requests of one client are in flight (an ``asyncio.Semaphore`` per client,
  released while waiting to retry);
* ``timeout_s`` is a deadline over one verdict, not one request: it starts when the verdict's first attempt
  gets its concurrency slot and bounds every attempt, every wait before a retry and the format retry below;
  each attempt gets what is left of it (at most ``attempt_timeout_s`` when that is set, so that a hung attempt
  can be retried within the deadline). Retries never multiply it;
* timeouts, connection errors and HTTP 408/409/429/5xx are retried up to ``max_retries`` times while the
  deadline leaves time for the wait and another attempt; the wait is the server's ``Retry-After`` (seconds or
  an HTTP date; or ``retry-after-ms``) when given —
  a wait beyond ``max_retry_after_s`` (or beyond the deadline) is not waited for, the call fails — and
  otherwise jittered exponential backoff: half of ``min(backoff_max_s, backoff_base_s * 2**attempt)`` plus a
  uniform draw of up to the other half;
* a reply body (of any status) larger than ``max_reply_bytes`` (the service's ``JUDGE_MAX_REPLY_BYTES``) is
  not read: a declared ``Content-Length`` above it is refused at once, any other body is counted while it
  streams in and the read stops (the connection is closed) as soon as the count passes the cap. That raises
  ``JudgeReplyTooLarge`` (a ``JudgeReplyError``; not retried). The cap is enforced on the SDK's aiohttp
  client (the service's); a caller's own ``http_client`` is used as given;
* a 400 whose message mentions ``logprobs`` while log-probs were requested makes the client retry once
  without them and never ask this endpoint for them again (the fallback is not counted as a retry);
* other HTTP errors fail at once. Failures raise ``JudgeCallError`` (with ``status``); a reply with no
  readable verdict, or a 2xx body that is not a chat completion, raises ``JudgeReplyError`` (with
  ``raw_reply``);
* an attempt that passes its time fails (and may be retried) at once, but keeps its concurrency slot until the
  request really ends (``judges.transport``: the drain bound, cancellation);
* a reply with no readable score (``score``) or verdict (``prefer``) is asked again once, in the same
  conversation, with a stricter format reminder (``FORMAT_REMINDERS``); this retry is not one of
  ``max_retries`` and is reported through ``on_format_retry`` (the service counts it apart);
* every verdict carries its token usage (``prompt_tokens`` / ``completion_tokens``, read from the replies'
  ``usage``, a format retry's tokens added) and the ``model`` the reply reported (``reply_model``): the
  service counts them and compares the model with the configured one; ``JudgeConfig.cost_usd`` prices tokens
  when the judge's ``price_in_per_mtok`` / ``price_out_per_mtok`` are set (both or neither);
* retries, refusals and failures are logged as JSON events (``judge.retry``, ``judge.format_retry``,
  ``judge.failed``, ``judge.logprobs_refused``) with the judge's name and the attempt, through the ``logger``
  given (the service's structlog logger, which adds the request id), else the standard ``logging`` module;
  an error's message names the judge, never its URL.

The API key is read from the environment variable named by ``api_key_env`` and is never logged; without
``api_key_env`` (local endpoints) the placeholder ``"not-needed"`` is sent.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
from collections.abc import Callable, Sequence
from typing import Any, cast

import httpx
import httpx2
import msgspec
import openai

from judges.config import DEFAULT_MAX_REPLY_BYTES, NO_KEY_PLACEHOLDER, TOP_LOGPROBS, JudgeConfig
from judges.errors import JudgeCallError, JudgeConfigError, JudgeReplyError, JudgeReplyTooLarge, UnknownPromptError
from judges.parsing.distribution import score_distribution
from judges.parsing.reply import parse_preference, parse_score
from judges.prompts.families import PROMPT_FAMILIES, ChatMessage, direct_prompt, pairwise_prompt
from judges.replies import REQUEST_ENCODER, ChatCompletion, decode_chat, tokens, usage
from judges.results import Completion, DirectVerdict, PreferenceVerdict
from judges.transport import Deadline, ReplyTooLarge, SlottedPoster, UnusableReply, reply_cap, retry_after_s

__all__ = ["JudgeClient"]

_log = logging.getLogger(__name__)

_RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
FORMAT_REMINDERS = {
    "score": (
        "Your reply did not contain a score I could read. Answer again with the score only: "
        "one whole number from 1 to {n_labels}, and nothing else."
    ),
    "prefer": "Your reply did not contain a verdict I could read. Answer again with one letter only: A, B or C.",
}
_LEVELS = {"info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


class JudgeClient:
    """Calls one judge by its ``JudgeConfig``; use ``async with`` or ``await aclose()``.

    Raises ``JudgeConfigError`` when ``api_key_env`` names an unset variable and ``UnknownPromptError``
    for an unknown ``prompt_family``. ``http_client`` (caller-owned, not closed here) replaces the
    transport, which is otherwise the SDK's aiohttp client (``openai.DefaultAioHttpClient``, owned and
    closed here, with the reply cap ``max_reply_bytes``); ``seed`` fixes the backoff jitter.
    """

    def __init__(
        self,
        config: JudgeConfig,
        *,
        http_client: httpx.AsyncClient | httpx2.AsyncClient | None = None,
        seed: int | None = None,
        logger: Any = None,
        on_format_retry: Callable[[str], None] | None = None,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
    ) -> None:
        if config.prompt_family not in PROMPT_FAMILIES:
            raise UnknownPromptError(
                f"judge {config.name!r}: unknown prompt_family {config.prompt_family!r}; "
                f"known: {', '.join(PROMPT_FAMILIES)}"
            )
        api_key = NO_KEY_PLACEHOLDER
        if config.api_key_env is not None:
            api_key = os.environ.get(config.api_key_env, "")
            if not api_key:
                raise JudgeConfigError(f"judge {config.name!r}: environment variable {config.api_key_env} is not set")
        self.config = config
        self._owns_http = http_client is None
        if http_client is None:
            # The SDK's aiohttp transport (C HTTP parser; keeps every idle connection up to its 1,000-connection
            # limit, so all max_concurrency of them stay warm) costs the event loop about a third less CPU per
            # call than the default pure-Python h11/httpcore stack; on a busy loop that CPU is every call's delay.
            # The response hook runs once the headers are in, before the SDK reads the body: it caps the body.
            http_client = openai.DefaultAioHttpClient(
                timeout=config.timeout_s, event_hooks={"response": [reply_cap(max_reply_bytes)]}
            )
        self._http: httpx.AsyncClient | httpx2.AsyncClient = http_client
        self._openai = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=config.base_url,
            timeout=config.timeout_s,
            max_retries=0,
            # The SDK takes a legacy httpx client too (openai._httpx2.is_legacy_httpx_async_client); its
            # annotation names httpx2 only.
            http_client=cast(httpx2.AsyncClient, http_client),
        )
        self._slots = SlottedPoster(self._openai, config)
        self._rng = random.Random(seed)
        self._logprobs_refused = False
        self._logger = logger
        self._on_format_retry = on_format_retry

    @property
    def http_client(self) -> httpx.AsyncClient | httpx2.AsyncClient:
        """The HTTP client carrying this judge's calls: the caller's, else the SDK's aiohttp client."""
        return self._http

    @property
    def logprobs_available(self) -> bool:
        """False once the endpoint refused log-probs (or when the config does not ask for them)."""
        return self.config.logprobs and not self._logprobs_refused

    async def __aenter__(self) -> JudgeClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the underlying HTTP client unless the caller supplied (and so owns) it."""
        if self._owns_http:
            await self._openai.close()

    async def score(self, criterion: str, document: str, summary: str) -> DirectVerdict:
        """Ask for a 1..5 ``criterion`` score of ``summary``; the distribution comes from the score token."""
        messages = direct_prompt(criterion, document, summary, prompt_family=self.config.prompt_family)
        return await self.score_messages(messages, n_labels=5)

    async def score_messages(self, messages: Sequence[ChatMessage], *, n_labels: int) -> DirectVerdict:
        """Ask with ready-made messages (e.g. a configured rubric's) for a 1..n_labels score, as ``score`` does."""
        deadline = Deadline(self.config.timeout_s)  # one verdict: both asks share it
        completion = await self._complete(
            messages, max_tokens=self.config.max_tokens, logprobs=self.config.logprobs, deadline=deadline
        )
        parsed = parse_score(completion.text, n_labels=n_labels)
        first = completion
        if parsed.score is None:  # once more, with the reply and a stricter reminder in the conversation
            completion = await self._ask_again(
                "score", messages, completion.text, parsed.rule, deadline, n_labels=n_labels
            )
            parsed = parse_score(completion.text, n_labels=n_labels)
        prompt_tokens, completion_tokens = usage(first, completion)
        if parsed.score is None:
            raise JudgeReplyError(
                f"judge {self.config.name!r}: no score in reply ({parsed.rule})",
                judge=self.config.name,
                raw_reply=completion.text,
                reason=parsed.rule,
            )
        probabilities, logprobs = score_distribution(
            completion.tokens, completion.text, parsed.position, n_labels=n_labels
        )
        return DirectVerdict(
            judge_score=parsed.score,
            probabilities=probabilities,
            logprobs=logprobs,
            raw_reply=completion.text,
            parse_rule=parsed.rule,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            reply_model=completion.model,
        )

    async def prefer(self, criterion: str, document: str, first_text: str, second_text: str) -> PreferenceVerdict:
        """Ask which of ``first_text`` (shown as A) and ``second_text`` (shown as B) is better on ``criterion``."""
        messages = pairwise_prompt(
            criterion, document, first_text, second_text, prompt_family=self.config.prompt_family
        )
        deadline = Deadline(self.config.timeout_s)  # one verdict: both asks share it
        completion = await self._complete(messages, max_tokens=self.config.max_tokens, deadline=deadline)
        outcome = parse_preference(completion.text)
        first = completion
        if outcome is None:  # once more, with the reply and a stricter reminder in the conversation
            completion = await self._ask_again("prefer", messages, completion.text, "no_preference", deadline)
            outcome = parse_preference(completion.text)
        prompt_tokens, completion_tokens = usage(first, completion)
        if outcome is None:
            raise JudgeReplyError(
                f"judge {self.config.name!r}: no A/B/C verdict in reply",
                judge=self.config.name,
                raw_reply=completion.text,
                reason="no_preference",
            )
        return PreferenceVerdict(
            outcome=outcome,
            raw_reply=completion.text,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            reply_model=completion.model,
        )

    async def _ask_again(
        self,
        kind: str,
        messages: Sequence[ChatMessage],
        reply: str,
        reason: str,
        deadline: Deadline,
        *,
        n_labels: int = 5,
    ) -> Completion:
        """The format retry: the conversation plus the unreadable reply and the reminder for ``kind``."""
        self._event("warning", "judge.format_retry", kind=kind, reason=reason)
        if self._on_format_retry is not None:
            self._on_format_retry(kind)
        again: list[ChatMessage] = [
            *messages,
            {"role": "assistant", "content": reply},
            {"role": "user", "content": FORMAT_REMINDERS[kind].format(n_labels=n_labels)},
        ]
        logprobs = kind == "score" and self.config.logprobs
        return await self._complete(again, max_tokens=self.config.max_tokens, logprobs=logprobs, deadline=deadline)

    def _event(self, level: str, event: str, **fields: Any) -> None:
        """A JSON log event with the judge's name: through the given logger, else the logging module."""
        if self._logger is not None:
            getattr(self._logger, level)(event, judge=self.config.name, **fields)
        else:
            record = {"event": event, "judge": self.config.name, **fields}
            _log.log(_LEVELS[level], msgspec.json.encode(record).decode())

    async def complete(self, messages: Sequence[ChatMessage], *, max_tokens: int, logprobs: bool = False) -> Completion:
        """One chat completion under the call policy (its own ``timeout_s`` deadline); log-probs (top 20 per token)
        only if asked and allowed."""
        return await self._complete(messages, max_tokens=max_tokens, logprobs=logprobs, deadline=None)

    async def _complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int,
        logprobs: bool = False,
        deadline: Deadline | None,
    ) -> Completion:
        if deadline is None:
            deadline = Deadline(self.config.timeout_s)
        response = await self._create(list(messages), max_tokens=max_tokens, logprobs=logprobs, deadline=deadline)
        if not response.choices:
            raise JudgeReplyError(
                f"judge {self.config.name!r}: reply without choices",
                judge=self.config.name,
                raw_reply="",
                reason="no_choices",
            )
        choice = response.choices[0]
        usage = response.usage
        return Completion(
            text=choice.message.content or "",
            tokens=tokens(choice.logprobs),
            finish_reason=choice.finish_reason,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            model=response.model or None,
        )

    async def _create(
        self, messages: list[ChatMessage], *, max_tokens: int, logprobs: bool, deadline: Deadline
    ) -> ChatCompletion:
        want_logprobs = logprobs and not self._logprobs_refused
        attempt = 0
        while True:
            extra: dict[str, Any] = {"logprobs": True, "top_logprobs": TOP_LOGPROBS} if want_logprobs else {}
            try:
                body = REQUEST_ENCODER.encode(
                    {
                        "model": self.config.model,
                        "messages": messages,
                        "temperature": self.config.temperature,
                        "max_tokens": max_tokens,
                        **extra,
                    }
                )
                raw = await self._slots.post(body, deadline)
                return decode_chat(raw.content)
            except ReplyTooLarge as exc:
                self._event("warning", "judge.reply_too_large", attempt=attempt + 1, max_bytes=exc.max_bytes)
                raise JudgeReplyTooLarge(
                    f"judge {self.config.name!r}: reply larger than {exc.max_bytes} bytes (JUDGE_MAX_REPLY_BYTES); "
                    "not read",
                    judge=self.config.name,
                    max_bytes=exc.max_bytes,
                ) from None
            except UnusableReply as exc:
                raise JudgeReplyError(
                    f"judge {self.config.name!r}: reply is not a chat completion",
                    judge=self.config.name,
                    raw_reply=exc.raw_reply,
                    reason="not_a_chat_completion",
                ) from exc
            except openai.APIStatusError as exc:
                if want_logprobs and exc.status_code == 400 and "logprobs" in str(exc).lower():
                    self._event("info", "judge.logprobs_refused", attempt=attempt + 1)
                    self._logprobs_refused = True
                    want_logprobs = False
                    continue
                if exc.status_code not in _RETRYABLE_STATUS:
                    raise self._call_error(f"HTTP {exc.status_code}", exc.status_code, attempt + 1) from exc
                delay = self._delay(attempt, exc, exc.status_code, deadline)
            except openai.APIConnectionError as exc:  # includes APITimeoutError
                delay = self._delay(attempt, exc, None, deadline)
            except openai.OpenAIError as exc:  # another unusable answer: the provider answered, unreadably
                raise JudgeReplyError(
                    f"judge {self.config.name!r}: unusable response: {exc}",
                    judge=self.config.name,
                    raw_reply="",
                    reason="unusable_response",
                ) from exc
            attempt += 1
            self._event("warning", "judge.retry", attempt=attempt, next_attempt=attempt + 1, delay_s=round(delay, 3))
            await asyncio.sleep(delay)

    def _delay(self, attempt: int, exc: openai.APIError, status: int | None, deadline: Deadline) -> float:
        """Seconds to wait before the next attempt; raises JudgeCallError when the policy (or the deadline)
        says stop."""
        what = (
            "timed out"
            if isinstance(exc, openai.APITimeoutError)
            else (f"HTTP {status}" if status is not None else "connection failed")
        )
        if attempt >= self.config.max_retries:
            raise self._call_error(what, status, attempt + 1) from exc
        response = getattr(exc, "response", None)
        retry_after = retry_after_s(response.headers) if response is not None else None
        if retry_after is not None:
            if retry_after > self.config.max_retry_after_s:
                raise self._call_error(
                    f"{what}; Retry-After {retry_after:g} s exceeds {self.config.max_retry_after_s:g} s",
                    status,
                    attempt + 1,
                ) from exc
        else:
            cap = min(self.config.backoff_max_s, self.config.backoff_base_s * 2**attempt)
            retry_after = cap / 2 + self._rng.uniform(0.0, cap / 2)
        if retry_after >= deadline.left():  # no time for the wait and another attempt: fail now, not later
            raise self._call_error(
                f"{what}; no time left for another attempt within timeout_s {self.config.timeout_s:g} s",
                status,
                attempt + 1,
            ) from exc
        return retry_after

    def _call_error(self, what: str, status: int | None, attempts: int) -> JudgeCallError:
        # Named by the judge only: its base URL is internal deployment detail and never reaches a caller.
        self._event("warning", "judge.failed", attempt=attempts, status=status, error=what)
        return JudgeCallError(
            f"judge {self.config.name!r}: {what} after {attempts} attempt(s)",
            judge=self.config.name,
            status=status,
            attempts=attempts,
        )
