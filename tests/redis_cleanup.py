"""A pytest plugin (loaded by tests/conftest.py): the tests' Redis database keeps no judge-answer cache keys.

Apps and workers started with ``REDIS_URL`` = the tests' database cache every live judge answer there under
``service.caching.cache.KEY_PREFIX`` for CACHE_TTL_S (a day), and the tests that call the stand-in use texts of
their own run, so those keys only pile up. Every key under the prefix is removed when the session starts (what a
crashed run left) and when it ends. Under pytest-xdist only the controller does it, before the workers start and
after they have all finished, so no test loses a key it has just written.
"""

from __future__ import annotations

import pytest
import redis

from service.caching.cache import KEY_PREFIX
from tests.redis_url import REDIS_TEST_URL

__all__ = ["delete_judge_cache_keys"]


def delete_judge_cache_keys(url: str) -> int:
    """Remove every judge-answer cache key from the Redis database at ``url``; how many there were (0 when no
    Redis answers: a session without Redis has nothing to clean)."""
    client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
    try:
        keys = list(client.scan_iter(match=KEY_PREFIX + "*", count=1000))
        for start in range(0, len(keys), 1000):
            client.delete(*keys[start : start + 1000])
        return len(keys)
    except redis.RedisError:
        return 0
    finally:
        client.close()


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Remove what an earlier, interrupted session left."""
    if not _is_xdist_worker(session.config):
        delete_judge_cache_keys(REDIS_TEST_URL)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Remove what this session's apps and workers cached."""
    if not _is_xdist_worker(session.config):
        delete_judge_cache_keys(REDIS_TEST_URL)
