"""Split conformal prediction sets over an ordinal label scale 1..K (K = 5 for Likert judges).

Every method is one function that gives, for each item, the nonconformity score of every candidate label
(an (n, K) matrix). Calibration takes the score of the true label; the prediction set of a new item is
``{y : score(y) <= q_hat}``. This one shape serves all methods, so that calibration and prediction can never
disagree about a score.

Rules, stated once:

- **Quantile.** ``q_hat`` is the ``ceil((1 - alpha)(n + 1))``-th smallest calibration score, computed with exact
  rational arithmetic (alpha is read as the nearest fraction with denominator <= 10**9, so 0.1 is 1/10). When
  that rank exceeds n, ``q_hat`` is ``None`` and every set is the full scale.
- **Comparison.** A label is in the set when its score is <= ``q_hat`` + 1e-12; the tolerance only absorbs the
  rounding difference between the vectorised and the single-item paths (it can only add a label whose score
  ties the threshold to 12 digits).
- **Label ties.** Where a method orders labels by probability, equal probabilities are ordered by the lower
  label first.
- **Randomness.** Only ``aps_randomized`` (tie-breaking uniforms) and ``learned_lac`` (which part of the
  calibration half fits the model) draw random numbers, from the ``rng`` argument; ``rng=None`` means
  ``numpy.random.default_rng(0)``, so results are reproducible unless the caller says otherwise.

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

Group fallback (``mondrian_residual``): a group (judge score) whose calibration count is too small for a
finite threshold, or that never occurs in calibration, gets the full scale, which keeps the per-group guarantee;
it is never silently given the pooled threshold. Likewise (``label_conditional``) a human label with too few
calibration items for a finite threshold is always in the set.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from fractions import Fraction

import msgspec
import numpy as np

from calibration.errors import (
    EmptyCalibrationError,
    InvalidAlphaError,
    InvalidProbabilitiesError,
    ScoreOutOfRangeError,
    UnknownMethodError,
)
from calibration.order_statistics import as_fraction, threshold_rank

__all__ = [
    "LEARNED_METHODS",
    "METHODS",
    "PROBABILITY_METHODS",
    "CalibrationScores",
    "FittedConformal",
    "GroupCoverage",
    "SetEvaluation",
    "SplitResult",
    "SplitStudy",
    "calibration_scores",
    "conformal_quantile",
    "coverage_by_group",
    "evaluate_sets",
    "fit_conformal",
    "fit_from_scores",
    "label_scores",
    "prediction_set",
    "predict_sets",
    "probabilities_from_logprobs",
    "repeated_splits",
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
# Methods with one threshold per group, and what the groups are.
_GROUPING = {"mondrian_residual": "judge_score", "label_conditional": "label"}
# Methods that need the judge's integer score.
SCORE_METHODS = frozenset({"residual", "mondrian_residual"})

_TOLERANCE = 1e-12
_PROBABILITY_SUM_TOLERANCE = 1e-6


class FittedConformal(msgspec.Struct, frozen=True, kw_only=True):
    """A calibrated conformal predictor: everything needed to form sets, and nothing else.

    ``threshold`` is ``None`` when the calibration set is too small for the level (every set is the full scale).
    ``group_thresholds`` maps a group to its threshold (``None`` = full scale for a judge-score group, or an
    always-included label); ``grouping`` says what the groups are: ``"judge_score"`` (``mondrian_residual``)
    or ``"label"`` (``label_conditional``).
    ``learned_matrix`` (``learned_lac``) is the K x K table ``M[s - 1][y - 1] = P(human = y | judge score s)``.
    """

    method: str
    alpha: float
    n_labels: int
    n_cal: int
    threshold: float | None
    group_thresholds: dict[int, float | None] | None = None
    group_sizes: dict[int, int] | None = None
    learned_matrix: list[list[float]] | None = None
    n_model_fit: int = 0
    grouping: str | None = None
    delta: float | None = None  # None: marginal threshold; else PAC (coverage >= 1-alpha w.p. >= 1-delta)


@dataclass(frozen=True)
class SetEvaluation:
    """Coverage and size of prediction sets on labelled items (arrays are per item)."""

    coverage: float
    mean_set_size: float
    set_sizes: np.ndarray
    covered: np.ndarray
    spans: np.ndarray  # max - min + 1 of each set; equals the set size for contiguous sets


@dataclass(frozen=True)
class GroupCoverage:
    """Coverage within one group (e.g. one judge-score bin or one human label)."""

    group: int
    n: int
    coverage: float
    mean_set_size: float


@dataclass(frozen=True)
class SplitResult:
    """One random calibration/test split: its coverage, mean set size and per-test-item detail."""

    coverage: float
    set_size: float
    test_index: np.ndarray
    set_sizes: np.ndarray
    covered: np.ndarray
    threshold: float | None


@dataclass(frozen=True)
class SplitStudy:
    """Repeated seeded splits: mean and sample standard deviation (ddof=1) of coverage and set size."""

    method: str
    alpha: float
    coverage: float
    coverage_std: float
    set_size: float
    set_size_std: float
    n_cal: int
    n_test: int
    splits: tuple[SplitResult, ...]


# ---------------------------------------------------------------------------------------------- validation


def _check_alpha(alpha: float) -> Fraction:
    """Return alpha as an exact fraction; raise InvalidAlphaError unless 0 < alpha < 1 and finite."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating)):
        raise InvalidAlphaError(f"alpha={alpha!r} must be a number strictly between 0 and 1")
    if not math.isfinite(float(alpha)) or not 0.0 < float(alpha) < 1.0:
        raise InvalidAlphaError(f"alpha={alpha!r} must be strictly between 0 and 1")
    return Fraction(float(alpha)).limit_denominator(10**9)


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise UnknownMethodError(f"method={method!r} is not one of {', '.join(METHODS)}")


