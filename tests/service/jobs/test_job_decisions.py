"""Job items carry the certified decision's parameters like /v1/score items (tolerance, accept_alpha,
pass_threshold): the worker scores each line with the same score_item (tests/service/scoring/test_decisions.py's
artifact)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from artifact.thresholds import save_artifact
from service.config.jobs import JobSettings
from service.config.settings import Settings
from service.jobs.queue import JobQueue
from service.observability.logging import make_logs
from service.worker import make_runner
from tests.service.jobs.conftest import REDIS_URL
from tests.service.scoring.test_decisions import JUDGE, build_decision_artifact

pytestmark = pytest.mark.redis


def test_job_items_pass_their_decision_parameters_through(queue_name: str, tmp_path: Path) -> None:
    path = tmp_path / "decisions.json"
    save_artifact(build_decision_artifact(), path)
    settings = Settings(thresholds_path=path, redis_url=REDIS_URL, jobs=JobSettings(queue=queue_name))
    base = {"criterion": "coherence", "judge": JUDGE, "judge_score": 5, "guarantee": "pac"}  # the rows are pac ones
    lines = [
        json.dumps({**base, **extra}).encode()
        for extra in ({}, {"accept_alpha": 0.2}, {"pass_threshold": 4}, {"tolerance": 1}, {"tolerance": 0})
    ]

    async def main() -> list[dict]:
        jobs = JobQueue.connect(settings.redis_url, settings.jobs)
        runner, judges, _ = make_runner(settings, jobs, make_logs("WARNING").logger)
        await judges.start()
        try:
            await jobs.store.put_chunk("job-d", 0, lines)
            await jobs.store.create("job-d", n_items=len(lines), chunk_size=8, digest="d")
            assert await runner.run_chunk("job-d", 0, attempt=1) == "written"
            record = await jobs.store.get("job-d")
            blocks = [block async for block in jobs.store.result_lines(record, after=-1, limit=None)]
            return [json.loads(line) for line in b"".join(blocks).splitlines() if line.strip()]
        finally:
            await judges.aclose()
            await jobs.aclose()

    results = asyncio.run(main())
    assert [r["ok"] for r in results] == [True, True, True, True, False]
    decided = [(r["result"]["decision"], r["result"]["point"], r["result"]["rule_failed"]) for r in results[:4]]
    assert decided == [("escalate", 4, False), ("accept", 4, False), ("accept", 4, False), ("escalate", 4, True)]
    assert [g["kind"] for g in results[2]["result"]["guarantees"]] == ["set_coverage", "quality_gate"]
    assert "tolerance" in results[4]["error"]["detail"]
