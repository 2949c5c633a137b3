"""The no-information baseline and the human-human ceiling (calibration.report_card.baseline)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from calibration.report_card.baseline import human_ceiling, no_information_baseline


def test_the_baseline_is_the_label_distribution_answered_by_its_best_constant() -> None:
    labels = [1, 2, 2, 3, 5, 5, 5]
    baseline = no_information_baseline(labels, 5, tolerance=2)
    assert baseline.label_counts == [1, 2, 1, 0, 3]
    assert baseline.exact_agreement == pytest.approx(3 / 7)  # always 5
    # within one label: 2 covers {1, 2, 3} (4 items), 4 and 5 cover the three 5s only
    assert baseline.point == 2 and baseline.within_tolerance == pytest.approx(4 / 7)
    assert baseline.weighted_kappa == 0.0


def test_ties_between_constants_go_to_the_smaller_label() -> None:
    assert no_information_baseline([1, 5], 5, tolerance=1).point == 1


def test_the_ceiling_counts_every_pair_of_annotators_both_ways() -> None:
    rng = np.random.default_rng(0)
    truth = rng.integers(1, 6, 120)
    marks = np.column_stack([np.clip(truth + rng.integers(-1, 2, 120), 1, 5) for _ in range(3)])
    marks[:20, 2] = 0  # a missing rating
    groups = [f"d{i // 4}" for i in range(120)]
    ceiling = human_ceiling(marks, groups, 5, tolerance=2, n_resamples=200)
    assert ceiling is not None and ceiling.n_annotators == 3 and ceiling.n_items == 120
    a, b = [], []
    for i in range(3):
        for j in range(3):
            both = (marks[:, i] > 0) & (marks[:, j] > 0)
            if i != j:
                a += marks[both, i].tolist()
                b += marks[both, j].tolist()
    assert ceiling.weighted_kappa is not None
    assert ceiling.weighted_kappa.estimate == pytest.approx(cohen_kappa_score(a, b, weights="quadratic"))
    assert ceiling.exact_agreement.estimate == pytest.approx(np.mean(np.array(a) == np.array(b)))


def test_no_ceiling_without_two_annotators_on_an_item() -> None:
    marks = np.array([[3, 0], [0, 4], [0, 0]])
    assert human_ceiling(marks, ["a", "b", "c"], 5, tolerance=2) is None
