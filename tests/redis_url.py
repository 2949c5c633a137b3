"""The Redis database the tests use, one setting read in one place: ``REDIS_TEST_URL``, default
``redis://127.0.0.1:6379/15``.

The tests write keys there under unique prefixes and delete them afterwards, but a crashed run can leave some: point
it at a database (or a server) nothing else uses, e.g. ``REDIS_TEST_URL=redis://127.0.0.1:6379/14 make test``.
"""

from __future__ import annotations

import os

__all__ = ["DEFAULT_REDIS_TEST_URL", "REDIS_TEST_URL", "REDIS_TEST_URL_ENV", "redis_test_url"]

REDIS_TEST_URL_ENV = "REDIS_TEST_URL"
DEFAULT_REDIS_TEST_URL = "redis://127.0.0.1:6379/15"


def redis_test_url() -> str:
    """``$REDIS_TEST_URL``, else the default database 15 of the local server."""
    return os.environ.get(REDIS_TEST_URL_ENV) or DEFAULT_REDIS_TEST_URL


REDIS_TEST_URL = redis_test_url()
