"""Recalibration from feedback in one admin call: a monitor's collected labels become a calibration job (the rules of
POST /v1/calibrations) under the name of the artifact that owns the cell; once run and activated, the cell's
calibration id changes and its alarm no longer escalates answers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from artifact.thresholds import ThresholdsArtifact, save_artifact
from service.config.limits import LimitSettings
from service.config.settings import Settings
from service.jobs.calibration_jobs.jobs import CALIBRATION_SPLITS, run_queued_calibration
from service.jobs.queue import JobQueue
from tests.service.artifacts.test_worker_calibration import MINE, _mine
from tests.service.conftest import AppHarness
from tests.service.monitoring.test_feedback_api import ADMIN, outside

pytestmark = pytest.mark.redis
ADMIN_HEADERS = {"authorization": f"Bearer {ADMIN}"}
VERDICT = {"criterion": "relevance", "judge": MINE, "prompt_family": "paper", "judge_score": 3}


def _run(settings: Settings, job_id: str) -> str:
    async def main() -> str:
        queue = JobQueue.connect(settings.redis_url, settings.jobs)
        try:
            return await run_queued_calibration(
                queue, job_id, n_splits=CALIBRATION_SPLITS, accept_max=2, escalate_min=5
            )
        finally:
            await queue.aclose()

    return asyncio.run(main())


def test_recalibrating_from_feedback_clears_the_alarm(
    start_app: Callable[[Settings], AppHarness],
    jobs_settings: Callable[..., Settings],
    artifact: ThresholdsArtifact,
    tmp_path: Path,
) -> None:
    save_artifact(_mine(artifact), tmp_path / "mine.json")
    settings = jobs_settings(
        {"monitor_max_items": 2, "admin_api_key": ADMIN, "limits": LimitSettings(reload_dir=tmp_path)}
    )
    client = start_app(settings).client
    loaded = client.post("/v1/calibration/reload", headers=ADMIN_HEADERS, json={"path": "mine.json", "name": "mine"})
    assert loaded.status_code == 200, loaded.text
    before = client.post("/v1/score", json=VERDICT).json()
    label = outside(before["prediction_set"])
    items = [
        {**VERDICT, "judge_score": 3, "human": label, "item_id": f"d{d}/{i}", "group": f"d{d}", "done": i == 1}
        for d in range(12)
        for i in range(2)
    ]
    assert client.post("/v1/feedback", json={"items": items}).json()["alarms_raised"] == 1
    assert client.post("/v1/score", json=VERDICT).json()["rule_failed"] is True
    monitor_id = client.get("/v1/monitor").json()["cells"][0]["monitor_id"]

    assert client.post("/v1/monitor/recalibrate", json={"monitor_id": monitor_id}).status_code == 401
    started = client.post("/v1/monitor/recalibrate", json={"monitor_id": monitor_id}, headers=ADMIN_HEADERS)
    assert started.status_code == 202, started.text
    job = started.json()
    assert (job["rows"], job["documents"], job["artifact_name"], job["status"]) == (24, 12, "mine", "queued")
    assert job["status_url"] == f"/v1/calibrations/{job['job_id']}" and "replaces artifact 'mine'" in job["note"]
    assert job["whose_rows"] == "single tenant" and job["rows_kept"] == 24
    assert "a worker (python -m service.worker) must be running" in job["note"]

    assert _run(settings, job["job_id"]) == "done"
    info = client.get(job["status_url"], headers=ADMIN_HEADERS).json()
    assert info["status"] == "done", json.dumps(info)[:500]
    cell = info["cells"][0]
    assert (cell["judge"], cell["n_items"], cell["n_groups"]) == (MINE, 24, 12)
    assert cell["decision_summary"]  # what the new rule accepts, in words
    activated = client.post(f"/v1/calibrations/{job['job_id']}/activate", headers=ADMIN_HEADERS)
    assert activated.status_code == 200, activated.text
    after = client.post("/v1/score", json=VERDICT).json()
    assert after["calibration_id"] != before["calibration_id"] and "feedback monitor" not in after["reason"]
    old = next(c for c in client.get("/v1/monitor").json()["cells"] if c["monitor_id"] == monitor_id)
    assert old["status"] == "alarm" and old["active"] is False  # kept for the record, no longer applied


def test_recalibrating_an_unknown_monitor_is_404_and_a_small_one_422(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    client = start_app(jobs_settings({"admin_api_key": ADMIN})).client
    missing = client.post("/v1/monitor/recalibrate", json={"monitor_id": "0" * 32}, headers=ADMIN_HEADERS)
    assert missing.status_code == 404
    one = {"criterion": "relevance", "judge": "stand-in", "prompt_family": "paper", "judge_score": 3}
    client.post("/v1/feedback", json={"items": [{**one, "human": 3, "item_id": "only"}]})
    monitor_id = client.get("/v1/monitor").json()["cells"][0]["monitor_id"]
    small = client.post("/v1/monitor/recalibrate", json={"monitor_id": monitor_id}, headers=ADMIN_HEADERS)
    assert small.status_code == 422 and "groups" in small.json()["detail"]


KEY_1 = "tenant-one-key-7c1d"


def test_a_tenants_labels_recalibrate_only_when_the_admin_chooses_and_are_subsampled_to_the_fit_limit(
    start_app: Callable[[Settings], AppHarness],
    jobs_settings: Callable[..., Settings],
    artifact: ThresholdsArtifact,
    tmp_path: Path,
) -> None:
    save_artifact(_mine(artifact), tmp_path / "mine.json")
    limits = LimitSettings(reload_dir=tmp_path, max_calibration_cell_rows=10)
    settings = jobs_settings({"monitor_max_items": 2, "admin_api_key": ADMIN, "api_keys": (KEY_1,), "limits": limits})
    client = start_app(settings).client
    loaded = client.post("/v1/calibration/reload", headers=ADMIN_HEADERS, json={"path": "mine.json", "name": "mine"})
    assert loaded.status_code == 200, loaded.text
    tenant = {"authorization": f"Bearer {KEY_1}"}
    label = outside(client.post("/v1/score", json=VERDICT, headers=tenant).json()["prediction_set"])
    items = [
        {**VERDICT, "judge_score": 3, "human": label, "item_id": f"d{d}/{i}", "group": f"d{d}", "done": i == 1}
        for d in range(12)
        for i in range(2)
    ]
    assert client.post("/v1/feedback", json={"items": items}, headers=tenant).json()["alarms_raised"] == 1
    monitor_id = client.get("/v1/monitor", headers=tenant).json()["cells"][0]["monitor_id"]
    hijack = client.post("/v1/monitor/recalibrate", json={"monitor_id": monitor_id}, headers=ADMIN_HEADERS)
    assert hijack.status_code == 409 and "for_every_tenant" in hijack.json()["detail"]
    assert "change the others' answers" in hijack.json()["detail"]
    chosen = client.post(
        "/v1/monitor/recalibrate", json={"monitor_id": monitor_id, "for_every_tenant": True}, headers=ADMIN_HEADERS
    )
    assert chosen.status_code == 202, chosen.text
    job = chosen.json()
    assert job["whose_rows"].startswith("tenant ") and job["rows_after_alarm"] > 0
    assert (job["rows"], job["rows_kept"], job["documents"]) == (10, 24, 5)  # whole documents, within the limit
    assert "MAX_CALIBRATION_CELL_ROWS=10" in job["note"] and f"{job['rows_after_alarm']} of them" in job["note"]
