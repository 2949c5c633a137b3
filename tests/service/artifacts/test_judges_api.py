"""GET /v1/judges: the short default view (``summary``), the full view behind ``?view=full`` (the answer it always
gave), the two agreeing with each other and with the artifact, and an unknown view refused as problem+json."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from artifact.thresholds import ThresholdsArtifact, load_artifact
from calibration.input_kinds.mean_panel import PANEL_PREFIX
from service.config.settings import Settings
from tests.fakes.judge_server import JudgeServer
from tests.service.conftest import RECORDED, STAND_IN, AppHarness

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = ROOT / "artifact" / "thresholds.json"
KEY = {"Authorization": "Bearer k1"}
SUMMARY_KEYS = {"view", "default_judge", "calibration_id", "levels", "panels", "cascades", "judges"}
JUDGE_KEYS = {
    "name",
    "configured",
    "model",
    "members",
    "criteria",
    "prompt_families",
    "input_kinds",
    "alpha_range",
    "decisions",
    "quality_gates",
    "report",
}
FULL_JUDGE_KEYS = {"name", "configured", "model", "prompt_family", "logprobs", "calibrated_criteria", "calibrations"}


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The shipped artifact's summary and full views, read once (an app started for the module)."""
    from litestar.testing import TestClient

    from service.http.app import create_app

    app = create_app(Settings(thresholds_path=SHIPPED, api_keys=("k1",)))
    with TestClient(app) as client:
        return {
            "default": client.get("/v1/judges", headers=KEY),
            "summary": client.get("/v1/judges", params={"view": "summary"}, headers=KEY),
            "full": client.get("/v1/judges", params={"view": "full"}, headers=KEY),
            "no_key": client.get("/v1/judges", params={"view": "full"}),
        }


def test_the_default_is_the_short_view_and_full_is_behind_a_query(shipped: dict) -> None:
    default, summary, full = shipped["default"], shipped["summary"], shipped["full"]
    assert default.status_code == summary.status_code == full.status_code == 200
    assert default.content == summary.content  # no view = view=summary, byte for byte
    assert set(default.json()) == SUMMARY_KEYS and default.json()["view"] == "summary"
    assert all(set(judge) == JUDGE_KEYS for judge in default.json()["judges"])
    assert set(full.json()) == {"default_judge", "judges"}
    assert all(set(judge) == FULL_JUDGE_KEYS for judge in full.json()["judges"])
    # short enough to read: a third of the full view's bytes or less on the shipped artifact (25 judges; 8 KB)
    assert len(default.content) * 3 <= len(full.content) and len(default.content) < 10_000
    assert shipped["no_key"].status_code == 401


def test_the_short_view_agrees_with_the_full_view(shipped: dict) -> None:
    summary, full = shipped["summary"].json(), shipped["full"].json()
    assert [j["name"] for j in summary["judges"]] == [j["name"] for j in full["judges"]]
    assert len(summary["judges"]) == 25
    levels: set[float] = set()
    for short, long in zip(summary["judges"], full["judges"], strict=True):
        cells = long["calibrations"]
        assert short["criteria"] == long["calibrated_criteria"]
        assert short["prompt_families"] == sorted({c["prompt_family"] for c in cells})
        alphas = [a for c in cells for a in c["levels"]]
        assert short["alpha_range"] == [min(alphas), max(alphas)]
        assert short["configured"] is long["configured"] is False and short["model"] is None
        levels |= set(alphas)
    assert summary["levels"] == sorted(levels)
    assert summary["default_judge"] is full["default_judge"] is None


def test_the_short_view_reads_kinds_modes_and_members_from_the_artifact(shipped: dict) -> None:
    artifact = load_artifact(SHIPPED)
    summary = {j["name"]: j for j in shipped["summary"].json()["judges"]}
    for name, judge in summary.items():
        kinds = sorted({e.kind for e in artifact.entries if e.judge == name})
        assert judge["input_kinds"] == kinds, name
        rules = [r for r in artifact.decision_rules if r.judge == name]
        assert judge["decisions"] == sorted({r.criterion for r in rules if r.certifications}), name
        assert judge["quality_gates"] == sorted({r.criterion for r in rules if r.quality_gates}), name
        if name.startswith(PANEL_PREFIX):
            assert judge["members"] == name[len(PANEL_PREFIX) :].split("+") and judge["input_kinds"] == ["mean"]
        else:
            assert judge["members"] is None
    assert sum(name.startswith(PANEL_PREFIX) for name in summary) == 11  # the four-judge panel, 10 sub-panels
    assert any(j["decisions"] for j in summary.values()) and not all(j["decisions"] for j in summary.values())


