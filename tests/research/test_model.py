"""The panel's learned model (research.panels.model) against scikit-learn's multinomial logistic regression."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import check_grad

from research.panels.model import _objective, fit_multinomial


def _data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(1, 6, n)
    features = np.clip(labels[:, None] + rng.normal(0, [0.7, 1.0, 1.4], (n, 3)), 1, 5)
    return features, labels


def test_matches_scikit_learn() -> None:
    from sklearn.linear_model import LogisticRegression

    features, labels = _data(600, 1)
    l2 = 0.01
    model = fit_multinomial(features, labels, 5, l2=l2)
    standardised = (features - model.mean) / model.scale
    reference = LogisticRegression(C=1.0 / (l2 * labels.size), tol=1e-10, max_iter=5000).fit(standardised, labels)
    np.testing.assert_allclose(model.probabilities(features), reference.predict_proba(standardised), atol=2e-4)


def test_gradient_is_exact() -> None:
    features, labels = _data(50, 2)
    x = np.column_stack([np.ones(50), (features - features.mean(0)) / features.std(0)])
    onehot = np.eye(5)[labels - 1]
    point = np.random.default_rng(3).normal(size=x.shape[1] * 5)
    error = check_grad(lambda w: _objective(w, x, onehot, 0.1)[0], lambda w: _objective(w, x, onehot, 0.1)[1], point)
    assert error < 1e-5


def test_constant_features_give_the_label_frequencies() -> None:
    labels = np.array([1, 2, 2, 3, 3, 3, 5, 5, 5, 5])
    model = fit_multinomial(np.full((10, 2), 3.0), labels, 5)
    expected = np.bincount(labels, minlength=6)[1:] / 10
    np.testing.assert_allclose(model.probabilities(np.full((1, 2), 3.0))[0], expected, atol=1e-3)


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError):
        fit_multinomial(np.ones((3, 2)), np.array([1, 2]))
    with pytest.raises(ValueError):
        fit_multinomial(np.ones((2, 2)), np.array([0, 2]))
