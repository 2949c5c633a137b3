"""Bring your own judge over HTTP and the CLI: a judge the shipped artifact lacks, a criterion SummEval lacks, a 1..7
scale; calibrate on half of the documents, activate, score the other half, and the shipped judges stay calibrated."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from offline.cli import main as offline_main
from service.config.limits import LimitSettings
from service.config.settings import Settings, default_thresholds_path
from tests.labelled_data import write_labelled_file
from tests.service.conftest import AppHarness

ADMIN = "byo-admin"
HEADERS = {"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/x-ndjson"}
K = 7


@pytest.fixture(scope="module")
def halves(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    """(labelled file of the first 50 documents, rows of the other 50): documents split, never items."""
    folder = tmp_path_factory.mktemp("byo")
    every = folder / "all.jsonl"
    write_labelled_file(data_dir, every, k=K)
    rows = [json.loads(line) for line in every.read_text().splitlines()]
    documents = sorted({r["group"] for r in rows})
    fit_docs = set(documents[: len(documents) // 2])
    fit = folder / "fit.jsonl"
    fit.write_text("".join(json.dumps(r) + "\n" for r in rows if r["group"] in fit_docs))
    return fit, [r for r in rows if r["group"] not in fit_docs]


@pytest.fixture
def harness(start_app: Callable[[Settings], AppHarness], tmp_path: Path) -> AppHarness:
    return start_app(
        Settings(
            thresholds_path=default_thresholds_path(),
            admin_api_key=ADMIN,
            artifacts_dir=tmp_path / "activated",
            limits=LimitSettings(reload_dir=tmp_path),
        )
    )


def _wait(harness: AppHarness, job_id: str, limit_s: float = 180.0) -> dict:
    """The job's answer once done or failed; a wall-clock limit (not a count of polls) generous enough for a
    loaded 2-core machine, where two fits of the same upload took 27-36 s."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        info = harness.client.get(f"/v1/calibrations/{job_id}", headers=HEADERS).json()
        if info["status"] in ("done", "failed"):
            return info
        time.sleep(0.05)
    raise AssertionError(f"the calibration job did not finish in {limit_s:.0f} s")


def _coverage(harness: AppHarness, rows: list[dict], alpha: float) -> tuple[float, set[int]]:
    items = [
        {"criterion": "helpfulness", "judge": "acme-judge-v1", "judge_score": r["judge_score"], "alpha": alpha}
        for r in rows
    ]
    hits, sizes = 0, set()
    for start in range(0, len(items), 500):
        reply = harness.client.post("/v1/score/batch", json={"items": items[start : start + 500]})
        assert reply.status_code == 200, reply.text
        for row, result in zip(rows[start : start + 500], reply.json()["results"], strict=True):
            answer = result["result"]
            assert answer["calibrated"] is True and set(answer["prediction_set"]) <= set(range(1, K + 1))
            hits += int(row["human"] + 0.5) in answer["prediction_set"]
            sizes.add(answer["set_size"])
    return hits / len(rows), sizes


def test_http_calibrate_activate_score_on_unseen_documents(harness: AppHarness, halves) -> None:
    fit, unseen = halves
    client = harness.client
    refused = client.post("/v1/score", json={"criterion": "helpfulness", "judge": "acme-judge-v1", "judge_score": 6})
    assert refused.status_code == 422 and "helpfulness" not in refused.json()["allowed"]

    reply = client.post("/v1/calibrations", headers=HEADERS, content=fit.read_bytes())
    assert reply.status_code == 202, reply.text
    job = _wait(harness, reply.json()["id"])
    assert job["status"] == "done" and job["progress"] == 1.0, job
    [cell] = job["cells"]
    assert (cell["judge"], cell["criterion"], cell["n_labels"], cell["n_groups"]) == (
        "acme-judge-v1",
        "helpfulness",
        K,
        50,
    )
    for level in cell["heldout"]:
        assert level["share_accept"] + level["share_review"] + level["share_escalate"] == pytest.approx(1.0)

    activated = client.post(f"/v1/calibrations/{job['id']}/activate", headers=HEADERS)
    assert activated.status_code == 200, activated.text
    assert activated.json()["cells_added"] == 1
    levels = client.get("/v1/calibration").json()["levels"]
    for alpha in (0.05, 0.1, 0.2):
        if alpha not in levels:
            continue
        coverage, sizes = _coverage(harness, unseen, alpha)
        assert coverage >= 1 - alpha - 0.02, (alpha, coverage)  # the validity rule on unseen documents
        assert max(sizes) <= K
    shipped = client.post(
        "/v1/score", json={"criterion": "relevance", "judge": "gpt-4o-mini-2024-07-18", "judge_score": 4}
    ).json()
    assert shipped["calibrated"] is True and set(shipped["prediction_set"]) <= set(range(1, 6))

    assert client.delete(f"/v1/calibrations/{job['id']}", headers=HEADERS).status_code == 204
    gone = client.post("/v1/score", json={"criterion": "helpfulness", "judge": "acme-judge-v1", "judge_score": 6})
    assert gone.status_code == 422
    assert client.get(f"/v1/calibrations/{job['id']}", headers=HEADERS).status_code == 404


