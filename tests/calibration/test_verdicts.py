"""Input kinds: the core inputs of each kind, the same on the vectorised and the single-item path."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.conformal import METHODS, PROBABILITY_METHODS
from calibration.errors import ScoreOutOfRangeError
from calibration.verdicts import kind_inputs, methods_for_kind, round_half_up, two_point_probabilities, verdict_inputs


@pytest.mark.parametrize("mean", [1.0, 1.25, 2.5, 3.999, 4.0, 4.75, 5.0])
def test_two_point_law_has_the_mean_and_its_mass_on_the_neighbours(mean):
    row = two_point_probabilities(mean, 5)
    assert sum(row) == pytest.approx(1.0)
    assert sum((k + 1) * p for k, p in enumerate(row)) == pytest.approx(mean)
    assert sum(p > 0 for p in row) <= 2


@pytest.mark.parametrize("mean", [0.99, 5.01, float("nan")])
def test_mean_outside_the_scale_is_refused(mean):
    with pytest.raises(ScoreOutOfRangeError):
        two_point_probabilities(mean, 5)


def test_round_half_up():
    assert [round_half_up(v) for v in (1.5, 2.5, 2.49, 3.0)] == [2, 3, 2, 3]


def test_probability_kind_takes_its_score_from_the_vector_lower_label_on_ties():
    probabilities = np.array([[0.1, 0.4, 0.4, 0.05, 0.05], [0.0, 0.0, 0.2, 0.3, 0.5]])
    scores, probs = kind_inputs("probabilities", 5, judge_scores=np.array([5, 1]), probabilities=probabilities)
    assert scores.tolist() == [2, 5] and probs is not None
    assert verdict_inputs("probabilities", 5, judge_score=5, probabilities=probabilities[0].tolist())[0] == 2


def test_vectorised_and_single_item_paths_agree():
    rng = np.random.default_rng(1)
    means = rng.uniform(1, 5, size=30)
    scores, probs = kind_inputs("mean", 5, means=means)
    for i, mean in enumerate(means):
        score, row = verdict_inputs("mean", 5, mean=float(mean))
        assert score == scores[i] and row == pytest.approx(probs[i].tolist())
    raw = rng.integers(1, 6, size=30)
    assert kind_inputs("score", 5, judge_scores=raw)[0].tolist() == raw.tolist()
    assert kind_inputs("score", 5, judge_scores=raw)[1] is None


def test_methods_per_kind():
    assert methods_for_kind("probabilities") == METHODS
    assert not set(methods_for_kind("score")) & PROBABILITY_METHODS
    assert set(methods_for_kind("mean")) == {"residual", "residual_expected", "mondrian_residual", "learned_lac",
                                             "label_conditional"}
    with pytest.raises(ValueError):
        methods_for_kind("tokens")
