"""Split conformal core: hand-computed thresholds and sets, bad input, invariants, and MAPIE cross-checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibration import conformal
from calibration.conformal import (
    METHODS,
    conformal_quantile,
    coverage_by_group,
    evaluate_sets,
    fit_conformal,
    predict_sets,
    prediction_set,
    probabilities_from_logprobs,
    repeated_splits,
)
from calibration.errors import (
    EmptyCalibrationError,
    InvalidAlphaError,
    InvalidProbabilitiesError,
    ScoreOutOfRangeError,
    UnknownMethodError,
)
from tests.calibration.reference.scores import label_scores, label_scores_one

FULL = (1, 2, 3, 4, 5)


# ------------------------------------------------------------------------------------------ hand-computed


def test_quantile_is_the_ceil_rank_order_statistic():
    scores = [0, 1, 0, 2, 0]  # sorted: 0 0 0 1 2
    assert conformal_quantile(scores, 0.2) == 2.0  # ceil(0.8 * 6) = 5 -> 5th smallest
    assert conformal_quantile(scores, 0.5) == 0.0  # ceil(0.5 * 6) = 3 -> 3rd smallest
    assert conformal_quantile(scores, 0.34) == 1.0  # ceil(0.66 * 6) = ceil(3.96) = 4
    assert conformal_quantile(scores, 0.1) is None  # ceil(0.9 * 6) = 6 > 5: full scale


def test_quantile_rank_uses_exact_rational_arithmetic():
    # (1 - 1/3) * 6 = 4 exactly; a float product could land just above 4 and take the 5th value.
    assert conformal_quantile([0, 0, 0, 1, 2], 1 / 3) == 1.0
    # (1 - 0.05) * 20 = 19 exactly: n = 19 is the smallest calibration set with a finite threshold at 0.05.
    assert conformal_quantile(list(range(19)), 0.05) == 18.0
    assert conformal_quantile(list(range(18)), 0.05) is None


def test_quantile_alpha_edges_and_ties():
    values = [3.0, 1.0, 1.0, 1.0, 2.0]
    assert conformal_quantile(values, 1e-9) is None  # needs n >= 1e9
    assert conformal_quantile(values, 0.999999) == 1.0  # rank ceil(6e-6) = 1 -> smallest
    assert conformal_quantile(values, 0.4) == 2.0  # rank ceil(3.6) = 4 -> ties at 1 then 2


def test_residual_sets_hand_computed():
    labels = [3, 3, 4, 2, 5]
    judge = [3, 4, 4, 4, 5]  # residuals 0 1 0 2 0
    fitted = fit_conformal("residual", 0.2, labels, judge_scores=judge)
    assert fitted.threshold == 2.0 and fitted.n_cal == 5
    assert prediction_set(fitted, judge_score=3) == FULL
    assert prediction_set(fitted, judge_score=1) == (1, 2, 3)  # end of the scale
    assert prediction_set(fitted, judge_score=5) == (3, 4, 5)
    tight = fit_conformal("residual", 0.5, labels, judge_scores=judge)
    assert tight.threshold == 0.0
    assert prediction_set(tight, judge_score=4) == (4,)


def test_tiny_calibration_set_gives_the_full_scale():
    fitted = fit_conformal("residual", 0.1, [3, 4], judge_scores=[3, 4])
    assert fitted.threshold is None
    for score in range(1, 6):
        assert prediction_set(fitted, judge_score=score) == FULL
    assert predict_sets(fitted, judge_scores=[1, 5]).all()


def test_lac_aps_ordinal_scores_hand_computed():
    p = np.array([[0.1, 0.2, 0.4, 0.05, 0.25]])
    np.testing.assert_allclose(label_scores("lac", n_labels=5, probabilities=p), [[0.9, 0.8, 0.6, 0.95, 0.75]])
    # APS: order 3 (.4), 5 (.25), 2 (.2), 1 (.1), 4 (.05)
    np.testing.assert_allclose(label_scores("aps", n_labels=5, probabilities=p), [[0.95, 0.85, 0.4, 1.0, 0.65]])
    # Ordinal: grow from 3; left .2 > right .05 -> 2; left .1 > right .05 -> 1; then 4; then 5.
    np.testing.assert_allclose(label_scores("ordinal", n_labels=5, probabilities=p), [[0.7, 0.6, 0.4, 0.75, 1.0]])
    # Expected score 0.1 + 0.4 + 1.2 + 0.2 + 1.25 = 3.15
    np.testing.assert_allclose(
        label_scores("residual_expected", n_labels=5, probabilities=p), [[2.15, 1.15, 0.15, 0.85, 1.85]]
    )
    u = np.array([0.5])
    np.testing.assert_allclose(
        label_scores("aps_randomized", n_labels=5, probabilities=p, uniforms=u),
        [[0.9, 0.75, 0.2, 0.975, 0.525]],
    )


def test_probability_ties_put_the_lower_label_first():
    p = np.array([[0.3, 0.3, 0.2, 0.1, 0.1]])
    np.testing.assert_allclose(label_scores("aps", n_labels=5, probabilities=p), [[0.3, 0.6, 0.8, 0.9, 1.0]])
    # Ordinal from mode 1 (lower label wins the tie), grows right only.
    np.testing.assert_allclose(label_scores("ordinal", n_labels=5, probabilities=p), [[0.3, 0.6, 0.8, 0.9, 1.0]])
    q = np.array([[0.1, 0.2, 0.4, 0.2, 0.1]])  # equal neighbours: the lower label joins first
    np.testing.assert_allclose(label_scores("ordinal", n_labels=5, probabilities=q), [[0.9, 0.6, 0.4, 0.8, 1.0]])


def test_ordinal_sets_are_intervals_and_lac_sets_hand_computed():
    probabilities = [[0.1, 0.2, 0.4, 0.05, 0.25]] * 4
    fitted = conformal.FittedConformal(method="ordinal", alpha=0.1, n_labels=5, n_cal=10, threshold=0.65)
    assert prediction_set(fitted, probabilities=probabilities[0]) == (2, 3)
    lac = conformal.FittedConformal(method="lac", alpha=0.1, n_labels=5, n_cal=10, threshold=0.76)
    assert prediction_set(lac, probabilities=probabilities[0]) == (3, 5)  # non-contiguous, as LAC may be


def test_mondrian_thresholds_per_judge_score_and_fallback():
    rng = np.random.default_rng(7)
    judge = np.array([3] * 40 + [4] * 40 + [1] * 3)
    labels = np.concatenate([np.full(40, 3), np.clip(4 + rng.integers(-1, 2, 40), 1, 5), np.full(3, 1)])
    fitted = fit_conformal("mondrian_residual", 0.1, labels, judge_scores=judge)
    assert fitted.group_sizes == {1: 3, 2: 0, 3: 40, 4: 40, 5: 0}
    assert fitted.group_thresholds[3] == 0.0  # judge 3 is always right
    assert fitted.group_thresholds[4] == 1.0
    assert fitted.group_thresholds[1] is None  # 3 points cannot give a finite 90% threshold
    assert fitted.group_thresholds[5] is None  # never seen
    assert prediction_set(fitted, judge_score=3) == (3,)
    assert prediction_set(fitted, judge_score=4) == (3, 4, 5)
    assert prediction_set(fitted, judge_score=1) == FULL
    assert prediction_set(fitted, judge_score=5) == FULL


def test_learned_lac_matrix_is_a_smoothed_conditional_table():
    labels = np.array([2] * 200 + [4] * 200)
    judge = np.array([3] * 200 + [5] * 200)  # the judge is off by one, consistently
    fitted = fit_conformal("learned_lac", 0.1, labels, judge_scores=judge, rng=np.random.default_rng(1))
    matrix = np.asarray(fitted.learned_matrix)
    np.testing.assert_allclose(matrix.sum(axis=1), 1.0)
    assert matrix[2].argmax() == 1 and matrix[4].argmax() == 3
    assert fitted.n_cal + fitted.n_model_fit == 400
    assert prediction_set(fitted, judge_score=3) == (2,)
    assert prediction_set(fitted, judge_score=5) == (4,)


def test_label_conditional_covers_every_human_label_where_marginal_lac_does_not():
    # A judge that always says 5 while most humans say 5: marginal LAC can name {5} and still reach 90%.
    rng = np.random.default_rng(3)
    labels = rng.choice([3, 4, 5], size=4000, p=[0.04, 0.06, 0.9])
    judge = np.full(4000, 5)
    cal, test = slice(0, 2000), slice(2000, None)
    marginal = fit_conformal("learned_lac", 0.1, labels[cal], judge_scores=judge[cal], rng=np.random.default_rng(1))
    classwise = fit_conformal(
        "label_conditional", 0.1, labels[cal], judge_scores=judge[cal], rng=np.random.default_rng(1)
    )
    assert classwise.grouping == "label" and set(classwise.group_thresholds) == {1, 2, 3, 4, 5}
    assert classwise.group_thresholds[1] is None  # never seen: label 1 is always in the set
    marginal_sets = predict_sets(marginal, judge_scores=judge[test])
    classwise_sets = predict_sets(classwise, judge_scores=judge[test])
    by_label = {g.group: g.coverage for g in coverage_by_group(classwise_sets, labels[test], labels[test])}
    assert min(by_label.values()) >= 0.85
    assert {g.group: g.coverage for g in coverage_by_group(marginal_sets, labels[test], labels[test])}[3] == 0.0
    assert prediction_set(classwise, judge_score=5) == tuple(np.flatnonzero(classwise_sets[0]) + 1)


def test_logprobs_are_renormalised_over_the_score_tokens():
    logprobs = np.log([0.05, 0.05, 0.2, 0.1, 0.1])  # mass 0.5 outside the five tokens
    np.testing.assert_allclose(probabilities_from_logprobs(logprobs), [0.1, 0.1, 0.4, 0.2, 0.2])
    with_zero = probabilities_from_logprobs([[-np.inf, 0.0, 0.0, -np.inf, -np.inf]])
    np.testing.assert_allclose(with_zero, [[0, 0.5, 0.5, 0, 0]])


def test_evaluation_reports_coverage_sizes_and_spans():
    sets = np.array([[True, True, False, False, False], [False, True, False, True, False], [True] * 5])
    evaluation = evaluate_sets(sets, [2, 3, 5])
    assert evaluation.coverage == pytest.approx(2 / 3)
    assert evaluation.mean_set_size == pytest.approx(3.0)
    assert evaluation.set_sizes.tolist() == [2, 2, 5]
    assert evaluation.spans.tolist() == [2, 3, 5]
    groups = coverage_by_group(sets, [2, 3, 5], [1, 1, 2])
    assert [(g.group, g.n, g.coverage) for g in groups] == [(1, 2, 0.5), (2, 1, 1.0)]


# ---------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("alpha", [0, 1, -0.1, 1.5, math.nan, math.inf, True, "0.1"])
def test_alpha_outside_the_open_interval_is_refused(alpha):
    with pytest.raises(InvalidAlphaError, match="alpha"):
        fit_conformal("residual", alpha, [1, 2, 3], judge_scores=[1, 2, 3])


def test_bad_inputs_raise_the_core_exceptions_naming_the_value():
    with pytest.raises(EmptyCalibrationError):
        fit_conformal("residual", 0.1, [], judge_scores=[])
    with pytest.raises(EmptyCalibrationError):
        conformal_quantile([], 0.1)
    with pytest.raises(ScoreOutOfRangeError, match="judge_scores\\[1\\]=6"):
        fit_conformal("residual", 0.1, [1, 2], judge_scores=[1, 6])
    with pytest.raises(ScoreOutOfRangeError, match="labels\\[0\\]=0"):
        fit_conformal("residual", 0.1, [0, 2], judge_scores=[1, 2])
    with pytest.raises(ScoreOutOfRangeError, match="2.5"):
        fit_conformal("residual", 0.1, [2.5, 2], judge_scores=[1, 2])
    with pytest.raises(ScoreOutOfRangeError, match="judge_score=7"):
        prediction_set(fit_conformal("residual", 0.5, [1, 2, 3], judge_scores=[1, 2, 3]), judge_score=7)
    with pytest.raises(InvalidProbabilitiesError, match="needs the judge's probabilities"):
        fit_conformal("lac", 0.1, [1, 2], judge_scores=[1, 2])
    with pytest.raises(InvalidProbabilitiesError, match="NaN"):
        probabilities_from_logprobs([[0.0, math.nan, -1.0, -2.0, -3.0]])
    with pytest.raises(InvalidProbabilitiesError, match="all -inf"):
        probabilities_from_logprobs([[-math.inf] * 5])
    with pytest.raises(InvalidProbabilitiesError, match="shape"):
        fit_conformal("lac", 0.1, [1, 2], probabilities=[[0.5, 0.5], [0.5, 0.5]])
    with pytest.raises(UnknownMethodError, match="'median'"):
        fit_conformal("median", 0.1, [1, 2], judge_scores=[1, 2])
    with pytest.raises(EmptyCalibrationError, match="3 items but labels has 2"):
        fit_conformal("residual", 0.1, [1, 2], judge_scores=[1, 2, 3])


# ------------------------------------------------------------------------------------------------- invariants


def _synthetic(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exchangeable draws: a human label, a noisy judge distribution around it, and a sampled judge score."""
    labels = rng.choice(5, size=n, p=[0.05, 0.15, 0.3, 0.3, 0.2]) + 1
    centre = np.clip(labels + rng.normal(0, 0.9, n), 1, 5)
    logits = -((np.arange(1, 6)[None, :] - centre[:, None]) ** 2) / rng.uniform(0.3, 2.0, n)[:, None]
    probabilities = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    judge = np.array([rng.choice(5, p=row) + 1 for row in probabilities])
    return labels, judge, probabilities


