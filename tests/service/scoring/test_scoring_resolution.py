"""Scoring's resolution rules 3-6 (service/scoring/resolve.py and sets.py): criterion, judge, prompt family, level
and named method.

Each refusal is pinned word for word with its allowed values (the problem detail is logged and shown to callers;
the renderer appends " (allowed: ...)" unless the detail already lists them), and each resolved value is checked
where a rule picks it. Expected values are read off the test artifact (tests/service/conftest.py): stand-in/paper
has coherence (every method), relevance (residual, mondrian_residual), fluency; stand-in has faithfulness under
factuality_direct and factuality_qa; recorded-judge has coherence under geval; levels 0.1 and 0.2.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import pytest

from artifact.serving import ServedEntry
from artifact.thresholds import save_artifact
from service.artifacts.snapshot import CalibrationSnapshot
from service.config.settings import Settings
from service.http.routes.score import scoring_context
from service.scoring.resolve import resolve
from service.scoring.sets import calibrated_entry
from service.scoring.verdict import own_verdict
from service.wire.score import ScoreRequest
from tests.service.artifacts.test_artifacts_merge import user_artifact
from tests.service.conftest import RECORDED, STAND_IN, AppHarness

CRITERIA = ["coherence", "consistency", "faithfulness", "fluency", "relevance"]
JUDGES = [RECORDED, STAND_IN]


def _problem(harness: AppHarness, body: dict) -> dict:
    reply = harness.client.post("/v1/score", json=body)
    assert reply.status_code == 422, reply.text
    return reply.json()


def _answer(harness: AppHarness, body: dict) -> dict:
    reply = harness.client.post("/v1/score", json=body)
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_unknown_criterion_with_anown_verdict(app: AppHarness):
    problem = _problem(app, {"criterion": "tone", "judge": STAND_IN, "judge_score": 3})
    assert problem["detail"] == f"unknown criterion 'tone' (allowed: {', '.join(CRITERIA)})"
    assert problem["allowed"] == CRITERIA


def test_unknown_criterion_for_a_live_call_says_what_a_calibration_only_criterion_needs(judge_app: AppHarness):
    problem = _problem(judge_app, {"criterion": "tone", "document": "D.", "summary": "S."})
    assert problem["detail"] == (
        "unknown criterion 'tone' for a live judge call (a criterion only your calibration covers needs your "
        f"judge_score) (allowed: {', '.join(CRITERIA)})"
    )
    assert problem["allowed"] == CRITERIA


def test_an_own_verdict_needs_a_judge_the_calibration_or_the_configuration_knows(app: AppHarness):
    problem = _problem(app, {"criterion": "coherence", "judge_score": 3})
    assert problem["detail"] == (
        "judge is required with judge_score / judge_logprobs: name the judge whose verdict "
        f"it is (allowed: {RECORDED}, {STAND_IN})"
    )
    assert problem["allowed"] == JUDGES
    problem = _problem(app, {"criterion": "coherence", "judge": "nobody", "judge_score": 3})
    assert problem["detail"] == (
        f"unknown judge 'nobody': not in the calibration nor configured (allowed: {RECORDED}, {STAND_IN})"
    )
    assert problem["allowed"] == JUDGES


def test_an_own_verdict_takes_the_default_judge_when_one_is_configured(judge_app: AppHarness):
    data = _answer(judge_app, {"criterion": "coherence", "judge_score": 3})
    assert (data["judge"], data["prompt_family"], data["calibrated"], data["source"]) == (
        STAND_IN,
        "paper",
        True,
        "caller",
    )
    data = _answer(judge_app, {"criterion": "coherence", "judge": RECORDED, "judge_score": 3})
    assert (data["judge"], data["prompt_family"], data["calibrated"]) == (RECORDED, "geval", True)


@pytest.mark.parametrize(
    ("extra", "actual"),
    [
        ({}, "paper"),
        ({"criterion": "faithfulness"}, "factuality_direct"),
        ({"criterion": "faithfulness", "factuality_method": "qa"}, "factuality_qa"),
    ],
)
def test_a_live_call_cannot_claim_another_prompt_family(judge_app: AppHarness, extra: dict, actual: str):
    body = {"criterion": "coherence", "document": "D.", "summary": "S.", "prompt_family": "geval", **extra}
    problem = _problem(judge_app, body)
    assert problem["detail"] == (
        f"judge 'stand-in' is asked with prompt family '{actual}' for this request; prompt_family 'geval' can only "
        "describe a verdict you send (judge_score / judge_logprobs)"
    )
    assert problem["allowed"] == [actual]


def test_own_verdict_prompt_family_rules(app: AppHarness, judge_app: AppHarness):
    # named: taken as is (here a family the calibration lacks: uncalibrated, never another family's threshold)
    data = _answer(app, {"criterion": "coherence", "judge": STAND_IN, "judge_score": 3, "prompt_family": "geval"})
    assert (data["prompt_family"], data["calibrated"]) == ("geval", False)
    assert data["reason"] == (
        "not calibrated: no calibration for judge='stand-in', prompt_family='geval', criterion='coherence'; no "
        "prediction set can be trusted, so the full scale is returned"
    )
    # faithfulness: the factuality method's family when the calibration has it
    for method, family in (("direct", "factuality_direct"), ("qa", "factuality_qa")):
        data = _answer(
            app, {"criterion": "faithfulness", "judge": STAND_IN, "judge_score": 3, "factuality_method": method}
        )
        assert (data["prompt_family"], data["calibrated"]) == (family, True)
    # not configured and several families calibrated for the criterion: the caller must name one
    problem = _problem(
        app, {"criterion": "faithfulness", "judge": STAND_IN, "judge_score": 3, "factuality_method": "sentences"}
    )
    assert problem["detail"] == (
        "judge 'stand-in' is calibrated for faithfulness under several prompt families; "
        "name one in prompt_family (allowed: factuality_direct, factuality_qa)"
    )
    assert problem["allowed"] == ["factuality_direct", "factuality_qa"]
    # configured: the judge's own prompt family
    data = _answer(judge_app, {"criterion": "faithfulness", "judge_score": 3, "factuality_method": "sentences"})
    assert (data["prompt_family"], data["calibrated"]) == ("paper", False)
    # a judge only the calibration knows, with one family: that family
    data = _answer(app, {"criterion": "coherence", "judge": RECORDED, "judge_score": 3})
    assert data["prompt_family"] == "geval"
    # ... and none for the criterion: no family, uncalibrated
    data = _answer(app, {"criterion": "fluency", "judge": RECORDED, "judge_score": 3})
    assert (data["prompt_family"], data["calibrated"], data["decision"]) == (None, False, "escalate")


def test_levels_below_every_calibrated_one_are_refused_within_the_tolerance(app: AppHarness):
    body = {"criterion": "coherence", "judge": STAND_IN, "judge_score": 3}
    problem = _problem(app, {**body, "alpha": 0.05})
    assert problem["detail"] == (
        "alpha=0.05 is below every calibrated level (the smallest is 0.1); calibrated levels: 0.1, 0.2"
    )
    assert problem["allowed"] == ["0.1", "0.2"]
    # within 1e-9 of the smallest level: served at it, no note
    data = _answer(app, {**body, "alpha": 0.1 - 5e-10})
    assert (data["alpha"], data["coverage_target"], data["calibrated"]) == (0.1, 0.9, True)
    assert "not a calibrated level" not in data["reason"]
    assert _problem(app, {**body, "alpha": 0.1 - 5e-9})["allowed"] == ["0.1", "0.2"]
    data = _answer(app, {**body, "alpha": 0.2})
    assert (data["alpha"], data["coverage_target"]) == (0.2, 0.8)


def test_the_default_level_comes_from_the_settings(start_app: Callable[[Settings], AppHarness], make_settings):
    harness = start_app(make_settings(default_alpha=0.2))
    data = _answer(harness, {"criterion": "coherence", "judge": STAND_IN, "judge_score": 3})
    assert (data["alpha"], data["coverage_target"], data["calibrated"]) == (0.2, 0.8, True)
    assert "the 80% prediction set is {" in data["reason"]
    assert data["guarantees"][0] == {"kind": "set_coverage", "alpha": 0.2, "mode": "expected"}
    # a default between levels is served at the next smaller one and says so
    harness = start_app(make_settings(default_alpha=0.15))
    data = _answer(harness, {"criterion": "coherence", "judge": STAND_IN, "judge_score": 3})
    assert (data["alpha"], data["coverage_target"]) == (0.1, 0.9)
    assert data["reason"].endswith("; alpha=0.15 is not a calibrated level, so the next smaller one (0.1) was used")
    # below every level: refused like a requested one
    harness = start_app(make_settings(default_alpha=0.01))
    problem = _problem(harness, {"criterion": "coherence", "judge": STAND_IN, "judge_score": 3})
    assert problem["detail"].startswith("alpha=0.01 is below every calibrated level (the smallest is 0.1)")


def test_a_live_call_naming_a_method_the_cell_lacks_is_refused_before_the_judge_is_called(
    judge_app: AppHarness, stand_in
):
    problem = _problem(judge_app, {"criterion": "relevance", "document": "D.", "summary": "S.", "method": "lac"})
    assert problem["detail"] == (
        "method 'lac' is not calibrated for judge='stand-in', prompt_family='paper', criterion='relevance'; "
        "calibrated methods: residual, mondrian_residual"
    )
    assert problem["allowed"] == ["residual", "mondrian_residual"]
    assert stand_in.call_count == 0
    # a method the cell has: answered with it
    data = _answer(
        judge_app, {"criterion": "relevance", "document": "D.", "summary": "S.", "method": "mondrian_residual"}
    )
    assert (data["method"], data["calibrated"]) == ("mondrian_residual", True) and stand_in.call_count == 1


def test_plans_and_served_entries_are_remembered_on_the_snapshot(app: AppHarness):
    # the memo's point: a repeated request resolves nothing again (the very same objects come back)
    context = scoring_context(app.services)
    snapshot = CalibrationSnapshot.build(context.snapshot.artifact, path="memory", loaded_at="now")
    request = msgspec.convert(
        {"criterion": "coherence", "judge": STAND_IN, "judge_score": 3, "alpha": 0.15, "guarantee": "expected"},
        ScoreRequest,
    )
    plan = resolve(context, snapshot, request, True)
    assert (plan.judge, plan.prompt_family, plan.alpha, plan.cell, plan.calibrated_cell) == (
        STAND_IN,
        "paper",
        0.15,
        (STAND_IN, "paper", "coherence"),
        True,
    )
    assert plan.coverage_target == pytest.approx(0.85)
    assert resolve(context, snapshot, request, True) is plan
    verdict = own_verdict(request)
    served = calibrated_entry(snapshot, plan, None, verdict)
    assert isinstance(served, ServedEntry) and (served.method, served.kind, served.alpha) == ("residual", "score", 0.1)
    assert calibrated_entry(snapshot, plan, None, verdict) is served


def test_a_criterion_only_the_calibration_covers(start_app: Callable[[Settings], AppHarness], judges_file, tmp_path):
    # the loaded calibration covers "helpfulness" (judge acme, family custom), which no judge can be asked about
    path = tmp_path / "mine.json"
    save_artifact(user_artifact(), path)
    harness = start_app(Settings(judges_file=judges_file, thresholds_path=path))
    data = _answer(harness, {"criterion": "helpfulness", "judge": "acme", "judge_score": 3})
    assert (data["criterion"], data["judge"], data["prompt_family"], data["calibrated"]) == (
        "helpfulness",
        "acme",
        "custom",
        True,
    )
    # an own verdict may name any criterion the calibration covers: it is among the allowed ones
    problem = _problem(harness, {"criterion": "tone", "judge": "acme", "judge_score": 3})
    assert problem["allowed"] == sorted([*CRITERIA, "helpfulness"])
    # a live call may not: only what the judge can be asked about
    problem = _problem(harness, {"criterion": "helpfulness", "document": "D.", "summary": "S."})
    assert problem["detail"] == (
        "unknown criterion 'helpfulness' for a live judge call (a criterion only your calibration covers needs your "
        f"judge_score) (allowed: {', '.join(CRITERIA)})"
    )
    assert problem["allowed"] == CRITERIA
