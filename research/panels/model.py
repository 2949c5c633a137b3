"""A learned model of the human label given a panel's outputs: multinomial logistic regression (numpy + scipy).

Pure. Used by the panel study (:mod:`offline.studies.panels.study`) to ask whether a learned combination beats the mean
of expected scores; the service does not serve it (the artifact has no place for the model yet). Rules:

* **Features.** The members' expected scores (:func:`calibration.input_kinds.mean_panel.expected_score`),
  standardised with
  the training items' mean and standard deviation (a constant column is left centred), plus an intercept.
* **Fit.** Softmax over labels 1..K, weights minimising the mean negative log-likelihood + ``l2`` / 2 x the squared
  norm of the non-intercept weights, by ``scipy.optimize.minimize`` (L-BFGS-B, analytic gradient, from zeros). A
  label absent from the training items still gets a probability (the intercept is unpenalised but finite: the
  fit stops at ``gtol`` 1e-8 or 500 iterations).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize
from scipy.special import log_softmax, softmax

__all__ = ["MultinomialModel", "fit_multinomial"]


@dataclass(frozen=True)
class MultinomialModel:
    """Standardisation and weights ((features + 1) x K, intercept first) of a fitted model."""

    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    n_labels: int

    def design(self, features: np.ndarray) -> np.ndarray:
        x = (np.asarray(features, dtype=float) - self.mean) / self.scale
        return np.column_stack([np.ones(x.shape[0]), x])

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        """(n, K) P(human label = k | features)."""
        probabilities: NDArray[np.float64] = softmax(self.design(features) @ self.weights, axis=1)
        return probabilities


def _objective(flat: np.ndarray, x: np.ndarray, onehot: np.ndarray, l2: float) -> tuple[float, np.ndarray]:
    weights = flat.reshape(x.shape[1], onehot.shape[1])
    logits = x @ weights
    logp = log_softmax(logits, axis=1)
    n = x.shape[0]
    penalty = weights.copy()
    penalty[0] = 0.0
    value = -float((onehot * logp).sum()) / n + 0.5 * l2 * float((penalty**2).sum())
    gradient = x.T @ (np.exp(logp) - onehot) / n + l2 * penalty
    return value, gradient.ravel()


def fit_multinomial(
    features: np.ndarray, labels: np.ndarray, n_labels: int = 5, *, l2: float = 1e-2
) -> MultinomialModel:
    """Fit the module's model on (n, d) features and labels in 1..K."""
    feats = np.asarray(features, dtype=float)
    y = np.asarray(labels, dtype=np.int64)
    if feats.ndim != 2 or feats.shape[0] != y.size or y.size == 0:
        raise ValueError("features must be (n, d) with one label per row, n >= 1")
    if y.min() < 1 or y.max() > n_labels:
        raise ValueError(f"labels must lie in 1..{n_labels}")
    mean = feats.mean(axis=0)
    scale = feats.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    x = np.column_stack([np.ones(y.size), (feats - mean) / scale])
    onehot = np.zeros((y.size, n_labels))
    onehot[np.arange(y.size), y - 1] = 1.0
    result = minimize(
        _objective,
        np.zeros(x.shape[1] * n_labels),
        args=(x, onehot, l2),
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-8, "maxiter": 500},
    )
    return MultinomialModel(mean=mean, scale=scale, weights=result.x.reshape(x.shape[1], n_labels), n_labels=n_labels)
