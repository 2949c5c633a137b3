"""The tests' Redis database is one setting (``REDIS_TEST_URL``, read in tests/redis_url.py): no test module names
a database of the local server itself."""

from __future__ import annotations

import re
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
