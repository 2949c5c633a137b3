"""The judge-answer cache (service.caching.cache and its backends): key stability, LRU/TTL, real Redis, a real
Redis outage and recovery, single-flight.

Redis is never mocked: the shared server at 127.0.0.1:6379 (db 15, keys under a unique prefix, removed
afterwards) and, for the outage, a throwaway ``redis-server`` on a free port that the test kills and restarts.
Async tests run through ``asyncio.run`` (pytest-asyncio is not a dependency).
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import structlog
from structlog.testing import LogCapture

from service.caching.cache import KEY_PREFIX, SingleFlight, cache_key, make_cache
from service.caching.cache_contract import CacheStatus
from service.caching.fallback_cache import FallbackCache
from service.caching.memory_cache import MemoryCache
from service.caching.redis_cache import RedisCache
from tests.redis_url import REDIS_TEST_URL

SHARED_REDIS_URL = REDIS_TEST_URL

MESSAGES = [
    {"role": "system", "content": "You grade summaries."},
    {"role": "user", "content": "Rate the coherence of this summary from 1 to 5: ..."},
]
PARAMETERS = {"temperature": 0.0, "max_tokens": 5, "logprobs": True, "top_logprobs": 5}


class FakeClock:
    """A settable monotonic clock in seconds."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def capturing_logger() -> tuple[object, LogCapture]:
    """A structlog logger whose events land in a LogCapture (no global structlog configuration)."""
    capture = LogCapture()
    return structlog.wrap_logger(None, processors=[capture]), capture


def events(capture: LogCapture, name: str) -> list[dict]:
    return [entry for entry in capture.entries if entry["event"] == name]


# ---------------------------------------------------------------------------------------------- cache_key


def test_cache_key_is_stable_prefixed_sha256() -> None:
    key = cache_key("gpt-4o-mini", MESSAGES, PARAMETERS)
    assert key == cache_key("gpt-4o-mini", [dict(m) for m in MESSAGES], dict(PARAMETERS))
    reordered = dict(reversed(list(PARAMETERS.items())))
    assert key == cache_key("gpt-4o-mini", MESSAGES, reordered)
    assert key.startswith(KEY_PREFIX)
    digest = key.removeprefix(KEY_PREFIX)
    assert len(digest) == 64 and int(digest, 16) >= 0


def test_cache_key_matches_hand_written_canonical_json() -> None:
    # Independent of json.dumps: the canonical document spelled out by hand.
    text = '{"messages":[{"content":"hé","role":"user"}],"model":"m","parameters":{"max_tokens":5,"t":0}}'
    expected = KEY_PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert cache_key("m", [{"role": "user", "content": "hé"}], {"t": 0.0, "max_tokens": 5}) == expected


@pytest.mark.parametrize(
    "change",
    [
        {"temperature": 0.7},
        {"max_tokens": 6},
        {"logprobs": False},
        {"top_logprobs": 20},
        {"seed": 1},
        {"temperature": "0.0"},
    ],
)
def test_cache_key_changes_with_any_parameter(change: dict) -> None:
    assert cache_key("m", MESSAGES, PARAMETERS) != cache_key("m", MESSAGES, {**PARAMETERS, **change})


def test_cache_key_changes_with_model_and_messages() -> None:
    base = cache_key("m", MESSAGES, PARAMETERS)
    assert base != cache_key("m2", MESSAGES, PARAMETERS)
    assert base != cache_key("m", MESSAGES[:1], PARAMETERS)
    assert base != cache_key("m", [MESSAGES[0], {**MESSAGES[1], "content": MESSAGES[1]["content"] + " "}], PARAMETERS)
    assert base != cache_key("m", [MESSAGES[1], MESSAGES[0]], PARAMETERS)
    # The three inputs are kept apart: moving a value between them changes the key.
    assert cache_key("m", [], {"model": "x"}) != cache_key("x", [], {})
    # Equal numbers are one value, but bools are not numbers here.
    assert cache_key("m", [], {"temperature": 0}) == cache_key("m", [], {"temperature": 0.0})
    assert cache_key("m", [], {"logprobs": True}) != cache_key("m", [], {"logprobs": 1})


