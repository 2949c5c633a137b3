"""The chunk runner in-process: heartbeats while a chunk runs, retries counted, job metrics exposed."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from service.config.settings import Settings
from service.jobs.queue import JobQueue
from service.observability.logging import make_logs
from service.worker import make_runner
from tests.fakes.judge_server import JudgeServer
from tests.service.conftest import STAND_IN

pytestmark = pytest.mark.redis


def test_a_running_chunk_beats_its_heartbeat_and_counts_items_and_retries(
    jobs_settings: Callable[..., Settings], judge_server: JudgeServer, tmp_path: Path
) -> None:
    judges_file = tmp_path / "judges.json"
    judges_file.write_bytes(msgspec.json.encode([judge_server.judge_config(name=STAND_IN, max_concurrency=2)]))
    judge_server.latency_s = 0.3  # 6 live items, 2 at a time: the chunk lasts about 0.9 s
    settings = jobs_settings({"judges_file": judges_file}, heartbeat_s=1, chunk_size=8, worker_concurrency=2)
    run = uuid.uuid4().hex  # texts of this run only: no answer comes from the Redis cache
    lines = [json.dumps({"criterion": "coherence", "document": f"D{run}{i}", "summary": f"S{i}"}).encode()
             for i in range(6)]  # fmt: skip
    lines += [b'{"criterion": "coherence", "judge": "stand-in", "judge_score": 4}', b"[1, 2"]
    beats: list[float] = []

    async def main() -> tuple[str, bytes]:
        jobs = JobQueue.connect(settings.redis_url, settings.jobs)
        runner, judges, metrics = make_runner(settings, jobs, make_logs("WARNING").logger)
        await judges.start()
        try:
            await jobs.store.put_chunk("job-1", 0, lines)
            await jobs.store.create("job-1", n_items=len(lines), chunk_size=8, digest="d")

            async def heartbeat() -> None:
                beats.append(asyncio.get_running_loop().time())

            outcome = await runner.run_chunk("job-1", 0, attempt=2, heartbeat=heartbeat)
            return outcome, metrics.render()
        finally:
            await judges.aclose()
            await jobs.aclose()

    outcome, exposition = asyncio.run(main())
    assert outcome == "written"
    assert len(beats) >= 2  # every JOB_HEARTBEAT_S / 3 while the chunk ran
    text = exposition.decode()
    assert 'cj_job_items_total{outcome="ok"} 7.0' in text
    assert 'cj_job_items_total{outcome="failed"} 1.0' in text
    assert "cj_job_chunk_retries_total 1.0" in text
    assert f"cj_worker_heartbeats_total {float(len(beats))}" in text
    assert 'cj_job_chunks_total{outcome="written"} 1.0' in text
