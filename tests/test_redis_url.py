"""The tests' Redis database is one setting (``REDIS_TEST_URL``, read in tests/redis_url.py): no test module names
a database of the local server itself."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests import redis_url

TESTS = Path(__file__).resolve().parent
LOCAL_DATABASE = re.compile(r"redis://(?:127\.0\.0\.1|localhost):6379/\d+")
# Settings-parsing values, never connected to.
PARSED_ONLY = {"tests/service/http/test_auth_limits.py"}


def test_no_test_module_hard_codes_a_database_of_the_local_server() -> None:
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        rel = str(path.relative_to(TESTS.parent))
        if rel in ("tests/redis_url.py", "tests/test_redis_url.py", *PARSED_ONLY):
            continue
        offenders += [f"{rel}: {m}" for m in LOCAL_DATABASE.findall(path.read_text(encoding="utf-8"))]
    assert offenders == [], "use tests.redis_url.REDIS_TEST_URL"


def test_the_setting_and_its_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDIS_TEST_URL", raising=False)
    assert redis_url.redis_test_url() == "redis://127.0.0.1:6379/15"
    monkeypatch.setenv("REDIS_TEST_URL", "redis://127.0.0.1:6379/9")
    assert redis_url.redis_test_url() == "redis://127.0.0.1:6379/9"


_WRITES_A_JUDGE_ANSWER = """
import redis

from service.caching.cache import KEY_PREFIX
from tests.redis_url import REDIS_TEST_URL


def test_an_app_caches_a_judge_answer():
    client = redis.Redis.from_url(REDIS_TEST_URL)
    client.set(KEY_PREFIX + "{name}", b"answer", ex=86_400)  # what a RedisCache of an app on this database writes
    assert client.exists(KEY_PREFIX + "{name}")
"""


def test_a_session_leaves_no_judge_cache_keys_in_the_test_database(tmp_path: Path) -> None:
    """A pytest session (the plugin tests/redis_cleanup.py, as tests/conftest.py loads it) whose test caches a judge
    answer in the tests' database: once the session is over, no ``cj:judge:v1:*`` key is left."""
    redis = pytest.importorskip("redis")
    from service.caching.cache import KEY_PREFIX

    name = f"cleanup-probe-{uuid.uuid4().hex}"
    module = tmp_path / "test_probe.py"
    module.write_text(_WRITES_A_JUDGE_ANSWER.format(name=name))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.redis_cleanup",
         "--rootdir", str(tmp_path), "-c", os.devnull, str(module)],
        cwd=TESTS.parent, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(TESTS.parent), "REDIS_TEST_URL": redis_url.REDIS_TEST_URL,
             "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},  # the installed plugins (eval tools') are not needed here
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout  # the key was written
    client = redis.Redis.from_url(redis_url.REDIS_TEST_URL)
    try:
        assert not client.exists(KEY_PREFIX + name)
    finally:
        client.close()