def test_cli_artifact_loads_beside_the_shipped_one(harness: AppHarness, halves, tmp_path: Path) -> None:
    fit, unseen = halves
    out = tmp_path / "report"
    assert offline_main(["calibrate", "--labels", str(fit), "--out", str(out), "--splits", "4", "--no-progress"]) == 0
    reply = harness.client.post(
        "/v1/calibration/reload",
        headers={"Authorization": f"Bearer {ADMIN}"},
        json={"path": str(out / "thresholds.json"), "name": "acme"},
    )
    assert reply.status_code == 200, reply.text
    coverage, _ = _coverage(harness, unseen, 0.1)
    assert coverage >= 0.88


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        (b"", 422, "empty"),
        (
            b'{"item_id": "a", "criterion": "c", "judge": "j", "human": 3, "judge_score": 3}\n'
            b'{"item_id": "a", "criterion": "c", "judge": "j", "human": 4, "judge_score": 3}\n',
            422,
            "body:2: item_id",
        ),
        (b'{"item_id": "a", "criterion": "c", "judge": "j", "human": 9, "judge_score": 3}\n', 422, "body:1: human"),
        (b'{"item_id": "a", "criterion": "c", "judge": "j", "judge_score": 3}\n', 422, "body:1: human"),
    ],
)
def test_bad_uploads_are_refused_with_the_line_and_nothing_is_queued(
    harness: AppHarness, body: bytes, status: int, needle: str
) -> None:
    reply = harness.client.post("/v1/calibrations", headers=HEADERS, content=body)
    assert reply.status_code == status, reply.text
    assert needle in reply.json()["detail"]
    assert harness.services.calibrations.jobs == {}


def test_upload_limits_and_keys(start_app: Callable[[Settings], AppHarness], harness: AppHarness) -> None:
    small = start_app(Settings(thresholds_path=default_thresholds_path(), admin_api_key=ADMIN, max_body_bytes=4096))
    big = small.client.post("/v1/calibrations", headers=HEADERS, content=b"x" * 10_000)
    assert big.status_code == 413
    wrong_type = harness.client.post(
        "/v1/calibrations", headers={**HEADERS, "Content-Type": "text/plain"}, content=b"{}"
    )
    assert wrong_type.status_code == 415
    no_key = harness.client.post("/v1/calibrations", headers={"Content-Type": "application/x-ndjson"}, content=b"")
    assert no_key.status_code == 401
    assert (
        harness.client.post("/v1/calibrations/nope/activate", headers={"Authorization": f"Bearer {ADMIN}"}).status_code
        == 404
    )


