"""/v1/score with criterion "faithfulness" and factuality_method "sentences", end to end against the judge stand-in:
evidence per sentence, the mapped verdict, the calibrated set, typed 502s per item, and the caller's own verdicts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from artifact.thresholds import ThresholdIndex, ThresholdsArtifact, save_artifact
from calibration.conformal import prediction_set
from service.config.settings import Settings
from tests.fakes.judge_server import JudgeServer
from tests.service.conftest import STAND_IN, AppHarness

FAMILY = "factuality_sentences"
BODY = {
    "criterion": "faithfulness",
    "factuality_method": "sentences",
    "document": "Leaders met in Paris on Monday. They agreed on a trade deal.",
    "summary": "Leaders met in Paris on Tuesday. They agreed on a trade deal. The deal ends all tariffs.",
}


def _reply(*categories: str) -> str:
    items = [{"sentence": f"sentence {i}", "category": c, "reason": f"reason {i}"} for i, c in enumerate(categories)]
    return "```json\n" + json.dumps(items) + "\n```"


@pytest.fixture
def sentences_artifact(artifact: ThresholdsArtifact) -> ThresholdsArtifact:
    """The test artifact plus the stand-in's factuality_direct faithfulness cell copied under factuality_sentences."""
    extra = [
        msgspec.structs.replace(e, prompt_family=FAMILY)
        for e in artifact.entries
        if (e.judge, e.prompt_family, e.criterion) == (STAND_IN, "factuality_direct", "faithfulness")
    ]
    assert extra
    return msgspec.structs.replace(artifact, entries=[*artifact.entries, *extra])


@pytest.fixture
def sentences_app(
    start_app: Callable[[Settings], AppHarness],
    sentences_artifact: ThresholdsArtifact,
    judges_file: Path,
    tmp_path: Path,
) -> AppHarness:
    path = tmp_path / "thresholds.json"
    save_artifact(sentences_artifact, path)
    return start_app(Settings(thresholds_path=path, judges_file=judges_file))


def _expected_set(artifact: ThresholdsArtifact, judge_score: int) -> list[int]:
    fitted = ThresholdIndex(artifact).lookup(STAND_IN, FAMILY, "faithfulness", "residual", 0.1).fitted
    return list(prediction_set(fitted, judge_score=judge_score))


def test_live_sentence_check_returns_evidence_and_calibrated_set(
    sentences_app: AppHarness, stand_in: JudgeServer, sentences_artifact: ThresholdsArtifact
) -> None:
    stand_in.responder = lambda body: _reply("circumstantial error", "no error", "out-of-context error")
    reply = sentences_app.client.post("/v1/score", json=BODY)
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert data["factuality_method"] == "sentences" and data["prompt_family"] == FAMILY
    assert data["sentence_score"] == pytest.approx(1 / 3)
    assert data["judge_score"] == 2  # 1 + round_half_up(4/3)
    assert [(e["kind"], e["error"], e["category"]) for e in data["evidence"]] == [
        ("sentence", True, "circumstantial error"),
        ("sentence", False, "no error"),
        ("sentence", True, "out-of-context error"),
    ]
    assert data["evidence"][0]["reason"] == "reason 0"
    assert data["calibrated"] is True and data["prediction_set"] == _expected_set(sentences_artifact, 2)
    (request,) = stand_in.requests
    assert "3. The deal ends all tariffs." in request.prompt_text  # the service's own sentence split
    calls = stand_in.call_count
    again = sentences_app.client.post("/v1/score", json=BODY).json()
    assert again["cached"] is True and stand_in.call_count == calls and again["evidence"] == data["evidence"]


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("All three sentences are fine.", "sentences_no_list"),
        (_reply("no error", "no error"), "sentences_wrong_count"),
        (_reply("no error", "typo error", "no error"), "sentences_unknown_category"),
    ],
)
def test_bad_replies_are_typed_502s_per_item(
    sentences_app: AppHarness, stand_in: JudgeServer, reply: str, reason: str
) -> None:
    stand_in.responder = lambda body: reply if "tariffs" in body["messages"][-1]["content"] else _reply("no error")
    single = sentences_app.client.post("/v1/score", json=BODY)
    assert single.status_code == 502 and single.headers["content-type"].startswith("application/problem+json")
    problem = single.json()
    assert problem["type"].endswith("judge-reply-unreadable") and reason in problem["detail"]
    good = {**BODY, "summary": "Leaders met in Paris."}
    batch = sentences_app.client.post("/v1/score/batch", json={"items": [BODY, good]}).json()
    first, second = batch["results"]
    assert first["ok"] is False and first["error"]["status"] == 502 and reason in first["error"]["detail"]
    assert second["ok"] is True and second["result"]["judge_score"] == 5


