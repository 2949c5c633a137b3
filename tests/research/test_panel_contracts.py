"""Contracts of the panel modules (calibration.input_kinds.mean_panel, panel_model, panel_candidate) pinned for mutation
testing: each refusal word for word, the edges of each rule (clipping to the scale, the 1e-12 membership tolerance, the
smallest sub-panel), and the multinomial model's stated objective and first-order optimum written out here."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import log_softmax

from calibration.input_kinds.mean_panel import (
    MEMBER_INPUTS,
    PANEL_INPUT_KIND,
    PANEL_PREFIX,
    PANEL_PROMPT_FAMILY,
    disagreement,
    expected_score,
    expected_scores,
    is_panel_family,
    is_panel_name,
    member_input,
    panel_family,
    panel_kind_data,
    panel_mean,
    panel_means,
    panel_members,
    panel_name,
    served_panel,
)
from research.panels.candidate import balanced_probabilities, candidate_sets, label_prior, pooled_bins
from research.panels.model import MultinomialModel, _objective, fit_multinomial


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: panel_name(["a", "a"]), "a panel needs at least two distinct judges; got ['a']"),
        (
            lambda: panel_name(["a", "b+c"]),
            "judge name 'b+c' cannot be a panel member (empty, contains '+', or a panel)",
        ),
        (lambda: panel_name(["a", ""]), "judge name '' cannot be a panel member (empty, contains '+', or a panel)"),
        (
            lambda: panel_name(["panel:x", "b"]),
            "judge name 'panel:x' cannot be a panel member (empty, contains '+', or a panel)",
        ),
        (lambda: panel_members("gpt"), "'gpt' is not a panel name (panel:<judge>+<judge>...)"),
        (
            lambda: panel_members("panel:b+a"),
            "'panel:b+a' is not a canonical panel name (members sorted, distinct, at least two)",
        ),
        (lambda: member_input(), "a member verdict needs mean_of_samples, probabilities or a judge score"),
        (
            lambda: panel_family(["score"]),
            "member inputs must be two or more of mean, probabilities, score; got ['score']",
        ),
        (
            lambda: panel_family(["score", "x"]),
            "member inputs must be two or more of mean, probabilities, score; got ['score', 'x']",
        ),
        (lambda: expected_score(5), "a member verdict needs mean_of_samples, probabilities or a judge score"),
        (lambda: expected_score(5, probabilities=[0.5, 0.5]), "probabilities have 2 entries, the scale has 5"),
        (lambda: expected_scores(5), "member verdicts need means, probabilities or judge scores"),
        (lambda: expected_scores(5, probabilities=np.ones((2, 4))), "probabilities must be (n, 5)"),
        (lambda: expected_scores(5, probabilities=np.ones(5)), "probabilities must be (n, 5)"),
        (lambda: panel_mean([3.0], 5), "a panel verdict needs at least two members' expected scores"),
        (lambda: panel_means(np.ones((3, 1)), 5), "expected scores must be an (n_items, n_members >= 2) matrix"),
        (lambda: panel_means(np.ones(3), 5), "expected scores must be an (n_items, n_members >= 2) matrix"),
        (lambda: disagreement([]), "no expected scores"),
        (
            lambda: fit_multinomial(np.ones((3, 2)), np.array([1, 2])),
            "features must be (n, d) with one label per row, n >= 1",
        ),
        (
            lambda: fit_multinomial(np.ones(2), np.array([1, 2])),
            "features must be (n, d) with one label per row, n >= 1",
        ),
        (
            lambda: fit_multinomial(np.ones((0, 2)), np.array([], dtype=np.int64)),
            "features must be (n, d) with one label per row, n >= 1",
        ),
        (lambda: fit_multinomial(np.ones((2, 2)), np.array([0, 2])), "labels must lie in 1..5"),
        (lambda: fit_multinomial(np.ones((2, 2)), np.array([1, 4]), 3), "labels must lie in 1..3"),
        (lambda: label_prior(np.array([0, 2]), 5), "labels must lie in 1..5"),
        (lambda: label_prior(np.array([1, 6]), 5), "labels must lie in 1..5"),
        (
            lambda: balanced_probabilities(np.ones((2, 3)), np.array([0.5, 0.5])),
            "probabilities must be (n, K) and the prior K positive numbers",
        ),
        (
            lambda: balanced_probabilities(np.ones(3), np.array([0.5, 0.5, 0.5])),
            "probabilities must be (n, K) and the prior K positive numbers",
        ),
        (
            lambda: balanced_probabilities(np.ones((1, 2)), np.array([0.5, -0.5])),
            "probabilities must be (n, K) and the prior K positive numbers",
        ),
    ],
)
def test_refusals_read_exactly(call, message) -> None:
    with pytest.raises(ValueError) as caught:
        call()
    assert str(caught.value) == message


def test_names_and_families() -> None:
    assert (PANEL_PREFIX, PANEL_PROMPT_FAMILY, PANEL_INPUT_KIND, MEMBER_INPUTS) == (
        "panel:",
        "panel",
        "mean",
        ("mean", "probabilities", "score"),
    )
    assert panel_name(["b", "a", "b"]) == "panel:a+b"
    assert panel_members("panel:a+b") == ("a", "b")
    assert is_panel_name("panel:a+b") and not is_panel_name("a") and not is_panel_name("xpanel:a+b")
    assert panel_family(["mean", "probabilities", "score"]) == "panel:mean+probabilities+score"
    assert not is_panel_family("panels") and not is_panel_family("xpanel:score")
    assert served_panel(["a", "b", "c"], ["b", "a"]) == "panel:a+b"
    assert member_input(probabilities=[1.0, 0.0]) == "probabilities" and member_input(mean=1.0) == "mean"


def test_expected_scores_types_and_scale() -> None:
    value = expected_score(3, probabilities=np.array([0.25, 0.25, 0.5]))
    assert value == 2.25 and type(value) is float
    assert type(expected_score(5, judge_score=4)) is float and type(expected_score(5, mean=np.float32(2.5))) is float
    np.testing.assert_array_equal(expected_scores(3, probabilities=[[0.25, 0.25, 0.5], [1, 0, 0]]), [2.25, 1.0])
    assert expected_scores(5, means=[2, 3]).dtype == float and expected_scores(5, judge_scores=[2, 3]).dtype == float


def test_means_are_clipped_to_the_scale_exactly() -> None:
    assert panel_mean([3.0, 3.1], 3) == 3.0 and panel_mean([0.5, 1.0], 4) == 1.0 and panel_mean([2, 3], 4) == 2.5
    assert type(panel_mean([2, 3], 4)) is float
    np.testing.assert_array_equal(panel_means(np.array([[3.0, 3.5], [0.0, 1.0], [2.0, 2.5]]), 3), [3.0, 1.0, 2.25])


def test_disagreement_is_the_population_spread() -> None:
    found = disagreement([1.0, 2.0, 4.0])
    assert found.spread == 3.0 and found.std == pytest.approx(math.sqrt(14 / 9), rel=1e-15)
    assert disagreement([2.5]).std == 0.0 and disagreement([2.5]).spread == 0.0


def test_panel_kind_data_keeps_the_scale_labels_and_groups() -> None:
    data = panel_kind_data(
        np.array([[1.0, 2.0], [4.0, 4.0], [2.2, 2.4]]), labels=[1, 4, 2], groups=["d", "e", "d"], n_labels=4
    )
    assert data.n_labels == 4 and data.labels.tolist() == [1, 4, 2] and data.groups.tolist() == ["d", "e", "d"]
    assert data.judge_scores.tolist() == [2, 4, 2]
    np.testing.assert_allclose(data.probabilities, [[0.5, 0.5, 0, 0], [0, 0, 0, 1], [0, 0.7, 0.3, 0]], atol=1e-12)


def test_the_model_objective_value_by_hand() -> None:
    # mean negative log-likelihood + l2 / 2 * (squared non-intercept weights), on a 3 x 2 design and K = 3
    x = np.array([[1.0, 0.5], [1.0, -1.0], [1.0, 2.0]])
    onehot = np.eye(3)[[0, 2, 1]]
    weights = np.array([[0.3, -0.2, 0.1], [1.0, 0.5, -2.0]])
    logp = log_softmax(x @ weights, axis=1)
    expected = -(logp[0, 0] + logp[1, 2] + logp[2, 1]) / 3 + 0.5 * 0.2 * (1.0 + 0.25 + 4.0)
    value, gradient = _objective(weights.ravel(), x, onehot, 0.2)
    assert value == pytest.approx(expected, rel=1e-13)
    p = np.exp(logp)
    by_hand = x.T @ (p - onehot) / 3 + 0.2 * np.array([[0, 0, 0], [1.0, 0.5, -2.0]])
    np.testing.assert_allclose(gradient, by_hand.ravel(), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("l2", [1e-2, 0.5])
def test_the_fit_reaches_the_objectives_first_order_optimum(l2: float) -> None:
    rng = np.random.default_rng(8)
    labels = rng.integers(1, 5, 80)
    features = np.column_stack([labels + rng.normal(0, 1.0, 80), np.full(80, 2.0)])  # second column constant
    model = fit_multinomial(features, labels, 4, l2=l2)
    assert isinstance(model, MultinomialModel) and model.n_labels == 4 and model.weights.shape == (3, 4)
    np.testing.assert_allclose(model.mean, features.mean(axis=0), rtol=1e-15)
    np.testing.assert_allclose(model.scale, [features[:, 0].std(), 1.0], rtol=1e-15)  # a constant column: 1
    x = model.design(features)
    np.testing.assert_allclose(x[:, 1], (features[:, 0] - features[:, 0].mean()) / features[:, 0].std(), rtol=1e-12)
    assert x[:, 0].tolist() == [1.0] * 80 and x[:, 2].tolist() == [0.0] * 80
    _, gradient = _objective(model.weights.ravel(), x, np.eye(4)[labels - 1], l2)
    assert np.max(np.abs(gradient)) < 1e-6
    np.testing.assert_allclose(model.probabilities(features).sum(axis=1), 1.0, rtol=1e-12)


def test_candidate_helpers_edges() -> None:
    np.testing.assert_allclose(label_prior(np.array([], dtype=np.int64), 4), [0.25] * 4)
    np.testing.assert_allclose(label_prior(np.array([2, 2]), 2), [1 / 4, 3 / 4])
    assert pooled_bins(np.array([4, 4, 5, 7, 7, 7]), 3) == {4: 4, 5: 4, 7: 7}
    matrix = np.array([[0.5 + 5e-13, 0.5 + 2e-12]])
    np.testing.assert_array_equal(candidate_sets(matrix, np.array([1]), {1: 0.5}), [[True, False]])


def test_finite_rank_items_names_the_bad_level() -> None:
    from research.panels.candidate import finite_rank_items

    with pytest.raises(ValueError) as caught:
        finite_rank_items(1.5, None)
    assert str(caught.value) == "alpha=1.5 must be strictly between 0 and 1"
    with pytest.raises(ValueError) as caught:
        finite_rank_items(0.1, 2.0)
    assert str(caught.value) == "delta=2.0 must be strictly between 0 and 1"


def test_a_score_at_the_threshold_plus_the_tolerance_is_in_the_set() -> None:
    matrix = np.array([[0.5 + 1e-12, 0.5 + 1e-12 + 1e-15, 0.5]])
    np.testing.assert_array_equal(candidate_sets(matrix, np.array([1]), {1: 0.5}), [[True, False, True]])


def test_one_bin_pools_with_itself() -> None:
    assert pooled_bins(np.array([3]), 5) == {3: 3}


def test_the_default_penalty_and_a_column_spread_below_one() -> None:
    rng = np.random.default_rng(12)
    labels = rng.integers(1, 4, 60)
    features = np.column_stack([labels * 0.1 + rng.normal(0, 0.2, 60), rng.normal(0, 3.0, 60)])
    model = fit_multinomial(features, labels, 3)
    assert 0 < features[:, 0].std() < 1
    np.testing.assert_allclose(model.scale, features.std(axis=0), rtol=1e-15)  # a spread below 1 is kept
    np.testing.assert_array_equal(model.weights, fit_multinomial(features, labels, 3, l2=1e-2).weights)
    assert not np.allclose(model.weights, fit_multinomial(features, labels, 3, l2=1.01).weights, atol=1e-3)


def test_labels_held_as_floats_are_read_as_integers() -> None:
    np.testing.assert_array_equal(label_prior(np.array([1.0, 3.0, 3.0]), 3), label_prior(np.array([1, 3, 3]), 3))
    rng = np.random.default_rng(5)
    labels = rng.integers(1, 4, 30)
    features = labels[:, None] + rng.normal(0, 1.0, (30, 2))
    np.testing.assert_array_equal(
        fit_multinomial(features, labels.astype(float), 3).weights, fit_multinomial(features, labels, 3).weights
    )