def test_cache_key_rejects_nan() -> None:
    with pytest.raises(ValueError):
        cache_key("m", [], {"temperature": float("nan")})


# ---------------------------------------------------------------------------------------------- MemoryCache


def test_memory_cache_evicts_least_recently_used() -> None:
    async def scenario() -> None:
        cache = MemoryCache(max_entries=3)
        for name in "abc":
            await cache.set(name, name.encode(), None)
        assert await cache.get("a") == b"a"  # a is now the most recently used
        await cache.set("d", b"d", None)
        assert await cache.get("b") is None
        assert [await cache.get(k) for k in "acd"] == [b"a", b"c", b"d"]
        await cache.set("c", b"c2", None)  # overwrite refreshes recency, does not grow
        await cache.set("e", b"e", None)
        assert await cache.get("a") is None
        assert await cache.get("c") == b"c2"
        assert cache.status().memory_entries == 3
        await cache.aclose()

    asyncio.run(scenario())


def test_memory_cache_ttl_expires_entries() -> None:
    async def scenario() -> None:
        clock = FakeClock()
        cache = MemoryCache(max_entries=10, clock=clock)
        await cache.set("short", b"1", 10)
        await cache.set("forever", b"2", None)
        clock.now += 9.999
        assert await cache.get("short") == b"1"
        clock.now += 0.001
        assert await cache.get("short") is None
        clock.now += 10**6
        assert await cache.get("forever") == b"2"
        assert len(cache) == 1
        for bad in (0, -1, 1.5, True):
            with pytest.raises(ValueError):
                await cache.set("x", b"x", bad)  # type: ignore[arg-type]

    asyncio.run(scenario())


def test_memory_cache_status_and_make_cache_without_redis() -> None:
    cache = make_cache(None, max_entries=7)
    assert isinstance(cache, MemoryCache)
    status = asyncio.run(cache.check())
    assert status == CacheStatus(
        backend="memory",
        redis_configured=False,
        redis_reachable=False,
        fallbacks=0,
        fallback_operations=0,
        redis_errors=0,
        memory_entries=0,
        max_entries=7,
        retry_in_s=None,
        last_error=None,
    )
    with pytest.raises(ValueError):
        MemoryCache(max_entries=0)


# ---------------------------------------------------------------------------------------------- real Redis


@pytest.fixture(scope="module")
def shared_redis() -> Iterator[redis.Redis]:
    """A sync client on the shared test Redis (db 15); fails the test clearly when nothing answers."""
    client = redis.Redis.from_url(SHARED_REDIS_URL, socket_timeout=1, socket_connect_timeout=1)
    try:
        client.ping()
    except redis.RedisError as exc:
        client.close()
        pytest.fail(
            f"no Redis answers at {SHARED_REDIS_URL} ({exc}); start one: redis-server --port 6379 "
            f"(CI starts it in .ci/run)",
            pytrace=False,
        )
    yield client
    client.close()


@pytest.fixture
def key_prefix(shared_redis: redis.Redis) -> Iterator[str]:
    """A unique key prefix on the shared Redis; every key under it is deleted afterwards."""
    prefix = f"cj:test:{uuid.uuid4().hex}:"
    yield prefix
    keys = list(shared_redis.scan_iter(match=prefix + "*"))
    if keys:
        shared_redis.delete(*keys)


