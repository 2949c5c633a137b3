"""Coverage from both sides: a method that is too cautious (e.g. fitted at alpha/2 while reporting alpha) fails.

The one-sided checks elsewhere (coverage >= 1 - alpha - slack) pass a method whose sets are too large. Here:

* **Continuous scores** (``residual_expected``, ``lac``, ``aps``, ``aps_randomized``, ``ordinal``, and the learned
  methods given the judge's probabilities): with no ties, the coverage of a split-conformal set fitted on m
  threshold items is Beta(k, m + 1 - k) with k = ceil((1 - alpha)(m + 1)), so its mean is exactly
  k / (m + 1) <= 1 - alpha + 1 / (m + 1) (the upper bound). Mean coverage over fresh draws must match k / (m + 1)
  within four standard errors, per human label for ``label_conditional`` (k and m of that label's group).
* **Discrete scores** (``residual``, ``mondrian_residual`` on an integer judge score): coverage can only take the
  attainable levels F(t) = P(score <= t); the upper bound is the exact mean E[F(q)] of the level the threshold
  lands on, P(q <= t) = P(Binomial(m, F(t)) >= k) (scipy), close to the next attainable level above 1 - alpha.
* **Hand-computed thresholds and sets** on data where the answer moves with alpha, per group for the grouped
  methods, and for ``learned_lac`` / ``label_conditional`` with a judge whose labels overlap (not separable).
* **Independent implementations**: Mondrian (per judge score) and class-conditional (per label) sets equal
  crepes' Mondrian conformal classifier; ``aps_randomized`` through ``fit_conformal`` / ``predict_sets`` equals
  MAPIE when both draw the same uniforms (the generator is injected).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from calibration.conformal import (
    calibration_scores,
    coverage_by_group,
    evaluate_sets,
    fit_conformal,
    fit_from_scores,
    predict_sets,
    prediction_set,
)

FULL = (1, 2, 3, 4, 5)
LABELS = np.arange(1, 6)


def _rank(alpha: float, n: int) -> int:
    """k = ceil((1 - alpha)(n + 1)), in exact rational arithmetic (the README's quantile rule)."""
    return math.ceil((1 - Fraction(alpha).limit_denominator(10**9)) * (n + 1))


def _continuous_mean(alpha: float, n: int) -> float:
    """Exact mean coverage for distinct scores: k / (n + 1), or 1 when k > n (full scale)."""
    k = _rank(alpha, n)
    return 1.0 if k > n else k / (n + 1)


# --------------------------------------------------------------------------- synthetic populations


def _judge_population(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exchangeable items with a calibrated-ish judge: labels, a sampled judge score, its probabilities."""
    labels = rng.choice(5, size=n, p=[0.1, 0.2, 0.3, 0.25, 0.15]) + 1
    centre = np.clip(labels + rng.normal(0, 0.9, n), 1, 5)
    logits = -((LABELS[None, :] - centre[:, None]) ** 2) / rng.uniform(0.3, 2.0, n)[:, None]
    probabilities = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    judge = (probabilities.cumsum(axis=1) < rng.uniform(size=n)[:, None]).sum(axis=1) + 1
    return labels, np.minimum(judge, 5), probabilities


# Joint law of (judge score s, human label y): P(s) and P(|s - y| = d) = W[d], shared between the labels at
# distance d and renormalised at the ends of the scale. Not separable: every judge score meets every label.
P_JUDGE = np.array([0.1, 0.2, 0.3, 0.25, 0.15])
W_DISTANCE = np.array([0.60, 0.25, 0.11, 0.03, 0.01])


def _discrete_table() -> np.ndarray:
    table = np.zeros((5, 5))
    for s in range(5):
        row = np.zeros(5)
        for y in range(5):
            d = abs(s - y)
            both_sides = d > 0 and s - d >= 0 and s + d <= 4
            row[y] = W_DISTANCE[d] / (2 if both_sides else 1)
        table[s] = P_JUDGE[s] * row / row.sum()
    return table


TABLE = _discrete_table()
RESIDUAL = np.abs(LABELS[:, None] - LABELS[None, :])  # RESIDUAL[s - 1, y - 1] = |s - y|


def _level(conditional: np.ndarray, t: float | None) -> float:
    """F(t) = P(|s - y| <= t) under a (K x K) table (rows: judge score); 1 for the full scale."""
    if t is None:
        return 1.0
    return float(conditional[RESIDUAL <= t + 1e-9].sum() / conditional.sum())


def _discrete_mean(conditional: np.ndarray, alpha: float, n: int) -> float:
    """Exact E[F(q)] for the k-th smallest of n iid residuals: sum_t F(t) P(q = t), P(q <= t) = P(Bin >= k)."""
    k = _rank(alpha, n)
    if n == 0 or k > n:
        return 1.0
    levels = [_level(conditional, t) for t in range(5)]
    at_most = [float(stats.binom.sf(k - 1, n, min(level, 1.0))) for level in levels]
    return sum(level * (at_most[t] - (at_most[t - 1] if t else 0.0)) for t, level in enumerate(levels))


def _draw_table(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    cells = rng.choice(25, size=n, p=TABLE.ravel())
    return cells % 5 + 1, cells // 5 + 1  # labels, judge scores


def _within(differences: list[float], what: str) -> None:
    diffs = np.asarray(differences)
    se = diffs.std(ddof=1) / math.sqrt(diffs.size)
    assert abs(diffs.mean()) <= 4 * se + 0.002, (
        f"{what}: mean coverage - exact mean = {diffs.mean():+.4f} (se {se:.4f})"
    )


# ------------------------------------------------------------------- two-sided: continuous scores

CONTINUOUS = ["residual_expected", "lac", "aps", "aps_randomized", "ordinal", "learned_lac"]


@pytest.mark.parametrize("alpha", [0.1, 0.2])
@pytest.mark.parametrize("method", CONTINUOUS)
def test_mean_coverage_equals_k_over_m_plus_one_for_continuous_scores(method: str, alpha: float) -> None:
    rng = np.random.default_rng([16, int(alpha * 100), CONTINUOUS.index(method)])
    differences, coverages, bounds = [], [], []
    for _ in range(100):
        labels, judge, probabilities = _judge_population(rng, 1400)
        cal, test = slice(0, 400), slice(400, None)
        fitted = fit_conformal(
            method, alpha, labels[cal], judge_scores=judge[cal], probabilities=probabilities[cal], rng=rng
        )
        assert fitted.alpha == alpha
        sets = predict_sets(fitted, judge_scores=judge[test], probabilities=probabilities[test], rng=rng)
        coverage = evaluate_sets(sets, labels[test]).coverage
        differences.append(coverage - _continuous_mean(alpha, fitted.n_cal))
        coverages.append(coverage)
        bounds.append(1 - alpha + 1 / (fitted.n_cal + 1))  # the stated upper bound on the mean
    _within(differences, method)
    assert np.mean(coverages) <= np.mean(bounds) + 4 * np.std(coverages, ddof=1) / 10 + 0.002
    assert np.mean(coverages) >= 1 - alpha - 0.01


@pytest.mark.parametrize("alpha", [0.1, 0.2])
def test_label_conditional_mean_coverage_per_label_equals_k_over_m_plus_one(alpha: float) -> None:
    rng = np.random.default_rng([17, int(alpha * 100)])
    differences: dict[int, list[float]] = {y: [] for y in range(1, 6)}
    for _ in range(100):
        labels, judge, probabilities = _judge_population(rng, 1400)
        cal, test = slice(0, 600), slice(600, None)
        fitted = fit_conformal(
            "label_conditional", alpha, labels[cal], judge_scores=judge[cal], probabilities=probabilities[cal], rng=rng
        )
        sets = predict_sets(fitted, judge_scores=judge[test], probabilities=probabilities[test])
        assert fitted.group_sizes is not None
        for group in coverage_by_group(sets, labels[test], labels[test]):
            exact = _continuous_mean(alpha, fitted.group_sizes[group.group])
            differences[group.group].append(group.coverage - exact)
    for label, diffs in differences.items():
        _within(diffs, f"label_conditional, human label {label}")


# --------------------------------------------------------------------- two-sided: discrete scores


def test_discrete_levels_move_with_alpha_so_a_cautious_fit_shows() -> None:
    # The populations below are built so that 1 - alpha and 1 - alpha/2 fall on different attainable levels.
    levels = [_level(TABLE, t) for t in range(5)]
    assert levels[1] < 0.9 < levels[2] and levels[0] < 0.8 < levels[1]


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.2])
def test_residual_mean_coverage_equals_the_exact_discrete_mean(alpha: float) -> None:
    rng = np.random.default_rng([18, int(alpha * 100)])
    exact = _discrete_mean(TABLE, alpha, 400)
    attainable = [_level(TABLE, t) for t in range(5)]
    next_level = min(level for level in attainable if level >= 1 - alpha)
    assert exact <= next_level + 0.01  # the upper bound: the next attainable level (plus the chance q lands above)
    differences = []
    for _ in range(200):
        labels, judge = _draw_table(rng, 400)
        fitted = fit_conformal("residual", alpha, labels, judge_scores=judge)
        differences.append(_level(TABLE, fitted.threshold) - exact)  # population coverage of the fitted sets
    _within(differences, "residual")


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.2])
def test_mondrian_mean_coverage_equals_the_exact_discrete_mean_per_judge_score(alpha: float) -> None:
    rng = np.random.default_rng([19, int(alpha * 100)])
    differences = []
    for _ in range(200):
        labels, judge = _draw_table(rng, 400)
        fitted = fit_conformal("mondrian_residual", alpha, labels, judge_scores=judge)
        assert fitted.group_thresholds is not None and fitted.group_sizes is not None
        realised = exact = 0.0
        for s in range(1, 6):
            row = np.zeros((5, 5))
            row[s - 1] = TABLE[s - 1]
            realised += P_JUDGE[s - 1] * _level(row, fitted.group_thresholds[s])
            exact += P_JUDGE[s - 1] * _discrete_mean(row, alpha, fitted.group_sizes[s])
        differences.append(realised - exact)
    _within(differences, "mondrian_residual")


# ------------------------------------------------------------------ hand-computed, answer moves with alpha


@pytest.mark.parametrize(
    ("alpha", "threshold", "set_at_3", "set_at_1"),
    [
        (0.65, 0.0, (3,), (1,)),  # k = ceil(0.35 * 11) = 4 -> 4th smallest of 0 0 0 0 1 1 1 2 2 3
        (0.5, 1.0, (2, 3, 4), (1, 2)),  # k = 6
        (0.3, 2.0, FULL, (1, 2, 3)),  # k = 8
        (0.15, 3.0, FULL, (1, 2, 3, 4)),  # k = 10
        (0.05, None, FULL, FULL),  # k = 11 > 10: full scale
    ],
)
def test_residual_threshold_and_sets_by_hand(alpha, threshold, set_at_3, set_at_1) -> None:
    pairs = [(3, 3)] * 4 + [(3, 2), (3, 4), (4, 3), (3, 1), (3, 5), (4, 1)]  # residuals 0 0 0 0 1 1 1 2 2 3
    judge, labels = zip(*pairs, strict=True)
    fitted = fit_conformal("residual", alpha, list(labels), judge_scores=list(judge))
    assert fitted.threshold == threshold and fitted.alpha == alpha
    assert prediction_set(fitted, judge_score=3) == set_at_3
    assert prediction_set(fitted, judge_score=1) == set_at_1


# judge 2: residuals 0 0 0 0 0 1 1 1 2 (n = 9); judge 4: 0 x5, 1 x5, 2 x3, 3 (n = 14); judge 5: one residual 1.
MONDRIAN_DATA = (
    [(2, 2)] * 5 + [(2, 1), (2, 3), (2, 3), (2, 4)]
    + [(4, 4)] * 5 + [(4, 3), (4, 5), (4, 3), (4, 5), (4, 5), (4, 2), (4, 2), (4, 2), (4, 1)]
    + [(5, 4)]
)  # fmt: skip


@pytest.mark.parametrize(
    ("alpha", "thresholds", "sets"),
    [
        # judge 2: k = ceil((1-a) 10); judge 4: k = ceil((1-a) 15); judge 5: k = ceil((1-a) 2)
        (0.5, {2: 0.0, 4: 1.0, 5: 1.0}, {2: (2,), 4: (3, 4, 5), 5: (4, 5)}),  # k = 5, 8, 1
        (0.4, {2: 1.0, 4: 1.0, 5: None}, {2: (1, 2, 3), 4: (3, 4, 5), 5: FULL}),  # k = 6, 9, 2 > 1
        (0.2, {2: 1.0, 4: 2.0, 5: None}, {2: (1, 2, 3), 4: (2, 3, 4, 5), 5: FULL}),  # k = 8, 12
        (0.1, {2: 2.0, 4: 3.0, 5: None}, {2: (1, 2, 3, 4), 4: FULL, 5: FULL}),  # k = 9, 14
        (0.05, {2: None, 4: None, 5: None}, {2: FULL, 4: FULL, 5: FULL}),  # k = 10 > 9, 15 > 14
    ],
)
def test_mondrian_thresholds_and_sets_per_judge_score_by_hand(alpha, thresholds, sets) -> None:
    judge, labels = zip(*MONDRIAN_DATA, strict=True)
    fitted = fit_conformal("mondrian_residual", alpha, list(labels), judge_scores=list(judge))
    assert fitted.group_sizes == {1: 0, 2: 9, 3: 0, 4: 14, 5: 1}
    assert fitted.group_thresholds == {1: None, 3: None, **thresholds}
    for score, expected in sets.items():
        assert prediction_set(fitted, judge_score=score) == expected
    assert prediction_set(fitted, judge_score=1) == FULL and prediction_set(fitted, judge_score=3) == FULL


class _InOrder:
    """Stands in for the generator of a learned fit: the model takes the first items, the threshold the rest."""

    def permutation(self, n: int) -> np.ndarray:
        return np.arange(n)


# A judge whose labels overlap (not separable). Model half (first 20): judge 3 -> labels 2 x2, 3 x5, 4 x3;
# judge 4 -> labels 3 x2, 4 x5, 5 x3. Laplace table rows: judge 3 = [1, 3, 6, 4, 1] / 15,
# judge 4 = [1, 1, 3, 6, 4] / 15, so the scores 1 - M[s][y] are, in fifteenths:
#   judge 3: y = 1..5 -> 14, 12, 9, 11, 14        judge 4: y = 1..5 -> 14, 14, 12, 9, 11
# Threshold half (last 20): judge 3 -> labels 3 x4, 4 x3, 2 x2, 1; judge 4 -> labels 4 x5, 5 x2, 3 x2, 1:
# true scores (fifteenths) 9 x9, 11 x5, 12 x4, 14 x2.
OVERLAP = (
    [(3, 2)] * 2 + [(3, 3)] * 5 + [(3, 4)] * 3 + [(4, 3)] * 2 + [(4, 4)] * 5 + [(4, 5)] * 3
    + [(3, 3)] * 4 + [(3, 4)] * 3 + [(3, 2)] * 2 + [(3, 1)] + [(4, 4)] * 5 + [(4, 5)] * 2 + [(4, 3)] * 2 + [(4, 1)]
)  # fmt: skip


def _overlap_fit(method: str, alpha: float):
    judge, labels = zip(*OVERLAP, strict=True)
    return fit_conformal(method, alpha, list(labels), judge_scores=list(judge), rng=_InOrder())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("alpha", "fifteenths", "set_at_3", "set_at_4"),
    [
        (0.6, 9, (3,), (4,)),  # k = ceil(0.4 * 21) = 9
        (0.5, 11, (3, 4), (4, 5)),  # k = 11
        (0.3, 12, (2, 3, 4), (3, 4, 5)),  # k = 15
        (0.1, 14, FULL, FULL),  # k = 19
        (0.04, None, FULL, FULL),  # k = 21 > 20
    ],
)
def test_learned_lac_with_overlapping_labels_by_hand(alpha, fifteenths, set_at_3, set_at_4) -> None:
    fitted = _overlap_fit("learned_lac", alpha)
    assert fitted.n_model_fit == 20 and fitted.n_cal == 20
    matrix = np.asarray(fitted.learned_matrix)
    np.testing.assert_allclose(matrix[2], np.array([1, 3, 6, 4, 1]) / 15)
    np.testing.assert_allclose(matrix[3], np.array([1, 1, 3, 6, 4]) / 15)
    np.testing.assert_allclose(matrix[0], np.full(5, 0.2))  # judge score never seen: Laplace prior only
    if fifteenths is None:
        assert fitted.threshold is None
    else:
        assert fitted.threshold == pytest.approx(fifteenths / 15, abs=1e-12)
    assert prediction_set(fitted, judge_score=3) == set_at_3
    assert prediction_set(fitted, judge_score=4) == set_at_4
    sets = predict_sets(fitted, judge_scores=[3, 4])
    assert tuple(LABELS[sets[0]]) == set_at_3 and tuple(LABELS[sets[1]]) == set_at_4


@pytest.mark.parametrize(
    ("alpha", "fifteenths", "set_at_3", "set_at_4"),
    [
        # per label (threshold half): 1 -> 14 14; 2 -> 12 12; 3 -> 9 9 9 9 12 12; 4 -> 9 x5 11 x3; 5 -> 11 11
        (0.5, {1: 14, 2: 12, 3: 9, 4: 9, 5: 11}, (1, 2, 3), (1, 4, 5)),  # k = 2, 2, 4, 5, 2
        (0.3, {1: None, 2: None, 3: 12, 4: 11, 5: None}, FULL, FULL),  # k = 3 > 2, 3 > 2, 5, 7, 3 > 2
        (0.1, {1: None, 2: None, 3: None, 4: None, 5: None}, FULL, FULL),  # k = 7 > 6, 9 > 8
    ],
)
def test_label_conditional_thresholds_per_label_by_hand(alpha, fifteenths, set_at_3, set_at_4) -> None:
    fitted = _overlap_fit("label_conditional", alpha)
    assert fitted.grouping == "label" and fitted.group_sizes == {1: 2, 2: 2, 3: 6, 4: 8, 5: 2}
    assert fitted.group_thresholds is not None
    for label, value in fifteenths.items():
        got = fitted.group_thresholds[label]
        assert (got is None) if value is None else got == pytest.approx(value / 15, abs=1e-12), (label, got)
    assert prediction_set(fitted, judge_score=3) == set_at_3
    assert prediction_set(fitted, judge_score=4) == set_at_4


# ------------------------------------------------------------------------------- crepes cross-checks

# crepes includes a label when its p-value (#{cal >= s} + 1) / (n + 1) is >= 1 - confidence; our rule (rank
# ceil((1 - alpha)(n + 1))) includes it when that p-value is > alpha. They differ only when alpha (n + 1) is an
# integer, so crepes is asked for confidence 1 - alpha - 1e-9 (p >= alpha + 1e-9, i.e. p > alpha).
_EPS = 1e-9


def _crepes_mondrian(true_scores, bins, test_scores, test_bins, alpha: float) -> np.ndarray:
    from crepes import ConformalClassifier

    classifier = ConformalClassifier().fit(np.asarray(true_scores, dtype=float), bins=np.asarray(bins))
    sets = classifier.predict_set(
        np.asarray(test_scores, dtype=float), bins=np.asarray(test_bins), confidence=1 - alpha - _EPS, smoothing=False
    )
    return np.asarray(sets, dtype=bool)


def _crepes_class_conditional(true_scores, labels, test_scores, alpha: float) -> np.ndarray:
    from crepes import ConformalClassifier

    classifier = ConformalClassifier().fit(np.asarray(true_scores, dtype=float), bins=np.asarray(labels))
    n_test = test_scores.shape[0]
    p_values = np.column_stack(
        [classifier.predict_p(test_scores[:, c], bins=np.full(n_test, c + 1), smoothing=False) for c in range(5)]
    )
    return p_values >= alpha + _EPS


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.2, 0.3])
def test_mondrian_sets_equal_crepes_mondrian_classifier(alpha: float) -> None:
    rng = np.random.default_rng(31)
    labels, judge = _draw_table(rng, 700)
    cal, test = slice(0, 400), slice(400, None)
    fitted = fit_conformal("mondrian_residual", alpha, labels[cal], judge_scores=judge[cal])
    ours = predict_sets(fitted, judge_scores=judge[test])
    test_scores = np.abs(judge[test][:, None] - LABELS[None, :])
    theirs = _crepes_mondrian(np.abs(judge[cal] - labels[cal]), judge[cal], test_scores, judge[test], alpha)
    np.testing.assert_array_equal(ours, theirs)
    assert len({tuple(row) for row in ours}) > 3  # the sets differ between judge scores


@pytest.mark.parametrize("with_probabilities", [False, True])
@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.2, 0.3])
def test_label_conditional_sets_equal_crepes_class_conditional(alpha: float, with_probabilities: bool) -> None:
    rng = np.random.default_rng(32)
    labels, judge, probabilities = _judge_population(rng, 900)
    probabilities = probabilities if with_probabilities else None
    cal, test = slice(0, 500), slice(500, None)
    fitted = fit_conformal(
        "label_conditional",
        alpha,
        labels[cal],
        judge_scores=judge[cal],
        probabilities=None if probabilities is None else probabilities[cal],
        rng=_InOrder(),
    )  # type: ignore[arg-type]
    ours = predict_sets(
        fitted, judge_scores=judge[test], probabilities=None if probabilities is None else probabilities[test]
    )
    # Independent scores: the threshold items are the second half of the calibration part (_InOrder), and
    # a label's score is 1 - sum_s w(s) M[s][y], w the judge's one-hot score or its probabilities.
    matrix = np.asarray(fitted.learned_matrix)
    weights = np.eye(5)[judge - 1] if probabilities is None else probabilities
    scores = 1.0 - weights @ matrix
    threshold_items = np.arange(250, 500)
    true_scores = scores[threshold_items, labels[threshold_items] - 1]
    theirs = _crepes_class_conditional(true_scores, labels[threshold_items], scores[500:], alpha)
    np.testing.assert_array_equal(ours, theirs)


def test_prepared_scores_give_the_same_fit_as_fit_conformal() -> None:
    # calibration_scores + fit_from_scores is the path the offline study takes for every level at once.
    labels, judge = _draw_table(np.random.default_rng(33), 300)
    prepared = calibration_scores("label_conditional", labels, judge_scores=judge, rng=np.random.default_rng(3))
    for alpha in (0.05, 0.1, 0.2):
        direct = fit_conformal("label_conditional", alpha, labels, judge_scores=judge, rng=np.random.default_rng(3))
        assert fit_from_scores(prepared, alpha) == direct


# ------------------------------------------------------------------------------ MAPIE, end to end


class _FixedProbabilities:
    """A prefit scikit-learn classifier that returns given probability rows, indexed by X[:, 0]."""

    _estimator_type = "classifier"

    def __init__(self, probabilities: np.ndarray) -> None:
        self.probabilities = probabilities
        self.classes_ = LABELS
        self.n_features_in_ = 1

    def fit(self, X, y):  # noqa: N803 - scikit-learn's signature
        return self

    def predict_proba(self, X):  # noqa: N803
        return self.probabilities[np.asarray(X)[:, 0].astype(int)]

    def predict(self, X):  # noqa: N803
        return self.classes_[self.predict_proba(X).argmax(axis=1)]

    def get_params(self, deep=True):
        return {"probabilities": self.probabilities}

    def __sklearn_tags__(self):
        from sklearn.utils import ClassifierTags, Tags, TargetTags

        return Tags(
            estimator_type="classifier", target_tags=TargetTags(required=True), classifier_tags=ClassifierTags()
        )

    def __sklearn_is_fitted__(self):
        return True


def _legacy_generator(seed: int) -> np.random.Generator:
    """A Generator whose uniforms are RandomState(seed)'s, the stream MAPIE draws its APS uniforms from."""
    bit_generator = np.random.MT19937()
    bit_generator.state = np.random.RandomState(seed).get_state(legacy=False)
    return np.random.Generator(bit_generator)


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.2, 0.3])
def test_randomised_aps_fit_and_predict_equal_mapie_with_the_same_uniforms(alpha: float) -> None:
    from mapie.classification import SplitConformalClassifier

    labels, _, probabilities = _judge_population(np.random.default_rng(41), 1200)
    n_cal, seed = 600, 4
    assert (_legacy_generator(seed).uniform(size=50) == np.random.RandomState(seed).uniform(size=50)).all()
    classifier = SplitConformalClassifier(
        estimator=_FixedProbabilities(probabilities),
        confidence_level=1 - alpha,
        conformity_score="aps",
        prefit=True,
        random_state=seed,
    )
    index = np.arange(len(labels)).reshape(-1, 1)
    classifier.conformalize(index[:n_cal], labels[:n_cal])
    _, theirs = classifier.predict_set(index[n_cal:], conformity_score_params={"include_last_label": "randomized"})
    fitted = fit_conformal(
        "aps_randomized", alpha, labels[:n_cal], probabilities=probabilities[:n_cal], rng=_legacy_generator(seed)
    )
    ours = predict_sets(fitted, probabilities=probabilities[n_cal:], rng=_legacy_generator(seed))
    np.testing.assert_array_equal(ours, theirs[:, :, 0])
    assert fitted.alpha == alpha and 1.5 < ours.sum(axis=1).mean() < 5
