"""A queued calibration job's report cards and the warnings its run added survive the Redis record
(service.jobs.calibration_jobs.records), so the API shows what a worker computed."""

from __future__ import annotations

import asyncio
import uuid

import numpy as np
import pytest
import redis.asyncio as redis_asyncio

from artifact.labels import LabelledCell
from artifact.report_evidence import ReportOptions, build_report_card
from service.jobs.calibration_jobs.records import CalibrationPlan, CalibrationRecords
from tests.service.conftest import synthetic_verdicts
from tests.service.jobs.conftest import REDIS_URL

pytestmark = pytest.mark.redis


def test_report_cards_and_run_warnings_round_trip_through_the_record() -> None:
    labels, scores, _ = synthetic_verdicts(80, 3)
    cell = LabelledCell(judge="j", prompt_family="p", criterion="c", n_labels=5,
                        item_ids=tuple(str(i) for i in range(80)), labels=labels.astype(np.int64),
                        judge_scores=scores.astype(np.int64), probabilities=None,
                        groups=tuple(f"d{i // 4}" for i in range(80)))  # fmt: skip
    card = build_report_card(cell, None, ReportOptions(n_resamples=50, planner_sizes=(10,), planner_draws=2))
    prefix = f"cj:test-report-records:{uuid.uuid4().hex}:"
    plan = CalibrationPlan(id="j1", name="cal-j1", created_at="t", n_rows=80, cells_planned=[], levels=(0.1,),
                           warnings=["from the plan"], scale=5)  # fmt: skip

    async def main() -> tuple[CalibrationPlan, dict]:
        client = redis_asyncio.Redis.from_url(REDIS_URL)
        try:
            records = CalibrationRecords(client, prefix, ttl_s=60)
            await records.put(plan, b"{}")
            assert await records.save("j1", status="done", done=1, total=1, report_cards=[card],
                                      warnings=["from the run"])  # fmt: skip
            found = await records.load("j1")
            assert found is not None
            await records.delete("j1")
            return found
        finally:
            await client.aclose()

    loaded_plan, state = asyncio.run(main())
    assert state["report_cards"] == [card]
    assert loaded_plan.warnings == ["from the plan"] and state["run_warnings"] == ["from the run"]
