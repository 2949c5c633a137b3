"""Method selection: the qualifying rule, the interval preference, the fallback, and reasons that state figures."""

from __future__ import annotations

import msgspec
import pytest

from calibration.input_kinds.selection import MethodChoice, MethodEvidence, choose_method, qualifies


def _evidence(
    method: str,
    *,
    size: float,
    coverage: float = 0.92,
    p5: float = 0.90,
    label: float = 0.88,
    bins: float = 0.88,
    non_interval: float = 0.0,
) -> MethodEvidence:
    return MethodEvidence(
        method=method,
        alpha=0.1,
        n_evaluations=10,
        mean_coverage=coverage,
        p5_coverage=p5,
        min_label_coverage=label,
        min_bin_coverage=bins,
        mean_set_size=size,
        non_interval_share=non_interval,
        full_scale_share=0.0,
        empty_share=0.0,
    )


def test_each_condition_can_disqualify():
    assert qualifies(_evidence("lac", size=3))
    assert not qualifies(_evidence("lac", size=3, coverage=0.889))  # mean below 0.89
    assert not qualifies(_evidence("lac", size=3, p5=0.879))  # 5th percentile below 0.88
    assert not qualifies(_evidence("lac", size=3, label=0.849))  # a human label below 0.85
    assert not qualifies(_evidence("lac", size=3, bins=0.849))  # a judge-score bin below 0.85


def test_smallest_qualifying_set_wins_and_the_reason_states_its_figures():
    choice = choose_method(
        [_evidence("residual", size=4.4), _evidence("lac", size=3.1), _evidence("learned_lac", size=2.0, label=0.3)],
        fallback="residual",
    )
    assert choice.method == "lac" and choice.qualified and choice.qualifying == ["residual", "lac"]
    assert "size 3.10" in choice.reason and "residual size 4.40" in choice.reason


def test_an_interval_method_is_preferred_within_the_margin():
    choice = choose_method(
        [
            _evidence("residual", size=4.4),
            _evidence("label_conditional", size=3.00, non_interval=0.4),
            _evidence("ordinal", size=3.04),
        ],
        fallback="residual",
    )
    assert choice.method == "ordinal"
    assert "preferred to label_conditional" in choice.reason
    wider = choose_method(
        [
            _evidence("residual", size=4.4),
            _evidence("label_conditional", size=3.00, non_interval=0.4),
            _evidence("ordinal", size=3.06),
        ],
        fallback="residual",
    )
    assert wider.method == "label_conditional"


def test_no_qualifying_method_falls_back_and_says_so():
    choice = choose_method(
        [_evidence("residual", size=4.4, label=0.5), _evidence("lac", size=3, p5=0.7)], fallback="residual"
    )
    assert choice.method == "residual" and not choice.qualified and choice.qualifying == []
    assert choice.reason.startswith("fallback to residual: no method qualified")


def test_full_scale_cannot_win_over_a_valid_smaller_set():
    choice = choose_method(
        [_evidence("residual", size=4.3), _evidence("aps", size=5.0, coverage=1.0, p5=1.0, label=1.0, bins=1.0)],
        fallback="residual",
    )
    assert choice.method == "residual"


def test_each_condition_holds_at_its_boundary_and_fails_just_below():
    # target 0.9: mean >= 0.89, 5th percentile >= 0.88, labels and bins >= 0.85 (the bounds themselves qualify)
    assert qualifies(_evidence("lac", size=3, coverage=0.9 - 0.01, p5=0.9 - 0.02, label=0.9 - 0.05, bins=0.9 - 0.05))
    assert qualifies(_evidence("lac", size=3, coverage=0.89, p5=0.88, label=0.85, bins=0.85))
    for field, bound in (("coverage", 0.89), ("p5", 0.88), ("label", 0.85), ("bins", 0.85)):
        assert not qualifies(_evidence("lac", size=3, **{field: bound - 1e-9})), field
    strict = MethodEvidence(
        method="lac",
        alpha=0.05,
        n_evaluations=1,
        mean_coverage=0.94,
        p5_coverage=0.93,
        min_label_coverage=0.9,
        min_bin_coverage=0.9,
        mean_set_size=3.0,
        non_interval_share=0.0,
        full_scale_share=0.0,
        empty_share=0.0,
    )
    assert qualifies(strict)  # 0.95 - 0.01, 0.95 - 0.02, 0.95 - 0.05: each exactly at its bound
    assert not qualifies(msgspec.structs.replace(strict, mean_coverage=0.9399))


def test_the_reason_states_every_figure_exactly():
    choice = choose_method(
        [
            _evidence("residual", size=4.4),
            _evidence("lac", size=3.1, coverage=0.9234, p5=0.8812, label=0.861, bins=0.874, non_interval=0.0125),
            _evidence("learned_lac", size=2.0, label=0.3),
        ],
        fallback="residual",
        context=" (SummEval)",
    )
    assert choice == MethodChoice(
        method="lac",
        qualified=True,
        qualifying=["residual", "lac"],
        reason="smallest qualifying sets among 2 of 3 methods over 10 held-out evaluations (SummEval): lac: size "
        "3.10, coverage 0.923 (5th pct 0.881), min label 0.86, min score bin 0.87, non-interval 1.2%; "
        "residual size 4.40",
    )
    alone = choose_method([_evidence("residual", size=4.4)], fallback="residual")
    assert alone.reason == (
        "smallest qualifying sets among 1 of 1 methods over 10 held-out evaluations: residual: "
        "size 4.40, coverage 0.920 (5th pct 0.900), min label 0.88, min score bin 0.88, "
        "non-interval 0.0%"
    )


