"""Calibration management under attack (issue 22): reserved and malformed artifact names, the primary artifact
never removed through the API, exact activation reports, Redis down answered 503 with Retry-After, activate racing
delete, cells too small or too large refused up front, unprintable names refused, and the spec's own example
accepted."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

import service.jobs.calibration_jobs.fitting as fitting
import service.jobs.calibration_jobs.jobs as calibration_jobs
from artifact.labels import labelled_cells, read_labels
from artifact.thresholds import ThresholdsArtifact, save_artifact
from service.artifacts.state import CalibrationHolder
from service.config.limits import LimitSettings
from service.config.settings import Settings
from service.jobs.calibration_jobs.fitting import CalibrationJob, run_calibration
from service.jobs.calibration_jobs.jobs import CalibrationJobs
from service.openapi_export import DEFAULT_PATH
from tests.service.artifacts.test_artifacts_merge import user_artifact
from tests.service.conftest import STAND_IN, AppHarness

ADMIN = "hardening-admin"
AUTH = {"Authorization": f"Bearer {ADMIN}"}
LINES = {**AUTH, "Content-Type": "application/x-ndjson"}


def _rows(n_groups: int, per_group: int, *, judge: str = "my-judge", criterion: str = "tone") -> bytes:
    rows = [
        {
            "item_id": f"i{g}-{i}",
            "criterion": criterion,
            "judge": judge,
            "human": 1 + (g + i) % 5,
            "judge_score": 1 + (g + 2 * i) % 5,
            "group": f"d{g}",
        }
        for g in range(n_groups)
        for i in range(per_group)
    ]
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _wait(harness: AppHarness, job_id: str) -> dict:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        info = harness.client.get(f"/v1/calibrations/{job_id}", headers=AUTH).json()
        if info["status"] in ("done", "failed"):
            return info
        time.sleep(0.05)
    raise AssertionError("the calibration job did not finish")


@pytest.fixture
def harness(start_app: Callable[[Settings], AppHarness], make_settings, tmp_path: Path) -> AppHarness:
    save_artifact(user_artifact(), tmp_path / "acme.json")
    save_artifact(user_artifact(criterion="tone"), tmp_path / "acme-tone.json")
    return start_app(
        make_settings(
            admin_api_key=ADMIN,
            artifacts_dir=tmp_path / "activated",
            limits=LimitSettings(reload_dir=tmp_path, max_calibration_cell_rows=500),
        )
    )


def _entries(harness: AppHarness) -> int:
    return harness.client.get("/v1/calibration").json()["n_entries"]


@pytest.mark.parametrize("name", ["primary", "Primary", "PRIMARY"])
def test_a_reserved_name_is_refused_and_the_primary_stays(
    harness: AppHarness, start_app: Callable[[Settings], AppHarness], make_settings, tmp_path: Path, name: str
) -> None:
    before = _entries(harness)
    submitted = harness.client.post(f"/v1/calibrations?name={name}", headers=LINES, content=_rows(6, 3))
    assert submitted.status_code == 422 and "reserved" in submitted.json()["detail"], submitted.text
    assert harness.services.calibrations.jobs == {}
    if name != "primary":  # "primary" through reload names the primary artifact itself (a reload of it)
        reloaded = harness.client.post("/v1/calibration/reload", headers=AUTH, json={"path": "acme.json", "name": name})
        assert reloaded.status_code == 422 and "reserved" in reloaded.json()["detail"], reloaded.text
    assert _entries(harness) == before
    assert not (tmp_path / "activated" / f"{name}.json").exists()


def test_a_persisted_primary_is_not_loaded_over_the_shipped_one(
    start_app: Callable[[Settings], AppHarness], make_settings, tmp_path: Path, artifact: ThresholdsArtifact
) -> None:
    folder = tmp_path / "activated"
    folder.mkdir()
    save_artifact(user_artifact(), folder / "primary.json")  # left by an older version (issue 22, D7)
    harness = start_app(make_settings(artifacts_dir=folder))
    info = harness.client.get("/v1/calibration").json()
    assert [a["name"] for a in info["artifacts"]] == ["primary"] and info["n_entries"] == len(artifact.entries)
    assert any("primary.json" in s and "reserved" in s for s in harness.services.calibration.skipped)


def test_the_primary_artifact_cannot_be_removed(harness: AppHarness) -> None:
    before = _entries(harness)
    with pytest.raises(Exception, match="cannot be removed"):
        asyncio.run(harness.services.calibration.remove("primary"))
    assert _entries(harness) == before
    assert harness.client.get("/readyz").status_code == 200


@pytest.mark.parametrize("name", ["x.json", "a..b", "X.JSON", "-x", "a/b"])
def test_malformed_reload_names_are_422_not_500(harness: AppHarness, name: str) -> None:
    reply = harness.client.post("/v1/calibration/reload", headers=AUTH, json={"path": "acme.json", "name": name})
    assert reply.status_code == 422, reply.text
    assert reply.headers["content-type"].startswith("application/problem+json")
    assert [a["name"] for a in harness.client.get("/v1/calibration").json()["artifacts"]] == ["primary"]


def test_activation_reports_what_it_replaces_and_removes(harness: AppHarness) -> None:
    first = harness.client.post("/v1/calibration/reload", headers=AUTH, json={"path": "acme.json", "name": "mine"})
    assert (first.json()["cells_added"], first.json()["cells_replaced"], first.json()["cells_removed"]) == (1, 0, 0)
    again = harness.client.post("/v1/calibration/reload", headers=AUTH, json={"path": "acme.json", "name": "mine"})
    assert (again.json()["cells_added"], again.json()["cells_replaced"], again.json()["cells_removed"]) == (0, 1, 0)
    other = harness.client.post("/v1/calibration/reload", headers=AUTH, json={"path": "acme-tone.json", "name": "mine"})
    assert (other.json()["cells_added"], other.json()["cells_replaced"], other.json()["cells_removed"]) == (1, 0, 1)


@pytest.mark.parametrize("judge", ["evil\u202eeduj", "nul\x00judge", "zero\u200bwidth", "tab\tjudge", "\u2066x"])
def test_unprintable_names_are_refused_at_submission(harness: AppHarness, judge: str) -> None:
    reply = harness.client.post("/v1/calibrations", headers=LINES, content=_rows(6, 3, judge=judge))
    assert reply.status_code == 422 and "printable" in reply.json()["detail"], reply.text
    assert harness.services.calibrations.jobs == {}


def test_an_artifact_with_unprintable_names_is_refused_by_reload(harness: AppHarness, tmp_path: Path) -> None:
    save_artifact(user_artifact(judge="acme\u202e"), tmp_path / "bidi.json")
    reply = harness.client.post("/v1/calibration/reload", headers=AUTH, json={"path": "bidi.json", "name": "bidi"})
    assert reply.status_code == 422 and "printable" in reply.json()["detail"], reply.text
    spec = harness.client.get("/schema/openapi.json").text
    assert "\\u202e" not in spec.lower() and "\u202e" not in spec


@pytest.mark.parametrize(("groups", "per_group", "needle"), [(2, 4, "2 group"), (3, 3, "3 group"), (6, 1, "6 items")])
def test_a_cell_too_small_to_fit_is_refused_up_front(
    harness: AppHarness, groups: int, per_group: int, needle: str
) -> None:
    reply = harness.client.post("/v1/calibrations", headers=LINES, content=_rows(groups, per_group))
    assert reply.status_code == 422, reply.text
    assert needle in reply.json()["detail"] and "at least" in reply.json()["detail"]
    assert harness.services.calibrations.jobs == {}


def test_a_cell_with_too_few_items_in_its_smallest_groups_is_refused(harness: AppHarness) -> None:
    rows = [
        {
            "item_id": f"i{g}-{i}",
            "criterion": "tone",
            "judge": "my-judge",
            "human": 1 + i % 5,
            "judge_score": 1 + (g + i) % 5,
            "group": f"d{g}",
        }
        for g, n in enumerate((1, 1, 3, 3))
        for i in range(n)
    ]
    body = "".join(json.dumps(r) + "\n" for r in rows).encode()
    reply = harness.client.post("/v1/calibrations", headers=LINES, content=body)  # it would fail inside the fit
    assert reply.status_code == 422 and "smallest quarter" in reply.json()["detail"], reply.text


def test_the_smallest_accepted_cell_ends_done(harness: AppHarness) -> None:
    reply = harness.client.post("/v1/calibrations", headers=LINES, content=_rows(4, 2))
    assert reply.status_code == 202, reply.text
    assert _wait(harness, reply.json()["id"])["status"] == "done"


def test_a_cell_above_the_row_cap_is_refused(harness: AppHarness) -> None:
    reply = harness.client.post("/v1/calibrations", headers=LINES, content=_rows(4, 126))
    assert reply.status_code == 422 and "MAX_CALIBRATION_CELL_ROWS=500" in reply.json()["detail"], reply.text
    assert harness.services.calibrations.jobs == {}


def test_a_fit_that_fails_ends_failed_naming_the_cell() -> None:
    # bypassing submission's up-front rule: the job must still end failed with a reason, not an internal error
    cells = labelled_cells(read_labels([("body", _rows(2, 3))], default_scale=5))
    job = CalibrationJob(
        id="j", name="cal-j", created_at="t", n_rows=6, cells_planned=[], levels=(0.1, 0.2), warnings=[]
    )
    asyncio.run(run_calibration(job, cells, n_splits=4, accept_max=2, escalate_min=5, fitter=fitting.fit_in_thread))
    assert job.status == "failed" and job.error is not None
    assert "'my-judge' / " in job.error and "6 items in 2 group(s)" in job.error and "label more" in job.error


def test_the_spec_example_upload_is_accepted_and_fits(harness: AppHarness) -> None:
    spec = msgspec.json.decode(Path(DEFAULT_PATH).read_bytes())
    example = spec["paths"]["/v1/calibrations"]["post"]["requestBody"]["content"]["application/json"]["example"]
    reply = harness.client.post("/v1/calibrations", headers={**AUTH, "Content-Type": "application/json"}, json=example)
    assert reply.status_code == 202, reply.text
    assert _wait(harness, reply.json()["id"])["status"] == "done"


def test_redis_down_answers_503_with_retry_after_on_every_calibration_route(
    start_app: Callable[[Settings], AppHarness], make_settings
) -> None:
    harness = start_app(make_settings(admin_api_key=ADMIN, redis_url="redis://127.0.0.1:1/0"))
    job = "0" * 16
    for method, path, kwargs in [
        ("GET", f"/v1/calibrations/{job}", {"headers": AUTH}),
        ("POST", f"/v1/calibrations/{job}/activate", {"headers": AUTH}),
        ("DELETE", f"/v1/calibrations/{job}", {"headers": AUTH}),
        ("POST", "/v1/calibrations", {"headers": LINES, "content": _rows(6, 3)}),
    ]:
        reply = harness.client.request(method, path, **kwargs)
        assert reply.status_code == 503, (method, path, reply.text)
        assert reply.headers["content-type"].startswith("application/problem+json")
        assert int(reply.headers["retry-after"]) > 0
        assert reply.json()["type"].endswith("jobs-unavailable")
    assert (
        harness.client.post(
            "/v1/score", json={"criterion": "relevance", "judge": STAND_IN, "judge_score": 3}
        ).status_code
        == 200
    )


def test_activate_racing_delete_leaves_no_orphan_artifact(artifact_path: Path, tmp_path: Path) -> None:
    holder = CalibrationHolder(artifact_path, artifacts_dir=tmp_path / "activated")
    holder.load_initial()
    saving, release = threading.Event(), threading.Event()
    save = holder.activated.save

    def slow_save(name: str, artifact: ThresholdsArtifact) -> None:
        saving.set()
        release.wait(10)  # the deletion arrives while the artifact is being persisted
        save(name, artifact)

    holder.activated.save = slow_save  # type: ignore[method-assign]
    jobs = CalibrationJobs(accept_max=2, escalate_min=5)
    job = CalibrationJob(
        id="race",
        name="mine",
        created_at="t",
        n_rows=1,
        cells_planned=[],
        levels=(0.1,),
        warnings=[],
        status="done",
        artifact=user_artifact(),
    )
    jobs.jobs[job.id] = job

    async def main() -> tuple[object, object]:
        activating = asyncio.create_task(jobs.activate(job.id, holder))
        while not saving.is_set():
            await asyncio.sleep(0.01)
        deleting = asyncio.create_task(jobs.delete(job.id, holder))
        await asyncio.sleep(0.2)
        release.set()
        return tuple(await asyncio.gather(activating, deleting, return_exceptions=True))  # type: ignore[return-value]

    asyncio.run(main())
    assert holder.artifacts.names() == ["primary"]  # nothing live without a job to delete it by
    assert list((tmp_path / "activated").glob("*.json")) == []


def test_validation_runs_off_the_event_loop_and_fits_outside_the_api_process(
    harness: AppHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_loop: list[bool] = []
    validate = calibration_jobs.job_cells

    def spy(body: bytes, scale: int) -> object:
        try:
            asyncio.get_running_loop()
            on_loop.append(True)
        except RuntimeError:  # no event loop runs in this thread
            on_loop.append(False)
        return validate(body, scale)

    def no_fit_here(*args: object, **kwargs: object) -> object:
        raise AssertionError("a fit ran inside the API process")

    monkeypatch.setattr(calibration_jobs, "job_cells", spy)  # where submit looks it up
    monkeypatch.setattr(fitting, "fit_modes", no_fit_here)  # a child process imports its own, unpatched
    reply = harness.client.post("/v1/calibrations", headers=LINES, content=_rows(4, 3))
    assert reply.status_code == 202, reply.text
    assert on_loop == [False]
    job = _wait(harness, reply.json()["id"])
    assert job["status"] == "done", job["error"]


def test_the_spec_states_what_the_calibration_routes_answer(harness: AppHarness) -> None:
    served = harness.client.get("/schema/openapi.json").json()
    for spec in (msgspec.json.decode(Path(DEFAULT_PATH).read_bytes()), served):
        paths = spec["paths"]
        assert "content" not in paths["/v1/calibrations/{job_id}"]["delete"]["responses"]["204"]  # 204: no body
        assert paths["/v1/calibration/reload"]["post"]["requestBody"].get("required") is False  # none: reload it
        for method, path in (
            ("get", "/v1/calibrations/{job_id}"),
            ("delete", "/v1/calibrations/{job_id}"),
            ("post", "/v1/calibrations/{job_id}/activate"),
            ("post", "/v1/calibrations"),
        ):
            assert "503" in paths[path][method]["responses"], (method, path)
    no_body = harness.client.post("/v1/calibration/reload", headers=AUTH)
    assert no_body.status_code == 200, no_body.text
    deleted = harness.client.delete("/v1/calibrations/0123456789abcdef", headers=AUTH)
    assert deleted.status_code == 404  # and a 204 carries no body (checked by the spec above)
