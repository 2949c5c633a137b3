"""The judge-answer cache's contract: the ``JudgeCache`` interface its backends implement and its status snapshot.

The backends: ``service.caching.memory_cache`` (in-process LRU), ``service.caching.redis_cache`` (Redis, shared
across workers) and ``service.caching.fallback_cache`` (Redis with the LRU beside it); ``service.caching.cache``
builds one (``make_cache``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, Protocol

import msgspec

__all__ = ["CacheStatus", "Clock", "JudgeCache", "check_ttl"]

Clock = Callable[[], float]


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


def check_ttl(ttl_s: int | None) -> None:
    """Raise ValueError unless ``ttl_s`` is a positive int of seconds or None."""
    if ttl_s is None:
        return
    if isinstance(ttl_s, bool) or not isinstance(ttl_s, int) or ttl_s <= 0:
        raise ValueError(f"ttl_s must be a positive int of seconds or None, got {ttl_s!r}")
