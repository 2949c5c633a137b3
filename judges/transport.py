"""The transport under the judge client's call policy: the concurrency slots (``SlottedPoster``), the reply-size
cap (``reply_cap``, ``CappedStream``, ``ReplyTooLarge``), an unusable 2xx body (``UnusableReply``), a verdict's
time budget (``Deadline``) and the server's requested wait (``retry_after_s``).

* an attempt that passes its time fails (and may be retried) at once, but its concurrency slot stays taken
  until the provider really answers or ``DRAIN_FACTOR`` x ``timeout_s`` have passed since it was sent (then
  the request is cancelled and its connection closed, however slowly the provider keeps dripping bytes):
  the provider never has more than ``max_concurrency`` of our requests in flight;
  a caller that is cancelled cancels its request (the connection closes) and frees the slot when that is done;
* a reply body (of any status) larger than ``max_reply_bytes`` is not read: a declared ``Content-Length`` above
  it is refused at once, any other body is counted while it streams in and the read stops (the connection is
  closed) as soon as the count passes the cap (``ReplyTooLarge``).
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import Awaitable, Callable
from typing import Any, cast

import httpx
import httpx2
import openai
from openai._base_client import get_platform
from openai._httpx2 import request_exceptions, timeout_exceptions
from openai._models import FinalRequestOptions
from openai._utils import asyncify

from judges.config import JudgeConfig

__all__ = [
    "DRAIN_FACTOR",
    "CappedStream",
    "Deadline",
    "ReplyTooLarge",
    "SlottedPoster",
    "UnusableReply",
    "reply_cap",
    "retry_after_s",
]

DRAIN_FACTOR = 4  # a timed-out request keeps its slot until the provider answers, at most this x timeout_s


class UnusableReply(openai.OpenAIError):
    """A 2xx reply whose body is not a chat completion; keeps the body's start as ``raw_reply``."""

    def __init__(self, message: str, content: bytes) -> None:
        super().__init__(message)
        self.raw_reply = content[:1000].decode("utf-8", errors="replace")