def test_the_interval_preference_is_stated_with_the_smaller_method_figures():
    choice = choose_method(
        [_evidence("residual", size=3.05), _evidence("label_conditional", size=3.0, non_interval=0.25)],
        fallback="residual",
    )
    assert choice.method == "residual"
    assert choice.reason == (
        "smallest qualifying sets among 2 of 2 methods over 10 held-out evaluations: residual: "
        "size 3.05, coverage 0.920 (5th pct 0.900), min label 0.88, min score bin 0.88, "
        "non-interval 0.0%; preferred to label_conditional (size 3.00, non-interval 25.0%) for "
        "interval-valued sets"
    )
    # within the margin, equal non-interval shares: the smaller set, then METHODS order
    assert (
        choose_method([_evidence("residual", size=3.04), _evidence("lac", size=3.0)], fallback="residual").method
        == "lac"
    )
    tie = choose_method([_evidence("lac", size=3.0), _evidence("residual", size=3.0)], fallback="lac")
    assert tie.method == "residual" and tie.reason.endswith("; lac size 3.00")
    # two methods with holes: the one with fewer holes wins even with the larger set
    holes = choose_method(
        [
            _evidence("residual", size=4.9),
            _evidence("lac", size=3.0, non_interval=0.3),
            _evidence("aps", size=3.04, non_interval=0.1),
        ],
        fallback="residual",
    )
    assert holes.method == "aps" and "preferred to lac (size 3.00, non-interval 30.0%)" in holes.reason


def test_the_fallback_reason_states_the_fallback_the_smallest_sets_and_other_levels():
    fail = {"label": 0.5}
    choice = choose_method(
        [
            _evidence("residual", size=4.4, **fail),
            _evidence("lac", size=3.0, p5=0.7),
            _evidence("aps", size=3.0, coverage=0.8),
        ],
        fallback="residual",
        context=" on X",
    )
    assert choice == MethodChoice(
        method="residual",
        qualified=False,
        qualifying=[],
        reason="fallback to residual: no method qualified over 10 held-out evaluations on X (residual: size 4.40, "
        "coverage 0.920 (5th pct 0.900), min label 0.50, min score bin 0.88, non-interval 0.0%; smallest "
        "sets: lac: size 3.00, coverage 0.920 (5th pct 0.700), min label 0.88, min score bin 0.88, "
        "non-interval 0.0%)",
        failed_checks=["coverage within a human label 0.5 < 0.85"],  # the typed outcome the artifact carries
    )
    at_02 = [
        MethodEvidence(
            method=m,
            alpha=0.2,
            n_evaluations=10,
            mean_coverage=c,
            p5_coverage=0.8,
            min_label_coverage=0.8,
            min_bin_coverage=0.8,
            mean_set_size=2.0,
            non_interval_share=0.0,
            full_scale_share=0.0,
            empty_share=0.0,
        )
        for m, c in (("residual", 0.5), ("lac", 0.5), ("aps", 0.85))
    ]
    good = [_evidence("residual", size=4.4), _evidence("lac", size=3.0)]
    failing_elsewhere = choose_method(good, fallback="residual", other_levels=[at_02])
    assert not failing_elsewhere.qualified and failing_elsewhere.reason.endswith(
        "non-interval 0.0%; lac fails the rule at alpha=0.2; residual fails the rule at alpha=0.2)"
    )
    only_lac_fails = choose_method(good, fallback="residual", other_levels=[at_02[1:]])
    assert (only_lac_fails.method, only_lac_fails.qualifying) == ("residual", ["residual"])


def test_a_fallback_without_evidence_is_refused():
    with pytest.raises(ValueError, match=r"^fallback method 'residual' has no evidence$"):
        choose_method([_evidence("lac", size=3.0)], fallback="residual")


def test_unknown_checks_are_refused_naming_the_known_ones():
    with pytest.raises(ValueError) as refused:
        qualifies(_evidence("lac", size=3), ("mean", "width", "depth"))
    assert str(refused.value) == "unknown qualification checks ['depth', 'width']; known: mean, p5, label, bin"


def test_relaxed_checks_apply_at_the_other_levels_too():
    # only the mean-coverage check: a method whose label coverage fails at another level still qualifies there
    weak_label = MethodEvidence(
        method="lac",
        alpha=0.2,
        n_evaluations=10,
        mean_coverage=0.85,
        p5_coverage=0.8,
        min_label_coverage=0.1,
        min_bin_coverage=0.8,
        mean_set_size=2.0,
        non_interval_share=0.0,
        full_scale_share=0.0,
        empty_share=0.0,
    )
    good = [_evidence("residual", size=4.4), _evidence("lac", size=3.0)]
    relaxed = choose_method(good, fallback="residual", other_levels=[[weak_label]], checks=("mean",))
    assert (relaxed.method, relaxed.qualifying) == ("lac", ["residual", "lac"])
    strict = choose_method(good, fallback="residual", other_levels=[[weak_label]])
    assert (strict.method, strict.qualifying) == ("residual", ["residual"])


def test_the_fallback_names_the_smallest_sets_to_the_hundredth():
    # 3.4 and 3.1 both round to 3: the smaller (lac) is named although residual comes first in METHODS
    choice = choose_method(
        [_evidence("residual", size=3.4, label=0.5), _evidence("lac", size=3.1, label=0.5)], fallback="residual"
    )
    assert "; smallest sets: lac: size 3.10" in choice.reason
