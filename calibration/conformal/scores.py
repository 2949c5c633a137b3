"""Nonconformity scores per method: for each item, the score of every candidate label 1..K (an (n, K) matrix).

Calibration takes the score of the true label; a set keeps the labels whose score is at most the threshold
(:mod:`calibration.conformal.sets`). ``label_scores`` is the vectorised form; ``label_scores_one`` is its
pure-Python twin for one item (the service's fast path), kept equal to it by a test.

- **Label ties.** Where a method orders labels by probability, equal probabilities are ordered by the lower
  label first.

Methods (``METHODS``):

================== ====================================================================================
``residual``          the paper's ``|y_hat - y|`` on the judge's integer score
``residual_expected`` ``|E_p[score] - y|``, the expected score under the judge's distribution
``lac``               ``1 - p(y)`` (least ambiguous set-valued classifier)
``aps``               mass of the labels at least as probable as y, y included (non-randomised APS)
``aps_randomized``    APS minus ``u * p(y)`` with ``u ~ U(0, 1)`` per item (exact coverage in expectation)
``ordinal``           contiguous sets: grow an interval from the mode, each step adding the more probable
                      neighbour (lower label on ties); score(y) = interval mass when y joins
``mondrian_residual`` ``residual`` with one threshold per judge score (group-conditional coverage)
``learned_lac``       LAC on a learned model of the human label given the judge's output:
                      ``P(y | judge) = sum_s w_s M[s, y]`` with ``w`` the judge's distribution (one-hot
                      judge score when there is none) and ``M`` a Laplace-smoothed table of human labels per
                      judge score, fitted on a random half of the calibration data that the threshold does
                      not use
``label_conditional`` the ``learned_lac`` score with one threshold per human label (class-wise Mondrian):
                      coverage holds within every human label, so small sets cannot come from the base rate
================== ====================================================================================
"""

from __future__ import annotations

import operator

import numpy as np

from calibration.conformal.learned_model import judge_weights, learned_probabilities
from calibration.errors import UnknownMethodError

__all__ = [
    "LEARNED_METHODS",
    "METHODS",
    "PROBABILITY_METHODS",
    "SCORE_METHODS",
    "label_scores",
    "label_scores_one",
]

METHODS = (
    "residual",
    "residual_expected",
    "lac",
    "aps",
    "aps_randomized",
    "ordinal",
    "mondrian_residual",
    "learned_lac",
    "label_conditional",
)
# Methods that cannot run without the judge's probability vector.
PROBABILITY_METHODS = frozenset({"residual_expected", "lac", "aps", "aps_randomized", "ordinal"})
# Methods whose score is the learned model's (they fit a model on part of the calibration data).
LEARNED_METHODS = frozenset({"learned_lac", "label_conditional"})
# Methods that need the judge's integer score.
SCORE_METHODS = frozenset({"residual", "mondrian_residual"})


def _label_values(n_labels: int) -> np.ndarray:
    return np.arange(1, n_labels + 1, dtype=float)


def _probability_order(probabilities: np.ndarray) -> np.ndarray:
    """Label indices per row, most probable first; equal probabilities put the lower label first."""
    # A stable sort on -p keeps the lower label first among equals.
    return np.argsort(-probabilities, axis=1, kind="stable")


def _aps_cumulative(probabilities: np.ndarray) -> np.ndarray:
    """For each label, the mass of all labels ordered before it plus its own (APS score)."""
    order = _probability_order(probabilities)
    sorted_mass = np.take_along_axis(probabilities, order, axis=1)
    cumulative = np.cumsum(sorted_mass, axis=1)
    scores = np.empty_like(probabilities)
    np.put_along_axis(scores, order, cumulative, axis=1)
    return scores


def _ordinal_growth(row: list[float]) -> list[float]:
    """Interval mass at which each label joins when growing from the mode toward the more probable side."""
    n_labels = len(row)
    mode = max(range(n_labels), key=lambda k: (row[k], -k))
    scores = [0.0] * n_labels
    low = high = mode
    mass = row[mode]
    scores[mode] = mass
    while high - low + 1 < n_labels:
        left = row[low - 1] if low > 0 else -1.0
        right = row[high + 1] if high + 1 < n_labels else -1.0
        if left >= right:  # ties go to the lower label
            low -= 1
            mass += row[low]
            scores[low] = mass
        else:
            high += 1
            mass += row[high]
            scores[high] = mass
    return scores


