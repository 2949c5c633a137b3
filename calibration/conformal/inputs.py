"""What the conformal functions accept, and their refusals: alpha, delta, method, labels and the judge's inputs.

Alpha and delta are read as exact fractions, the nearest with denominator <= 10**9 (so 0.1 is 1/10), and must lie
strictly between 0 and 1 (InvalidAlphaError). Labels and judge scores are integers on the scale 1..K
(ScoreOutOfRangeError); a probability matrix is (n, K), finite and non-negative, its rows renormalised to sum 1
(InvalidProbabilitiesError). ``judge_inputs`` checks that a method gets the judge output it needs
(:mod:`calibration.conformal.methods`); ``probabilities_from_logprobs`` turns the judge's log-probabilities of the
K score tokens into probabilities.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from calibration.conformal.methods import conformal_method
from calibration.errors import (
    EmptyCalibrationError,
    InvalidAlphaError,
    InvalidProbabilitiesError,
    ScoreOutOfRangeError,
)
from calibration.order_statistics import as_fraction, nearest_fraction

__all__ = [
    "as_labels",
    "check_alpha",
    "check_delta",
    "check_method",
    "judge_inputs",
    "probabilities_from_logprobs",
]


def check_alpha(alpha: float) -> Fraction:
    """Return alpha as an exact fraction; raise InvalidAlphaError unless 0 < alpha < 1 and finite."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating)):
        raise InvalidAlphaError(f"alpha={alpha!r} must be a number strictly between 0 and 1")
    if not math.isfinite(float(alpha)) or not 0.0 < float(alpha) < 1.0:
        raise InvalidAlphaError(f"alpha={alpha!r} must be strictly between 0 and 1")
    return nearest_fraction(float(alpha))


def check_delta(delta: float | None) -> Fraction | None:
    """delta as an exact fraction (None stays None: marginal thresholds); InvalidAlphaError outside (0, 1)."""
    if delta is None:
        return None
    try:
        return as_fraction(delta, "delta")
    except ValueError as error:
        raise InvalidAlphaError(str(error)) from error


def check_method(method: str) -> None:
    """UnknownMethodError unless ``method`` is a registered method (:mod:`calibration.conformal.methods`)."""
    conformal_method(method)


def as_labels(values: object, n_labels: int, name: str) -> np.ndarray:
    """Integer labels in 1..n_labels as an int64 array, or ScoreOutOfRangeError naming the first bad value."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ScoreOutOfRangeError(f"{name} must be a one-dimensional array, got shape {array.shape}")
    if array.dtype.kind == "f":
        bad = ~np.isfinite(array) | (array != np.round(array))
        if bad.any():
            raise ScoreOutOfRangeError(
                f"{name}[{int(np.argmax(bad))}]={array[np.argmax(bad)]!r} is not an integer on the scale 1..{n_labels}"
            )
    elif array.dtype.kind not in "iu":
        raise ScoreOutOfRangeError(f"{name} must hold integers on the scale 1..{n_labels}, got dtype {array.dtype}")
    as_int = array.astype(np.int64)
    outside = (as_int < 1) | (as_int > n_labels)
    if outside.any():
        index = int(np.argmax(outside))
        raise ScoreOutOfRangeError(f"{name}[{index}]={as_int[index]} lies outside the label scale 1..{n_labels}")
    return as_int


def _as_probabilities(values: object, n_items: int | None, n_labels: int) -> np.ndarray:
    """An (n, K) probability matrix with rows renormalised to 1; InvalidProbabilitiesError on bad rows."""
    array = np.asarray(values, dtype=float)
    if array.ndim != 2 or array.shape[1] != n_labels or (n_items is not None and array.shape[0] != n_items):
        expected = f"({n_items if n_items is not None else 'n'}, {n_labels})"
        raise InvalidProbabilitiesError(f"probabilities must have shape {expected}, got {array.shape}")
    finite = np.isfinite(array)
    if not finite.all():
        index = int(np.argmax(~finite.all(axis=1)))
        raise InvalidProbabilitiesError(f"probabilities row {index} holds NaN or infinity: {array[index].tolist()}")
    if (array < 0).any():
        index = int(np.argmax((array < 0).any(axis=1)))
        raise InvalidProbabilitiesError(f"probabilities row {index} has a negative entry: {array[index].tolist()}")
    totals = array.sum(axis=1)
    if (totals <= 0).any():
        index = int(np.argmax(totals <= 0))
        raise InvalidProbabilitiesError(f"probabilities row {index} sums to 0; it cannot be renormalised")
    renormalised: NDArray[np.float64] = array / totals[:, None]
    return renormalised


def judge_inputs(
    method: str,
    n_labels: int,
    judge_scores: object | None,
    probabilities: object | None,
    n_items: int | None,
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Validate the judge inputs a method needs; return them as arrays (None where not given)."""
    scores = None if judge_scores is None else as_labels(judge_scores, n_labels, "judge_scores")
    probs = None if probabilities is None else _as_probabilities(probabilities, n_items, n_labels)
    conformal_method(method).check_inputs(scores is not None, probs is not None)
    if scores is not None and n_items is not None and scores.size != n_items:
        raise EmptyCalibrationError(f"judge_scores has {scores.size} items but labels has {n_items}")
    if scores is not None and probs is not None and scores.size != probs.shape[0]:
        raise EmptyCalibrationError(f"judge_scores has {scores.size} items but probabilities has {probs.shape[0]}")
    return scores, probs


def probabilities_from_logprobs(logprobs: object) -> np.ndarray:
    """Renormalise log-probabilities of the K score tokens, shape (n, K) or (K,), into probabilities.

    ``-inf`` means probability 0; NaN, ``+inf`` or a row that is all ``-inf`` raises InvalidProbabilitiesError.
    """
    array = np.asarray(logprobs, dtype=float)
    single = array.ndim == 1
    matrix = array[None, :] if single else array
    if matrix.ndim != 2 or matrix.shape[1] == 0:
        raise InvalidProbabilitiesError(f"log-probabilities must have shape (n, K) or (K,), got {array.shape}")
    if np.isnan(matrix).any() or np.isposinf(matrix).any():
        index = int(np.argmax((np.isnan(matrix) | np.isposinf(matrix)).any(axis=1)))
        raise InvalidProbabilitiesError(f"log-probabilities row {index} holds NaN or +inf: {matrix[index].tolist()}")
    row_max = matrix.max(axis=1)
    if np.isneginf(row_max).any():
        index = int(np.argmax(np.isneginf(row_max)))
        raise InvalidProbabilitiesError(f"log-probabilities row {index} is all -inf: no score token has mass")
    weights = np.exp(matrix - row_max[:, None])
    probabilities: NDArray[np.float64] = weights / weights.sum(axis=1, keepdims=True)
    return probabilities[0] if single else probabilities
