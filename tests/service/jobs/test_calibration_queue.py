"""Calibration jobs (POST /v1/calibrations) on the job queue: with REDIS_URL they wait in SAQ until a real worker
process (``python -m service.worker``, started by the test) fits them, and the result is the in-process path's.

* submitted with no worker running, the job stays ``queued`` (nothing runs in the API process);
* a worker fits it; the job read back from Redis reports the same cells and held-out figures as the same body
  calibrated in-process by an app without Redis (the fits are seeded), and its artifact activates and serves;
* a second API process (another app on the same Redis and queue) sees the same job;
* DELETE removes the record: 404 afterwards.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from service.config.limits import LimitSettings
from service.config.settings import Settings, default_thresholds_path
from tests.labelled_data import write_labelled_file
from tests.service.conftest import AppHarness
from tests.service.jobs.conftest import REDIS_URL
from tests.service.jobs.test_worker import Workers, workers  # noqa: F401 - the fixture

pytestmark = pytest.mark.redis

ADMIN = "queue-admin"
HEADERS = {"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/x-ndjson"}


def wait_done(client: Any, job_id: str, timeout_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        info = client.get(f"/v1/calibrations/{job_id}", headers=HEADERS).json()
        if info["status"] in ("done", "failed") or time.monotonic() > deadline:
            return info
        time.sleep(0.1)


def test_a_calibration_job_runs_on_a_worker_and_matches_the_in_process_path(
    start_app: Callable[[Settings], AppHarness],
    workers: Callable[..., Workers],  # noqa: F811 - the fixture
    queue_name: str,
    data_dir: Path,
    tmp_path: Path,
) -> None:
    labelled = tmp_path / "labels.jsonl"
    write_labelled_file(data_dir, labelled, k=7, limit=600)
    body = labelled.read_bytes()

    def settings(**overrides: Any) -> Settings:
        from service.config.jobs import JobSettings

        fields: dict[str, Any] = {"artifacts_dir": tmp_path / "activated", **overrides}
        return Settings(thresholds_path=default_thresholds_path(), admin_api_key=ADMIN,
                        limits=LimitSettings(reload_dir=tmp_path),
                        jobs=JobSettings(queue=queue_name, heartbeat_s=5, sweep_s=1), **fields)  # fmt: skip

    queued_app = start_app(settings(redis_url=REDIS_URL))
    client = queued_app.client
    submitted = client.post("/v1/calibrations", headers=HEADERS, content=body)
    assert submitted.status_code == 202, submitted.text
    job_id = submitted.json()["id"]
    time.sleep(1.0)
    waiting = client.get(f"/v1/calibrations/{job_id}", headers=HEADERS).json()
    assert waiting["status"] == "queued" and waiting["progress"] == 0.0  # no worker yet: nothing ran in the API
    assert queued_app.services.calibrations.jobs == {}

    group = workers(settings(redis_url=REDIS_URL))
    group.start()
    done = wait_done(client, job_id, timeout_s=120)
    assert done["status"] == "done" and done["progress"] == 1.0, done
    ran = [line for line in group.log_lines(0) if line.get("event") == "calibration.job"]
    outcomes = [(line["calibration_id"], line["outcome"]) for line in ran]
    # Fitted exactly once. SAQ's sweep runs as a worker starts and can catch the task between its dequeue and
    # its activation; it then queues the task again (seen once in a full-suite run). That second run finds the
    # job finished and fits nothing: its outcome is "finished", never a second "done".
    assert outcomes[:1] == [(job_id, "done")], outcomes
    assert all(outcome == (job_id, "finished") for outcome in outcomes[1:]), outcomes

    other_api = start_app(settings(redis_url=REDIS_URL)).client  # another API process on the same Redis
    assert other_api.get(f"/v1/calibrations/{job_id}", headers=HEADERS).json() == done

    in_process = start_app(settings(artifacts_dir=tmp_path / "in-process")).client
    local = in_process.post("/v1/calibrations", headers=HEADERS, content=body)
    assert local.status_code == 202
    local_done = wait_done(in_process, local.json()["id"], timeout_s=120)
    assert local_done["status"] == "done"
    for field in ("n_rows", "levels", "warnings"):
        assert done[field] == local_done[field], field
    # the same fit, but each job draws its own seed for the uniforms of its expected rows' randomised tests
    assert _drawn_part(done["cells"]) == _drawn_part(local_done["cells"])

    # the worker fitted the decision rules too (the same ones: compared with the cells above)
    for cell in done["cells"]:  # six rows in each guarantee mode
        assert sorted(Counter(c["mode"] for c in cell["certifications"]).items()) == [("expected", 6), ("pac", 6)]
        assert cell["decision_summary"]

    activated = client.post(f"/v1/calibrations/{job_id}/activate", headers=HEADERS)
    assert activated.status_code == 200, activated.text
    assert activated.json()["cells_added"] == len(done["cells"]) > 0
    assert client.get(f"/v1/calibrations/{job_id}", headers=HEADERS).json()["activated"] is True
    scored = client.post("/v1/score", json={"criterion": "helpfulness", "judge": "acme-judge-v1", "judge_score": 5})
    assert scored.status_code == 200 and scored.json()["calibrated"] is True
    assert "no certified decision rule" not in scored.json()["reason"]  # the worker's artifact has its rules

    assert client.delete(f"/v1/calibrations/{job_id}", headers=HEADERS).status_code == 204
    assert client.get(f"/v1/calibrations/{job_id}", headers=HEADERS).status_code == 404
    assert other_api.get(f"/v1/calibrations/{job_id}", headers=HEADERS).status_code == 404


def _drawn_part(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cells without what a job's uniforms decide: whether each expected row's test accepted (certified,
    accept share, the end of its reason) and so the expected half of the decision summary."""

    def row(certification: dict[str, Any]) -> dict[str, Any]:
        if certification["mode"] != "expected":
            return certification
        tested = certification["reason"].rsplit(": ", 1)[0]
        return {**certification, "certified": None, "accept_share": None, "reason": tested}

    return [
        {
            **cell,
            "certifications": [row(c) for c in cell["certifications"]],
            "decision_summary": cell["decision_summary"].split("; pac: ", 1)[-1],
        }
        for cell in cells
    ]