@settings(max_examples=6, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10_000), alpha=st.sampled_from([0.05, 0.1, 0.2]), method=st.sampled_from(METHODS))
def test_mean_coverage_over_splits_meets_the_guarantee(seed, alpha, method):
    labels, judge, probabilities = _synthetic(np.random.default_rng(seed), 2000)
    study = repeated_splits(
        method, alpha, labels, judge_scores=judge, probabilities=probabilities, n_splits=30, seed=seed
    )
    assert study.coverage >= 1 - alpha - 0.01
    assert len(study.splits) == 30 and study.n_cal == 1000 and study.n_test == 1000


@pytest.mark.parametrize("method", METHODS)
def test_every_method_meets_coverage_on_one_fixed_synthetic_set(method):
    labels, judge, probabilities = _synthetic(np.random.default_rng(123), 3000)
    study = repeated_splits(method, 0.1, labels, judge_scores=judge, probabilities=probabilities, n_splits=20)
    assert study.coverage >= 0.89
    assert 1 <= study.set_size <= 5


@settings(max_examples=60, deadline=None)
@given(
    data=st.lists(st.floats(0.0, 1.0), min_size=5, max_size=5).filter(lambda row: sum(row) > 1e-3),
    threshold=st.floats(0.0, 1.0),
    judge=st.integers(1, 5),
    method=st.sampled_from(["residual_expected", "lac", "aps", "ordinal", "learned_lac", "label_conditional"]),
)
def test_single_item_fast_path_equals_the_vectorised_path(data, threshold, judge, method):
    learned = method in ("learned_lac", "label_conditional")
    matrix = np.random.default_rng(0).dirichlet(np.ones(5), size=5).tolist() if learned else None
    groups = {1: None, 2: threshold, 3: threshold / 2, 4: 0.9, 5: 0.2} if method == "label_conditional" else None
    fitted = conformal.FittedConformal(
        method=method,
        alpha=0.1,
        n_labels=5,
        n_cal=100,
        threshold=threshold * 3,
        learned_matrix=matrix,
        group_thresholds=groups,
        grouping="label" if groups else None,
    )
    one = prediction_set(fitted, judge_score=judge, probabilities=data)
    many = predict_sets(fitted, judge_scores=[judge], probabilities=[data])
    assert one == tuple(int(y) + 1 for y in np.flatnonzero(many[0]))
    if method == "ordinal" and one:
        assert one == tuple(range(one[0], one[-1] + 1)), "ordinal sets must be contiguous"