def test_redis_cache_round_trip_and_ttl(shared_redis: redis.Redis, key_prefix: str) -> None:
    async def scenario() -> None:
        cache = RedisCache(SHARED_REDIS_URL)
        try:
            assert await cache.get(key_prefix + "absent") is None
            await cache.set(key_prefix + "a", b"\x00verdict\xff", 120)
            await cache.set(key_prefix + "b", b"forever", None)
            assert await cache.get(key_prefix + "a") == b"\x00verdict\xff"
            status = cache.status()
            assert status.backend == "redis" and status.redis_reachable and status.redis_errors == 0
        finally:
            await cache.aclose()

    asyncio.run(scenario())
    # Checked with a separate client: the values really are in Redis, with the TTL asked for.
    assert shared_redis.get(key_prefix + "a") == b"\x00verdict\xff"
    assert 110 <= shared_redis.ttl(key_prefix + "a") <= 120
    assert shared_redis.ttl(key_prefix + "b") == -1


def test_redis_cache_pipelines_concurrent_calls(shared_redis: redis.Redis, key_prefix: str) -> None:
    """200 concurrent sets, then 200 concurrent gets: each answer is its own key's, in a handful of round trips
    rather than 400; a command Redis refuses (GET of a hash) fails alone, its neighbours in the pipeline don't."""
    shared_redis.hset(key_prefix + "a-hash", "field", "value")

    async def scenario() -> tuple[list[bytes | None], int, int, BaseException | None]:
        cache = RedisCache(SHARED_REDIS_URL)
        round_trips = 0
        pipeline = cache._client.pipeline

        def counted(*args: object, **kwargs: object) -> object:
            nonlocal round_trips
            round_trips += 1
            return pipeline(*args, **kwargs)

        cache._client.pipeline = counted  # type: ignore[method-assign]
        try:
            await asyncio.gather(*(cache.set(f"{key_prefix}k{i}", f"v{i}".encode(), 60) for i in range(200)))
            sets = round_trips
            outcomes = await asyncio.gather(
                *(cache.get(f"{key_prefix}k{i}") for i in range(200)), cache.get(key_prefix + "a-hash"),
                return_exceptions=True,
            )  # fmt: skip
            values = [value for value in outcomes[:200] if not isinstance(value, BaseException)]
            refused = outcomes[200] if isinstance(outcomes[200], BaseException) else None
            return values, sets, round_trips - sets, refused
        finally:
            await cache.aclose()

    values, set_trips, get_trips, refused = asyncio.run(scenario())
    assert values == [f"v{i}".encode() for i in range(200)]
    assert 1 <= set_trips <= 3 and 1 <= get_trips <= 3
    assert isinstance(refused, redis.exceptions.ResponseError) and "WRONGTYPE" in str(refused)
    assert shared_redis.get(key_prefix + "k199") == b"v199" and 50 <= shared_redis.ttl(key_prefix + "k199") <= 60


def test_fallback_cache_uses_redis_when_healthy(shared_redis: redis.Redis, key_prefix: str) -> None:
    logger, capture = capturing_logger()

    async def scenario() -> CacheStatus:
        cache = make_cache(SHARED_REDIS_URL, max_entries=100, logger=logger)
        assert isinstance(cache, FallbackCache)
        try:
            await cache.set(key_prefix + "k", b"v", 60)
            shared_redis.set(key_prefix + "other", b"from-another-worker")
            assert await cache.get(key_prefix + "k") == b"v"
            assert await cache.get(key_prefix + "other") == b"from-another-worker"
            return await cache.check()
        finally:
            await cache.aclose()

    status = asyncio.run(scenario())
    assert shared_redis.get(key_prefix + "k") == b"v"
    assert status.backend == "redis" and status.redis_configured and status.redis_reachable
    assert (status.fallbacks, status.fallback_operations, status.redis_errors) == (0, 0, 0)
    assert capture.entries == []


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ThrowawayRedis:
    """A private redis-server on 127.0.0.1:<port>, no persistence; can be killed and restarted on that port."""

    def __init__(self, port: int, workdir: Path) -> None:
        self.port = port
        self.workdir = workdir
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail(
                "redis-server is not on PATH; the outage test needs it (apt-get install redis-server)", pytrace=False
            )
        self.process = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            client = redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=0.2)
            try:
                if client.ping():
                    return
            except redis.RedisError:
                time.sleep(0.05)
            finally:
                client.close()
        self.kill()
        pytest.fail(f"throwaway redis-server did not answer on port {self.port} within 10 s", pytrace=False)

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None


