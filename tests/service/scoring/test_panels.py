"""Judge panels in /v1/score (service.scoring.panels): the caller's verdicts and ``panel: NAME`` against the judge
stand-in.

The artifact holds panel cells fitted by the offline path (calibration.input_kinds.mean_panel.panel_kind_data ->
calibration.input_kinds.fit.fit_input_kind -> artifact.input_kinds.kind_entries) on seeded synthetic members, so the
service's sets can be compared with the offline prediction on the same entries.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import msgspec
import numpy as np
import pytest

from artifact.input_kinds import fit_modes, kind_artifact
from artifact.serving import ServedEntry, choose_entry
from artifact.thresholds import ThresholdIndex, save_artifact
from calibration.conformal import prediction_set
from calibration.input_kinds.mean_panel import expected_scores, panel_family, panel_kind_data, panel_means
from calibration.input_kinds.verdicts import kind_inputs
from offline.build.cell_data import probability_row
from service.config.settings import Settings
from service.judging.groups import PanelConfigError, load_panels
from tests.fakes.judge_server import JudgeServer, ScriptedReply, peaked_logprobs
from tests.service.conftest import AppHarness

FULL = "panel:judge-a+judge-b+judge-c"
PAIR = "panel:judge-a+judge-b"
MODELS = {"judge-a": "model-a", "judge-b": "model-b", "judge-c": "model-c"}


def _member_logprobs(rng: np.random.Generator, truth: np.ndarray, noise: float) -> list[dict[str, float]]:
    centre = truth + rng.normal(0, noise, truth.size)
    rows = []
    for c in centre:
        weights = np.exp(-1.5 * np.abs(np.arange(1, 6) - c))
        rows.append({str(k + 1): float(math.log(w / weights.sum())) for k, w in enumerate(weights)})
    return rows


@pytest.fixture(scope="module")
def recorded() -> dict[str, object]:
    """Seeded synthetic members' log-probs (the recorded data's form) with labels and documents."""
    rng = np.random.default_rng(11)
    truth = rng.integers(1, 6, 320)
    return {
        "labels": truth,
        "groups": np.repeat(np.arange(40), 8).astype(str),
        "logprobs": {
            j: _member_logprobs(rng, truth.astype(float), n)
            for j, n in (("judge-a", 0.7), ("judge-b", 0.9), ("judge-c", 1.1))
        },
    }


@pytest.fixture(scope="module")
def panel_artifact(recorded: dict[str, object], tmp_path_factory: pytest.TempPathFactory) -> Path:
    fits = {}
    for members in (("judge-a", "judge-b"), ("judge-a", "judge-b", "judge-c")):
        expected = np.column_stack(
            [
                expected_scores(5, probabilities=np.vstack([probability_row(r) for r in recorded["logprobs"][m]]))
                for m in members
            ]
        )
        data = panel_kind_data(expected, recorded["labels"], recorded["groups"])
        key = ("panel:" + "+".join(members), panel_family(["probabilities"] * len(members)), "coherence", "mean")
        fits[key] = fit_modes(data, alphas=(0.1, 0.2), delta=0.05, n_splits=3, selection_repeats=2, nested_repeats=1)
    artifact = kind_artifact(
        fits,
        created_at="2026-01-01T00:00:00+00:00",
        code_version="test",
        data_hash="synthetic",
        source="tests/service/scoring/test_panels.py",
    )
    path = tmp_path_factory.mktemp("panels") / "thresholds.json"
    save_artifact(artifact, path)
    return path


@pytest.fixture
def panel_app(
    start_app: Callable[[Settings], AppHarness], panel_artifact: Path, stand_in: JudgeServer, tmp_path: Path
) -> AppHarness:
    judges = [stand_in.judge_config(name=name, model=model, max_retries=0) for name, model in MODELS.items()]
    judges_file = tmp_path / "judges.json"
    judges_file.write_bytes(msgspec.json.encode(judges))
    panels_file = tmp_path / "panels.json"
    panels_file.write_text(
        '[{"name": "jury", "judges": ["judge-c", "judge-a", "judge-b"]},'
        ' {"name": "pair", "judges": ["judge-b", "judge-a"]}]'
    )
    return start_app(Settings(thresholds_path=panel_artifact, judges_file=judges_file, panels_file=panels_file))


def test_callers_verdicts_equal_the_offline_path(
    panel_app: AppHarness, panel_artifact: Path, recorded: dict[str, object]
) -> None:
    from artifact.thresholds import load_artifact

    index = ThresholdIndex(load_artifact(panel_artifact), "expected")  # the default guarantee's entries
    family = "panel:probabilities+probabilities+probabilities"
    served = choose_entry(index, (FULL, family, "coherence"), ("mean",), 0.1)
    assert isinstance(served, ServedEntry)
    members = ("judge-a", "judge-b", "judge-c")
    for item in range(0, 320, 23):
        rows = {m: recorded["logprobs"][m][item] for m in members}
        expected = np.array([[expected_scores(5, probabilities=probability_row(rows[m])[None, :])[0] for m in members]])
        scores, probabilities = kind_inputs("mean", 5, means=panel_means(expected, 5))
        offline = prediction_set(served.entry.fitted, judge_score=int(scores[0]), probabilities=list(probabilities[0]))
        body = {
            "criterion": "coherence",
            "alpha": 0.1,
            "verdicts": [{"judge": m, "judge_logprobs": rows[m]} for m in reversed(members)],
        }
        response = panel_app.client.post("/v1/score", json=body)
        assert response.status_code == 200, response.text
        answer = response.json()
        assert answer["calibrated"] is True and answer["judge"] == FULL and answer["input_kind"] == "mean"
        assert answer["prediction_set"] == list(offline)
        assert answer["judge_score"] == int(scores[0])
        assert answer["panel"]["mean"] == pytest.approx(float(panel_means(expected, 5)[0]))
        spread = expected[0].max() - expected[0].min()
        assert answer["panel"]["spread"] == pytest.approx(spread)
        assert answer["panel"]["served_by"] == FULL


def test_inputs_other_than_the_panels_are_not_served_and_an_uncalibrated_panel(panel_app: AppHarness) -> None:
    body = {
        "criterion": "coherence",
        "verdicts": [{"judge": "judge-a", "judge_score": 2}, {"judge": "judge-b", "mean_of_samples": 3.5}],
    }
    answer = panel_app.client.post("/v1/score", json=body).json()
    assert [v["expected_score"] for v in answer["panel"]["verdicts"]] == [2.0, 3.5]
    assert answer["panel"]["mean"] == 2.75 and answer["judge_score"] == 3
    assert answer["prompt_family"] == "panel:score+mean"
    assert answer["calibrated"] is False and answer["set_size"] == 5  # fitted on both members' log-probs only
    assert "panel:probabilities+probabilities" in answer["reason"]
    other = {
        "criterion": "coherence",
        "verdicts": [{"judge": "judge-a", "judge_score": 2}, {"judge": "judge-c", "judge_score": 4}],
    }
    answer = panel_app.client.post("/v1/score", json=other).json()
    assert answer["calibrated"] is False and answer["set_size"] == 5 and answer["decision"] == "escalate"
    assert answer["panel"]["served_by"] is None and "panel:judge-a+judge-c" in answer["reason"]


@pytest.mark.parametrize(
    "body",
    [
        {
            "criterion": "coherence",
            "panel": "jury",
            "verdicts": [{"judge": "a", "judge_score": 1}, {"judge": "b", "judge_score": 2}],
        },
        {
            "criterion": "coherence",
            "judge": "judge-a",
            "verdicts": [{"judge": "a", "judge_score": 1}, {"judge": "b", "judge_score": 2}],
        },
        {"criterion": "coherence", "verdicts": [{"judge": "a"}, {"judge": "b", "judge_score": 2}]},
        {"criterion": "coherence", "verdicts": [{"judge": "a", "judge_score": 1}]},
        {"criterion": "coherence", "panel": "nobody", "document": "d", "summary": "s"},
        {"criterion": "coherence", "panel": "jury"},
        {"criterion": "faithfulness", "panel": "jury", "document": "d", "summary": "s"},
        {"criterion": "helpfulness", "panel": "jury", "document": "d", "summary": "s"},
        {"criterion": "coherence", "verdicts": [{"judge": "a+b", "judge_score": 1}, {"judge": "c", "judge_score": 2}]},
        {
            "criterion": "coherence",
            "verdicts": [{"judge": "panel:x", "judge_score": 1}, {"judge": "c", "judge_score": 2}],
        },
    ],
)
def test_bad_panel_requests_are_422_problems(panel_app: AppHarness, body: dict[str, object]) -> None:
    response = panel_app.client.post("/v1/score", json=body)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")


def test_a_judge_named_twice_is_answered_uncalibrated_saying_why(panel_app: AppHarness) -> None:
    # was a 422; JSON Schema cannot state unique member judges, so the schema-valid request is answered
    body = {
        "criterion": "coherence",
        "verdicts": [
            {"judge": "judge-a", "judge_score": 1},
            {"judge": "judge-a", "judge_score": 2},
            {"judge": "judge-b", "judge_score": 2},
        ],
    }
    data = panel_app.client.post("/v1/score", json=body).json()
    assert (data["calibrated"], data["decision"], data["prediction_set"]) == (False, "escalate", [1, 2, 3, 4, 5])
    assert "'judge-a' appear more than once" in data["reason"]
    assert [v["judge_score"] for v in data["panel"]["verdicts"]] == [1, 2, 2]  # every verdict shown


def test_live_panel_calls_every_member_concurrently(panel_app: AppHarness, stand_in: JudgeServer) -> None:
    scores = {"model-a": 2, "model-b": 3, "model-c": 5}
    stand_in.responder = lambda body: ScriptedReply(str(scores[body["model"]]), peaked_logprobs(scores[body["model"]]))
    stand_in.latency_s = 0.2
    body = {
        "criterion": "coherence",
        "panel": "jury",
        "document": "The council met on Monday and approved it.",
        "summary": "The council approved it.",
    }
    response = panel_app.client.post("/v1/score", json=body)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert stand_in.max_in_flight == 3  # all members asked at once
    assert answer["calibrated"] is True and answer["judge"] == FULL and answer["source"] == "judge"
    verdicts = {v["judge"]: v for v in answer["panel"]["verdicts"]}
    assert {j: v["judge_score"] for j, v in verdicts.items()} == {"judge-a": 2, "judge-b": 3, "judge-c": 5}
    expected = [verdicts[j]["expected_score"] for j in ("judge-a", "judge-b", "judge-c")]
    assert expected == pytest.approx(
        [
            sum((k + 1) * p for k, p in enumerate(verdicts[j]["probabilities"]))
            for j in ("judge-a", "judge-b", "judge-c")
        ]
    )
    assert answer["panel"]["mean"] == pytest.approx(sum(expected) / 3)
    assert answer["panel"]["spread"] == pytest.approx(max(expected) - min(expected))
    calls = stand_in.call_count
    again = panel_app.client.post("/v1/score", json=body).json()
    assert stand_in.call_count == calls and again["cached"] is True  # members answered from the cache
    assert again["prediction_set"] == answer["prediction_set"]


def test_a_failed_member_is_answered_by_the_sub_panel(panel_app: AppHarness, stand_in: JudgeServer) -> None:
    stand_in.responder = lambda body: (
        ScriptedReply("no score here") if body["model"] == "model-c" else ScriptedReply("4", peaked_logprobs(4))
    )
    body = {
        "criterion": "coherence",
        "panel": "jury",
        "document": "Another article about the park budget.",
        "summary": "A park budget.",
    }
    response = panel_app.client.post("/v1/score", json=body)
    assert response.status_code == 200, response.text
    answer = response.json()
    failed = [v for v in answer["panel"]["verdicts"] if v["error"]]
    assert [v["judge"] for v in failed] == ["judge-c"] and failed[0]["expected_score"] is None
    assert answer["calibrated"] is True and answer["judge"] == PAIR and answer["panel"]["served_by"] == PAIR
    assert "judge-c gave no verdict" in answer["reason"]


def test_a_panel_with_one_member_left_is_uncalibrated(panel_app: AppHarness, stand_in: JudgeServer) -> None:
    stand_in.responder = lambda body: (
        ScriptedReply("3", peaked_logprobs(3)) if body["model"] == "model-a" else ScriptedReply("no score here")
    )
    body = {"criterion": "coherence", "panel": "pair", "document": "A third article.", "summary": "A third."}
    answer = panel_app.client.post("/v1/score", json=body).json()
    assert answer["calibrated"] is False and answer["decision"] == "escalate" and answer["set_size"] == 5


def test_panels_file_is_checked(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text('[{"name": "jury", "judges": ["b", "a"]}]')
    assert load_panels(good) == {"jury": ("b", "a")}
    assert load_panels(None) == {}
    for text in (
        '{"name": "x"}',
        '[{"name": "x", "judges": ["a"]}]',
        '[{"name": "x", "judges": ["a", "a"]}]',
        '[{"name": "x", "judges": ["a", "b"]}, {"name": "x", "judges": ["a", "c"]}]',
        "not json",
        '[{"name": "x", "judges": ["a", "b"], "extra": 1}]',
    ):
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        with pytest.raises(PanelConfigError):
            load_panels(bad)


def test_a_panel_of_unconfigured_judges_is_refused() -> None:
    from service.judging.groups import check_panel_members

    check_panel_members({"jury": ("a", "b")}, ["a", "b", "c"])
    with pytest.raises(PanelConfigError, match="not in JUDGES_FILE: z"):
        check_panel_members({"jury": ("a", "z")}, ["a", "b"])


def test_a_panel_cell_is_decided_by_its_own_certified_rule(
    start_app: Callable[[Settings], AppHarness], panel_artifact: Path, tmp_path: Path
) -> None:
    from artifact.thresholds import load_artifact
    from calibration.decisions.rule import Certification, DecisionRule

    family = "panel:probabilities+probabilities+probabilities"
    rule = DecisionRule(
        judge=FULL,
        prompt_family=family,
        criterion="coherence",
        input_kind="mean",
        feature="mean",
        n_labels=5,
        bin_edges=[2.5, 3.5],
        points=[2, 3, 4],
        certifications=[
            Certification(tolerance=2, accept_alpha=0.1, delta=0.05, accepted_bins=[1], certified_error=0.06)
        ],
    )
    path = tmp_path / "ruled.json"
    save_artifact(msgspec.structs.replace(load_artifact(panel_artifact), decision_rules=[rule]), path)
    harness = start_app(Settings(thresholds_path=path))
    peaked = {"1": -6.0, "2": -3.0, "3": -0.1, "4": -3.0, "5": -6.0}  # each member's expected score is 3
    body = {
        "criterion": "coherence",
        "guarantee": "pac",  # the hand-written row is a pac one
        "verdicts": [{"judge": m, "judge_logprobs": peaked} for m in ("judge-a", "judge-b", "judge-c")],
    }
    answer = harness.client.post("/v1/score", json=body).json()
    assert answer["judge"] == FULL and answer["calibrated"] is True and answer["panel"]["mean"] == pytest.approx(3)
    assert (answer["decision"], answer["point"], answer["rule_failed"]) == ("accept", 3, False)
    assert answer["guarantees"][1] == {
        "kind": "accept_error",
        "alpha": 0.1,
        "mode": "pac",
        "confidence": 0.95,
        "tolerance": 2,
        "bound": 0.06,
    }
    # the sub-panel (two members) has no rule of its own: never the full panel's certificate
    answer = harness.client.post("/v1/score", json={**body, "verdicts": body["verdicts"][:2]}).json()
    assert answer["judge"] == PAIR and answer["calibrated"] is True
    assert (answer["decision"], answer["rule_failed"]) == ("escalate", False)
    assert "no certified decision rule" in answer["reason"]