def test_randomised_aps_single_and_vectorised_paths_draw_the_same_uniform():
    p = [0.1, 0.2, 0.4, 0.05, 0.25]
    fitted = conformal.FittedConformal(method="aps_randomized", alpha=0.1, n_labels=5, n_cal=100, threshold=0.5)
    for seed in range(20):
        one = prediction_set(fitted, probabilities=p, rng=np.random.default_rng(seed))
        many = predict_sets(fitted, probabilities=[p], rng=np.random.default_rng(seed))
        assert one == tuple(int(y) + 1 for y in np.flatnonzero(many[0]))


def test_repeated_splits_are_reproducible_by_seed():
    labels, judge, probabilities = _synthetic(np.random.default_rng(5), 400)
    first = repeated_splits("lac", 0.1, labels, probabilities=probabilities, n_splits=5, seed=3)
    again = repeated_splits("lac", 0.1, labels, probabilities=probabilities, n_splits=5, seed=3)
    other = repeated_splits("lac", 0.1, labels, probabilities=probabilities, n_splits=5, seed=4)
    assert first.coverage == again.coverage and first.set_size == again.set_size
    assert [s.test_index.tolist() for s in first.splits] == [s.test_index.tolist() for s in again.splits]
    assert [s.test_index.tolist() for s in first.splits] != [s.test_index.tolist() for s in other.splits]
    assert first.coverage_std == pytest.approx(np.std([s.coverage for s in first.splits], ddof=1))