def _ordinal_growth_matrix(probabilities: np.ndarray) -> np.ndarray:
    """Vectorised twin of _ordinal_growth: the same steps, row by row in lockstep (same float additions)."""
    n_items, n_labels = probabilities.shape
    rows = np.arange(n_items)
    low = probabilities.argmax(axis=1)  # first maximum: ties go to the lower label
    high = low.copy()
    mass = probabilities[rows, low].copy()
    scores = np.zeros_like(probabilities)
    scores[rows, low] = mass
    for _ in range(n_labels - 1):
        left = np.where(low > 0, probabilities[rows, np.maximum(low - 1, 0)], -1.0)
        right = np.where(high + 1 < n_labels, probabilities[rows, np.minimum(high + 1, n_labels - 1)], -1.0)
        go_left = left >= right
        joining = np.where(go_left, low - 1, high + 1)
        mass = mass + probabilities[rows, joining]
        scores[rows, joining] = mass
        low = np.where(go_left, joining, low)
        high = np.where(go_left, high, joining)
    return scores


def label_scores(
    method: str,
    *,
    n_labels: int,
    judge_scores: np.ndarray | None = None,
    probabilities: np.ndarray | None = None,
    learned_matrix: np.ndarray | None = None,
    uniforms: np.ndarray | None = None,
) -> np.ndarray:
    """The (n, K) nonconformity score of every candidate label 1..K for each item, by the method's rule."""
    if method in ("residual", "mondrian_residual"):
        assert judge_scores is not None
        return np.abs(judge_scores[:, None].astype(float) - _label_values(n_labels)[None, :])
    if method in LEARNED_METHODS:
        assert learned_matrix is not None
        weights = judge_weights(judge_scores, probabilities, n_labels)
        return 1.0 - learned_probabilities(weights, learned_matrix)
    assert probabilities is not None
    if method == "residual_expected":
        expected = probabilities @ _label_values(n_labels)
        return np.abs(expected[:, None] - _label_values(n_labels)[None, :])
    if method == "lac":
        return 1.0 - probabilities
    if method == "aps":
        return _aps_cumulative(probabilities)
    if method == "aps_randomized":
        assert uniforms is not None
        return _aps_cumulative(probabilities) - uniforms[:, None] * probabilities
    if method == "ordinal":
        return _ordinal_growth_matrix(probabilities)
    raise UnknownMethodError(f"method={method!r} is not one of {', '.join(METHODS)}")


def label_scores_one(
    method: str,
    n_labels: int,
    judge_score: int | None,
    probs: list[float] | None,
    learned_matrix: list[list[float]] | None,
    uniform: float,
) -> list[float]:
    """Pure-Python twin of label_scores for one item (kept equal to it by a test)."""
    if method in LEARNED_METHODS:
        assert learned_matrix is not None
        if probs is None:  # one-hot weights: each sum is exactly the judge score's row entry
            return [1.0 - value for value in learned_matrix[int(judge_score) - 1]]  # type: ignore[arg-type]
        # The same sums, added in the same order (s = 1..K) as label_scores. The 1-5 scale is spelled out:
        # one expression per label is five times faster than a generator per label.
        if n_labels == 5:
            p1, p2, p3, p4, p5 = probs
            return [
                1.0 - (p1 * a + p2 * b + p3 * c + p4 * d + p5 * e)
                for a, b, c, d, e in zip(*learned_matrix, strict=True)
            ]
        return [1.0 - sum(map(operator.mul, probs, column)) for column in zip(*learned_matrix, strict=True)]
    assert probs is not None
    if method == "residual_expected":
        expected = sum(p * (k + 1) for k, p in enumerate(probs))
        return [abs(expected - (y + 1)) for y in range(n_labels)]
    if method == "lac":
        return [1.0 - p for p in probs]
    if method in ("aps", "aps_randomized"):
        order = sorted(range(n_labels), key=lambda k: (-probs[k], k))
        scores = [0.0] * n_labels
        mass = 0.0
        for k in order:
            mass += probs[k]
            scores[k] = mass - (uniform * probs[k] if method == "aps_randomized" else 0.0)
        return scores
    if method == "ordinal":
        return _ordinal_growth(probs)
    raise UnknownMethodError(f"method={method!r} is not one of {', '.join(METHODS)}")
