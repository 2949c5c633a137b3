"""Prediction sets from a fitted predictor: ``predict_sets`` (boolean (n, K) membership of labels 1..K) and
``prediction_set`` (one item's sorted set; the service's fast path, pure Python for the common methods).

- **Comparison.** A label is in the set when its score is <= ``q_hat`` + 1e-12 (``MEMBERSHIP_TOLERANCE``); the
  tolerance only absorbs the rounding difference between the vectorised and the single-item paths (it can only
  add a label whose score ties the threshold to 12 digits).
- **Full scale.** A ``None`` threshold (too few calibration items) puts every label in the set; with a threshold
  per human label, a label whose threshold is ``None`` is always in the set (:mod:`calibration.conformal.fit`).
- ``aps_randomized`` draws one uniform per item from ``rng`` (``None``: ``numpy.random.default_rng(0)``).
"""

from __future__ import annotations

import math

import numpy as np

from calibration.conformal.fit import FittedConformal
from calibration.conformal.inputs import judge_inputs
from calibration.conformal.scores import LEARNED_METHODS, PROBABILITY_METHODS, label_scores, label_scores_one
from calibration.errors import InvalidProbabilitiesError, ScoreOutOfRangeError

__all__ = [
    "MEMBERSHIP_TOLERANCE",
    "predict_sets",
    "prediction_set",
]

MEMBERSHIP_TOLERANCE = 1e-12


def _group_table(fitted: FittedConformal) -> np.ndarray:
    """Thresholds indexed by group value 1..K (index 0 unused), +inf for a missing or too-small group."""
    assert fitted.group_thresholds is not None
    table = np.full(fitted.n_labels + 1, np.inf)
    for group, threshold in fitted.group_thresholds.items():
        if threshold is not None:
            table[int(group)] = threshold
    return table


def _threshold_matrix(fitted: FittedConformal, judge_scores: np.ndarray | None, n_items: int) -> np.ndarray:
    """The (n, K) threshold that each candidate label's score is compared with; +inf means always included."""
    if fitted.grouping == "judge_score":
        assert judge_scores is not None
        return np.repeat(_group_table(fitted)[judge_scores][:, None], fitted.n_labels, axis=1)
    if fitted.grouping == "label":
        return np.repeat(_group_table(fitted)[None, 1:], n_items, axis=0)
    value = np.inf if fitted.threshold is None else fitted.threshold
    return np.full((n_items, fitted.n_labels), value)


def predict_sets(
    fitted: FittedConformal,
    *,
    judge_scores: object | None = None,
    probabilities: object | None = None,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Boolean (n, K) membership of labels 1..K in each item's prediction set."""
    scores, probs = judge_inputs(fitted.method, fitted.n_labels, judge_scores, probabilities, None)
    n_items = scores.size if scores is not None else probs.shape[0]  # type: ignore[union-attr]
    generator = rng if rng is not None else np.random.default_rng(0)
    uniforms = generator.uniform(size=n_items) if fitted.method == "aps_randomized" else None
    learned = None if fitted.learned_matrix is None else np.asarray(fitted.learned_matrix, dtype=float)
    matrix_scores = label_scores(
        fitted.method,
        n_labels=fitted.n_labels,
        judge_scores=scores,
        probabilities=probs,
        learned_matrix=learned,
        uniforms=uniforms,
    )
    return matrix_scores <= _threshold_matrix(fitted, scores, n_items) + MEMBERSHIP_TOLERANCE


def prediction_set(
    fitted: FittedConformal,
    *,
    judge_score: int | None = None,
    probabilities: list[float] | tuple[float, ...] | None = None,
    rng: np.random.Generator | None = None,
) -> tuple[int, ...]:
    """The sorted prediction set of one item; the service's fast path (pure Python for the common methods)."""
    method = fitted.method
    n_labels = fitted.n_labels
    if judge_score is not None:
        if isinstance(judge_score, bool) or not isinstance(judge_score, (int, np.integer)):
            raise ScoreOutOfRangeError(f"judge_score={judge_score!r} must be an integer on the scale 1..{n_labels}")
        if not 1 <= judge_score <= n_labels:
            raise ScoreOutOfRangeError(f"judge_score={judge_score} lies outside the label scale 1..{n_labels}")
    if method in ("residual", "mondrian_residual"):
        if judge_score is None:
            raise ScoreOutOfRangeError(f"method={method!r} needs the judge's integer score; none given")
        if method == "mondrian_residual":
            assert fitted.group_thresholds is not None
            threshold = fitted.group_thresholds.get(int(judge_score))
        else:
            threshold = fitted.threshold
        if threshold is None:
            return tuple(range(1, n_labels + 1))
        limit = threshold + MEMBERSHIP_TOLERANCE
        return tuple(y for y in range(1, n_labels + 1) if abs(judge_score - y) <= limit)
    probs = _one_probability_row(probabilities, n_labels)
    if method in PROBABILITY_METHODS and probs is None:
        raise InvalidProbabilitiesError(f"method={method!r} needs the judge's probabilities (log-probs); none given")
    if method in LEARNED_METHODS and probs is None and judge_score is None:
        raise ScoreOutOfRangeError(f"method={method!r} needs the judge's score or its probabilities; none given")
    uniform = 0.0
    if method == "aps_randomized":
        uniform = float((rng if rng is not None else np.random.default_rng(0)).uniform())
    scores = label_scores_one(method, n_labels, judge_score, probs, fitted.learned_matrix, uniform)
    if fitted.grouping == "label":
        assert fitted.group_thresholds is not None
        limits = [fitted.group_thresholds.get(y + 1) for y in range(n_labels)]
        return tuple(y + 1 for y in range(n_labels)
                     if limits[y] is None or scores[y] <= limits[y] + MEMBERSHIP_TOLERANCE)
    if fitted.threshold is None:
        return tuple(range(1, n_labels + 1))
    limit = fitted.threshold + MEMBERSHIP_TOLERANCE
    return tuple(y + 1 for y in range(n_labels) if scores[y] <= limit)


def _one_probability_row(probabilities: object | None, n_labels: int) -> list[float] | None:
    """Validate and renormalise one probability vector in pure Python (the single-item fast path)."""
    if probabilities is None:
        return None
    row = [float(p) for p in probabilities]  # type: ignore[union-attr]
    if len(row) != n_labels:
        raise InvalidProbabilitiesError(f"probabilities must have {n_labels} entries, got {len(row)}")
    if not all(math.isfinite(p) and p >= 0 for p in row):
        raise InvalidProbabilitiesError(f"probabilities must be finite and non-negative: {row}")
    total = math.fsum(row)
    if total <= 0:
        raise InvalidProbabilitiesError(f"probabilities {row} sum to 0; they cannot be renormalised")
    return [p / total for p in row]