def test_sets_are_nested_in_alpha():
    labels, judge, probabilities = _synthetic(np.random.default_rng(11), 600)
    for method in ("residual", "lac", "aps", "ordinal", "residual_expected"):
        loose = fit_conformal(method, 0.2, labels, judge_scores=judge, probabilities=probabilities)
        tight = fit_conformal(method, 0.05, labels, judge_scores=judge, probabilities=probabilities)
        small = predict_sets(loose, judge_scores=judge, probabilities=probabilities)
        large = predict_sets(tight, judge_scores=judge, probabilities=probabilities)
        assert (small <= large).all(), method


# ---------------------------------------------------------------------------------------------------- MAPIE


class _FixedProbabilities:
    """A prefit scikit-learn classifier that returns given probability rows, indexed by X[:, 0]."""

    _estimator_type = "classifier"

    def __init__(self, probabilities: np.ndarray) -> None:
        self.probabilities = probabilities
        self.classes_ = np.arange(1, probabilities.shape[1] + 1)
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


def _mapie(score: str, probabilities: np.ndarray, labels: np.ndarray, n_cal: int, alpha: float, seed: int = 0):
    from mapie.classification import SplitConformalClassifier

    classifier = SplitConformalClassifier(
        estimator=_FixedProbabilities(probabilities),
        confidence_level=1 - alpha,
        conformity_score=score,
        prefit=True,
        random_state=seed,
    )
    index = np.arange(len(labels)).reshape(-1, 1)
    classifier.conformalize(index[:n_cal], labels[:n_cal])
    return classifier, index


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.2])
def test_lac_threshold_and_sets_equal_mapie(alpha):
    labels, _, probabilities = _synthetic(np.random.default_rng(21), 1200)
    n_cal = 600
    classifier, index = _mapie("lac", probabilities, labels, n_cal, alpha)
    fitted = fit_conformal("lac", alpha, labels[:n_cal], probabilities=probabilities[:n_cal])
    ours = predict_sets(fitted, probabilities=probabilities[n_cal:])
    _, theirs = classifier.predict_set(index[n_cal:])
    np.testing.assert_array_equal(ours, theirs[:, :, 0])
    np.testing.assert_allclose(
        np.sort(classifier.conformity_scores.ravel()),
        np.sort(1 - probabilities[np.arange(n_cal), labels[:n_cal] - 1]),
    )


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.2])
def test_randomised_aps_scores_threshold_and_sets_equal_mapie(alpha):
    labels, _, probabilities = _synthetic(np.random.default_rng(22), 1200)
    n_cal, seed = 600, 4
    classifier, index = _mapie("aps", probabilities, labels, n_cal, alpha, seed=seed)
    # MAPIE draws its calibration uniforms from RandomState(seed); feed ours the same draws.
    calibration_uniforms = np.random.RandomState(seed).uniform(size=n_cal)
    matrix = label_scores(
        "aps_randomized", n_labels=5, probabilities=probabilities[:n_cal], uniforms=calibration_uniforms
    )
    calibration_scores = matrix[np.arange(n_cal), labels[:n_cal] - 1]
    np.testing.assert_allclose(calibration_scores, classifier.conformity_scores.ravel(), atol=1e-12)
    threshold = conformal_quantile(calibration_scores, alpha)
    _, theirs = classifier.predict_set(index[n_cal:], conformity_score_params={"include_last_label": "randomized"})
    test_uniforms = np.random.RandomState(seed).uniform(size=len(labels) - n_cal)
    ours = (
        label_scores("aps_randomized", n_labels=5, probabilities=probabilities[n_cal:], uniforms=test_uniforms)
        <= threshold + 1e-12
    )
    agreement = (ours == theirs[:, :, 0]).all(axis=1).mean()  # every item's set identical
    assert agreement == 1.0


