"""Redis with the in-process LRU beside it: the judge-answer cache that survives a Redis outage.

Fallback rules (``FallbackCache``): while Redis answers, reads go to Redis (falling back to the LRU on a
Redis miss) and writes go to both, so the LRU mirrors this process's recent answers. The first Redis
failure (refused, timeout, any ``RedisError``/``OSError``) starts an outage: one warning is logged, every
operation is served by the LRU, and Redis is left alone for ``retry_after_s``. After that one operation at a
time probes Redis; a failed probe restarts the back-off silently, a successful one ends the outage (one
info line) and Redis serves again.
"""

from __future__ import annotations

import time
from typing import Any

import structlog

from service.caching.cache_contract import CacheStatus, Clock
from service.caching.memory_cache import MemoryCache
from service.caching.redis_cache import REDIS_FAILURES, RedisCache, describe_failure

__all__ = ["FallbackCache"]


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
        self._log = logger if logger is not None else structlog.get_logger("service.caching.cache")
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
        self._last_error = describe_failure(exc)
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
            except REDIS_FAILURES as exc:
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
        except REDIS_FAILURES as exc:
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
            except REDIS_FAILURES as exc:
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
