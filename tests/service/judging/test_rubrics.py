"""Your own criteria: RUBRICS_FILE, the prompt built from a rubric, its own prompt family and scale, end to end."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from artifact.thresholds import save_artifact
from service.config.limits import LimitSettings
from service.config.settings import Settings
from service.judging.rubrics import RubricError, decode_rubrics, rubric_messages
from tests.fakes.judge_server import JudgeServer
from tests.service.artifacts.test_artifacts_merge import user_artifact
from tests.service.conftest import STAND_IN, AppHarness

ADMIN = "rubric-admin"
RUBRIC = {
    "criterion": "helpfulness",
    "description": "How well the reply solves the customer's problem.",
    "scale_max": 7,
    "anchors": {"1": "Ignores it.", "7": "Solves it completely."},
}


def test_rubric_file_rules() -> None:
    rubrics = decode_rubrics(json.dumps([RUBRIC]).encode(), source="r.json")
    assert rubrics["helpfulness"].family == "rubric-helpfulness"
    for bad, needle in [
        ({**RUBRIC, "criterion": "coherence"}, "built-in"),
        ({**RUBRIC, "scale_max": 1}, "scale_max"),
        ({**RUBRIC, "anchors": {"8": "x"}}, "anchor '8'"),
        ({**RUBRIC, "description": " "}, "description"),
        ({**RUBRIC, "colour": "red"}, "colour"),
    ]:
        with pytest.raises(RubricError, match=needle):
            decode_rubrics(json.dumps([bad]).encode(), source="r.json")
    with pytest.raises(RubricError, match="repeated"):
        decode_rubrics(json.dumps([RUBRIC, RUBRIC]).encode(), source="r.json")
    messages = rubric_messages(rubrics["helpfulness"], "The customer asks X.", "We did Y.")
    user = messages[-1]["content"]
    assert "helpfulness - How well" in user and "1 to 7" in user and "- 7: Solves it completely." in user


@pytest.fixture
def rubric_app(
    start_app: Callable[[Settings], AppHarness], make_settings, judges_file: Path, tmp_path: Path, stand_in: JudgeServer
) -> AppHarness:
    rubrics = tmp_path / "rubrics.json"
    rubrics.write_text(json.dumps([RUBRIC]))
    save_artifact(user_artifact(judge=STAND_IN, family="rubric-helpfulness"), tmp_path / "mine.json")
    stand_in.default_score = 6
    return start_app(
        make_settings(
            judges_file=judges_file,
            rubrics_file=rubrics,
            admin_api_key=ADMIN,
            limits=LimitSettings(reload_dir=tmp_path),
        )
    )


def test_a_live_call_uses_the_rubric_prompt_family_and_scale(rubric_app: AppHarness, stand_in: JudgeServer) -> None:
    body = {"criterion": "helpfulness", "document": "The customer asks X.", "summary": "We did Y."}
    first = rubric_app.client.post("/v1/score", json=body).json()
    assert first["prompt_family"] == "rubric-helpfulness" and first["judge_score"] == 6
    assert first["calibrated"] is False and first["prediction_set"] == list(range(1, 8))  # not calibrated yet
    assert "helpfulness - How well" in json.dumps(stand_in.requests[-1].body)
    reply = rubric_app.client.post(
        "/v1/calibration/reload",
        headers={"Authorization": f"Bearer {ADMIN}"},
        json={"path": "mine.json", "name": "mine"},
    )
    assert reply.status_code == 200, reply.text
    second = rubric_app.client.post("/v1/score", json=body).json()
    assert second["calibrated"] is True and set(second["prediction_set"]) <= set(range(1, 8))
    wrong = rubric_app.client.post("/v1/score", json={**body, "prompt_family": "paper"})
    assert wrong.status_code == 422 and wrong.json()["allowed"] == ["rubric-helpfulness"]


def test_unknown_criterion_for_a_live_call(rubric_app: AppHarness) -> None:
    reply = rubric_app.client.post("/v1/score", json={"criterion": "tone", "document": "D.", "summary": "S."})
    assert reply.status_code == 422 and "helpfulness" in reply.json()["allowed"]


def test_a_broken_rubrics_file_stops_start_up(make_settings, tmp_path: Path) -> None:
    from service.http.app import create_app

    bad = tmp_path / "bad.json"
    bad.write_text("[{}]")
    with pytest.raises(RubricError, match="bad.json"):
        create_app(make_settings(rubrics_file=bad))
