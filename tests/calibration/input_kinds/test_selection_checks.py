"""calibration.input_kinds.selection with some of rule 1's conditions switched off (studies that measure what each
costs), and
calibration.input_kinds.fit passing them through."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.input_kinds.fit import KindData, fit_input_kind
from calibration.input_kinds.selection import QUALIFY_CHECKS, MethodEvidence, choose_method, qualifies


def _evidence(
    method: str, *, size: float, coverage: float = 0.92, p5: float = 0.90, label: float = 0.88, bins: float = 0.88
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
        non_interval_share=0.0,
        full_scale_share=0.0,
        empty_share=0.0,
    )


def test_each_check_decides_only_its_own_condition() -> None:
    failing = {"mean": dict(coverage=0.88), "p5": dict(p5=0.87), "label": dict(label=0.84), "bin": dict(bins=0.84)}
    for check, fields in failing.items():
        evidence = _evidence("lac", size=3, **fields)
        assert not qualifies(evidence)  # the full rule
        assert not qualifies(evidence, (check,))
        assert qualifies(evidence, tuple(c for c in QUALIFY_CHECKS if c != check))
    assert qualifies(_evidence("lac", size=3, coverage=0.5, p5=0.5, label=0.5, bins=0.5), ())
    with pytest.raises(ValueError, match="unknown qualification checks"):
        qualifies(_evidence("lac", size=3), ("mean", "labels"))


def test_choose_method_with_the_mean_condition_only_takes_the_small_set_the_full_rule_rejects() -> None:
    evidence = [_evidence("residual", size=4.4), _evidence("learned_lac", size=2.0, label=0.3)]
    assert choose_method(evidence, fallback="residual").method == "residual"
    assert choose_method(evidence, fallback="residual", checks=("mean",)).method == "learned_lac"


def test_fit_kind_passes_the_checks_to_selection_and_to_the_served_recipe() -> None:
    rng = np.random.default_rng(4)
    labels = rng.choice(np.arange(1, 6), size=480, p=[0.04, 0.06, 0.1, 0.2, 0.6])
    scores = np.clip(labels + rng.integers(-1, 2, labels.size), 1, 5)
    data = KindData(
        kind="score",
        labels=labels,
        judge_scores=scores,
        probabilities=None,
        groups=np.repeat(np.arange(60), 8),
        n_labels=5,
    )
    options = dict(alphas=[0.1], delta=0.05, report_alphas=[0.1], n_splits=3, selection_repeats=2, nested_repeats=1)
    full = fit_input_kind(data, **options)
    relaxed = fit_input_kind(data, **options, qualify_checks=("mean",))
    assert full.heldout == relaxed.heldout  # the held-out figures do not depend on the rule
    by_method = {e.method: e for e in relaxed.selection_evidence}
    assert relaxed.default.qualifying == [m for m in by_method if qualifies(by_method[m], ("mean",))]
    assert full.default.qualifying == [m for m in by_method if qualifies(by_method[m])]
    assert set(full.default.qualifying) <= set(relaxed.default.qualifying)
