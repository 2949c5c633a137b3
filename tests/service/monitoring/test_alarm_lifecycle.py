"""An alarm reaches the job workers' answers too, and clears when a new calibration of the cell is activated (the
monitor is keyed by the id of the artifact that owns the cell), over HTTP with a real Redis."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from artifact.thresholds import save_artifact
from service.config.limits import LimitSettings
from service.config.settings import Settings
from tests.service.conftest import AppHarness, build_artifact
from tests.service.jobs.conftest import run_chunks
from tests.service.jobs.test_api import NDJSON, ndjson
from tests.service.monitoring.conftest import feedback_item
from tests.service.monitoring.test_feedback_api import ADMIN, SCORE, outside, served_set

pytestmark = pytest.mark.redis
ADMIN_HEADERS = {"authorization": f"Bearer {ADMIN}"}


def _alarm(client, prefix: str = "h") -> None:
    label = outside(served_set(client))
    items = [feedback_item(f"{prefix}{i}", label) for i in range(12)]
    assert client.post("/v1/feedback", json={"items": items}).json()["alarms_raised"] == 1


def test_a_job_scored_by_a_worker_escalates_an_alarmed_cell(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    settings = jobs_settings({"monitor_max_items": 1, "monitor_refresh_s": 0.0})
    client = start_app(settings).client
    _alarm(client)
    body = ndjson([SCORE, {**SCORE, "criterion": "coherence"}])
    job_id = client.post("/v1/jobs", content=body, headers=NDJSON).json()["job_id"]
    assert run_chunks(settings, job_id, [0]) == ["written"]
    lines = [json.loads(line) for line in client.get(f"/v1/jobs/{job_id}/results").text.splitlines() if line]
    assert lines[0]["result"]["rule_failed"] is True and "feedback monitor" in lines[0]["result"]["reason"]
    assert lines[1]["result"]["rule_failed"] is False


def test_activating_a_new_calibration_of_the_cell_clears_its_alarm(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    settings = jobs_settings(
        {"monitor_max_items": 1, "admin_api_key": ADMIN, "limits": LimitSettings(reload_dir=tmp_path)}
    )
    client = start_app(settings).client
    _alarm(client)
    old = client.get("/v1/monitor").json()["cells"][0]
    assert client.post("/v1/score", json=SCORE).json()["rule_failed"] is True

    recalibrated = tmp_path / "recalibrated.json"
    save_artifact(build_artifact(code_version="recalibrated"), recalibrated)
    reload = client.post("/v1/calibration/reload", headers=ADMIN_HEADERS, json={"path": str(recalibrated)})
    assert reload.status_code == 200, reload.text
    answer = client.post("/v1/score", json=SCORE).json()
    assert answer["rule_failed"] is False and answer["calibration_id"] != old["calibration_id"]

    cells = {c["monitor_id"]: c for c in client.get("/v1/monitor").json()["cells"]}
    assert cells[old["monitor_id"]]["status"] == "alarm" and cells[old["monitor_id"]]["active"] is False
    fresh = client.post("/v1/feedback", json={"items": [feedback_item("new-1", answer["point"])]}).json()
    assert fresh["accepted"] == 1 and fresh["duplicates"] == 0  # the new calibration's monitor starts empty
    new_cells = [c for c in client.get("/v1/monitor").json()["cells"] if c["monitor_id"] != old["monitor_id"]]
    assert len(new_cells) == 1 and new_cells[0]["status"] == "ok" and new_cells[0]["active"] is True
    assert new_cells[0]["calibration_id"] == answer["calibration_id"]
