"""Requests described once, sent by either httpx client.

Every API operation is a *plan*: a generator that yields steps (an ``HttpRequest`` to send or a ``Sleep``) and
receives each step's outcome (the ``httpx.Response``, the ``httpx.TransportError`` the send raised, or None after
a sleep), and returns the typed answer. Retries, polling and parsing live in the plans; the two drivers here are
the only code that differs between the synchronous and the asynchronous client.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

__all__ = ["USER_AGENT", "HttpRequest", "Outcome", "Plan", "Sleep", "client_headers", "drive_async", "drive_sync"]

USER_AGENT = "conformal-judge-client/0.1.0"

T = TypeVar("T")


@dataclass(frozen=True)
class HttpRequest:
    """One HTTP request of the API, independent of the client that sends it.

    ``idempotent``: sending it twice does what sending it once does, so a lost connection may be retried.
    ``answers``: statuses that are answers of this call, not errors (e.g. 503 of ``/readyz``).
    """

    method: str
    path: str
    params: Mapping[str, Any] | None = None
    json: Any = None
    content: bytes | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    idempotent: bool = False
    answers: tuple[int, ...] = ()


@dataclass(frozen=True)
class Sleep:
    """Wait this many seconds before the next step."""

    seconds: float


Outcome = httpx.Response | httpx.TransportError | None
Plan = Generator[HttpRequest | Sleep, Outcome, T]


def client_headers(api_key: str | None) -> dict[str, str]:
    """The headers of every request: the user agent and, with a key, ``Authorization: Bearer <key>``."""
    headers = {"user-agent": USER_AGENT, "accept": "application/json, application/problem+json"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    return headers


def _build(client: httpx.Client | httpx.AsyncClient, request: HttpRequest) -> httpx.Request:
    return client.build_request(
        request.method,
        request.path,
        params=request.params,
        json=request.json,
        content=request.content,
        headers=dict(request.headers),
    )


def drive_sync(client: httpx.Client, plan: Plan[T]) -> T:
    """Run a plan to its answer with a blocking ``httpx.Client``."""
    outcome: Outcome = None
    try:
        while True:
            step = plan.send(outcome)
            if isinstance(step, Sleep):
                time.sleep(step.seconds)
                outcome = None
                continue
            try:
                outcome = client.send(_build(client, step))
            except httpx.TransportError as error:
                outcome = error
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def drive_async(client: httpx.AsyncClient, plan: Plan[T]) -> T:
    """Run a plan to its answer with an ``httpx.AsyncClient``."""
    outcome: Outcome = None
    try:
        while True:
            step = plan.send(outcome)
            if isinstance(step, Sleep):
                await asyncio.sleep(step.seconds)
                outcome = None
                continue
            try:
                outcome = await client.send(_build(client, step))
            except httpx.TransportError as error:
                outcome = error
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
