"""Nonconformity scores by method name: the (n, K) matrix (``label_scores``) and one item's scores
(``label_scores_one``), both read from the method's registered score (:mod:`calibration.conformal.methods`).

Calibration takes the score of the true label; a set keeps the labels whose score is at most the threshold
(:mod:`calibration.conformal.sets`). The two forms run one kernel per score (:mod:`calibration.conformal.kernels`),
so they agree to the last bit. The methods and their scores are tabled in :mod:`calibration.conformal.methods`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from calibration.conformal.methods import (
    LEARNED_METHODS,
    METHODS,
    PROBABILITY_METHODS,
    SCORE_METHODS,
    conformal_method,
)

__all__ = [
    "LEARNED_METHODS",
    "METHODS",
    "PROBABILITY_METHODS",
    "SCORE_METHODS",
    "label_scores",
    "label_scores_one",
]


def label_scores(
    method: str,
    *,
    n_labels: int,
    judge_scores: NDArray[np.int64] | None = None,
    probabilities: NDArray[np.float64] | None = None,
    learned_matrix: NDArray[np.float64] | None = None,
    uniforms: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """The (n, K) nonconformity score of every candidate label 1..K for each item, by the method's rule."""
    return conformal_method(method).score.matrix(
        n_labels=n_labels,
        judge_scores=judge_scores,
        probabilities=probabilities,
        learned_matrix=learned_matrix,
        uniforms=uniforms,
    )


def label_scores_one(
    method: str,
    n_labels: int,
    judge_score: int | None,
    probs: Sequence[float] | None,
    learned_matrix: Sequence[Sequence[float]] | None,
    uniform: float | None,
) -> list[float]:
    """One item's K nonconformity scores: the same kernel as label_scores, on floats."""
    return conformal_method(method).score.one(n_labels, judge_score, probs, learned_matrix, uniform)
