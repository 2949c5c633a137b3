"""The decision step (service.scoring.policy): each row of its table, the failed-selection reading, hulls,
parameters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from artifact.selection import legacy_selection_failure
from calibration.decisions.rule import Certification, DecisionRule, QualityGate
from service.errors import InvalidRequestError
from service.scoring.cell_decision import asked
from service.scoring.policy import (
    DecisionPolicy,
    find_rule,
    full_scale,
    interval_hull,
    set_guarantee,
)

ROOT = Path(__file__).resolve().parents[3]
COVER = set_guarantee(0.1, 0.05)
RULE = DecisionRule(
    judge="j",
    prompt_family="f",
    criterion="c",
    input_kind="probabilities",
    feature="expected_score",
    n_labels=5,
    bin_edges=[2.5, 3.5],
    points=[2, 3, 4],
    certifications=[Certification(tolerance=2, accept_alpha=0.1, delta=0.05, accepted_bins=[1], certified_error=0.09)],
    quality_gates=[
        QualityGate(pass_threshold=3, accept_alpha=0.1, delta=0.1, pass_bins=[1, 2], certified_false_pass=0.08)
    ],
)
UNIFORM = [0.2] * 5  # expected score 3: the certified middle bin


def _decide(**overrides: object):
    arguments = {
        "rule": RULE,
        "judge_score": 3,
        "probabilities": UNIFORM,
        "mean": None,
        "coverage": COVER,
        "prediction_set": (2, 3, 4),
        "selection_failed": None,
        "tolerance": 2,
        "accept_alpha": 0.1,
        "pass_threshold": None,
        "no_rule": "none here",
    }
    return DecisionPolicy().decide(**{**arguments, **overrides})


def test_a_certified_bin_accepts_with_the_certificate():
    result = _decide()
    assert (result.decision, result.escalate, result.point, result.rule_failed) == ("accept", False, 3, False)
    assert [g.kind for g in result.guarantees] == ["set_coverage", "accept_error"]
    assert (result.guarantees[1].bound, result.guarantees[1].confidence) == (0.09, 0.95)
    assert result.guarantees[0].confidence == 0.95


@pytest.mark.parametrize(
    ("overrides", "rule_failed", "kinds", "words"),
    [
        ({"selection_failed": "no method met the selection rule"}, True, [], "the cell's conformal rule failed"),
        ({"rule": None}, False, ["set_coverage"], "no certified decision rule: none here"),
        ({"probabilities": None}, False, ["set_coverage"], "cannot read this verdict"),
        ({"prediction_set": ()}, False, ["set_coverage", "accept_error"], "the prediction set is empty"),
        ({"probabilities": [0.9, 0.1, 0, 0, 0]}, False, ["set_coverage", "accept_error"], "not certified"),
        ({"tolerance": 1}, False, ["set_coverage"], "no certification at tolerance 1"),
        ({"accept_alpha": 0.05}, False, ["set_coverage"], "accept_alpha <= 0.05 (calibrated: 0.1)"),
    ],
)
def test_every_other_row_escalates_saying_why(overrides: dict, rule_failed: bool, kinds: list[str], words: str):
    result = _decide(**overrides)
    assert (result.decision, result.escalate, result.rule_failed) == ("escalate", True, rule_failed)
    assert [g.kind for g in result.guarantees] == kinds
    assert words in result.reason and result.reason.endswith("ask a human")


def test_without_a_rule_the_point_is_the_judge_score_and_with_one_the_calibrated_label():
    assert _decide(rule=None, judge_score=5).point == 5
    assert _decide(judge_score=5, probabilities=[0, 0, 0, 0.1, 0.9]).point == 4  # expected 4.9 -> last bin


def test_a_failed_certification_row_is_a_failed_rule():
    failed = Certification(
        tolerance=2,
        accept_alpha=0.1,
        delta=0.05,
        accepted_bins=[],
        certified_error=None,
        rule_failed=True,
        reason="3 documents",
    )
    rule = DecisionRule(**{**{f: getattr(RULE, f) for f in RULE.__struct_fields__}, "certifications": [failed]})
    result = _decide(rule=rule)
    assert (result.decision, result.rule_failed) == ("escalate", True) and "3 documents" in result.reason


@pytest.mark.parametrize(
    ("probabilities", "threshold", "decision", "words"),
    [
        (UNIFORM, 3, "accept", "pass accepted (point 3 >= 3)"),
        ([0, 0, 0, 0.1, 0.9], 3, "accept", "pass accepted (point 4 >= 3)"),
        ([0.9, 0.1, 0, 0, 0], 3, "escalate", "a fail reading (point 2 < pass_threshold 3)"),
        (UNIFORM, 4, "escalate", "no quality gate certified at pass_threshold 4"),
    ],
)
def test_quality_gate_rows(probabilities: list[float], threshold: int, decision: str, words: str):
    result = _decide(probabilities=probabilities, pass_threshold=threshold)
    assert result.decision == decision and words in result.reason
    if threshold == 3:
        assert result.guarantees[1].kind == "quality_gate" and result.guarantees[1].pass_threshold == 3
        assert (result.guarantees[1].bound, result.guarantees[1].confidence) == (0.08, 0.9)


def test_uncalibrated_escalates_with_no_guarantee():
    result = DecisionPolicy().uncalibrated("no threshold for the cell", point=4)
    assert (result.decision, result.escalate, result.point, result.guarantees) == ("escalate", True, 4, ())
    assert result.reason == (
        "not calibrated: no threshold for the cell; no prediction set can be trusted, so the full scale is returned"
    )
    assert full_scale(4) == (1, 2, 3, 4)


@given(st.sets(st.integers(1, 10), max_size=10))
def test_the_hull_is_the_smallest_interval_holding_the_set(labels: set[int]):
    hull = interval_hull(sorted(labels))
    assert set(labels) <= set(hull)
    if labels:
        assert hull == tuple(range(min(labels), max(labels) + 1))
    else:
        assert hull == ()


def test_the_shipped_fallback_reasons_name_the_failed_checks():
    artifact = json.loads((ROOT / "artifact" / "thresholds.json").read_text())
    assert artifact["default_methods"], "the shipped artifact has default methods"
    # With document-level PAC every shipped cell has a qualifying method (wide sets qualify), so there may be no
    # fallback here; reading a fallback reason is checked on a written one below.
    fallbacks = [d for d in artifact["default_methods"] if d["reason"].startswith("fallback to")]
    for default in fallbacks:
        failure = legacy_selection_failure(default["reason"])
        assert failure is not None and "no method met the selection rule" in failure
    qualified = [d for d in artifact["default_methods"] if not d["reason"].startswith("fallback to")]
    assert all(legacy_selection_failure(d["reason"]) is None for d in qualified)


def test_a_fallback_reason_is_read_against_the_rules_floors():
    reason = (
        "fallback to residual: no method qualified over 10 held-out evaluations (alpha=0.2) (residual: size "
        "3.36, coverage 0.795 (5th pct 0.761), min label 0.74, min score bin 0.76, non-interval 0.0%)"
    )
    failure = legacy_selection_failure(reason)
    assert failure == (
        "no method met the selection rule at alpha=0.2; the fallback residual fails: 5th-percentile "
        "coverage 0.761 < 0.78; coverage within a human label 0.74 < 0.75"
    )
    other = "fallback to residual: no method had mean coverage >= 0.89 at alpha=0.1"  # the offline study's form
    assert legacy_selection_failure(other) == f"no method met the selection rule ({other})"
    assert legacy_selection_failure("smallest qualifying sets among 3 of 9 methods") is None


def test_rules_are_found_in_the_verdicts_kind_order():
    score_rule = DecisionRule(
        **{**{f: getattr(RULE, f) for f in RULE.__struct_fields__}, "input_kind": "score", "feature": "score"}
    )
    rules = {("j", "f", "c", "probabilities"): RULE, ("j", "f", "c", "score"): score_rule}
    assert find_rule(rules, ("j", "f", "c"), ("probabilities", "score")) is RULE
    assert find_rule(rules, ("j", "f", "c"), ("score",)) is score_rule
    assert find_rule(rules, ("j", "f", "c"), ("mean",)) is None


def test_decision_parameters_default_and_are_checked_against_the_scale():
    assert (
        asked(
            tolerance=2, accept_alpha=None, alpha=None, default_alpha=0.1, pass_threshold=None, n_labels=5
        ).accept_alpha
        == 0.1
    )
    assert (
        asked(
            tolerance=2, accept_alpha=None, alpha=0.2, default_alpha=0.1, pass_threshold=None, n_labels=5
        ).accept_alpha
        == 0.2
    )
    assert (
        asked(tolerance=1, accept_alpha=0.05, alpha=0.2, default_alpha=0.1, pass_threshold=5, n_labels=5).accept_alpha
        == 0.05
    )
    with pytest.raises(InvalidRequestError, match="tolerance=5"):
        asked(tolerance=5, accept_alpha=None, alpha=None, default_alpha=0.1, pass_threshold=None, n_labels=5)
    with pytest.raises(InvalidRequestError, match="pass_threshold=6"):
        asked(tolerance=2, accept_alpha=None, alpha=None, default_alpha=0.1, pass_threshold=6, n_labels=5)
