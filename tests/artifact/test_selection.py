"""A default method's selection outcome (artifact.selection): typed from format 3, read from the reason before it;
the shipped artifact's typed outcomes agree with its reasons."""

from __future__ import annotations

from pathlib import Path

from artifact.entries import DefaultMethod
from artifact.selection import legacy_selection_failure, selection_failure
from artifact.thresholds import load_artifact
from calibration.input_kinds.selection import MethodEvidence, choose_method, failed_checks

SHIPPED = load_artifact(Path(__file__).resolve().parents[2] / "artifact" / "thresholds.json")
LEGACY_REASON = (
    "fallback to residual: no method qualified over 10 held-out evaluations (alpha=0.2) (residual: size "
    "3.36, coverage 0.795 (5th pct 0.761), min label 0.74, min score bin 0.76, non-interval 0.0%)"
)


def _default(**fields: object) -> DefaultMethod:
    return DefaultMethod(judge="j", prompt_family="f", criterion="c", method="residual", **fields)  # type: ignore[arg-type]


def test_a_typed_outcome_is_read_from_its_fields_never_from_the_reason() -> None:
    assert selection_failure(_default(reason=LEGACY_REASON, selection_qualified=True)) is None
    failed = _default(reason="anything", selection_qualified=False, selection_failures=["mean coverage 0.8 < 0.89"])
    assert selection_failure(failed) == (
        "no method met the selection rule; the fallback residual fails: mean coverage 0.8 < 0.89"
    )


def test_an_artifact_before_format_3_is_read_from_its_reason() -> None:
    legacy = _default(reason=LEGACY_REASON)
    assert selection_failure(legacy) == legacy_selection_failure(LEGACY_REASON) is not None
    assert selection_failure(_default(reason="smallest qualifying sets among 3 of 9 methods")) is None


def test_the_fit_records_each_failed_check() -> None:
    evidence = MethodEvidence(
        method="residual", alpha=0.2, n_evaluations=10, mean_coverage=0.795, p5_coverage=0.761,
        min_label_coverage=0.74, min_bin_coverage=0.76, mean_set_size=3.36, non_interval_share=0.0,
        full_scale_share=0.0, empty_share=0.0,
    )  # fmt: skip
    assert failed_checks(evidence) == [
        "5th-percentile coverage 0.761 < 0.78",
        "coverage within a human label 0.74 < 0.75",
    ]
    choice = choose_method([evidence], fallback="residual")
    assert not choice.qualified and choice.failed_checks == failed_checks(evidence)


def test_the_shipped_outcomes_are_typed_and_agree_with_the_reasons() -> None:
    assert SHIPPED.format_version == 3 and SHIPPED.default_methods
    for default in SHIPPED.default_methods:
        assert default.selection_qualified is not None
        assert default.selection_qualified == (legacy_selection_failure(default.reason) is None)
