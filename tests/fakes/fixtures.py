"""Pytest fixtures for the judge stand-in (loaded as a plugin by ``tests/conftest.py``).

======================================  =================================================================
fixture / helper                        gives
======================================  =================================================================
``judge_server``                        a running ``JudgeServer`` (function scope; stopped afterwards)
``judge_config_for(server, **kw)``      a ``JudgeConfig`` pointing at it, fast test timings, overridable
``server.judge_config(**kw)``           the same, as a method
``otlp_collector``                      a running ``OtlpCollector`` (OTLP/HTTP traces; skips without otel)
======================================  =================================================================

Example::

    def test_retry(judge_server):
        judge_server.inject("error_500")                       # the next request fails once
        config = judge_server.judge_config(max_retries=1)      # any JudgeConfig field can be overridden

        async def main():
            async with JudgeClient(config) as judge:
                return await judge.score("coherence", "article ...", "summary ...")

        assert asyncio.run(main()).judge_score == 4             # default_score
        assert judge_server.call_count == 2                     # the client retried

See ``tests/fakes/judge_server.py`` for every knob (responder, latency, faults, request log).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.judge_server import JudgeServer, judge_config_for
from tests.fakes.otlp_collector import OtlpCollector

__all__ = ["judge_config_for", "judge_server", "otlp_collector"]


@pytest.fixture
def judge_server() -> Iterator[JudgeServer]:
    """A judge stand-in on 127.0.0.1, default score 4 and no latency; configure it in the test."""
    with JudgeServer() as server:
        yield server


@pytest.fixture
def otlp_collector() -> Iterator[OtlpCollector]:
    """An OTLP/HTTP trace collector on 127.0.0.1 (``collector.endpoint``); stopped afterwards."""
    pytest.importorskip("opentelemetry.proto", reason="the otel extra is part of make install's dev install")
    with OtlpCollector() as running:
        yield running