def test_the_full_view_is_todays_answer(judge_app: AppHarness) -> None:
    data = judge_app.client.get("/v1/judges", params={"view": "full"}).json()
    assert data["default_judge"] == STAND_IN
    assert [judge["name"] for judge in data["judges"]] == [STAND_IN, RECORDED]
    stand_in, recorded = data["judges"]
    assert stand_in["configured"] is True and stand_in["model"] == "stand-in-judge"
    assert stand_in["prompt_family"] == "paper" and isinstance(stand_in["logprobs"], bool)
    assert recorded["configured"] is False and recorded["calibrated_criteria"] == ["coherence"]
    (cell,) = recorded["calibrations"]
    assert cell == {
        "prompt_family": "geval",
        "criterion": "coherence",
        "methods": ["residual", "lac"],
        "levels": [0.1, 0.2],
        "default_method": "residual",
    }


@pytest.fixture
def grouped_app(
    start_app: Callable[[Settings], AppHarness], artifact_path: Path, stand_in: JudgeServer, tmp_path: Path
) -> AppHarness:
    """The test artifact, two live judges (the stand-in), a configured panel and a cascade of them."""
    judges = [stand_in.judge_config(name=name, max_retries=0) for name in (STAND_IN, "second")]
    (tmp_path / "judges.json").write_bytes(msgspec.json.encode(judges))
    (tmp_path / "panels.json").write_text(json.dumps([{"name": "jury", "judges": ["second", STAND_IN]}]))
    (tmp_path / "cascades.json").write_text(json.dumps([{"name": "thrifty", "judges": [STAND_IN, "second"]}]))
    return start_app(
        Settings(
            thresholds_path=artifact_path,
            judges_file=tmp_path / "judges.json",
            panels_file=tmp_path / "panels.json",
            cascades_file=tmp_path / "cascades.json",
        )
    )


def test_the_short_view_names_configured_judges_panels_and_cascades(
    grouped_app: AppHarness, artifact: ThresholdsArtifact
) -> None:
    data = grouped_app.client.get("/v1/judges").json()
    assert data["default_judge"] == STAND_IN
    assert data["panels"] == [{"name": "jury", "judges": ["second", STAND_IN]}]
    assert data["cascades"] == [{"name": "thrifty", "judges": [STAND_IN, "second"]}]
    by_name = {judge["name"]: judge for judge in data["judges"]}
    assert list(by_name) == [STAND_IN, "second", RECORDED]  # configured first (file order), then calibration-only
    assert by_name[STAND_IN]["configured"] is True and by_name[STAND_IN]["model"] == "stand-in-judge"
    assert by_name[STAND_IN]["criteria"] == ["coherence", "faithfulness", "fluency", "relevance"]
    assert by_name["second"]["criteria"] == [] and by_name["second"]["alpha_range"] is None  # configured only
    assert by_name[RECORDED] == {
        "name": RECORDED,
        "configured": False,
        "model": None,
        "members": None,
        "criteria": ["coherence"],
        "prompt_families": ["geval"],
        "input_kinds": sorted({e.kind for e in artifact.entries if e.judge == RECORDED}),
        "alpha_range": [0.1, 0.2],
        "decisions": [],
        "quality_gates": [],
        "report": None,  # no report card for this judge in the test artifact
    }


def test_without_a_calibration_the_short_view_lists_the_configured_judges(
    start_app: Callable[[Settings], AppHarness], judges_file: Path, tmp_path: Path
) -> None:
    harness = start_app(Settings(thresholds_path=tmp_path / "absent.json", judges_file=judges_file))
    data = harness.client.get("/v1/judges").json()
    assert data["calibration_id"] is None and data["levels"] == []
    (judge,) = data["judges"]
    assert judge["name"] == STAND_IN and judge["criteria"] == [] and judge["alpha_range"] is None
    assert harness.client.get("/v1/judges?view=full").json()["judges"][0]["calibrations"] == []


@pytest.mark.parametrize("path", ["/v1/judges", "/v1/judges/", "/v1/judges?view=summary", "/v1/judges?view=full"])
def test_path_variants_answer_the_view_they_name(app: AppHarness, path: str) -> None:
    reply = app.client.get(path)
    assert reply.status_code == 200, reply.text
    assert ("view" in reply.json()) is not path.endswith("view=full")


@pytest.mark.parametrize("view", ["bogus", "", "FULL", "full ", "Summary"])
def test_an_unknown_view_is_a_422_problem_listing_the_views(app: AppHarness, view: str) -> None:
    reply = app.client.get("/v1/judges", params={"view": view})
    assert reply.status_code == 422
    assert reply.headers["content-type"].startswith("application/problem+json")
    problem = reply.json()
    assert problem["allowed"] == ["summary", "full"] and repr(view) in problem["detail"]
