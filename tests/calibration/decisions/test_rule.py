"""The decision-rule contract: binning, level choice, refusal of failed or uncertified rows, validation."""

from __future__ import annotations

import pytest

from calibration.decisions.rule import (
    Certification,
    DecisionRule,
    decide,
    feature_of,
    validate_rule,
)


def _rule(**overrides: object) -> DecisionRule:
    fields: dict[str, object] = {
        "judge": "j",
        "prompt_family": "p",
        "criterion": "c",
        "input_kind": "score",
        "feature": "score",
        "n_labels": 5,
        "bin_edges": [1.5, 2.5, 3.5, 4.5],
        "points": [1, 2, 3, 4, 5],
        "certifications": [
            Certification(tolerance=2, accept_alpha=0.1, delta=0.05, accepted_bins=[3, 4], certified_error=0.08),
            Certification(tolerance=2, accept_alpha=0.2, delta=0.05, accepted_bins=[2, 3, 4], certified_error=0.15),
            Certification(
                tolerance=1,
                accept_alpha=0.1,
                delta=0.05,
                accepted_bins=[],
                certified_error=None,
                rule_failed=True,
                reason="too few documents",
            ),
        ],
    }
    fields.update(overrides)
    return DecisionRule(**fields)  # type: ignore[arg-type]


def test_bins_are_right_open_at_each_edge() -> None:
    rule = _rule()
    assert [decide(rule, x, tolerance=2, accept_alpha=0.1).bin_index for x in (1.0, 1.5, 2.49, 2.5, 5.0)] == [
        0,
        1,
        1,
        2,
        4,
    ]


def test_largest_calibrated_level_at_or_below_the_request_serves() -> None:
    rule = _rule()
    assert not decide(rule, 3.0, tolerance=2, accept_alpha=0.15).accepted  # 0.10 row serves: bin 2 not accepted
    accepted = decide(rule, 3.0, tolerance=2, accept_alpha=0.2)
    assert accepted.accepted and accepted.point == 3 and accepted.certification is not None
    assert accepted.certification.accept_alpha == 0.2


def test_no_row_below_the_request_never_accepts() -> None:
    outcome = decide(_rule(), 5.0, tolerance=2, accept_alpha=0.05)
    assert not outcome.accepted and outcome.certification is None and "0.1, 0.2" in outcome.reason


def test_failed_rule_escalates_and_says_so() -> None:
    outcome = decide(_rule(), 5.0, tolerance=1, accept_alpha=0.1)
    assert not outcome.accepted and outcome.rule_failed and "too few documents" in outcome.reason


def test_expected_score_renormalises() -> None:
    assert feature_of("expected_score", score=None, probabilities=[0, 0, 0.5, 0.5, 0], mean=None) == 3.5
    assert feature_of("expected_score", score=None, probabilities=[0, 0, 1, 1, 0], mean=None) == 3.5
    with pytest.raises(ValueError, match="probabilities"):
        feature_of("expected_score", score=4, probabilities=None, mean=None)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"points": [1, 2, 3]}, "points for"),
        ({"bin_edges": [1.5, 1.5, 3.5, 4.5]}, "ascending"),
        ({"points": [0, 2, 3, 4, 5]}, "1..5"),
        (
            {
                "certifications": [
                    Certification(tolerance=2, accept_alpha=0.1, delta=0.05, accepted_bins=[4], certified_error=0.12)
                ]
            },
            "certified",
        ),
        (
            {
                "certifications": [
                    Certification(tolerance=2, accept_alpha=0.1, delta=0.05, accepted_bins=[5], certified_error=0.05)
                ]
            },
            "outside",
        ),
    ],
)
def test_validation_refuses_inconsistent_rules(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        validate_rule(_rule(**overrides))