def test_calibration_lists_decision_shares_per_cell_kind_and_level(harness: AppHarness, halves) -> None:
    fit, _ = halves
    client = harness.client
    job = _wait(harness, client.post("/v1/calibrations", headers=HEADERS, content=fit.read_bytes()).json()["id"])
    assert client.post(f"/v1/calibrations/{job['id']}/activate", headers=HEADERS).status_code == 200
    info = client.get("/v1/calibration").json()
    mine = [e for e in info["entries"] if e["judge"] == "acme-judge-v1"]
    assert mine and {e["input_kind"] for e in mine} == {"score"} and {e["n_labels"] for e in mine} == {K}
    for entry in mine:
        shares = entry["accept_share"] + entry["review_share"] + entry["escalate_share"]
        assert shares == pytest.approx(1.0) and entry["heldout_coverage_p5"] is not None
    defaults = [e for e in mine if e["is_default"] and e["mode"] == "expected"]  # the job shows the default mode
    assert {e["method"] for e in defaults} == {job["cells"][0]["default_method"]}
    [cell] = [c for a in info["artifacts"] for c in a["cells"] if c["judge"] == "acme-judge-v1"]
    assert cell["default_methods"] == {"score": job["cells"][0]["default_method"]}


def test_activation_without_artifacts_dir_warns_it_lasts_for_the_process(
    start_app: Callable[[Settings], AppHarness], harness: AppHarness, halves
) -> None:
    fit, _ = halves
    transient = start_app(Settings(thresholds_path=default_thresholds_path(), admin_api_key=ADMIN))
    for app, expect_warning in ((harness, False), (transient, True)):
        job = _wait(app, app.client.post("/v1/calibrations", headers=HEADERS, content=fit.read_bytes()).json()["id"])
        reply = app.client.post(f"/v1/calibrations/{job['id']}/activate", headers=HEADERS)
        assert reply.status_code == 200, reply.text
        warnings = reply.json()["warnings"]
        logged = [line for line in app.log_lines() if line["event"] == "calibration.not_persisted"]
        if expect_warning:
            assert len(warnings) == 1 and "this process only" in warnings[0] and job["artifact_name"] in warnings[0]
            assert [(line["level"], line["artifact"]) for line in logged] == [("warning", job["artifact_name"])]
        else:
            assert warnings == [] and logged == []


def _tone_rows(judge: str, criterion: str = "tone", **extra: str) -> bytes:
    import numpy as np

    rng = np.random.default_rng(7)
    rows = []
    for i in range(120):
        human = int(rng.integers(1, 6))
        rows.append(
            {
                "item_id": f"i{i}",
                "criterion": criterion,
                "judge": judge,
                "human": human,
                "judge_score": int(np.clip(human + rng.integers(-1, 2), 1, 5)),
                "group": f"d{i // 4}",
                **extra,
            }
        )
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def test_a_live_judge_calibrated_under_a_family_it_never_uses_is_a_warning(
    start_app: Callable[[Settings], AppHarness], judges_file: Path
) -> None:
    app = start_app(Settings(thresholds_path=default_thresholds_path(), admin_api_key=ADMIN, judges_file=judges_file))
    stand_in = "stand-in"  # configured in judges_file with prompt family paper

    def warnings_of(body: bytes) -> list[str]:
        reply = app.client.post("/v1/calibrations", headers=HEADERS, content=body)
        assert reply.status_code == 202, reply.text
        return [w for w in reply.json()["warnings"] if "prompt family" in w]

    [warning] = warnings_of(_tone_rows(stand_in))  # the default family, custom
    assert "stand-in / custom / tone" in warning and "'paper'" in warning
    assert warnings_of(_tone_rows(stand_in, prompt_family="paper")) == []
    assert warnings_of(_tone_rows("not-configured")) == []  # a calibration-only judge has no live family
    # faithfulness is asked under the factuality families, never the judge's own
    [faithfulness] = warnings_of(_tone_rows(stand_in, criterion="faithfulness", prompt_family="paper"))
    assert "stand-in / paper / faithfulness" in faithfulness and "'factuality_qa'" in faithfulness
    assert warnings_of(_tone_rows(stand_in, criterion="faithfulness", prompt_family="factuality_qa")) == []


