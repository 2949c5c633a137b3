"""Cascades through the HTTP API (service.scoring.cascades) with the judge stand-in playing a cheap and a strong judge.

Artifact: ``cheap`` and ``strong`` (prompt family ``paper``), coherence, residual thresholds on scores, and a score
rule each (points = the score). ``cheap`` is certified at tolerance 2 for 0.05 on bin 5 only (bound 0.04) and for
0.1 on bins 3-5 (bound 0.09); ``strong`` at 0.05 on bins 2-4 (bound 0.03). A cascade at accept_alpha 0.1 has two
judge stages, so each is certified at 0.05 (Bonferroni): ``cheap`` alone at 0.1 would accept a 3, in the cascade
it passes the 3 to ``strong``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from artifact.thresholds import FORMAT_VERSION, DefaultMethod, ThresholdsArtifact, save_artifact
from calibration.decisions.rule import Certification, DecisionRule
from service.config.settings import Settings
from service.judging.groups import CascadeConfigError, check_cascade_stages, load_cascades
from tests.fakes.judge_server import JudgeServer, ScriptedReply, peaked_logprobs
from tests.service.conftest import AppHarness, _entries

DOCUMENT = {
    "document": "The council approved the new park budget on Monday after a long debate.",
    "summary": "The council approved the park budget.",
}


def _rule(judge: str, rows: list[tuple[float, list[int], float]]) -> DecisionRule:
    return DecisionRule(
        judge=judge,
        prompt_family="paper",
        criterion="coherence",
        input_kind="score",
        feature="score",
        n_labels=5,
        bin_edges=[1.5, 2.5, 3.5, 4.5],
        points=[1, 2, 3, 4, 5],
        certifications=[
            Certification(tolerance=2, accept_alpha=alpha, delta=0.05, accepted_bins=bins, certified_error=bound)
            for alpha, bins, bound in rows
        ],
    )


@pytest.fixture
def cascade_app(start_app: Callable[[Settings], AppHarness], stand_in: JudgeServer, tmp_path: Path) -> AppHarness:
    entries = _entries("cheap", "paper", "coherence", ("residual",), 400, 21, delta=0.05) + _entries(
        "strong", "paper", "coherence", ("residual",), 400, 22, delta=0.05
    )
    artifact = ThresholdsArtifact(
        format_version=FORMAT_VERSION,
        created_at="2026-01-01T00:00:00+00:00",
        code_version="test",
        data_hash="synthetic",
        label_scale=[1, 2, 3, 4, 5],
        entries=entries,
        default_methods=[
            DefaultMethod(
                judge=j,
                prompt_family="paper",
                criterion="coherence",
                method="residual",
                reason="test",
                input_kind="score",
            )
            for j in ("cheap", "strong")
        ],
        decision_rules=[
            _rule("cheap", [(0.05, [4], 0.04), (0.1, [2, 3, 4], 0.09)]),
            _rule("strong", [(0.05, [1, 2, 3], 0.03)]),
        ],
    )
    path = tmp_path / "cascade.json"
    save_artifact(artifact, path)
    judges = tmp_path / "judges.json"
    judges.write_bytes(
        msgspec.json.encode(
            [stand_in.judge_config(name=name, model=f"model-{name}", max_retries=0) for name in ("cheap", "strong")]
        )
    )
    cascades = tmp_path / "cascades.json"
    cascades.write_text('[{"name": "thrifty", "judges": ["cheap", "strong"]}]')
    return start_app(Settings(thresholds_path=path, judges_file=judges, cascades_file=cascades))


def _answer_with(stand_in: JudgeServer, scores: dict[str, int]) -> None:
    stand_in.responder = lambda body: ScriptedReply(str(scores[body["model"]]), peaked_logprobs(scores[body["model"]]))


def _models(stand_in: JudgeServer) -> list[str]:
    return [request.body["model"] for request in stand_in.requests]


def _score(app: AppHarness, body: dict) -> dict:
    # the module's rows are pac ones (hand-written bounds); the expected mode's cascade has a test of its own
    reply = app.client.post("/v1/score", json={"criterion": "coherence", "guarantee": "pac", **body})
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_the_strong_judge_is_called_only_when_the_cheap_one_cannot_accept(
    cascade_app: AppHarness, stand_in: JudgeServer
):
    _answer_with(stand_in, {"model-cheap": 3, "model-strong": 3})
    data = _score(cascade_app, {"cascade": "thrifty", **DOCUMENT})
    assert _models(stand_in) == ["model-cheap", "model-strong"]
    assert (data["decision"], data["judge"], data["point"]) == ("accept", "strong", 3)
    cascade = data["cascade"]
    assert (cascade["name"], cascade["stages"], cascade["stage_alpha"], cascade["judge_calls"]) == (
        "thrifty",
        ["cheap", "strong"],
        0.05,
        2,
    )
    assert [(s["judge"], s["decision"], s["judge_score"], s["source"]) for s in cascade["called"]] == [
        ("cheap", "escalate", 3, "judge"),
        ("strong", "accept", 3, "judge"),
    ]
    # each stage certified at 0.1 / 2; overall: bounds add up (0.04 + 0.03), deltas too (union bound)
    assert cascade["called"][1]["guarantees"][1] == {
        "kind": "accept_error",
        "alpha": 0.05,
        "mode": "pac",
        "confidence": 0.95,
        "tolerance": 2,
        "bound": 0.03,
    }
    assert data["guarantees"][1] == {
        "kind": "accept_error",
        "alpha": 0.1,
        "mode": "pac",
        "confidence": 0.9,
        "tolerance": 2,
        "bound": 0.07,
    }
    assert data["guarantees"][0]["kind"] == "set_coverage"
    assert "stage 2 (strong) accepted" in data["reason"] and "0.1 / 2 = 0.05" in data["reason"]


def test_a_cheap_accept_ends_the_cascade(cascade_app: AppHarness, stand_in: JudgeServer):
    _answer_with(stand_in, {"model-cheap": 5, "model-strong": 1})
    data = _score(cascade_app, {"cascade": "thrifty", **DOCUMENT})
    assert _models(stand_in) == ["model-cheap"]  # the strong judge is never paid for
    assert (data["decision"], data["judge"], data["point"], data["cascade"]["judge_calls"]) == ("accept", "cheap", 5, 1)


def test_the_same_cheap_verdict_alone_accepts_at_the_full_level(cascade_app: AppHarness, stand_in: JudgeServer):
    # outside the cascade, cheap is certified at the whole 0.1 and accepts a 3: the split is what costs a call
    _answer_with(stand_in, {"model-cheap": 3, "model-strong": 3})
    data = _score(cascade_app, {"judge": "cheap", **DOCUMENT})
    assert (data["decision"], data["cascade"]) == ("accept", None)


def test_no_stage_accepting_goes_to_a_human(cascade_app: AppHarness, stand_in: JudgeServer):
    _answer_with(stand_in, {"model-cheap": 1, "model-strong": 5})
    data = _score(cascade_app, {"cascade": "thrifty", **DOCUMENT})
    assert _models(stand_in) == ["model-cheap", "model-strong"]
    assert (data["decision"], data["escalate"], data["judge"]) == ("escalate", True, "strong")
    assert [s["decision"] for s in data["cascade"]["called"]] == ["escalate", "escalate"]
    assert "hands the item to a human" in data["reason"]


def test_a_callers_cheap_verdict_asks_for_a_second_opinion(cascade_app: AppHarness, stand_in: JudgeServer):
    data = _score(cascade_app, {"cascade": "thrifty", "judge_score": 3})
    assert stand_in.call_count == 0
    assert (data["decision"], data["escalate"], data["source"]) == ("second_opinion", False, "caller")
    assert (data["cascade"]["judge_calls"], [s["source"] for s in data["cascade"]["called"]]) == (0, ["caller"])
    assert "ask the next stage, strong" in data["reason"]
    accepted = _score(cascade_app, {"cascade": "thrifty", "judge_score": 5})
    assert accepted["decision"] == "accept"


def test_a_callers_verdict_with_the_texts_lets_the_service_call_the_next_stage(
    cascade_app: AppHarness, stand_in: JudgeServer
):
    _answer_with(stand_in, {"model-cheap": 1, "model-strong": 2})
    data = _score(cascade_app, {"cascade": "thrifty", "judge_score": 3, **DOCUMENT})
    assert _models(stand_in) == ["model-strong"]
    assert [(s["judge"], s["source"]) for s in data["cascade"]["called"]] == [("cheap", "caller"), ("strong", "judge")]
    assert (data["decision"], data["point"], data["cascade"]["judge_calls"]) == ("accept", 2, 1)


def test_a_callers_last_stage_verdict_escalates_to_a_human(cascade_app: AppHarness):
    data = _score(cascade_app, {"cascade": "thrifty", "judge": "strong", "judge_score": 5})
    assert data["decision"] == "escalate" and [s["judge"] for s in data["cascade"]["called"]] == ["strong"]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"cascade": "nobody", **DOCUMENT}, "unknown cascade"),
        ({"cascade": "thrifty", "judge": "cheap", **DOCUMENT}, "remove judge"),
        ({"cascade": "thrifty"}, "document and summary are required"),
        ({"cascade": "thrifty", "judge": "other", "judge_score": 3}, "not a stage"),
        ({"cascade": "thrifty", "panel": "jury", **DOCUMENT}, "remove verdicts, panel"),
        ({"cascade": "thrifty", "prompt_family": "paper", "judge_score": 3}, "prompt_family"),
    ],
)
def test_bad_cascade_requests_are_422_problems(cascade_app: AppHarness, body: dict, words: str):
    reply = cascade_app.client.post("/v1/score", json={"criterion": "coherence", **body})
    assert reply.status_code == 422, reply.text
    assert words in reply.json()["detail"]


def test_cascades_file_is_checked(tmp_path: Path):
    good = tmp_path / "good.json"
    good.write_text('[{"name": "t", "judges": ["a", "b"]}]')
    assert load_cascades(good) == {"t": ("a", "b")} and load_cascades(None) == {}
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
        with pytest.raises(CascadeConfigError):
            load_cascades(bad)
    check_cascade_stages({"t": ("a", "b")}, ["a", "b"])
    with pytest.raises(CascadeConfigError, match="not in JUDGES_FILE: z"):
        check_cascade_stages({"t": ("a", "z")}, ["a", "b"])


def test_quality_gate_mode_through_a_cascade_without_gates_claims_nothing(
    cascade_app: AppHarness, stand_in: JudgeServer
):
    _answer_with(stand_in, {"model-cheap": 5, "model-strong": 5})
    data = _score(cascade_app, {"cascade": "thrifty", "pass_threshold": 4, **DOCUMENT})
    assert data["decision"] == "escalate" and _models(stand_in) == ["model-cheap", "model-strong"]
    assert [g["kind"] for g in data["guarantees"]] == ["set_coverage"]  # no stage has a gate: no overall bound
    assert all("no quality gate certified at pass_threshold 4" in s["reason"] for s in data["cascade"]["called"])


def test_the_served_spec_names_the_cascades_and_bounds_the_decision_parameters(cascade_app: AppHarness):
    spec = cascade_app.client.get("/schema/openapi.json").json()
    score = spec["components"]["schemas"]["ScoreRequest"]["properties"]
    assert score["cascade"]["enum"] == ["thrifty", None]
    # K - 1: a larger tolerance is a 422 (service.scoring.cell_decision.asked)
    assert score["tolerance"]["maximum"] == 4
    (integer,) = [branch for branch in score["pass_threshold"]["anyOf"] if branch.get("type") == "integer"]
    assert integer["maximum"] == 5
