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
* each request has ``timeout_s``; timeouts, connection errors and HTTP 408/409/429/5xx are retried up to
  ``max_retries`` times; the wait is the server's ``Retry-After`` (seconds or an HTTP date; or
  ``retry-after-ms``) when given —
  a wait beyond ``max_retry_after_s`` is not waited for, the call fails — and otherwise jittered
  exponential backoff: half of ``min(backoff_max_s, backoff_base_s * 2**attempt)`` plus a uniform draw of
  up to the other half;
* a 400 whose message mentions ``logprobs`` while log-probs were requested makes the client retry once
  without them and never ask this endpoint for them again (the fallback is not counted as a retry);
* other HTTP errors fail at once. Failures raise ``JudgeCallError`` (with ``status``); a reply with no
  readable verdict raises ``JudgeReplyError`` (with ``raw_reply``);
* a request that passes ``timeout_s`` fails (and may be retried) at once, but its concurrency slot stays taken
  until the provider really answers or the transport gives up (``DRAIN_FACTOR`` x ``timeout_s``, then the
  connection is closed): the provider never has more than ``max_concurrency`` of our requests in flight;
  a caller that is cancelled cancels its request (the connection closes) and frees the slot when that is done;
* a reply with no readable score (``score``) or verdict (``prefer``) is asked again once, in the same
  conversation, with a stricter format reminder (``FORMAT_REMINDERS``); this retry is not one of
  ``max_retries`` and is reported through ``on_format_retry`` (the service counts it apart);
