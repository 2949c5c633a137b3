"""Artifacts that merge: a user's artifact beside the primary one, its own scale and criterion, 409 on a taken cell,
persistence across restarts, and criteria as data (422 with ``allowed``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from artifact.input_kinds import fit_modes, kind_artifact, labelled_kind_data
from artifact.labels import LabelledCell
from artifact.thresholds import ThresholdsArtifact, save_artifact
from service.artifacts.registry import ArtifactSet, LoadedArtifact, OwnershipConflictError
from service.config.limits import LimitSettings
from service.config.settings import Settings
from tests.service.conftest import STAND_IN, AppHarness, build_artifact

ADMIN = "merge-admin"
HEADERS = {"Authorization": f"Bearer {ADMIN}"}


def user_artifact(
    judge: str = "acme", criterion: str = "helpfulness", k: int = 7, family: str = "custom"
) -> ThresholdsArtifact:
    """A calibrated 1..k artifact for one (judge, custom, criterion) cell on synthetic grouped data."""
    rng = np.random.default_rng(5)
    labels = rng.integers(1, k + 1, size=400)
    scores = np.clip(labels + rng.integers(-1, 2, size=400), 1, k)
    cell = LabelledCell(
        judge=judge,
        prompt_family=family,
        criterion=criterion,
        n_labels=k,
        item_ids=tuple(f"i{i:03d}" for i in range(400)),
        labels=labels,
        judge_scores=scores,
        probabilities=None,
        groups=tuple(f"d{i // 4}" for i in range(400)),
    )
    fits = {
        (judge, family, criterion, data.kind): fit_modes(  # both guarantee modes, as a calibration job fits
            data, alphas=[0.1, 0.2], delta=0.05, n_splits=4, selection_repeats=2, nested_repeats=1
        )
        for data in labelled_kind_data(cell)
    }
    return kind_artifact(
        fits, created_at="2026-02-01T00:00:00+00:00", code_version="user", data_hash="h", source="test user artifact"
    )


def test_the_merge_rule() -> None:
    primary = LoadedArtifact.of("primary", build_artifact(), path="p", loaded_at="t")
    mine = LoadedArtifact.of("mine", user_artifact(), path="m", loaded_at="t")
    both = ArtifactSet().put(primary).put(mine)
    merged = both.merged()
    assert merged is not None and merged.label_scale == list(range(1, 8))
    assert len(merged.entries) == len(primary.artifact.entries) + len(mine.artifact.entries)
    assert both.owners[("acme", "custom", "helpfulness")] == "mine"
    assert ArtifactSet().put(primary).merged() is primary.artifact  # one artifact: the merged view is itself
    with pytest.raises(OwnershipConflictError, match="owned by artifact 'mine'; artifact 'other'"):
        both.put(LoadedArtifact.of("other", user_artifact(), path="o", loaded_at="t"))
    replaced = both.put(LoadedArtifact.of("mine", user_artifact(criterion="tone"), path="m2", loaded_at="t"))
    assert ("acme", "custom", "helpfulness") not in replaced.owners and replaced.names() == ["primary", "mine"]
    assert both.remove("mine").merged() is primary.artifact
    with pytest.raises(KeyError):
        both.remove("nope")


@pytest.fixture
def harness(start_app: Callable[[Settings], AppHarness], make_settings, tmp_path: Path) -> AppHarness:
    save_artifact(user_artifact(), tmp_path / "acme.json")
    save_artifact(user_artifact(judge=STAND_IN, criterion="coherence", k=5, family="paper"), tmp_path / "taken.json")
    return start_app(
        make_settings(
            admin_api_key=ADMIN, limits=LimitSettings(reload_dir=tmp_path), artifacts_dir=tmp_path / "activated"
        )
    )


def test_a_named_artifact_adds_its_cells_and_the_primary_stays(harness: AppHarness, tmp_path: Path) -> None:
    client = harness.client
    before = client.post("/v1/score", json={"criterion": "helpfulness", "judge": "acme", "judge_score": 6})
    assert before.status_code == 422 and "allowed" in before.json()  # not a known criterion yet
    reply = client.post("/v1/calibration/reload", headers=HEADERS, json={"path": "acme.json", "name": "acme-v1"})
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert (data["artifact"], data["cells_added"], data["cells_replaced"]) == ("acme-v1", 1, 0)
    assert [a["name"] for a in data["calibration"]["artifacts"]] == ["primary", "acme-v1"]
    assert "entries" not in data["calibration"]  # a short summary
    scored = client.post("/v1/score", json={"criterion": "helpfulness", "judge": "acme", "judge_score": 6}).json()
    assert scored["calibrated"] is True and set(scored["prediction_set"]) <= set(range(1, 8))
    assert scored["prompt_family"] == "custom"
    shipped = client.post("/v1/score", json={"criterion": "relevance", "judge": STAND_IN, "judge_score": 3}).json()
    assert shipped["calibrated"] is True
    info = client.get("/v1/calibration").json()
    cells = {a["name"]: a["cells"] for a in info["artifacts"]}
    assert cells["acme-v1"][0]["n_labels"] == 7 and cells["acme-v1"][0]["criterion"] == "helpfulness"
    assert {e["artifact"] for e in info["entries"] if e["judge"] == "acme"} == {"acme-v1"}
    # the same name again replaces its own cells
    again = client.post("/v1/calibration/reload", headers=HEADERS, json={"path": "acme.json", "name": "acme-v1"})
    assert (again.json()["cells_added"], again.json()["cells_replaced"]) == (0, 1)
    assert (tmp_path / "activated" / "acme-v1.json").exists()


def test_a_named_artifact_without_artifacts_dir_is_kept_for_the_process_only(
    start_app: Callable[[Settings], AppHarness], make_settings, harness: AppHarness, tmp_path: Path
) -> None:
    kept = harness.client.post("/v1/calibration/reload", headers=HEADERS, json={"path": "acme.json", "name": "a"})
    assert kept.status_code == 200 and kept.json()["warnings"] == []
    transient = start_app(make_settings(admin_api_key=ADMIN, limits=LimitSettings(reload_dir=tmp_path)))
    reply = transient.client.post("/v1/calibration/reload", headers=HEADERS, json={"path": "acme.json", "name": "b"})
    assert reply.status_code == 200, reply.text
    [warning] = reply.json()["warnings"]
    assert "'b'" in warning and "ARTIFACTS_DIR" in warning and "restart" in warning
    logged = [line for line in transient.log_lines() if line["event"] == "calibration.not_persisted"]
    assert [(line["level"], line["artifact"]) for line in logged] == [("warning", "b")]
    primary = transient.client.post("/v1/calibration/reload", headers=HEADERS)  # THRESHOLDS_PATH: nothing to keep
    assert primary.status_code == 200 and primary.json()["warnings"] == []
    assert [a["name"] for a in transient.client.get("/v1/calibration").json()["artifacts"]] == ["primary", "b"]


def test_a_cell_owned_by_another_artifact_is_a_409_naming_both(harness: AppHarness) -> None:
    before = harness.client.get("/v1/calibration").json()["calibration_id"]
    reply = harness.client.post("/v1/calibration/reload", headers=HEADERS, json={"path": "taken.json", "name": "x"})
    assert reply.status_code == 409, reply.text
    assert "'primary'" in reply.json()["detail"] and "'x'" in reply.json()["detail"]
    assert harness.client.get("/v1/calibration").json()["calibration_id"] == before


def test_activated_artifacts_survive_a_restart(
    start_app: Callable[[Settings], AppHarness], make_settings, harness: AppHarness, tmp_path: Path
) -> None:
    assert (
        harness.client.post(
            "/v1/calibration/reload", headers=HEADERS, json={"path": "acme.json", "name": "acme-v1"}
        ).status_code
        == 200
    )
    restarted = start_app(make_settings(artifacts_dir=tmp_path / "activated"))
    names = [a["name"] for a in restarted.client.get("/v1/calibration").json()["artifacts"]]
    assert names == ["primary", "acme-v1"]
    scored = restarted.client.post("/v1/score", json={"criterion": "helpfulness", "judge": "acme", "judge_score": 7})
    assert scored.json()["calibrated"] is True


def test_scale_limits_per_cell(harness: AppHarness) -> None:
    harness.client.post("/v1/calibration/reload", headers=HEADERS, json={"path": "acme.json", "name": "acme-v1"})
    client = harness.client
    too_high = client.post("/v1/score", json={"criterion": "relevance", "judge": STAND_IN, "judge_score": 6})
    assert too_high.status_code == 422 and "1..5" in too_high.json()["detail"]
    token = client.post("/v1/score", json={"criterion": "helpfulness", "judge": "acme", "judge_logprobs": {"8": -0.1}})
    assert token.status_code == 422 and "1..7" in token.json()["detail"]
    assert (
        client.post("/v1/score", json={"criterion": "helpfulness", "judge": "acme", "judge_score": 11}).status_code
        == 422
    )


def test_unknown_criterion_lists_the_allowed_names(app: AppHarness) -> None:
    reply = app.client.post("/v1/score", json={"criterion": "Relevance", "judge": STAND_IN, "judge_score": 3})
    assert reply.status_code == 422
    allowed = reply.json()["allowed"]
    assert {"coherence", "relevance", "faithfulness"} <= set(allowed) and "Relevance" not in allowed


def test_an_unwritable_artifacts_dir_activates_nothing(
    start_app: Callable[[Settings], AppHarness], make_settings, tmp_path: Path
) -> None:
    save_artifact(user_artifact(), tmp_path / "acme.json")
    (tmp_path / "not-a-dir").write_text("a file where the directory should be")
    harness = start_app(
        make_settings(
            admin_api_key=ADMIN, limits=LimitSettings(reload_dir=tmp_path), artifacts_dir=tmp_path / "not-a-dir"
        )
    )
    before = harness.client.get("/v1/calibration").json()["calibration_id"]
    reply = harness.client.post("/v1/calibration/reload", headers=HEADERS, json={"path": "acme.json", "name": "acme"})
    assert reply.status_code == 503 and "ARTIFACTS_DIR" in reply.json()["detail"]
    assert harness.client.get("/v1/calibration").json()["calibration_id"] == before


def test_a_broken_persisted_artifact_is_skipped_at_start_up(
    start_app: Callable[[Settings], AppHarness], make_settings, tmp_path: Path
) -> None:
    folder = tmp_path / "activated"
    folder.mkdir()
    (folder / "broken.json").write_text("{not json")
    save_artifact(user_artifact(), folder / "acme.json")
    save_artifact(user_artifact(), folder / "twin.json")  # the same cell again: the later name is skipped
    harness = start_app(make_settings(artifacts_dir=folder))
    names = [a["name"] for a in harness.client.get("/v1/calibration").json()["artifacts"]]
    assert names == ["primary", "acme"]
    skipped = harness.services.calibration.skipped
    assert any("broken.json" in s for s in skipped) and any("twin" in s and "owned" in s for s in skipped)
