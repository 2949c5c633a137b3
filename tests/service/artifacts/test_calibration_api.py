"""GET /v1/calibration, GET /v1/judges and POST /v1/calibration/reload (admin, atomic, broken files refused)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest
from litestar.testing import AsyncTestClient

from artifact.thresholds import FORMAT_VERSION, ThresholdIndex, ThresholdsArtifact, save_artifact
from service.config.limits import LimitSettings
from service.config.settings import Settings
from service.http.app import create_app
from tests.fakes.judge_server import JudgeServer
from tests.service.conftest import RECORDED, STAND_IN, AppHarness, build_artifact

ADMIN = "admin-secret-key"
ADMIN_HEADERS = {"Authorization": f"Bearer {ADMIN}"}


def test_calibration_describes_the_artifact(app: AppHarness, artifact: ThresholdsArtifact, artifact_path: Path):
    reply = app.client.get("/v1/calibration")
    assert reply.status_code == 200
    data = reply.json()
    assert data["calibration_id"] == ThresholdIndex(artifact).calibration_id
    assert data["path"] == artifact_path.name  # without the admin key: the file's name, not where it is
    assert (data["created_at"], data["code_version"], data["data_hash"]) == (
        artifact.created_at,
        artifact.code_version,
        artifact.data_hash,
    )
    assert data["judges"] == [RECORDED, STAND_IN]
    assert data["criteria"] == ["coherence", "faithfulness", "fluency", "relevance"]
    assert data["levels"] == [0.1, 0.2]
    assert data["n_entries"] == len(artifact.entries) == len(data["entries"])
    first = data["entries"][0]
    source = artifact.entries[0]
    assert first["n_cal"] == source.fitted.n_cal and first["heldout_coverage"] == source.heldout_coverage
    assert first["coverage_target"] == pytest.approx(1 - source.alpha)
    defaults = [e for e in data["entries"] if e["is_default"]]
    assert {(e["judge"], e["criterion"], e["method"]) for e in defaults} == {
        (STAND_IN, "coherence", "lac"),
        (STAND_IN, "relevance", "residual"),
        (RECORDED, "coherence", "residual"),
    }


def test_judges_without_configuration(app: AppHarness):
    data = app.client.get("/v1/judges").json()
    assert data["default_judge"] is None
    assert all(not judge["configured"] for judge in data["judges"])


def test_calibration_missing_is_503(start_app: Callable[[Settings], AppHarness], tmp_path: Path):
    harness = start_app(Settings(thresholds_path=tmp_path / "none.json", admin_api_key=ADMIN))
    reply = harness.client.get("/v1/calibration", headers=ADMIN_HEADERS)  # the load error names the file: admin only
    assert reply.status_code == 503 and "none.json" in reply.json()["detail"]


# ------------------------------------------------------------------------------------------------ reload


@pytest.fixture
def admin_app(start_app: Callable[[Settings], AppHarness], make_settings, tmp_path: Path) -> AppHarness:
    """An app with ADMIN_API_KEY set that reloads artifacts from the test's tmp_path (RELOAD_DIR)."""
    return start_app(make_settings(admin_api_key=ADMIN, limits=LimitSettings(reload_dir=tmp_path)))


@pytest.fixture
def second_artifact(tmp_path: Path) -> Path:
    """A different valid artifact (another code_version, so another calibration_id)."""
    path = tmp_path / "second.json"
    save_artifact(build_artifact(code_version="second"), path)
    return path


