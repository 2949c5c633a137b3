"""The Redis judge-answer cache, shared across workers: pipelined get/set whose errors propagate."""

from __future__ import annotations

import asyncio
from typing import Any

import redis.asyncio as redis_asyncio
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from service.caching.cache_contract import CacheStatus, check_ttl

__all__ = ["REDIS_FAILURES", "RedisCache", "describe_failure"]

# What counts as "Redis is down": the client's own errors plus raw socket/timeout errors that can escape it.
REDIS_FAILURES: tuple[type[BaseException], ...] = (RedisError, OSError, TimeoutError)


def describe_failure(exc: BaseException) -> str:
    """The exception's type and message, for logs and status."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class RedisCache:
    """Plain Redis store over ``redis.asyncio``; errors propagate (FallbackCache handles outages).

    Short socket timeouts and no client-side retries, so an outage is noticed in ``socket_timeout_s``.

    Pipelined automatically: ``get`` and ``set`` calls made while a round trip is under way (and those of the
    same event-loop turn) go together in the next one, a single non-transactional pipeline, so 32 items in
    flight cost a few round trips instead of two each (the per-command client work, not Redis, was a fifth
    of a job worker's CPU per live item). An idle cache sends at once: nothing waits for a batch to fill. A
    failed round trip fails every call in it with the same error.
    """

    def __init__(self, url: str, *, socket_timeout_s: float = 0.25) -> None:
        self._client: redis_asyncio.Redis = redis_asyncio.Redis.from_url(
            url,
            socket_timeout=socket_timeout_s,
            socket_connect_timeout=socket_timeout_s,
            retry=Retry(NoBackoff(), 0),
            decode_responses=False,
        )
        self._reachable = False
        self._errors = 0
        self._last_error: str | None = None
        self._waiting: list[tuple[tuple[Any, ...], asyncio.Future[Any]]] = []  # (command, its caller's future)
        self._sender: asyncio.Task[None] | None = None

    async def _call(self, *command: Any) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting.append((command, future))
        if self._sender is None:
            self._sender = asyncio.create_task(self._send())
        try:
            result = await future
        except REDIS_FAILURES as exc:
            self._reachable = False
            self._errors += 1
            self._last_error = describe_failure(exc)
            raise
        self._reachable = True
        return result

    async def _send(self) -> None:
        """Send what is waiting, one pipeline per round trip, until nothing is."""
        try:
            while self._waiting:
                batch, self._waiting = self._waiting, []
                try:
                    async with self._client.pipeline(transaction=False) as pipe:
                        for command, _ in batch:
                            pipe.execute_command(*command)
                        replies = await pipe.execute(raise_on_error=False)
                except BaseException as exc:  # noqa: BLE001 - every caller of the round trip gets its error
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc if isinstance(exc, Exception) else RedisError(repr(exc)))
                    if not isinstance(exc, Exception):
                        raise
                    continue
                for (_, future), reply in zip(batch, replies, strict=True):
                    if future.done():
                        continue
                    if isinstance(reply, Exception):
                        future.set_exception(reply)
                    else:
                        future.set_result(reply)
        finally:
            self._sender = None

    async def get(self, key: str) -> bytes | None:
        """GET key; raises redis errors (ConnectionError, TimeoutError, ...) unchanged."""
        result: bytes | None = await self._call("GET", key)
        return result

    async def set(self, key: str, value: bytes, ttl_s: int | None) -> None:
        """SET key value [EX ttl_s]; raises ValueError for a bad ttl_s and redis errors unchanged."""
        check_ttl(ttl_s)
        await (self._call("SET", key, value) if ttl_s is None else self._call("SET", key, value, "EX", ttl_s))

    async def ping(self) -> None:
        """PING; raises redis errors unchanged."""
        await self._call("PING")

    def status(self) -> CacheStatus:
        """Redis backend status from the last operation (no I/O)."""
        return CacheStatus(
            backend="redis",
            redis_configured=True,
            redis_reachable=self._reachable,
            fallbacks=0,
            fallback_operations=0,
            redis_errors=self._errors,
            memory_entries=0,
            max_entries=0,
            retry_in_s=None,
            last_error=self._last_error,
        )

    async def check(self) -> CacheStatus:
        """PING Redis (errors recorded, not raised), then status()."""
        try:
            await self.ping()
        except REDIS_FAILURES:
            pass
        return self.status()

    async def aclose(self) -> None:
        """Close the client and its connection pool (after the round trip under way, if any)."""
        sender = self._sender
        if sender is not None:
            await asyncio.wait([sender], timeout=1.0)
        await self._client.aclose()