def test_caller_sentence_verdicts_are_calibrated_without_a_call(
    sentences_app: AppHarness, stand_in: JudgeServer, sentences_artifact: ThresholdsArtifact
) -> None:
    verdicts = [
        {
            "sentence": "Leaders met in Paris on Tuesday.",
            "category": "circumstantial error",
            "reason": "Monday in the article",
        },
        {"sentence": "They agreed on a trade deal.", "category": "no error"},
    ]
    body = {
        "criterion": "faithfulness",
        "factuality_method": "sentences",
        "judge": STAND_IN,
        "sentence_verdicts": verdicts,
    }
    reply = sentences_app.client.post("/v1/score", json=body)
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert stand_in.call_count == 0 and data["source"] == "caller"
    assert data["judge_score"] == 3 and data["sentence_score"] == 0.5 and data["prompt_family"] == FAMILY
    assert data["evidence"][0] == {
        "kind": "sentence",
        "sentence": verdicts[0]["sentence"],
        "error": True,
        "category": "circumstantial error",
        "reason": "Monday in the article",
    }
    assert data["evidence"][1]["reason"] == "" and data["factuality_method"] == "sentences"
    assert data["prediction_set"] == _expected_set(sentences_artifact, 3)


def test_each_set_of_caller_verdicts_gets_its_own_answer(
    sentences_app: AppHarness, sentences_artifact: ThresholdsArtifact
) -> None:
    """Bare judge scores are answered from a memo; sentence verdicts must never hit another request's answer."""
    base = {"criterion": "faithfulness", "factuality_method": "sentences", "judge": STAND_IN}
    for categories, judge_score in (
        (["no error", "entity error"], 3),
        (["no error"] * 3, 5),
        (["other error"], 1),
        (["no error", "entity error"], 3),
    ):
        verdicts = [{"sentence": f"s{i}.", "category": c} for i, c in enumerate(categories)]
        data = sentences_app.client.post("/v1/score", json={**base, "sentence_verdicts": verdicts}).json()
        assert data["judge_score"] == judge_score and len(data["evidence"]) == len(categories)
        assert data["prediction_set"] == _expected_set(sentences_artifact, judge_score)


@pytest.mark.parametrize(
    "change",
    [
        {"factuality_method": "direct"},
        {"criterion": "coherence"},
        {"judge_score": 4},
    ],
)
def test_caller_sentence_verdicts_need_the_sentences_method_alone(sentences_app: AppHarness, change: dict) -> None:
    body = {
        "criterion": "faithfulness",
        "factuality_method": "sentences",
        "judge": STAND_IN,
        "sentence_verdicts": [{"sentence": "x.", "category": "no error"}],
        **change,
    }
    reply = sentences_app.client.post("/v1/score", json=body)
    assert reply.status_code == 422 and "sentence_verdicts" in reply.json()["detail"]


@pytest.mark.parametrize("verdicts", [[], [{"sentence": "x.", "category": "typo error"}], [{"category": "no error"}]])
def test_malformed_caller_verdicts_are_422(sentences_app: AppHarness, verdicts: list) -> None:
    body = {
        "criterion": "faithfulness",
        "factuality_method": "sentences",
        "judge": STAND_IN,
        "sentence_verdicts": verdicts,
    }
    assert sentences_app.client.post("/v1/score", json=body).status_code == 422