def test_reload_requires_the_admin_key(admin_app: AppHarness, app: AppHarness):
    no_key = admin_app.client.post("/v1/calibration/reload")
    assert no_key.status_code == 401 and no_key.headers["www-authenticate"].startswith("Bearer")
    wrong = admin_app.client.post("/v1/calibration/reload", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 403
    disabled = app.client.post("/v1/calibration/reload", headers=ADMIN_HEADERS)
    assert disabled.status_code == 403 and "ADMIN_API_KEY" in disabled.json()["detail"]
    for headers in ({}, ADMIN_HEADERS):  # without an admin key configured, say so whatever the caller sends
        refused = app.client.post("/v1/calibration/reload", headers=headers)
        assert refused.status_code == 403 and "no admin key is configured" in refused.json()["detail"]
    assert admin_app.client.post("/v1/calibration/reload", headers=ADMIN_HEADERS).status_code == 200


def test_reload_swaps_in_a_new_artifact(admin_app: AppHarness, second_artifact: Path):
    before = admin_app.client.get("/v1/calibration").json()["calibration_id"]
    reply = admin_app.client.post("/v1/calibration/reload", headers=ADMIN_HEADERS, json={"path": str(second_artifact)})
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert data["previous_calibration_id"] == before
    after = data["calibration"]["calibration_id"]
    assert after != before and data["calibration"]["code_version"] == "second"
    assert admin_app.client.get("/v1/calibration").json()["calibration_id"] == after
    scored = admin_app.client.post("/v1/score", json={"criterion": "relevance", "judge": STAND_IN, "judge_score": 3})
    assert scored.json()["calibration_id"] == after
    assert 'cj_calibration_reloads_total{outcome="ok"} 1.0' in admin_app.client.get("/metrics").text


def _broken_files(tmp_path: Path, artifact: ThresholdsArtifact) -> dict[str, Path]:
    malformed = tmp_path / "malformed.json"
    malformed.write_text("{not json")
    wrong_version = tmp_path / "wrong_version.json"
    raw = msgspec.to_builtins(artifact)
    wrong_version.write_text(json.dumps({**raw, "format_version": FORMAT_VERSION + 1}))
    bad_entry = tmp_path / "bad_entry.json"
    raw_bad = msgspec.to_builtins(artifact)
    raw_bad["entries"][0]["alpha"] = 1.5
    bad_entry.write_text(json.dumps(raw_bad))
    return {"malformed": malformed, "format_version": wrong_version, "alpha": bad_entry}


def test_broken_artifacts_are_refused_and_the_old_one_stays(
    admin_app: AppHarness, artifact: ThresholdsArtifact, tmp_path: Path
):
    before = admin_app.client.get("/v1/calibration").json()["calibration_id"]
    for problem_word, path in _broken_files(tmp_path, artifact).items():
        reply = admin_app.client.post("/v1/calibration/reload", headers=ADMIN_HEADERS, json={"path": str(path)})
        assert reply.status_code == 422, (problem_word, reply.text)
        problem = reply.json()
        assert problem["type"].endswith("invalid-artifact")
        assert str(path) in problem["detail"] and problem_word in problem["detail"], problem["detail"]
        assert admin_app.client.get("/v1/calibration").json()["calibration_id"] == before
    assert admin_app.client.get("/readyz").status_code == 200
    assert 'cj_calibration_reloads_total{outcome="refused"} 3.0' in admin_app.client.get("/metrics").text


def test_reload_without_body_rereads_the_current_path(admin_app: AppHarness, artifact_path: Path):
    reply = admin_app.client.post("/v1/calibration/reload", headers=ADMIN_HEADERS)
    assert reply.status_code == 200
    data = reply.json()
    assert data["calibration"]["path"] == str(artifact_path)
    assert data["previous_calibration_id"] == data["calibration"]["calibration_id"]


def test_reload_recovers_a_service_started_without_calibration(
    start_app: Callable[[Settings], AppHarness], tmp_path: Path, artifact_path: Path
):
    harness = start_app(Settings(thresholds_path=tmp_path / "late.json", admin_api_key=ADMIN))
    assert harness.client.get("/readyz").status_code == 503
    (tmp_path / "late.json").write_bytes(artifact_path.read_bytes())
    reply = harness.client.post("/v1/calibration/reload", headers=ADMIN_HEADERS)
    assert reply.status_code == 200 and reply.json()["previous_calibration_id"] is None
    assert harness.client.get("/readyz").status_code == 200


ANYWHERE = LimitSettings(reload_dir=Path("/"))  # these tests reload files from two temporary directories


def test_a_batch_keeps_one_snapshot_while_a_reload_lands(
    make_settings, judges_file: Path, stand_in: JudgeServer, second_artifact: Path
):
    """A reload during a batch of slow live calls: every item uses the snapshot taken at the batch's start."""
    stand_in.latency_s = 0.05

    async def scenario() -> tuple[set[str], str, str]:
        app = create_app(make_settings(judges_file=judges_file, admin_api_key=ADMIN, limits=ANYWHERE))
        async with AsyncTestClient(app) as client:
            old = (await client.get("/v1/calibration")).json()["calibration_id"]
            items = [{"criterion": "relevance", "document": "Doc.", "summary": f"S{k}."} for k in range(16)]
            batch = asyncio.create_task(client.post("/v1/score/batch", json={"items": items}))
            await asyncio.sleep(0.02)
            reload = await client.post(
                "/v1/calibration/reload", headers=ADMIN_HEADERS, json={"path": str(second_artifact)}
            )
            assert reload.status_code == 200
            results = (await batch).json()["results"]
            ids = {r["result"]["calibration_id"] for r in results}
            after = (await client.post("/v1/score", json={"criterion": "relevance", "judge_score": 3})).json()
            return ids, old, after["calibration_id"]

    ids, old, new = asyncio.run(scenario())
    assert ids == {old}
    assert new != old


def test_concurrent_requests_see_whole_artifacts_only(make_settings, second_artifact: Path, artifact_path: Path):
    """Requests racing with reloads back and forth each see exactly one of the two artifacts, never an error."""

    async def scenario() -> tuple[set[str], set[int]]:
        app = create_app(make_settings(admin_api_key=ADMIN, limits=ANYWHERE))
        async with AsyncTestClient(app) as client:
            body = {"criterion": "coherence", "judge": STAND_IN, "judge_score": 3}
            paths = [second_artifact, artifact_path] * 5
            requests = [client.post("/v1/score", json=body) for _ in range(60)]
            reloads = [
                client.post("/v1/calibration/reload", headers=ADMIN_HEADERS, json={"path": str(p)}) for p in paths
            ]
            replies = await asyncio.gather(*requests, *reloads)
            scored = replies[: len(requests)]
            return {r.json()["calibration_id"] for r in scored}, {r.status_code for r in replies}

    ids, statuses = asyncio.run(scenario())
    first = ThresholdIndex(build_artifact()).calibration_id
    second = ThresholdIndex(build_artifact(code_version="second")).calibration_id
    assert statuses == {200}
    assert ids <= {first, second}


# ------------------------------------------------------------------------------ GET /v1/calibration?view=summary

SHIPPED = Path(__file__).resolve().parents[3] / "artifact" / "thresholds.json"


@pytest.fixture
def shipped_app(start_app: Callable[[Settings], AppHarness]) -> AppHarness:
    """An app on the shipped artifact (84 cells and input kinds, 32 decision rules), keys required."""
    return start_app(Settings(thresholds_path=SHIPPED, api_keys=("k1",), admin_api_key=ADMIN))


def _expected_line(full: dict, cell: tuple[str, str, str, str], alpha: float, tolerance: int, mode: str) -> dict:
    """A summary line recomputed from the full view alone (its entries, defaults and decision rules) in one mode."""
    entries = [
        e
        for e in full["entries"]
        if (e["judge"], e["prompt_family"], e["criterion"], e["input_kind"]) == cell and e["mode"] == mode
    ]
    defaults = [
        d
        for d in full["default_methods"]
        if (d["judge"], d["prompt_family"], d["criterion"], d["input_kind"]) == cell and d["mode"] in (None, mode)
    ]
    method = defaults[0]["method"] if defaults else entries[0]["method"]
    served = sorted((e for e in entries if e["method"] == method), key=lambda e: e["alpha"])
    at_default = [e for e in served if e["alpha"] <= alpha + 1e-9]
    rules = [
        r for r in full["decision_rules"] if (r["judge"], r["prompt_family"], r["criterion"], r["input_kind"]) == cell
    ]
    rows = [
        c
        for r in rules
        for c in r["certifications"]
        if c["tolerance"] == tolerance and c["accept_alpha"] <= alpha + 1e-9 and c["mode"] == mode
    ]
    row = max(rows, key=lambda c: c["accept_alpha"]) if rows else None
    usable = row is not None and not row["rule_failed"]
    return {
        "served": [{"method": method, "alphas": [e["alpha"] for e in served]}],
        "selection_failed": bool(defaults) and defaults[0]["rule_failed"],
        "set_size": at_default[-1]["heldout_set_size"] if at_default else None,
        "coverage": at_default[-1]["heldout_coverage"] if at_default else None,
        "decision_rule": bool(rules),
        "accept_alpha": None if row is None else row["accept_alpha"],
        "accept_share": row["accept_share"] if usable else None,
        "certified_error": row["certified_error"] if usable else None,
        "certification_failed": row is not None and row["rule_failed"],
        "n_labels": entries[0]["n_labels"],
        "artifact": entries[0]["artifact"],
    }


def test_summary_is_small_and_agrees_with_the_full_view(shipped_app: AppHarness):
    headers = {"Authorization": "Bearer k1"}
    full_reply = shipped_app.client.get("/v1/calibration", headers=headers)
    reply = shipped_app.client.get("/v1/calibration", params={"view": "summary"}, headers=headers)
    assert full_reply.status_code == reply.status_code == 200
    assert len(reply.content) < 128 * 1024 < len(full_reply.content)  # one line per cell, kind and guarantee mode
    full, summary = full_reply.json(), reply.json()
    assert summary["view"] == "summary"
    for key in (
        "calibration_id",
        "path",
        "loaded_at",
        "created_at",
        "code_version",
        "data_hash",
        "source",
        "label_scale",
        "n_entries",
        "levels",
    ):
        assert summary[key] == full[key], key
    assert (summary["default_alpha"], summary["tolerance"], summary["accept_alpha"]) == (0.1, 2, 0.1)
    cells = sorted(
        {(e["judge"], e["prompt_family"], e["criterion"], e["input_kind"], e["mode"]) for e in full["entries"]}
    )
    per_label = sorted(
        (r["judge"], r["prompt_family"], r["criterion"], r["input_kind"], "per_label") for r in full["label_rules"]
    )
    keys = ("judge", "prompt_family", "criterion", "input_kind", "mode")
    assert [tuple(c[k] for k in keys) for c in summary["cells"]] == cells + per_label
    assert summary["n_cells"] == len(cells) + len(per_label) and len(per_label) == 32
    by_cell = sorted(
        full["label_rules"], key=lambda r: (r["judge"], r["prompt_family"], r["criterion"], r["input_kind"])
    )
    for rule, line in zip(by_cell, summary["cells"][len(cells) :], strict=True):
        assert (line["set_size"], line["accept_share"]) == (
            rule["summary"]["set_size"],
            rule["summary"]["accept_share"],
        )
        assert line["skilled"] == rule["skill"]["skilled"]
    for line in summary["cells"][: len(cells)]:
        cell = (line["judge"], line["prompt_family"], line["criterion"], line["input_kind"])
        expected = _expected_line(full, cell, summary["default_alpha"], summary["tolerance"], line["mode"])
        assert {k: line[k] for k in expected} == expected, cell
    # the shipped artifact exercises both sides: cells with an accepting rule, and cells with none
    assert any(c["accept_share"] for c in summary["cells"]) and not all(c["decision_rule"] for c in summary["cells"])
    assert [a["name"] for a in summary["artifacts"]] == [a["name"] for a in full["artifacts"]]


def test_summary_needs_a_key_like_the_full_view(shipped_app: AppHarness):
    for params in ({}, {"view": "summary"}, {"view": "full"}):
        assert shipped_app.client.get("/v1/calibration", params=params).status_code == 401
        wrong = shipped_app.client.get("/v1/calibration", params=params, headers={"Authorization": "Bearer no"})
        assert wrong.status_code == 401


@pytest.mark.parametrize("view", ["bogus", "", "SUMMARY", "summary "])
def test_unknown_view_is_a_422_listing_the_views(app: AppHarness, view: str):
    reply = app.client.get("/v1/calibration", params={"view": view})
    assert reply.status_code == 422
    assert reply.headers["content-type"].startswith("application/problem+json")
    problem = reply.json()
    assert problem["allowed"] == ["full", "summary"] and "summary" in problem["detail"]


def test_summary_of_the_test_artifact_reads_the_defaults(app: AppHarness, artifact: ThresholdsArtifact):
    summary = app.client.get("/v1/calibration?view=summary").json()
    lines = {(c["judge"], c["prompt_family"], c["criterion"], c["input_kind"]): c for c in summary["cells"]}
    coherence = lines[STAND_IN, "paper", "coherence", "probabilities"]
    assert coherence["served"] == [{"method": "lac", "alphas": [0.1, 0.2]}]
    assert coherence["set_size"] == 2.5 and coherence["decision_rule"] is False and coherence["accept_share"] is None
    # no default for score verdicts of this cell: the first calibrated score method serves (artifact.serving)
    score_methods = [
        e.method
        for e in artifact.entries
        if (e.judge, e.prompt_family, e.criterion, e.kind) == (STAND_IN, "paper", "coherence", "score")
    ]
    assert lines[STAND_IN, "paper", "coherence", "score"]["served"][0]["method"] == score_methods[0]
    assert app.client.get("/v1/calibration?view=full").json()["n_entries"] == len(artifact.entries)
