"""Input kinds: the core inputs of each kind, the same on the vectorised and the single-item path."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.conformal import METHODS, PROBABILITY_METHODS
from calibration.errors import ScoreOutOfRangeError
from calibration.input_kinds.verdicts import (
    kind_inputs,
    methods_for_input_kind,
    round_half_up,
    two_point_probabilities,
    verdict_inputs,
)


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
    assert methods_for_input_kind("probabilities") == METHODS
    assert not set(methods_for_input_kind("score")) & PROBABILITY_METHODS
    assert set(methods_for_input_kind("mean")) == {
        "residual",
        "residual_expected",
        "mondrian_residual",
        "learned_lac",
        "label_conditional",
    }
    with pytest.raises(ValueError):
        methods_for_input_kind("tokens")


# Exact values worked out by hand from the module's table: the two-point law puts 1 - (m - floor m) on floor m and
# m - floor m on ceil m; the top of the scale is a point mass; the score is m rounded half up.
@pytest.mark.parametrize(
    ("mean", "row"),
    [
        (1.0, [1.0, 0.0, 0.0, 0.0, 0.0]),
        (2.25, [0.0, 0.75, 0.25, 0.0, 0.0]),
        (4.5, [0.0, 0.0, 0.0, 0.5, 0.5]),
        (5.0, [0.0, 0.0, 0.0, 0.0, 1.0]),
    ],
)
def test_two_point_rows_by_hand(mean, row):
    assert two_point_probabilities(mean, 5) == pytest.approx(row, abs=1e-15)
    assert two_point_probabilities(3.0, 3) == [0.0, 0.0, 1.0]


def test_mean_kind_by_hand_on_both_paths():
    scores, rows = kind_inputs("mean", 5, means=np.array([1.5, 2.49, 5.0, 1.0]))
    assert scores.dtype == np.int64 and scores.tolist() == [2, 2, 5, 1]
    assert rows is not None and rows.shape == (4, 5)
    assert rows == pytest.approx(
        np.array([[0.5, 0.5, 0, 0, 0], [0, 0.51, 0.49, 0, 0], [0, 0, 0, 0, 1], [1, 0, 0, 0, 0]]), abs=1e-12
    )
    empty_scores, empty_rows = kind_inputs("mean", 5, means=np.array([]))
    assert empty_scores.size == 0 and empty_rows is not None and empty_rows.shape == (0, 5)
    assert verdict_inputs("mean", 5, mean=3.5) == (4, [0.0, 0.0, 0.5, 0.5, 0.0])
    assert verdict_inputs("mean", 4, mean=4.0) == (4, [0.0, 0.0, 0.0, 1.0])


def test_score_and_probability_kinds_by_hand():
    scores, probs = kind_inputs("score", 5, judge_scores=[3.0, 1.0])
    assert scores.dtype == np.int64 and scores.tolist() == [3, 1] and probs is None
    vector = [0.05, 0.1, 0.3, 0.3, 0.25]  # a tie between 3 and 4: the lower label
    assert verdict_inputs("probabilities", 5, judge_score=1, probabilities=vector) == (3, vector)
    assert verdict_inputs("probabilities", 5, probabilities=[0.6, 0.1, 0.1, 0.1, 0.1])[0] == 1
    assert verdict_inputs("probabilities", 5, probabilities=[0.1, 0.1, 0.1, 0.1, 0.6])[0] == 5
    assert verdict_inputs("score", 5, judge_score=4) == (4, None)
    scores, probs = kind_inputs("probabilities", 5, probabilities=[vector, [0.6, 0.1, 0.1, 0.1, 0.1]])
    assert scores.dtype == np.int64 and scores.tolist() == [3, 1]
    assert probs is not None and probs.tolist() == [vector, [0.6, 0.1, 0.1, 0.1, 0.1]]


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("score", "input kind 'score' needs judge scores"),
        ("probabilities", "input kind 'probabilities' needs probabilities"),
        ("mean", "input kind 'mean' needs mean_of_samples"),
        ("tokens", "input kind 'tokens' is not one of score, probabilities, mean"),
    ],
)
def test_missing_inputs_are_refused_with_what_the_kind_needs(kind, message):
    with pytest.raises(ValueError) as vectorised:
        kind_inputs(kind, 5)
    assert str(vectorised.value) == message
    single = message.replace("judge scores", "a judge score")
    with pytest.raises(ValueError) as one:
        verdict_inputs(kind, 5)
    assert str(one.value) == single


def test_methods_per_kind_in_core_order_and_the_refusals():
    assert methods_for_input_kind("score") == ("residual", "mondrian_residual", "learned_lac", "label_conditional")
    assert methods_for_input_kind("mean") == (
        "residual",
        "residual_expected",
        "mondrian_residual",
        "learned_lac",
        "label_conditional",
    )
    with pytest.raises(ValueError, match=r"^input kind 'tokens' is not one of score, probabilities, mean$"):
        methods_for_input_kind("tokens")
    with pytest.raises(ScoreOutOfRangeError, match=r"^mean_of_samples=0\.5 lies outside the label scale 1\.\.5$"):
        two_point_probabilities(0.5, 5)
    with pytest.raises(ScoreOutOfRangeError, match=r"^mean_of_samples=inf lies outside the label scale 1\.\.4$"):
        two_point_probabilities(float("inf"), 4)
    assert [round_half_up(v) for v in (0.5, -0.5, 4.999, 1.0)] == [1, 0, 5, 1]


def test_probabilities_come_back_as_floats_whatever_was_sent():
    scores, probs = kind_inputs("probabilities", 5, probabilities=[[0, 0, 1, 0, 0], [1, 0, 0, 0, 0]])
    assert probs is not None and probs.dtype == np.float64 and probs.tolist() == [[0, 0, 1, 0, 0], [1, 0, 0, 0, 0]]
    assert scores.tolist() == [3, 1]
