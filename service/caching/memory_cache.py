"""The in-process judge-answer cache: an LRU with per-entry TTL (alone, or beside Redis in ``FallbackCache``)."""

from __future__ import annotations

import time
from collections import OrderedDict

from service.caching.cache_contract import CacheStatus, Clock, check_ttl

__all__ = ["MemoryCache"]


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
        check_ttl(ttl_s)
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