def _as_labels(values: object, n_labels: int, name: str) -> np.ndarray:
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
    return array / totals[:, None]


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
    probabilities = weights / weights.sum(axis=1, keepdims=True)
    return probabilities[0] if single else probabilities


# ------------------------------------------------------------------------------------------------- quantile


def conformal_quantile(scores: object, alpha: float, delta: float | None = None) -> float | None:
    """The k-th smallest score, or None when k exceeds n: k = ceil((1-alpha)(n+1)) (marginal, exact rational
    rank) when ``delta`` is None, else the PAC rank of :mod:`calibration.order_statistics` (coverage >= 1-alpha
    with probability >= 1-delta over the calibration data)."""
    level = _check_alpha(alpha)
    confidence = _check_delta(delta)
    values = np.asarray(scores, dtype=float).ravel()
    n = values.size
    if n == 0:
        raise EmptyCalibrationError("the calibration set is empty: a threshold needs at least one score")
    if not np.isfinite(values).all():
        raise InvalidProbabilitiesError("calibration scores hold NaN or infinity")
    rank = threshold_rank(n, level, confidence)
    if rank > n:
        return None
    return float(np.partition(values, rank - 1)[rank - 1])


def _check_delta(delta: float | None) -> Fraction | None:
    """delta as an exact fraction (None stays None: marginal thresholds); InvalidAlphaError outside (0, 1)."""
    if delta is None:
        return None
    try:
        return as_fraction(delta, "delta")
    except ValueError as error:
        raise InvalidAlphaError(str(error)) from error


# ----------------------------------------------------------------------------------- nonconformity matrices


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


