"""Judge-answer cache: Redis shared across workers, an in-process LRU beside it, and single-flight calls.

Everything here is built per app (in the lifespan) and closed there; nothing lives at module level.

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

Fallback rules (``FallbackCache``): while Redis answers, reads go to Redis (falling back to the LRU on a
Redis miss) and writes go to both, so the LRU mirrors this process's recent answers. The first Redis
failure (refused, timeout, any ``RedisError``/``OSError``) starts an outage: one warning is logged, every
operation is served by the LRU, and Redis is left alone for ``retry_after_s``. After that one operation at a
time probes Redis; a failed probe restarts the back-off silently, a successful one ends the outage (one
info line) and Redis serves again.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol, TypeVar

import msgspec
import redis.asyncio as redis_asyncio
import structlog
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

__all__ = [
    "KEY_PREFIX",
    "CacheStatus",
    "FallbackCache",
    "JudgeCache",
    "MemoryCache",
    "RedisCache",
    "SingleFlight",
    "cache_key",
    "make_cache",
]

KEY_PREFIX = "cj:judge:v1:"

T = TypeVar("T")
Clock = Callable[[], float]

# What counts as "Redis is down": the client's own errors plus raw socket/timeout errors that can escape it.
_REDIS_FAILURES: tuple[type[BaseException], ...] = (RedisError, OSError, TimeoutError)


class CacheStatus(msgspec.Struct, frozen=True, kw_only=True):
    """A snapshot of the cache for health and metrics endpoints."""

    backend: Literal["redis", "memory"]  # which store is serving right now
    redis_configured: bool
    redis_reachable: bool  # the last Redis operation succeeded (False before the first one)
    fallbacks: int  # outages so far: times the cache switched from Redis to the in-process LRU
    fallback_operations: int  # get/set calls served by the LRU because Redis was down
    redis_errors: int  # failed Redis operations, failed probes included
    memory_entries: int
    max_entries: int
    retry_in_s: float | None  # during an outage: seconds until Redis is tried again
    last_error: str | None


class JudgeCache(Protocol):
    """The interface the service uses; MemoryCache, RedisCache and FallbackCache implement it."""

    async def get(self, key: str) -> bytes | None:
        """The stored value for key, or None when absent or expired."""
        ...

    async def set(self, key: str, value: bytes, ttl_s: int | None) -> None:
        """Store value under key for ttl_s seconds (None = until evicted)."""
        ...

    def status(self) -> CacheStatus:
        """A snapshot of the backend state; no I/O."""
        ...

    async def check(self) -> CacheStatus:
        """Probe the backend where that makes sense, then return status()."""
        ...

    async def aclose(self) -> None:
        """Release connections; the cache is unusable afterwards."""
        ...


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


def _check_ttl(ttl_s: int | None) -> None:
    if ttl_s is None:
        return
    if isinstance(ttl_s, bool) or not isinstance(ttl_s, int) or ttl_s <= 0:
        raise ValueError(f"ttl_s must be a positive int of seconds or None, got {ttl_s!r}")


class MemoryCache:
    """In-process LRU of at most ``max_entries`` values with per-entry TTL (``clock`` in seconds)."""

    def __init__(self, max_entries: int = 10_000, *, clock: Clock = time.monotonic) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        self._max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, tuple[bytes, float | None]] = OrderedDict()

    def __len__(self) -> int:
        """Entries held, expired ones not yet dropped included."""
        return len(self._entries)

    @property
    def max_entries(self) -> int:
        """The entry count above which the least recently used entry is evicted."""
        return self._max_entries

    def get_now(self, key: str) -> bytes | None:
        """Synchronous get: the value (marked most recently used) or None when absent or expired."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        value, expires_at = entry
        if expires_at is not None and self._clock() >= expires_at:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return value

    def set_now(self, key: str, value: bytes, ttl_s: int | None) -> None:
        """Synchronous set: store as most recently used, evicting the least recently used past the limit."""
        _check_ttl(ttl_s)
        expires_at = None if ttl_s is None else self._clock() + ttl_s
        self._entries[key] = (bytes(value), expires_at)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)

    async def get(self, key: str) -> bytes | None:
        """The value or None when absent or expired; a hit becomes the most recently used entry."""
        return self.get_now(key)

    async def set(self, key: str, value: bytes, ttl_s: int | None) -> None:
        """Store value for ttl_s seconds (None = until evicted); raises ValueError for a bad ttl_s."""
        self.set_now(key, value, ttl_s)

    def status(self) -> CacheStatus:
        """Memory backend status: never configured for Redis, never falls back."""
        return CacheStatus(
            backend="memory",
            redis_configured=False,
            redis_reachable=False,
            fallbacks=0,
            fallback_operations=0,
            redis_errors=0,
            memory_entries=len(self._entries),
            max_entries=self._max_entries,
            retry_in_s=None,
            last_error=None,
        )

    async def check(self) -> CacheStatus:
        """Same as status(): there is nothing to probe."""
        return self.status()

    async def aclose(self) -> None:
        """Drop every entry."""
        self._entries.clear()


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
        except _REDIS_FAILURES as exc:
            self._reachable = False
            self._errors += 1
            self._last_error = _describe(exc)
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
        _check_ttl(ttl_s)
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
        except _REDIS_FAILURES:
            pass
        return self.status()

    async def aclose(self) -> None:
        """Close the client and its connection pool (after the round trip under way, if any)."""
        sender = self._sender
        if sender is not None:
            await asyncio.wait([sender], timeout=1.0)
        await self._client.aclose()


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class FallbackCache:
    """Redis first, in-process LRU when Redis is down; see the module docstring for the rules."""

    def __init__(
        self,
        redis: RedisCache,
        memory: MemoryCache,
        *,
        retry_after_s: float = 5.0,
        logger: Any = None,
        clock: Clock = time.monotonic,
    ) -> None:
        if retry_after_s < 0:
            raise ValueError(f"retry_after_s must be >= 0, got {retry_after_s}")
        self._redis = redis
        self._memory = memory
        self._retry_after_s = retry_after_s
        self._log = logger if logger is not None else structlog.get_logger("service.judging.cache")
        self._clock = clock
        self._down = False
        self._down_since = 0.0
        self._retry_at = 0.0
        self._probing = False
        # Bumped at every outage start and end, so a slow failure from an earlier period starts no new outage.
        self._epoch = 0
        self._reachable = False
        self._fallbacks = 0
        self._fallback_operations = 0
        self._redis_errors = 0
        self._last_error: str | None = None

    def _claim_redis(self) -> tuple[bool, bool]:
        """(use Redis now, this call is the probe); at most one probe runs at a time."""
        if not self._down:
            return True, False
        if self._probing or self._clock() < self._retry_at:
            return False, False
        self._probing = True
        return True, True

    def _on_failure(self, exc: BaseException, epoch: int, probe: bool) -> None:
        now = self._clock()
        self._reachable = False
        self._redis_errors += 1
        self._last_error = _describe(exc)
        if probe:
            self._retry_at = now + self._retry_after_s
            self._log.debug("cache.redis_probe_failed", error=self._last_error, retry_in_s=self._retry_after_s)
        elif not self._down and epoch == self._epoch:
            self._down = True
            self._epoch += 1
            self._fallbacks += 1
            self._down_since = now
            self._retry_at = now + self._retry_after_s
            self._log.warning(
                "cache.redis_unavailable",
                error=self._last_error,
                fallback="memory",
                retry_in_s=self._retry_after_s,
            )

    def _on_success(self, probe: bool) -> None:
        self._reachable = True
        if probe and self._down:
            self._down = False
            self._epoch += 1
            self._log.info("cache.redis_recovered", outage_s=round(self._clock() - self._down_since, 3))

    async def get(self, key: str) -> bytes | None:
        """Redis value, else the LRU's (on a Redis miss or while Redis is down); never raises for an outage."""
        use_redis, probe = self._claim_redis()
        if use_redis:
            epoch = self._epoch
            try:
                value = await self._redis.get(key)
            except _REDIS_FAILURES as exc:
                self._on_failure(exc, epoch, probe)
            else:
                self._on_success(probe)
                if value is not None:
                    return value
                return self._memory.get_now(key)
            finally:
                if probe:
                    self._probing = False
        self._fallback_operations += 1
        return self._memory.get_now(key)

    async def set(self, key: str, value: bytes, ttl_s: int | None) -> None:
        """Store in the LRU, and in Redis unless it is down; raises ValueError for a bad ttl_s only."""
        self._memory.set_now(key, value, ttl_s)
        use_redis, probe = self._claim_redis()
        if not use_redis:
            self._fallback_operations += 1
            return
        epoch = self._epoch
        try:
            await self._redis.set(key, value, ttl_s)
        except _REDIS_FAILURES as exc:
            self._on_failure(exc, epoch, probe)
            self._fallback_operations += 1
        else:
            self._on_success(probe)
        finally:
            if probe:
                self._probing = False

    def status(self) -> CacheStatus:
        """Snapshot: backend is "memory" during an outage, else "redis"; no I/O."""
        retry_in = max(0.0, self._retry_at - self._clock()) if self._down else None
        return CacheStatus(
            backend="memory" if self._down else "redis",
            redis_configured=True,
            redis_reachable=self._reachable,
            fallbacks=self._fallbacks,
            fallback_operations=self._fallback_operations,
            redis_errors=self._redis_errors,
            memory_entries=len(self._memory),
            max_entries=self._memory.max_entries,
            retry_in_s=retry_in,
            last_error=self._last_error,
        )

    async def check(self) -> CacheStatus:
        """PING Redis unless the back-off says wait (same outage/recovery rules as get/set), then status()."""
        use_redis, probe = self._claim_redis()
        if use_redis:
            epoch = self._epoch
            try:
                await self._redis.ping()
            except _REDIS_FAILURES as exc:
                self._on_failure(exc, epoch, probe)
            else:
                self._on_success(probe)
            finally:
                if probe:
                    self._probing = False
        return self.status()

    async def aclose(self) -> None:
        """Close the Redis client and drop the LRU."""
        try:
            await self._redis.aclose()
        finally:
            await self._memory.aclose()


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
