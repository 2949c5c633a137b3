"""Method selection: the qualifying rule, the interval preference, the fallback, and reasons that state figures."""

from __future__ import annotations

from calibration.selection import MethodEvidence, choose_method, qualifies


def _evidence(method: str, *, size: float, coverage: float = 0.92, p5: float = 0.90, label: float = 0.88,
              bins: float = 0.88, non_interval: float = 0.0) -> MethodEvidence:
    return MethodEvidence(method=method, alpha=0.1, n_evaluations=10, mean_coverage=coverage, p5_coverage=p5,
                          min_label_coverage=label, min_bin_coverage=bins, mean_set_size=size,
                          non_interval_share=non_interval, full_scale_share=0.0, empty_share=0.0)


def test_each_condition_can_disqualify():
    assert qualifies(_evidence("lac", size=3))
    assert not qualifies(_evidence("lac", size=3, coverage=0.889))  # mean below 0.89
    assert not qualifies(_evidence("lac", size=3, p5=0.879))  # 5th percentile below 0.88
    assert not qualifies(_evidence("lac", size=3, label=0.849))  # a human label below 0.85
    assert not qualifies(_evidence("lac", size=3, bins=0.849))  # a judge-score bin below 0.85


def test_smallest_qualifying_set_wins_and_the_reason_states_its_figures():
    choice = choose_method([_evidence("residual", size=4.4), _evidence("lac", size=3.1),
                            _evidence("learned_lac", size=2.0, label=0.3)], fallback="residual")
    assert choice.method == "lac" and choice.qualified and choice.qualifying == ["residual", "lac"]
    assert "size 3.10" in choice.reason and "residual size 4.40" in choice.reason


def test_an_interval_method_is_preferred_within_the_margin():
    choice = choose_method([_evidence("residual", size=4.4), _evidence("label_conditional", size=3.00,
                                                                       non_interval=0.4),
                            _evidence("ordinal", size=3.04)], fallback="residual")
    assert choice.method == "ordinal"
    assert "preferred to label_conditional" in choice.reason
    wider = choose_method([_evidence("residual", size=4.4), _evidence("label_conditional", size=3.00,
                                                                      non_interval=0.4),
                           _evidence("ordinal", size=3.06)], fallback="residual")
    assert wider.method == "label_conditional"


def test_no_qualifying_method_falls_back_and_says_so():
    choice = choose_method([_evidence("residual", size=4.4, label=0.5), _evidence("lac", size=3, p5=0.7)],
                           fallback="residual")
    assert choice.method == "residual" and not choice.qualified and choice.qualifying == []
    assert choice.reason.startswith("fallback to residual: no method qualified")


def test_full_scale_cannot_win_over_a_valid_smaller_set():
    choice = choose_method([_evidence("residual", size=4.3), _evidence("aps", size=5.0, coverage=1.0, p5=1.0,
                                                                       label=1.0, bins=1.0)], fallback="residual")
    assert choice.method == "residual"