def _learned_probabilities(weights: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    return weights @ matrix


def _judge_weights(judge_scores: np.ndarray | None, probabilities: np.ndarray | None, n_labels: int) -> np.ndarray:
    """The judge's distribution over its own scores: its probabilities, or a one-hot of its integer score."""
    if probabilities is not None:
        return probabilities
    assert judge_scores is not None
    weights = np.zeros((judge_scores.size, n_labels))
    weights[np.arange(judge_scores.size), judge_scores - 1] = 1.0
    return weights


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
        weights = _judge_weights(judge_scores, probabilities, n_labels)
        return 1.0 - _learned_probabilities(weights, learned_matrix)
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


# ------------------------------------------------------------------------------------------- fit / predict


def _inputs(
    method: str,
    n_labels: int,
    judge_scores: object | None,
    probabilities: object | None,
    n_items: int | None,
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Validate the judge inputs a method needs; return them as arrays (None where not given)."""
    scores = None if judge_scores is None else _as_labels(judge_scores, n_labels, "judge_scores")
    probs = None if probabilities is None else _as_probabilities(probabilities, n_items, n_labels)
    if method in PROBABILITY_METHODS and probs is None:
        raise InvalidProbabilitiesError(f"method={method!r} needs the judge's probabilities (log-probs); none given")
    if method in SCORE_METHODS and scores is None:
        raise ScoreOutOfRangeError(f"method={method!r} needs the judge's integer score; none given")
    if method in LEARNED_METHODS and scores is None and probs is None:
        raise ScoreOutOfRangeError(f"method={method!r} needs the judge's score or its probabilities; none given")
    if scores is not None and n_items is not None and scores.size != n_items:
        raise EmptyCalibrationError(f"judge_scores has {scores.size} items but labels has {n_items}")
    if scores is not None and probs is not None and scores.size != probs.shape[0]:
        raise EmptyCalibrationError(f"judge_scores has {scores.size} items but probabilities has {probs.shape[0]}")
    return scores, probs


def _fit_learned_matrix(weights: np.ndarray, labels: np.ndarray, n_labels: int) -> np.ndarray:
    """Laplace-smoothed table of human labels per judge score, with soft judge weights as counts."""
    counts = np.ones((n_labels, n_labels))
    one_hot = np.zeros((labels.size, n_labels))
    one_hot[np.arange(labels.size), labels - 1] = 1.0
    counts += weights.T @ one_hot
    return counts / counts.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class CalibrationScores:
    """What a fit computes before any level is chosen: the true labels' nonconformity scores and their groups.

    ``true_scores[i]`` is the score of ``labels[i]`` on threshold item i; ``group_keys`` holds what the method
    groups by (judge score or human label; None for an ungrouped method); ``learned`` the fitted table of a
    learned method. One ``CalibrationScores`` serves every alpha (and delta): see :func:`fit_from_scores`.
    """

    method: str
    n_labels: int
    true_scores: np.ndarray
    group_keys: np.ndarray | None
    learned_matrix: np.ndarray | None
    n_model_fit: int


def calibration_scores(
    method: str,
    labels: object,
    *,
    judge_scores: object | None = None,
    probabilities: object | None = None,
    n_labels: int = 5,
    rng: np.random.Generator | None = None,
    model_fraction: float = 0.5,
) -> CalibrationScores:
    """The level-free part of a fit (see fit_conformal): learned model (if any) and the true labels' scores."""
    _check_method(method)
    if n_labels < 2:
        raise ScoreOutOfRangeError(f"n_labels={n_labels} must be at least 2")
    y = _as_labels(labels, n_labels, "labels")
    if y.size == 0:
        raise EmptyCalibrationError("the calibration set is empty: fitting needs at least one labelled item")
    scores, probs = _inputs(method, n_labels, judge_scores, probabilities, y.size)
    generator = rng if rng is not None else np.random.default_rng(0)

    learned = None
    n_model = 0
    threshold_scores = scores
    if method in LEARNED_METHODS:
        if y.size < 2:
            raise EmptyCalibrationError(f"{method} needs at least 2 calibration items (model and threshold)")
        order = generator.permutation(y.size)
        n_model = min(max(1, int(round(model_fraction * y.size))), y.size - 1)
        model_part, threshold_part = order[:n_model], order[n_model:]
        weights = _judge_weights(scores, probs, n_labels)
        learned = _fit_learned_matrix(weights[model_part], y[model_part], n_labels)
        matrix_scores = 1.0 - _learned_probabilities(weights[threshold_part], learned)
        calibration_labels = y[threshold_part]
        threshold_scores = None if scores is None else scores[threshold_part]
    else:
        uniforms = generator.uniform(size=y.size) if method == "aps_randomized" else None
        matrix_scores = label_scores(
            method, n_labels=n_labels, judge_scores=scores, probabilities=probs, uniforms=uniforms
        )
        calibration_labels = y
    true_scores = matrix_scores[np.arange(calibration_labels.size), calibration_labels - 1]
    grouping = _GROUPING.get(method)
    keys = None
    if grouping is not None:
        keys = calibration_labels if grouping == "label" else threshold_scores
        assert keys is not None
    return CalibrationScores(method=method, n_labels=n_labels, true_scores=true_scores, group_keys=keys,
                             learned_matrix=learned, n_model_fit=int(n_model))


def fit_from_scores(prepared: CalibrationScores, alpha: float, delta: float | None = None) -> FittedConformal:
    """Thresholds at level alpha (marginal, or PAC at ``delta``) from level-free calibration scores."""
    _check_alpha(alpha)
    _check_delta(delta)
    grouping = _GROUPING.get(prepared.method)
    group_thresholds = group_sizes = None
    if grouping is not None:
        assert prepared.group_keys is not None
        group_thresholds, group_sizes = _group_quantiles(
            prepared.true_scores, prepared.group_keys, prepared.n_labels, alpha, delta
        )
    learned: dict[str, object] = {}
    if prepared.learned_matrix is not None:
        learned = {"learned_matrix": prepared.learned_matrix.tolist(), "n_model_fit": prepared.n_model_fit}
    return FittedConformal(
        method=prepared.method,
        alpha=float(alpha),
        n_labels=prepared.n_labels,
        n_cal=int(prepared.true_scores.size),
        threshold=conformal_quantile(prepared.true_scores, alpha, delta),
        group_thresholds=group_thresholds,
        group_sizes=group_sizes,
        grouping=grouping,
        delta=None if delta is None else float(delta),
        **learned,  # type: ignore[arg-type]
    )


def fit_conformal(
    method: str,
    alpha: float,
    labels: object,
    *,
    judge_scores: object | None = None,
    probabilities: object | None = None,
    n_labels: int = 5,
    rng: np.random.Generator | None = None,
    model_fraction: float = 0.5,
    delta: float | None = None,
) -> FittedConformal:
    """Calibrate one method at level alpha on labelled items (labels and judge scores in 1..n_labels).

    ``delta`` None gives the marginal split-conformal threshold; a delta in (0, 1) the PAC threshold (coverage
    >= 1 - alpha with probability >= 1 - delta over the calibration data), per group for grouped methods.
    Raises InvalidAlphaError, EmptyCalibrationError, ScoreOutOfRangeError, InvalidProbabilitiesError,
    UnknownMethodError. ``learned_lac`` fits its model on ``model_fraction`` of the items (drawn with ``rng``)
    and its threshold on the rest.
    """
    _check_method(method)
    _check_alpha(alpha)
    _check_delta(delta)
    prepared = calibration_scores(method, labels, judge_scores=judge_scores, probabilities=probabilities,
                                  n_labels=n_labels, rng=rng, model_fraction=model_fraction)
    return fit_from_scores(prepared, alpha, delta)


def _group_quantiles(
    true_scores: np.ndarray, groups: np.ndarray, n_labels: int, alpha: float, delta: float | None = None
) -> tuple[dict[int, float | None], dict[int, int]]:
    """One conformal threshold per group value 1..K (None where the group is empty or too small)."""
    thresholds: dict[int, float | None] = {}
    sizes: dict[int, int] = {}
    for group in range(1, n_labels + 1):
        members = groups == group
        sizes[group] = int(members.sum())
        thresholds[group] = conformal_quantile(true_scores[members], alpha, delta) if members.any() else None
    return thresholds, sizes


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
    scores, probs = _inputs(fitted.method, fitted.n_labels, judge_scores, probabilities, None)
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
    return matrix_scores <= _threshold_matrix(fitted, scores, n_items) + _TOLERANCE


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
        limit = threshold + _TOLERANCE
        return tuple(y for y in range(1, n_labels + 1) if abs(judge_score - y) <= limit)
    probs = _one_probability_row(probabilities, n_labels)
    if method in PROBABILITY_METHODS and probs is None:
        raise InvalidProbabilitiesError(f"method={method!r} needs the judge's probabilities (log-probs); none given")
    if method in LEARNED_METHODS and probs is None and judge_score is None:
        raise ScoreOutOfRangeError(f"method={method!r} needs the judge's score or its probabilities; none given")
    uniform = 0.0
    if method == "aps_randomized":
        uniform = float((rng if rng is not None else np.random.default_rng(0)).uniform())
    scores = _label_scores_one(method, n_labels, judge_score, probs, fitted.learned_matrix, uniform)
    if fitted.grouping == "label":
        assert fitted.group_thresholds is not None
        limits = [fitted.group_thresholds.get(y + 1) for y in range(n_labels)]
        return tuple(y + 1 for y in range(n_labels) if limits[y] is None or scores[y] <= limits[y] + _TOLERANCE)
    if fitted.threshold is None:
        return tuple(range(1, n_labels + 1))
    limit = fitted.threshold + _TOLERANCE
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


def _label_scores_one(
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


# ---------------------------------------------------------------------------------------------- evaluation


def evaluate_sets(sets: np.ndarray, labels: object) -> SetEvaluation:
    """Empirical coverage, mean set size, and per-item size, coverage and span of (n, K) boolean sets."""
    membership = np.asarray(sets, dtype=bool)
    if membership.ndim != 2:
        raise EmptyCalibrationError(f"sets must be an (n, K) boolean matrix, got shape {membership.shape}")
    y = _as_labels(labels, membership.shape[1], "labels")
    if y.size != membership.shape[0] or y.size == 0:
        raise EmptyCalibrationError(f"{membership.shape[0]} sets but {y.size} labels; both must be equal and > 0")
    covered = membership[np.arange(y.size), y - 1]
    sizes = membership.sum(axis=1)
    any_member = sizes > 0
    first = np.where(any_member, np.argmax(membership, axis=1), 0)
    last = np.where(any_member, membership.shape[1] - 1 - np.argmax(membership[:, ::-1], axis=1), -1)
    spans = np.where(any_member, last - first + 1, 0)
    return SetEvaluation(
        coverage=float(covered.mean()),
        mean_set_size=float(sizes.mean()),
        set_sizes=sizes,
        covered=covered,
        spans=spans,
    )


def coverage_by_group(sets: np.ndarray, labels: object, groups: object) -> list[GroupCoverage]:
    """Coverage and mean set size within each distinct group value (sorted), e.g. judge score or human label."""
    evaluation = evaluate_sets(sets, labels)
    keys = np.asarray(groups)
    if keys.shape[0] != evaluation.covered.size:
        raise EmptyCalibrationError(f"groups has {keys.shape[0]} entries but there are {evaluation.covered.size} sets")
    result = []
    for group in np.unique(keys):
        members = keys == group
        result.append(
            GroupCoverage(
                group=int(group),
                n=int(members.sum()),
                coverage=float(evaluation.covered[members].mean()),
                mean_set_size=float(evaluation.set_sizes[members].mean()),
            )
        )
    return result


def repeated_splits(
    method: str,
    alpha: float,
    labels: object,
    *,
    judge_scores: object | None = None,
    probabilities: object | None = None,
    n_splits: int = 20,
    cal_fraction: float = 0.5,
    seed: int = 0,
    n_labels: int = 5,
) -> SplitStudy:
    """Fit on a random calibration part and evaluate on the rest, n_splits times with seeds (seed, split).

    Split i permutes the items with ``numpy.random.default_rng([seed, i])``; the first
    ``floor(cal_fraction * n)`` are the calibration part. Standard deviations use ddof=1.
    """
    _check_method(method)
    _check_alpha(alpha)
    y = _as_labels(labels, n_labels, "labels")
    scores, probs = _inputs(method, n_labels, judge_scores, probabilities, y.size)
    n_cal = int(math.floor(cal_fraction * y.size))
    if n_cal < 1 or n_cal >= y.size:
        raise EmptyCalibrationError(
            f"cal_fraction={cal_fraction} of {y.size} items leaves an empty calibration or test part"
        )
    if n_splits < 1:
        raise EmptyCalibrationError(f"n_splits={n_splits} must be at least 1")
    results = []
    for split in range(n_splits):
        generator = np.random.default_rng([seed, split])
        order = generator.permutation(y.size)
        cal, test = order[:n_cal], order[n_cal:]
        fitted = fit_conformal(
            method,
            alpha,
            y[cal],
            judge_scores=None if scores is None else scores[cal],
            probabilities=None if probs is None else probs[cal],
            n_labels=n_labels,
            rng=generator,
        )
        sets = predict_sets(
            fitted,
            judge_scores=None if scores is None else scores[test],
            probabilities=None if probs is None else probs[test],
            rng=generator,
        )
        evaluation = evaluate_sets(sets, y[test])
        results.append(
            SplitResult(
                coverage=evaluation.coverage,
                set_size=evaluation.mean_set_size,
                test_index=test,
                set_sizes=evaluation.set_sizes,
                covered=evaluation.covered,
                threshold=fitted.threshold,
            )
        )
    coverages = np.array([r.coverage for r in results])
    sizes = np.array([r.set_size for r in results])
    ddof = 1 if n_splits > 1 else 0
    return SplitStudy(
        method=method,
        alpha=float(alpha),
        coverage=float(coverages.mean()),
        coverage_std=float(coverages.std(ddof=ddof)),
        set_size=float(sizes.mean()),
        set_size_std=float(sizes.std(ddof=ddof)),
        n_cal=n_cal,
        n_test=int(y.size - n_cal),
        splits=tuple(results),
    )
