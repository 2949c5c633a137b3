"""Judge-answer cache as the pool uses it: the key, the cache built per app, and single-flight calls.

Everything here is built per app (in the lifespan) and closed there; nothing lives at module level. The backends
(``MemoryCache``, ``RedisCache``, ``FallbackCache``) implement ``service.caching.cache_contract.JudgeCache``, each in
its own module; the Redis outage rules are stated in ``service.caching.fallback_cache``.

| call                                              | what it does                                              |
|---------------------------------------------------|-----------------------------------------------------------|
| ``cache_key(model, messages, parameters)``        | ``"cj:judge:v1:" + sha256(canonical JSON)``               |
| ``cache = make_cache(url, max_entries=..., ...)`` | Redis with LRU fallback, or LRU only when ``url`` is None |
| ``await cache.get(key)``                          | ``bytes`` or ``None``; never raises for a Redis outage    |
| ``await cache.set(key, value, ttl_s)``            | stores bytes, ``ttl_s`` seconds (``None`` = no expiry)    |
| ``cache.status()``                                | ``CacheStatus`` snapshot, no I/O                          |
| ``await cache.check()``                           | probes Redis (respecting the back-off), then ``status()`` |
| ``await cache.aclose()``                          | closes the Redis client                                   |
| ``await flight.run(key, lambda: call())``         | identical concurrent calls run once, all get the outcome  |
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import math
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from service.caching.fallback_cache import FallbackCache
from service.caching.memory_cache import MemoryCache
from service.caching.redis_cache import RedisCache

__all__ = ["KEY_PREFIX", "SingleFlight", "cache_key", "make_cache"]

KEY_PREFIX = "cj:judge:v1:"

T = TypeVar("T")


def _canonical(value: Any) -> Any:
    """JSON-ready copy in which integral floats become ints, so temperature 0 and 0.0 hash alike."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


def cache_key(model: str, messages: list[dict], parameters: dict) -> str:
    """``"cj:judge:v1:" + sha256`` hex of the canonical JSON (sorted keys, no spaces) of the three inputs.

    Raises TypeError for values JSON cannot encode and ValueError for NaN/inf.
    """
    document = {"model": model, "messages": _canonical(messages), "parameters": _canonical(parameters)}
    encoded = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return KEY_PREFIX + hashlib.sha256(encoded.encode("utf-8")).hexdigest()


def make_cache(
    redis_url: str | None,
    *,
    max_entries: int = 10_000,
    logger: Any = None,
    retry_after_s: float = 5.0,
    socket_timeout_s: float = 0.25,
) -> MemoryCache | FallbackCache:
    """Redis at redis_url with an LRU of max_entries as fallback; an LRU alone when redis_url is empty/None.

    No I/O happens here: the first operation (or ``await cache.check()``) connects.
    """
    memory = MemoryCache(max_entries)
    if not redis_url:
        return memory
    return FallbackCache(
        RedisCache(redis_url, socket_timeout_s=socket_timeout_s),
        memory,
        retry_after_s=retry_after_s,
        logger=logger,
    )


class _Flight:
    """One call in flight and how many callers await it."""

    __slots__ = ("task", "waiters")

    def __init__(self, task: asyncio.Future[Any]) -> None:
        self.task = task
        self.waiters = 0


class SingleFlight:
    """Collapse identical concurrent calls: one run per key in flight, every caller gets its outcome.

    The shared call runs in its own task, so one caller's cancellation does not cancel the others; when
    every caller has gone, the task is cancelled. A key is released as soon as its call finishes.
    """

    def __init__(self) -> None:
        self._flights: dict[str, _Flight] = {}

    def __len__(self) -> int:
        """Keys currently in flight."""
        return len(self._flights)

    def _release(self, key: str, flight: _Flight, task: asyncio.Future[Any]) -> None:
        """Forget ``key`` once its call is done, and mark the outcome retrieved."""
        if self._flights.get(key) is flight:
            del self._flights[key]
        if not task.cancelled():
            task.exception()  # marks it retrieved, so a result nobody awaited is not logged as lost

    async def run(self, key: str, coro_factory: Callable[[], Awaitable[T]]) -> T:
        """Await coro_factory() once per key in flight; concurrent callers share its result or exception."""
        flight = self._flights.get(key)
        if flight is None:
            flight = _Flight(asyncio.ensure_future(coro_factory()))
            self._flights[key] = flight
            flight.task.add_done_callback(functools.partial(self._release, key, flight))
        flight.waiters += 1
        try:
            return await asyncio.shield(flight.task)
        finally:
            flight.waiters -= 1
            if flight.waiters == 0 and not flight.task.done():
                # Every caller was cancelled: stop the work and let a new caller start afresh.
                if self._flights.get(key) is flight:
                    del self._flights[key]
                flight.task.cancel()