class ReplyTooLarge(openai.OpenAIError):
    """A reply body passed the cap. An OpenAIError, so the SDK passes it on as it is (neither wrapped as a
    connection error nor retried)."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(f"reply body larger than {max_bytes} bytes")
        self.max_bytes = max_bytes


class CappedStream(httpx2.AsyncByteStream):
    """A response body that raises ReplyTooLarge as soon as more than ``max_bytes`` have come in; the client
    then closes the response, and with it the connection, without reading the rest."""

    def __init__(self, inner: httpx2.AsyncByteStream, max_bytes: int) -> None:
        self._inner = inner
        self._max_bytes = max_bytes

    async def __aiter__(self) -> Any:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._max_bytes:
                raise ReplyTooLarge(self._max_bytes)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class Deadline:
    """The time budget of one verdict: ``budget_s`` from the moment its first attempt is sent."""

    def __init__(self, budget_s: float) -> None:
        self._budget_s = budget_s
        self._ends_at: float | None = None

    def start(self) -> None:
        """Start the clock (once; later calls keep the first start)."""
        if self._ends_at is None:
            self._ends_at = time.monotonic() + self._budget_s

    def left(self) -> float:
        """Seconds left (the whole budget before the start; may be negative after the end)."""
        return self._budget_s if self._ends_at is None else self._ends_at - time.monotonic()


def retry_after_s(headers: Any) -> float | None:
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


def reply_cap(max_bytes: int) -> Callable[[httpx2.Response], Awaitable[None]]:
    """The response hook that caps a reply body at ``max_bytes`` (for the SDK's aiohttp client)."""

    async def cap(response: httpx2.Response) -> None:
        """Response hook (headers in, body unread): refuse a declared body over the cap, count any other."""
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise ReplyTooLarge(max_bytes)
        # An async client's response: its stream is the async one.
        response.stream = CappedStream(cast(httpx2.AsyncByteStream, response.stream), max_bytes)

    return cap


async def _request_template(
    client: openai.AsyncOpenAI, timeout_s: float
) -> tuple[httpx2.URL, list[tuple[bytes, bytes]], dict[str, Any]]:
    """URL, headers (without the body's length) and extensions (the timeout) of a chat-completion POST, as the
    SDK builds them."""
    if client._platform is None:  # noqa: SLF001 (the SDK reads the platform off the event loop, once)
        client._platform = await asyncify(get_platform)()  # noqa: SLF001
    options = FinalRequestOptions.construct(
        method="post",
        url="/chat/completions",
        content=b"",
        headers={"Content-Type": "application/json"},
        timeout=timeout_s,
    )
    options = await client._prepare_options(options)  # noqa: SLF001
    built = client._build_request(options, retries_taken=0)  # noqa: SLF001
    headers = [(k, v) for k, v in built.headers.raw if k.lower() not in (b"content-length", b"transfer-encoding")]
    return built.url, headers, dict(built.extensions)


class SlottedPoster:
    """POSTs chat-completion bodies through the SDK under one judge's ``max_concurrency`` slots."""

    def __init__(self, openai_client: openai.AsyncOpenAI, config: JudgeConfig) -> None:
        self.config = config
        self._openai = openai_client
        self._semaphore = asyncio.Semaphore(config.max_concurrency)
        self._draining: set[asyncio.Future[Any]] = set()  # timed-out requests still holding their slot
        self._template: tuple[httpx2.URL, list[tuple[bytes, bytes]], dict[str, Any]] | None = None
        self._template_lock = asyncio.Lock()

    async def post(self, body: bytes, deadline: Deadline) -> Any:
        """POST under the concurrency slot; past the attempt's time (what is left of the deadline, at most
        ``attempt_timeout_s``) raise APITimeoutError but keep the slot until the request really ends (answered,
        or cancelled DRAIN_FACTOR x timeout_s after it was sent)."""
        await self._semaphore.acquire()
        deadline.start()
        allowed = deadline.left()
        if self.config.attempt_timeout_s is not None:
            allowed = min(allowed, self.config.attempt_timeout_s)
        if allowed <= 0:  # the slot came after the deadline: no attempt
            self._semaphore.release()
            raise openai.APITimeoutError(request=self._request_for_errors())
        request = asyncio.ensure_future(
            # The outer wait_for is the drain bound: the transport's own timeouts are per read, and a provider
            # dripping one byte at a time never trips them.
            asyncio.wait_for(self._send(body), self.config.timeout_s * DRAIN_FACTOR)
        )
        request.add_done_callback(self._release_slot)
        try:
            return await asyncio.wait_for(asyncio.shield(request), allowed)
        except TimeoutError:
            self._draining.add(request)
            request.add_done_callback(self._draining.discard)
            raise openai.APITimeoutError(request=self._request_for_errors()) from None
        except asyncio.CancelledError:
            request.cancel()  # our caller is gone: close the connection (the provider sees it) and free the slot
            raise

    async def _send(self, body: bytes) -> Any:
        """POST ``body`` through the SDK's HTTP client (its transport, auth hooks, response hooks and error
        types), without its per-call copying of options and building of the request, which cost about half the
        CPU of a call (measured on the batch bench): the request is built by the SDK once per judge and copied
        for each body. The body is encoded, and the reply decoded, by msgspec; the SDK retries nothing
        (``max_retries=0``: the call policy is ours)."""
        client = self._openai
        if not isinstance(client._client, httpx2.AsyncClient):  # noqa: SLF001 (a caller's legacy httpx client)
            return await client.post(
                "/chat/completions",
                cast_to=httpx.Response,
                content=body,
                options={
                    "timeout": self.config.timeout_s * DRAIN_FACTOR,
                    "headers": {"Content-Type": "application/json"},
                },
            )
        if self._template is None:
            async with self._template_lock:  # the first calls of a batch arrive together: build it once
                if self._template is None:
                    self._template = await _request_template(client, self.config.timeout_s * DRAIN_FACTOR)
        url, headers, extensions = self._template
        request = httpx2.Request("POST", url, headers=headers, content=body, extensions=dict(extensions))
        await client._prepare_request(request)  # noqa: SLF001 (the SDK's per-request auth hook)
        try:
            response = await client._send_request(request, stream=False)  # noqa: SLF001
        except timeout_exceptions() as err:
            raise openai.APITimeoutError(request=request) from err
        except openai.OpenAIError:
            raise  # ours (reply too large) or the SDK's own: as the SDK passes them on
        except request_exceptions() as err:
            raise openai.APIConnectionError(request=request) from err
        if response.is_error:
            raise client._make_status_error_from_response(response)  # noqa: SLF001 (the SDK's error types)
        return response

    def _request_for_errors(self) -> httpx2.Request:
        return httpx2.Request("POST", f"{self.config.base_url.rstrip('/')}/chat/completions")

    def _release_slot(self, request: asyncio.Future[Any]) -> None:
        self._semaphore.release()
        if not request.cancelled():
            request.exception()  # retrieved, so a drained request's late failure is not reported as unhandled