* retries, refusals and failures are logged as JSON events (``judge.retry``, ``judge.format_retry``,
  ``judge.failed``, ``judge.logprobs_refused``) with the judge's name and the attempt, through the ``logger``
  given (the service's structlog logger, which adds the request id), else the standard ``logging`` module;
  an error's message names the judge, never its URL.

The API key is read from the environment variable named by ``api_key_env`` and is never logged; without
``api_key_env`` (local endpoints) the placeholder ``"not-needed"`` is sent.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import os
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import httpx
import msgspec
import openai

from service.judge.distribution import TokenLogprobs, score_distribution
from service.judge.errors import JudgeCallError, JudgeConfigError, JudgeReplyError, UnknownPromptError
from service.judge.parse import Preference, parse_preference, parse_score
from service.judge.prompts import PROMPT_FAMILIES, ChatMessage, direct_prompt, pairwise_prompt

__all__ = [
    "Completion",
    "DirectVerdict",
    "JudgeClient",
    "JudgeConfig",
    "NO_KEY_PLACEHOLDER",
    "PreferenceVerdict",
    "TOP_LOGPROBS",
    "load_judge_configs",
]

_log = logging.getLogger(__name__)

NO_KEY_PLACEHOLDER = "not-needed"
TOP_LOGPROBS = 20  # how many alternatives per token to ask for (the OpenAI maximum)
_RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
DRAIN_FACTOR = 4  # a timed-out request keeps its slot until the provider answers, at most this x timeout_s
FORMAT_REMINDERS = {
    "score": (
        "Your reply did not contain a score I could read. Answer again with the score only: "
        "one whole number from 1 to {n_labels}, and nothing else."
    ),
    "prefer": "Your reply did not contain a verdict I could read. Answer again with one letter only: A, B or C.",
}
_LEVELS = {"info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


class JudgeConfig(msgspec.Struct, frozen=True, kw_only=True):
    """How to reach and call one judge; ``name`` is the judge's name in the artifact and the API."""

    name: Annotated[str, msgspec.Meta(min_length=1)]
    model: Annotated[str, msgspec.Meta(min_length=1)]
    base_url: Annotated[str, msgspec.Meta(min_length=1)]
    api_key_env: str | None = None
    prompt_family: str = "paper"
    temperature: Annotated[float, msgspec.Meta(ge=0.0, le=2.0)] = 0.0
    logprobs: bool = True
    max_concurrency: Annotated[int, msgspec.Meta(ge=1)] = 8
    timeout_s: Annotated[float, msgspec.Meta(gt=0.0)] = 30.0
    max_retries: Annotated[int, msgspec.Meta(ge=0)] = 3
    max_tokens: Annotated[int, msgspec.Meta(ge=1)] = 256
    backoff_base_s: Annotated[float, msgspec.Meta(ge=0.0)] = 0.5
    backoff_max_s: Annotated[float, msgspec.Meta(ge=0.0)] = 8.0
    max_retry_after_s: Annotated[float, msgspec.Meta(ge=0.0)] = 60.0


class DirectVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """A judge's 1..5 score of one summary, with its score distribution when log-probs came back."""

    judge_score: int
    probabilities: list[float] | None  # K floats summing to 1 over labels 1..K, or None
    logprobs: dict[str, float | None] | None  # "1".."K" -> log-prob at the score token (None: not in top-k)
    raw_reply: str
    parse_rule: str
    prompt_tokens: int
    completion_tokens: int


class PreferenceVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """A judge's pairwise verdict: "first" / "second" = the summary shown as A / B won, "tie" = equal."""

    outcome: Preference
    raw_reply: str
    prompt_tokens: int
    completion_tokens: int


class Completion(msgspec.Struct, frozen=True, kw_only=True):
    """A raw chat completion: text, per-token log-probs (None unless requested and given) and usage."""

    text: str
    tokens: list[TokenLogprobs] | None
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int


_CONFIG_DECODER = msgspec.json.Decoder(list[JudgeConfig] | dict[str, dict[str, Any]])


def load_judge_configs(path: str | os.PathLike[str]) -> dict[str, JudgeConfig]:
    """Read judge configs from one JSON file (a list, or an object keyed by name) -> {name: config}.

    Raises ``JudgeConfigError`` naming the file and the problem (unreadable, invalid field, unknown
    prompt family, duplicate or mismatched name).
    """
    file = Path(path)
    try:
        data = _CONFIG_DECODER.decode(file.read_bytes())
    except OSError as exc:
        raise JudgeConfigError(f"{file}: cannot read judge configs: {exc.strerror or exc}") from exc
    except msgspec.DecodeError as exc:
        raise JudgeConfigError(f"{file}: invalid judge configs: {exc}") from exc
    if isinstance(data, dict):
        configs = []
        for key, entry in data.items():
            if entry.get("name", key) != key:
                raise JudgeConfigError(f"{file}: entry {key!r} has a different name {entry['name']!r}")
            try:
                configs.append(msgspec.convert({**entry, "name": key}, JudgeConfig))
            except msgspec.ValidationError as exc:
                raise JudgeConfigError(f"{file}: judge {key!r}: {exc}") from exc
    else:
        configs = data
    result: dict[str, JudgeConfig] = {}
    for config in configs:
        if config.name in result:
            raise JudgeConfigError(f"{file}: judge {config.name!r} is configured twice")
        if config.prompt_family not in PROMPT_FAMILIES:
            raise JudgeConfigError(
                f"{file}: judge {config.name!r}: unknown prompt_family {config.prompt_family!r}; "
                f"known: {', '.join(PROMPT_FAMILIES)}"
            )
        result[config.name] = config
    return result


class JudgeClient:
    """Calls one judge by its ``JudgeConfig``; use ``async with`` or ``await aclose()``.

    Raises ``JudgeConfigError`` when ``api_key_env`` names an unset variable and ``UnknownPromptError``
    for an unknown ``prompt_family``. ``http_client`` (caller-owned, not closed here) replaces the
    transport, which is otherwise the SDK's aiohttp client (``openai.DefaultAioHttpClient``, owned and
    closed here); ``seed`` fixes the backoff jitter.
    """

    def __init__(
        self,
        config: JudgeConfig,
        *,
        http_client: httpx.AsyncClient | None = None,
        seed: int | None = None,
        logger: Any = None,
        on_format_retry: Callable[[str], None] | None = None,
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
            http_client = openai.DefaultAioHttpClient(timeout=config.timeout_s)
        self._http = http_client
        self._openai = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=config.base_url,
            timeout=config.timeout_s,
            max_retries=0,
            http_client=http_client,
        )
        self._semaphore = asyncio.Semaphore(config.max_concurrency)
        self._rng = random.Random(seed)
        self._logprobs_refused = False
        self._logger = logger
        self._on_format_retry = on_format_retry
        self._draining: set[asyncio.Future[Any]] = set()  # timed-out requests still holding their slot

    @property
    def http_client(self) -> httpx.AsyncClient | openai.DefaultAioHttpClient:
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
        completion = await self.complete(messages, max_tokens=self.config.max_tokens, logprobs=self.config.logprobs)
        parsed = parse_score(completion.text, n_labels=n_labels)
        if parsed.score is None:  # once more, with the reply and a stricter reminder in the conversation
            completion = await self._ask_again("score", messages, completion.text, parsed.rule, n_labels=n_labels)
            parsed = parse_score(completion.text, n_labels=n_labels)
        if parsed.score is None:
            raise JudgeReplyError(
                f"judge {self.config.name!r}: no score in reply ({parsed.rule})",
                judge=self.config.name,
                raw_reply=completion.text,
                reason=parsed.rule,
            )
        probabilities, logprobs = score_distribution(completion.tokens, completion.text, parsed.position,
                                                     n_labels=n_labels)
        return DirectVerdict(
            judge_score=parsed.score,
            probabilities=probabilities,
            logprobs=logprobs,
            raw_reply=completion.text,
            parse_rule=parsed.rule,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
        )

    async def prefer(self, criterion: str, document: str, first_text: str, second_text: str) -> PreferenceVerdict:
        """Ask which of ``first_text`` (shown as A) and ``second_text`` (shown as B) is better on ``criterion``."""
        messages = pairwise_prompt(
            criterion, document, first_text, second_text, prompt_family=self.config.prompt_family
        )
        completion = await self.complete(messages, max_tokens=self.config.max_tokens)
        outcome = parse_preference(completion.text)
        if outcome is None:  # once more, with the reply and a stricter reminder in the conversation
            completion = await self._ask_again("prefer", messages, completion.text, "no_preference")
            outcome = parse_preference(completion.text)
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
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
        )

    async def _ask_again(
        self, kind: str, messages: Sequence[ChatMessage], reply: str, reason: str, *, n_labels: int = 5
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
        return await self.complete(again, max_tokens=self.config.max_tokens, logprobs=logprobs)

    def _event(self, level: str, event: str, **fields: Any) -> None:
        """A JSON log event with the judge's name: through the given logger, else the logging module."""
        if self._logger is not None:
            getattr(self._logger, level)(event, judge=self.config.name, **fields)
        else:
            record = {"event": event, "judge": self.config.name, **fields}
            _log.log(_LEVELS[level], msgspec.json.encode(record).decode())

    async def _post_holding_slot(self, body: bytes) -> Any:
        """POST under the concurrency slot; past ``timeout_s`` raise APITimeoutError but keep the slot until the
        request really ends (answered, or closed by the transport at DRAIN_FACTOR x timeout_s)."""
        await self._semaphore.acquire()
        request = asyncio.ensure_future(
            # The SDK's transport, auth, base URL and errors, without its per-call rebuilding of typed request
            # and response models: the body is encoded, and the reply decoded, by msgspec.
            self._openai.post(
                "/chat/completions",
                cast_to=httpx.Response,
                content=body,
                options={
                    "timeout": self.config.timeout_s * DRAIN_FACTOR,
                    "headers": {"Content-Type": "application/json"},
                },
            )
        )
        request.add_done_callback(self._release_slot)
        try:
            return await asyncio.wait_for(asyncio.shield(request), self.config.timeout_s)
        except TimeoutError:
            self._draining.add(request)
            request.add_done_callback(self._draining.discard)
            raise openai.APITimeoutError(
                request=httpx.Request("POST", f"{self.config.base_url.rstrip('/')}/chat/completions")
            ) from None
        except asyncio.CancelledError:
            request.cancel()  # our caller is gone: close the connection (the provider sees it) and free the slot
            raise

    def _release_slot(self, request: asyncio.Future[Any]) -> None:
        self._semaphore.release()
        if not request.cancelled():
            request.exception()  # retrieved, so a drained request's late failure is not reported as unhandled

    async def complete(self, messages: Sequence[ChatMessage], *, max_tokens: int, logprobs: bool = False) -> Completion:
        """One chat completion under the call policy; log-probs (top 20 per token) only if asked and allowed."""
        response = await self._create(list(messages), max_tokens=max_tokens, logprobs=logprobs)
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
            tokens=_tokens(choice.logprobs),
            finish_reason=choice.finish_reason,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
        )

    async def _create(self, messages: list[ChatMessage], *, max_tokens: int, logprobs: bool) -> _ChatCompletion:
        want_logprobs = logprobs and not self._logprobs_refused
        attempt = 0
        while True:
            extra: dict[str, Any] = {"logprobs": True, "top_logprobs": TOP_LOGPROBS} if want_logprobs else {}
            try:
                body = _REQUEST_ENCODER.encode(
                    {
                        "model": self.config.model,
                        "messages": messages,
                        "temperature": self.config.temperature,
                        "max_tokens": max_tokens,
                        **extra,
                    }
                )
                raw = await self._post_holding_slot(body)
                return _decode_chat(raw.content)
            except openai.APIStatusError as exc:
                if want_logprobs and exc.status_code == 400 and "logprobs" in str(exc).lower():
                    self._event("info", "judge.logprobs_refused", attempt=attempt + 1)
                    self._logprobs_refused = True
                    want_logprobs = False
                    continue
                if exc.status_code not in _RETRYABLE_STATUS:
                    raise self._call_error(f"HTTP {exc.status_code}", exc.status_code, attempt + 1) from exc
                delay = self._delay(attempt, exc, exc.status_code)
            except openai.APIConnectionError as exc:  # includes APITimeoutError
                delay = self._delay(attempt, exc, None)
            except openai.OpenAIError as exc:
                raise self._call_error(f"unusable response: {exc}", None, attempt + 1) from exc
            attempt += 1
            self._event("warning", "judge.retry", attempt=attempt, next_attempt=attempt + 1, delay_s=round(delay, 3))
            await asyncio.sleep(delay)

    def _delay(self, attempt: int, exc: openai.APIError, status: int | None) -> float:
        """Seconds to wait before the next attempt; raises JudgeCallError when the policy says stop."""
        what = (
            "timed out"
            if isinstance(exc, openai.APITimeoutError)
            else (f"HTTP {status}" if status is not None else "connection failed")
        )
        if attempt >= self.config.max_retries:
            raise self._call_error(what, status, attempt + 1) from exc
        response = getattr(exc, "response", None)
        retry_after = _retry_after_s(response.headers) if response is not None else None
        if retry_after is not None:
            if retry_after > self.config.max_retry_after_s:
                raise self._call_error(
                    f"{what}; Retry-After {retry_after:g} s exceeds {self.config.max_retry_after_s:g} s",
                    status,
                    attempt + 1,
                ) from exc
            return retry_after
        cap = min(self.config.backoff_max_s, self.config.backoff_base_s * 2**attempt)
        return cap / 2 + self._rng.uniform(0.0, cap / 2)

    def _call_error(self, what: str, status: int | None, attempts: int) -> JudgeCallError:
        # Named by the judge only: its base URL is internal deployment detail and never reaches a caller.
        self._event("warning", "judge.failed", attempt=attempts, status=status, error=what)
        return JudgeCallError(
            f"judge {self.config.name!r}: {what} after {attempts} attempt(s)",
            judge=self.config.name,
            status=status,
            attempts=attempts,
        )


def _retry_after_s(headers: Any) -> float | None:
    """The server's requested wait in seconds: ``retry-after-ms``, else ``Retry-After`` (seconds or HTTP date)."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class _TopLogprob(msgspec.Struct):
    token: str
    logprob: float


class _TokenLogprob(msgspec.Struct):
    token: str
    logprob: float
    top_logprobs: list[_TopLogprob] | None = None


class _ChoiceLogprobs(msgspec.Struct):
    content: list[_TokenLogprob] | None = None


class _Message(msgspec.Struct):
    content: str | None = None


class _Choice(msgspec.Struct):
    message: _Message
    finish_reason: str | None = None
    logprobs: _ChoiceLogprobs | None = None


class _Usage(msgspec.Struct):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class _ChatCompletion(msgspec.Struct):
    """The part of an OpenAI chat-completions reply that the judge reads; unknown fields are ignored."""

    choices: list[_Choice]
    usage: _Usage | None = None


_REQUEST_ENCODER = msgspec.json.Encoder()
_CHAT_DECODER = msgspec.json.Decoder(_ChatCompletion)


def _decode_chat(content: bytes) -> _ChatCompletion:
    """Decode a chat-completions body; an unusable body is an openai.APIResponseValidationError-like failure."""
    try:
        return _CHAT_DECODER.decode(content)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise _UnusableReply(f"not a chat-completions reply: {exc}") from exc


class _UnusableReply(openai.OpenAIError):
    """A 2xx reply whose body is not a chat completion (treated like the SDK's validation errors)."""


def _tokens(logprobs: _ChoiceLogprobs | None) -> list[TokenLogprobs] | None:
    content = logprobs.content if logprobs is not None else None
    if not content:
        return None
    return [
        TokenLogprobs(
            token=item.token,
            logprob=item.logprob,
            top_logprobs={alt.token: alt.logprob for alt in (item.top_logprobs or [])},
        )
        for item in content
    ]
