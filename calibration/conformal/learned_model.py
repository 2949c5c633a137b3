"""The learned methods' model (``learned_lac``, ``label_conditional``) of the human label given the judge's output.

``P(y | judge) = sum_s w_s M[s, y]``: ``w`` is the judge's distribution over its own scores (its probabilities, or
a one-hot of its integer score when there are none) and ``M`` a Laplace-smoothed table of human labels per judge
score (add-one counts, the judge's weights as soft counts). Which calibration items fit ``M`` is drawn by the fit
(:func:`calibration.conformal.fit.calibration_scores`); the threshold uses the others. The score on the model,
``1 - P(y | judge)``, is the ``learned_lac`` kernel (:mod:`calibration.conformal.kernels`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "fit_learned_matrix",
    "judge_weights",
]


def judge_weights(judge_scores: np.ndarray | None, probabilities: np.ndarray | None, n_labels: int) -> np.ndarray:
    """The judge's distribution over its own scores: its probabilities, or a one-hot of its integer score."""
    if probabilities is not None:
        return probabilities
    assert judge_scores is not None
    weights = np.zeros((judge_scores.size, n_labels))
    weights[np.arange(judge_scores.size), judge_scores - 1] = 1.0
    return weights


def fit_learned_matrix(weights: np.ndarray, labels: np.ndarray, n_labels: int) -> np.ndarray:
    """Laplace-smoothed table of human labels per judge score, with soft judge weights as counts."""
    counts = np.ones((n_labels, n_labels))
    one_hot = np.zeros((labels.size, n_labels))
    one_hot[np.arange(labels.size), labels - 1] = 1.0
    counts += weights.T @ one_hot
    model: NDArray[np.float64] = counts / counts.sum(axis=1, keepdims=True)
    return model