@pytest.fixture
def throwaway_redis(tmp_path: Path) -> Iterator[ThrowawayRedis]:
    server = ThrowawayRedis(free_port(), tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.kill()


def test_outage_serves_from_lru_logs_once_and_recovers(throwaway_redis: ThrowawayRedis) -> None:
    logger, capture = capturing_logger()
    retry_after_s = 0.3

    async def scenario() -> None:
        cache = make_cache(throwaway_redis.url, max_entries=100, logger=logger, retry_after_s=retry_after_s)
        try:
            await cache.set("before", b"1", None)
            assert await cache.get("before") == b"1"
            assert cache.status().backend == "redis" and cache.status().redis_reachable

            throwaway_redis.kill()

            # Reads and writes keep working from the LRU; the first failing call is noticed quickly.
            started = time.perf_counter()
            assert await cache.get("before") == b"1"
            await cache.set("during", b"2", 60)
            assert await cache.get("during") == b"2"
            assert await cache.get("never-set") is None
            results = await asyncio.gather(*(cache.get("before") for _ in range(100)))
            assert results == [b"1"] * 100
            assert time.perf_counter() - started < 1.0, "outage calls must not wait on Redis"

            status = cache.status()
            assert status.backend == "memory"
            assert status.redis_configured and not status.redis_reachable
            assert status.fallbacks == 1
            assert status.fallback_operations >= 104
            assert status.retry_in_s is not None and 0 <= status.retry_in_s <= retry_after_s
            assert status.last_error is not None

            # After the back-off a probe fails again: still one outage, still one warning.
            await asyncio.sleep(retry_after_s + 0.05)
            assert await cache.get("before") == b"1"
            status = cache.status()
            assert status.fallbacks == 1 and status.backend == "memory" and status.redis_errors >= 2
            assert len(events(capture, "cache.redis_unavailable")) == 1

            throwaway_redis.start()  # same port, empty data set

            # Within the back-off the cache still serves from memory without touching Redis ...
            assert cache.status().backend == "memory"
            await asyncio.sleep(retry_after_s + 0.05)
            # ... then the next call probes, succeeds and Redis serves again.
            assert await cache.get("before") == b"1"  # Redis misses (fresh server), the LRU still has it
            assert cache.status().backend == "redis" and cache.status().redis_reachable
            await cache.set("after", b"3", None)
            assert await cache.get("during") == b"2"  # written during the outage, kept by the LRU
            assert len(events(capture, "cache.redis_unavailable")) == 1
            assert len(events(capture, "cache.redis_recovered")) == 1
        finally:
            await cache.aclose()

    asyncio.run(scenario())
    client = redis.Redis.from_url(throwaway_redis.url)
    try:
        assert client.get("after") == b"3"  # the write after recovery reached the restarted server
    finally:
        client.close()

    # A second outage is a new fallback with its own single warning.
    async def second_outage() -> CacheStatus:
        cache = make_cache(throwaway_redis.url, logger=logger, retry_after_s=retry_after_s)
        try:
            await cache.set("x", b"x", None)
            throwaway_redis.kill()
            await cache.set("y", b"y", None)
            assert await cache.get("x") == b"x"
            return cache.status()
        finally:
            await cache.aclose()

    status = asyncio.run(second_outage())
    assert status.fallbacks == 1 and status.backend == "memory"
    assert len(events(capture, "cache.redis_unavailable")) == 2


def test_unreachable_redis_from_the_start_falls_back_and_logs_once() -> None:
    logger, capture = capturing_logger()

    async def scenario() -> CacheStatus:
        cache = make_cache(f"redis://127.0.0.1:{free_port()}/0", logger=logger, retry_after_s=60)
        try:
            # 50 writes start together: all reach for Redis before any has failed; one outage, one warning.
            await asyncio.gather(*(cache.set(f"k{i}", b"v", None) for i in range(50)))
            values = await asyncio.gather(*(cache.get(f"k{i}") for i in range(50)))
            assert values == [b"v"] * 50
            status = await cache.check()  # within the back-off: no probe
            assert status.backend == "memory" and not status.redis_reachable
            return status
        finally:
            await cache.aclose()

    status = asyncio.run(scenario())
    assert status.fallbacks == 1 and status.redis_errors == 50
    assert status.fallback_operations == 100
    assert len(events(capture, "cache.redis_unavailable")) == 1
    assert events(capture, "cache.redis_unavailable")[0]["log_level"] == "warning"


# ---------------------------------------------------------------------------------------------- SingleFlight


def test_single_flight_runs_identical_calls_once() -> None:
    async def scenario() -> None:
        flight = SingleFlight()
        calls = 0
        release = asyncio.Event()

        async def judge_call() -> bytes:
            nonlocal calls
            calls += 1
            await release.wait()
            return b"verdict"

        waiters = [asyncio.create_task(flight.run("k", judge_call)) for _ in range(50)]
        await asyncio.sleep(0)
        assert len(flight) == 1
        release.set()
        assert await asyncio.gather(*waiters) == [b"verdict"] * 50
        assert calls == 1
        assert len(flight) == 0  # finished keys are released
        # A later call runs again (single-flight is not a cache).
        assert await flight.run("k", judge_call) == b"verdict"
        assert calls == 2

    asyncio.run(scenario())


def test_single_flight_keeps_different_keys_apart() -> None:
    async def scenario() -> None:
        flight = SingleFlight()
        calls: list[str] = []

        def factory(key: str):
            async def call() -> str:
                calls.append(key)
                await asyncio.sleep(0.01)
                return key.upper()

            return call

        results = await asyncio.gather(*(flight.run(k, factory(k)) for k in ["a", "b", "a", "c", "b"]))
        assert results == ["A", "B", "A", "C", "B"]
        assert sorted(calls) == ["a", "b", "c"]
        assert len(flight) == 0

    asyncio.run(scenario())


def test_single_flight_exception_reaches_every_waiter_and_releases_key() -> None:
    class JudgeDown(RuntimeError):
        pass

    async def scenario() -> None:
        flight = SingleFlight()
        calls = 0

        async def failing() -> bytes:
            nonlocal calls
            calls += 1
            await asyncio.sleep(0.01)
            raise JudgeDown("judge unavailable")

        outcomes = await asyncio.gather(*(flight.run("k", failing) for _ in range(50)), return_exceptions=True)
        assert calls == 1
        assert all(isinstance(outcome, JudgeDown) for outcome in outcomes)
        assert len(flight) == 0

        async def succeeding() -> bytes:
            return b"ok"

        assert await flight.run("k", succeeding) == b"ok"  # the key is usable again

    asyncio.run(scenario())


def test_single_flight_survives_a_cancelled_caller_and_stops_when_all_leave() -> None:
    async def scenario() -> None:
        flight = SingleFlight()
        started = asyncio.Event()
        release = asyncio.Event()
        cancelled = asyncio.Event()

        async def slow() -> str:
            started.set()
            try:
                await release.wait()
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return "done"

        first = asyncio.create_task(flight.run("k", slow))
        second = asyncio.create_task(flight.run("k", slow))
        await started.wait()
        first.cancel()  # the leader's client went away: the follower still gets the answer
        with pytest.raises(asyncio.CancelledError):
            await first
        release.set()
        assert await second == "done"
        assert not cancelled.is_set()
        assert len(flight) == 0

        # When every caller leaves, the shared call is cancelled and the key freed at once.
        started.clear()
        release.clear()
        only = asyncio.create_task(flight.run("k", slow))
        await started.wait()
        only.cancel()
        with pytest.raises(asyncio.CancelledError):
            await only
        assert len(flight) == 0
        await asyncio.wait_for(cancelled.wait(), timeout=1)

    asyncio.run(scenario())