def test_a_mean_of_samples_judge_over_http(harness: AppHarness) -> None:
    import numpy as np

    rng = np.random.default_rng(4)
    rows = []
    for i in range(200):
        human = int(rng.integers(1, 6))
        rows.append(
            {
                "item_id": f"i{i}",
                "criterion": "tone",
                "judge": "sampler",
                "human": human,
                "mean_of_samples": round(float(np.clip(human + rng.normal(0, 0.6), 1, 5)), 3),
                "group": f"d{i // 5}",
            }
        )
    body = "".join(json.dumps(r) + "\n" for r in rows).encode()
    job = _wait(harness, harness.client.post("/v1/calibrations", headers=HEADERS, content=body).json()["id"])
    assert [c["input_kind"] for c in job["cells"]] == ["mean"]
    assert harness.client.post(f"/v1/calibrations/{job['id']}/activate", headers=HEADERS).status_code == 200
    scored = harness.client.post(
        "/v1/score", json={"criterion": "tone", "judge": "sampler", "mean_of_samples": 3.4}
    ).json()
    assert scored["calibrated"] is True and scored["input_kind"] == "mean"


def test_a_json_array_of_rows_is_the_same_upload_as_json_lines(harness: AppHarness, halves) -> None:
    fit, _ = halves
    lines = fit.read_bytes()
    as_lines = harness.client.post("/v1/calibrations", headers=HEADERS, content=lines)
    rows = [json.loads(line) for line in lines.splitlines()]
    as_array = harness.client.post(
        "/v1/calibrations", headers={**HEADERS, "Content-Type": "application/json"}, json=rows
    )
    assert as_lines.status_code == as_array.status_code == 202, as_array.text
    assert as_array.json()["n_rows"] == as_lines.json()["n_rows"] == len(rows)
    bad = harness.client.post(
        "/v1/calibrations",
        headers={**HEADERS, "Content-Type": "application/json"},
        json=[rows[0], {"criterion": "helpfulness"}],
    )
    assert bad.status_code == 422 and "body:2:" in bad.json()["detail"]  # row i is line i + 1
    broken = harness.client.post(
        "/v1/calibrations", headers={**HEADERS, "Content-Type": "application/json"}, content=b"[{"
    )
    assert broken.status_code == 400
    assert _wait(harness, as_lines.json()["id"])["status"] == _wait(harness, as_array.json()["id"])["status"] == "done"


def test_the_cli_the_job_and_the_service_show_the_same_per_label_figures(
    harness: AppHarness, halves, tmp_path: Path
) -> None:
    """One labelled file: the CLI's artifact, the HTTP job's answer, GET /v1/calibration's summary line and the
    answers /v1/score serves for the file's own verdicts agree on the per-label rule's figures."""
    fit, _ = halves
    out = tmp_path / "views"
    assert offline_main(["calibrate", "--labels", str(fit), "--out", str(out), "--splits", "2", "--no-progress"]) == 0
    [cli_rule] = json.loads((out / "thresholds.json").read_text())["label_rules"]
    assert "per human label" in (out / "index.md").read_text()
    reply = harness.client.post("/v1/calibrations", headers=HEADERS, content=fit.read_bytes())
    job = _wait(harness, reply.json()["id"])
    [cell] = job["cells"]
    assert cell["per_label"]["summary"] == cli_rule["summary"]
    assert cell["per_label"]["skill"] == cli_rule["skill"]
    assert harness.client.post(f"/v1/calibrations/{job['id']}/activate", headers=HEADERS).status_code == 200
    lines = harness.client.get("/v1/calibration", params={"view": "summary"}).json()["cells"]
    [line] = [x for x in lines if x["judge"] == "acme-judge-v1" and x["mode"] == "per_label"]
    summary = cli_rule["summary"]
    assert (line["set_size"], line["accept_share"]) == (summary["set_size"], summary["accept_share"])
    rows = [json.loads(row) for row in fit.read_text().splitlines()]
    items = [{"criterion": "helpfulness", "judge": "acme-judge-v1", "judge_score": r["judge_score"]} for r in rows]
    sizes, accepted = [], []
    for start in range(0, len(items), 500):
        answer = harness.client.post("/v1/score/batch", json={"items": items[start : start + 500]})
        for result in answer.json()["results"]:
            sizes.append(result["result"]["set_size"])
            accepted.append(result["result"]["decision"] == "accept")
    assert sum(sizes) / len(sizes) == pytest.approx(summary["served_set_size"], abs=1e-12)
    assert sum(accepted) / len(accepted) == pytest.approx(summary["served_accept_share"], abs=1e-12)
