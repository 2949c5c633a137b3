"""Job workers export traces as the API does, to a real OTLP/HTTP collector (``tests/fakes/otlp_collector.py``).

* In-process, with the worker's own runner (``service.worker.make_runner``) and the settings' tracing: one
  ``job.chunk`` span per chunk run (outcome and counts on it), the chunk's judge-call spans as its children, one
  ``gen_ai.evaluation.result`` event on it per verdict scored (live and the caller's own), none for a bad line.
* A real worker process (``python -m service.worker``) with OTEL_EXPORTER_OTLP_ENDPOINT: a job's chunks arrive as
  spans under the worker's OTEL_SERVICE_NAME, the last of them flushed when SIGTERM stops it.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from service.config.settings import Settings
from service.jobs.queue import JobQueue
from service.observability.logging import make_logs
from service.observability.traces import make_tracing
from service.worker import make_runner
from tests.fakes.judge_server import JudgeServer
from tests.fakes.otlp_collector import OtlpCollector, otlp_attributes
from tests.redis_url import REDIS_TEST_URL
from tests.service.conftest import STAND_IN, AppHarness
from tests.service.jobs.test_api import NDJSON, ndjson
from tests.service.jobs.test_worker import Workers, wait_for

pytestmark = pytest.mark.redis

EVALUATION = "gen_ai.evaluation.result"


def _judges_file(tmp_path: Path, server: JudgeServer) -> Path:
    path = tmp_path / "judges.json"
    path.write_bytes(msgspec.json.encode([server.judge_config(name=STAND_IN, max_concurrency=2)]))
    return path


def _chunk_spans(spans: list[Any]) -> list[Any]:
    return [span for span in spans if span.name == "job.chunk" and span.kind == span.SPAN_KIND_CONSUMER]


def test_a_chunk_run_by_the_worker_runner_exports_its_span_judge_calls_and_verdict_events(
    otlp_collector: OtlpCollector,
    jobs_settings: Callable[..., Settings],
    judge_server: JudgeServer,
    tmp_path: Path,
) -> None:
    judge_server.usage = (50, 2)
    settings = jobs_settings(
        {
            "judges_file": _judges_file(tmp_path, judge_server),
            "otel_exporter_otlp_endpoint": otlp_collector.endpoint,
            "otel_service_name": "cj-worker-under-test",
        },
        chunk_size=8,
    )
    run = uuid.uuid4().hex  # texts of this run only: no answer comes from the Redis cache
    lines = [json.dumps({"criterion": "coherence", "document": f"D{run}{i}", "summary": f"S{i}"}).encode()
             for i in range(3)]  # fmt: skip
    lines += [b'{"criterion": "relevance", "judge": "stand-in", "judge_score": 4}', b"[1, 2"]
    tracing = make_tracing(settings)
    assert tracing.enabled

    async def main() -> list[str]:
        jobs = JobQueue.connect(settings.redis_url, settings.jobs)
        runner, judges, _ = make_runner(settings, jobs, make_logs("WARNING").logger, tracing)
        await judges.start()
        try:
            await jobs.store.put_chunk("job-t", 0, lines)
            await jobs.store.create("job-t", n_items=len(lines), chunk_size=8, digest="d")
            first = await runner.run_chunk("job-t", 0, attempt=1)
            again = await runner.run_chunk("job-t", 0, attempt=2)  # results exist: nothing judged
            return [first, again]
        finally:
            await judges.aclose()
            await jobs.aclose()
            tracing.shutdown()  # exports what is buffered, as the worker does on exit

    assert asyncio.run(main()) == ["written", "duplicate"]
    spans = otlp_collector.spans()
    assert {"service.name": "cj-worker-under-test"}.items() <= otlp_collector.resources()[0].items()
    chunks = _chunk_spans(spans)
    assert len(chunks) == 2, [s.name for s in spans]
    by_outcome = {otlp_attributes(span.attributes)["cj.job.outcome"]: span for span in chunks}
    written, duplicate = by_outcome["written"], by_outcome["duplicate"]
    attributes = otlp_attributes(written.attributes)
    assert attributes["cj.job_id"] == "job-t" and attributes["cj.job.chunk"] == 0
    assert (attributes["cj.job.attempt"], attributes["cj.job.n_items"], attributes["cj.job.n_failed"]) == (1, 5, 1)
    assert otlp_attributes(duplicate.attributes)["cj.job.n_items"] == 0 and not duplicate.events
    calls = [span for span in spans if span.kind == span.SPAN_KIND_CLIENT]
    assert len(calls) == 3  # one per live item; the caller's own verdict and the bad line make none
    assert all(c.parent_span_id == written.span_id and c.trace_id == written.trace_id for c in calls)
    call = otlp_attributes(calls[0].attributes)
    assert call["cj.judge"] == STAND_IN and call["cj.judge_call.outcome"] == "ok"
    assert (call["gen_ai.usage.input_tokens"], call["gen_ai.usage.output_tokens"]) == (50, 2)
    events = [otlp_attributes(e.attributes) for e in written.events if e.name == EVALUATION]
    assert sorted(e["gen_ai.evaluation.name"] for e in events) == ["coherence"] * 3 + ["relevance"]
    own = next(e for e in events if e["gen_ai.evaluation.name"] == "relevance")
    assert own["cj.judge"] == STAND_IN and own["gen_ai.evaluation.score.label"] in {"accept", "escalate", "abstain"}
    assert len(spans) == 2 + 3


def test_without_the_endpoint_the_runner_makes_no_span(
    jobs_settings: Callable[..., Settings], judge_server: JudgeServer, tmp_path: Path
) -> None:
    """The default: make_tracing and make_runner give the no-op tracing; the runner still writes its results."""
    settings = jobs_settings({"judges_file": _judges_file(tmp_path, judge_server)})
    tracing = make_tracing(settings)
    assert not tracing.enabled

    async def main() -> tuple[str, str]:
        jobs = JobQueue.connect(settings.redis_url, settings.jobs)
        runner, judges, _ = make_runner(settings, jobs, make_logs("WARNING").logger)  # no tracing passed
        await judges.start()
        try:
            await jobs.store.put_chunk("job-n", 0, [b'{"criterion": "coherence", "judge": "x", "judge_score": 3}'])
            await jobs.store.create("job-n", n_items=1, chunk_size=8, digest="d")
            return await runner.run_chunk("job-n", 0), type(runner.tracing).__name__
        finally:
            await judges.aclose()
            await jobs.aclose()

    assert asyncio.run(main()) == ("written", "Tracing")


def test_a_worker_process_exports_the_spans_of_the_chunks_it_runs(
    otlp_collector: OtlpCollector,
    start_app: Callable[[Settings], AppHarness],
    jobs_settings: Callable[..., Settings],
    judge_server: JudgeServer,
    tmp_path: Path,
) -> None:
    settings = jobs_settings(chunk_size=3, heartbeat_s=2, sweep_s=1)
    client = start_app(settings).client  # the API without traces: only the worker exports
    run = time.time_ns()
    items = [{"criterion": "coherence", "document": f"Doc {run}-{i}.", "summary": f"S{i}."} for i in range(6)]
    job_id = client.post("/v1/jobs", content=ndjson(items), headers=NDJSON).json()["job_id"]
    group = Workers(
        settings,
        tmp_path,
        {
            "JUDGES_FILE": str(_judges_file(tmp_path, judge_server)),
            "OTEL_EXPORTER_OTLP_ENDPOINT": otlp_collector.endpoint,
            "OTEL_SERVICE_NAME": "cj-worker-process",
        },
    )
    try:
        worker = group.start()
        status = wait_for(client, job_id, lambda s: s["status"] == "succeeded", 60)
        assert status["status"] == "succeeded" and status["n_failed"] == 0, status
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=20) == 0
    finally:
        group.stop_all()
    spans = otlp_collector.spans()
    assert {"service.name": "cj-worker-process"}.items() <= otlp_collector.resources()[0].items()
    every_chunk = _chunk_spans(spans)
    assert {otlp_attributes(s.attributes)["cj.job_id"] for s in every_chunk} == {job_id}
    # Each chunk written once. On a loaded machine SAQ's sweep may deliver a chunk again (at-least-once): that run
    # finds the chunk done, or loses the race to write it, and its span says "duplicate", never a second "written".
    chunks = [s for s in every_chunk if otlp_attributes(s.attributes)["cj.job.outcome"] == "written"]
    assert sorted(otlp_attributes(s.attributes)["cj.job.chunk"] for s in chunks) == [0, 1]
    assert all(otlp_attributes(s.attributes)["cj.job.outcome"] == "duplicate" for s in every_chunk if s not in chunks)
    written_ids = {s.span_id for s in chunks}
    calls = [span for span in spans if span.kind == span.SPAN_KIND_CLIENT and span.parent_span_id in written_ids]
    assert len(calls) == 6 and {c.parent_span_id for c in calls} == written_ids
    assert sum(1 for s in chunks for e in s.events if e.name == EVALUATION) == 6


def test_a_worker_with_the_endpoint_but_without_the_extra_exits_2_naming_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import service.observability
    import service.worker

    monkeypatch.delitem(sys.modules, "service.observability.otel", raising=False)  # as if never imported
    monkeypatch.delattr(service.observability, "otel", raising=False)
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # as if not installed: importing it fails
    monkeypatch.setenv("REDIS_URL", REDIS_TEST_URL)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    assert service.worker.main() == 2
    assert re.search(r"service\.worker: .*otel extra.*conformal-judge\[otel\]", capsys.readouterr().err)