@settings(max_examples=40, deadline=None)
@given(
    n_labels=st.sampled_from([3, 5, 7]),
    seed=st.integers(0, 10_000),
    with_probabilities=st.booleans(),
    method=st.sampled_from(["learned_lac", "label_conditional"]),
)
def test_learned_scores_of_one_item_are_the_plain_sums_exactly(n_labels, seed, with_probabilities, method):
    rng = np.random.default_rng(seed)
    matrix = rng.dirichlet(np.ones(n_labels), size=n_labels).tolist()
    judge = int(rng.integers(1, n_labels + 1))
    probs = rng.dirichlet(np.ones(n_labels)).tolist() if with_probabilities else None
    weights = probs if probs is not None else [1.0 if s == judge else 0.0 for s in range(1, n_labels + 1)]
    plain = [1.0 - sum(weights[s] * matrix[s][y] for s in range(n_labels)) for y in range(n_labels)]
    assert label_scores_one(method, n_labels, judge, probs, matrix, 0.0) == plain  # same floats
    fitted = conformal.FittedConformal(
        method="learned_lac",
        alpha=0.1,
        n_labels=n_labels,
        n_cal=100,
        threshold=float(np.median(plain)),
        learned_matrix=matrix,
    )
    one = prediction_set(fitted, judge_score=judge, probabilities=probs)
    many = predict_sets(fitted, judge_scores=[judge], probabilities=None if probs is None else [probs])
    assert one == tuple(int(y) + 1 for y in np.flatnonzero(many[0]))
