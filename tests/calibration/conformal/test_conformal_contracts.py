"""Contracts of calibration.conformal that mutation testing found unchecked (``make mutate``).

Each error names what is wrong (the exact message, row and value); the edges of every size rule are accepted
or refused as stated; defaults (seed 0) and every field of a study are what the docstrings say; the single-item
ordinal growth is checked by hand where the mode sits at either end or ties.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from calibration.conformal import (
    FittedConformal,
    calibration_scores,
    conformal_quantile,
    coverage_by_group,
    evaluate_sets,
    fit_conformal,
    fit_from_scores,
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
from tests.calibration.reference.scores import label_scores

ONE_HOT = [1, 0, 0, 0, 0]
RESIDUAL = FittedConformal(method="residual", alpha=0.1, n_labels=5, n_cal=3, threshold=1.0)
LAC = FittedConformal(method="lac", alpha=0.1, n_labels=5, n_cal=3, threshold=0.5)
LEARNED = FittedConformal(
    method="learned_lac", alpha=0.1, n_labels=5, n_cal=3, threshold=0.5, learned_matrix=[[0.2] * 5] * 5
)
METHOD_LIST = (
    "residual, residual_expected, lac, aps, aps_randomized, ordinal, mondrian_residual, learned_lac, label_conditional"
)

ERRORS = [
    (lambda: conformal_quantile([], 0.1), EmptyCalibrationError,
     "the calibration set is empty: a threshold needs at least one score"),
    (lambda: conformal_quantile([1, np.nan], 0.1), InvalidProbabilitiesError,
     "calibration scores hold NaN or infinity"),
    (lambda: fit_conformal("residual", 0.1, [1, 2], judge_scores=[1, 2], n_labels=1), ScoreOutOfRangeError,
     "n_labels=1 must be at least 2"),
    (lambda: fit_conformal("residual", 0.1, [], judge_scores=[]), EmptyCalibrationError,
     "the calibration set is empty: fitting needs at least one labelled item"),
    (lambda: fit_conformal("learned_lac", 0.1, [1], judge_scores=[1]), EmptyCalibrationError,
     "learned_lac needs at least 2 calibration items (model and threshold)"),
    (lambda: fit_conformal("residual", 0.1, [[1, 2]], judge_scores=[1]), ScoreOutOfRangeError,
     "labels must be a one-dimensional array, got shape (1, 2)"),
    (lambda: fit_conformal("residual", 0.1, [1, 2.5, 3.5], judge_scores=[1, 2, 3]), ScoreOutOfRangeError,
     "labels[1]=np.float64(2.5) is not an integer on the scale 1..5"),
    (lambda: fit_conformal("residual", 0.1, ["a"], judge_scores=[1]), ScoreOutOfRangeError,
     "labels must hold integers on the scale 1..5, got dtype <U1"),
    (lambda: fit_conformal("lac", 0.1, [1, 2], probabilities=[ONE_HOT]), InvalidProbabilitiesError,
     "probabilities must have shape (2, 5), got (1, 5)"),
    (lambda: predict_sets(LAC, probabilities=[[1, 0, 0, 0]]), InvalidProbabilitiesError,
     "probabilities must have shape (n, 5), got (1, 4)"),
    (lambda: fit_conformal("lac", 0.1, [1, 2, 3], probabilities=[ONE_HOT, [np.nan, 0, 0, 0, 1], ONE_HOT]),
     InvalidProbabilitiesError, "probabilities row 1 holds NaN or infinity: [nan, 0.0, 0.0, 0.0, 1.0]"),
    (lambda: fit_conformal("lac", 0.1, [1, 2, 3], probabilities=[ONE_HOT, [-1, 0, 0, 0, 2], [0, 0, 0, 0, -1]]),
     InvalidProbabilitiesError, "probabilities row 1 has a negative entry: [-1.0, 0.0, 0.0, 0.0, 2.0]"),
    (lambda: fit_conformal("lac", 0.1, [1, 2, 3], probabilities=[ONE_HOT, [0] * 5, [0] * 5]),
     InvalidProbabilitiesError, "probabilities row 1 sums to 0; it cannot be renormalised"),
    (lambda: probabilities_from_logprobs([[[0.0]]]), InvalidProbabilitiesError,
     "log-probabilities must have shape (n, K) or (K,), got (1, 1, 1)"),
    (lambda: probabilities_from_logprobs(np.zeros((2, 0))), InvalidProbabilitiesError,
     "log-probabilities must have shape (n, K) or (K,), got (2, 0)"),
    (lambda: probabilities_from_logprobs([[0, 0], [np.inf, 0], [np.nan, 0]]), InvalidProbabilitiesError,
     "log-probabilities row 1 holds NaN or +inf: [inf, 0.0]"),
    (lambda: probabilities_from_logprobs([[0, 0], [-np.inf, -np.inf]]), InvalidProbabilitiesError,
     "log-probabilities row 1 is all -inf: no score token has mass"),
    (lambda: fit_conformal("residual", 0.1, [1], judge_scores=[1], delta=2), InvalidAlphaError,
     "delta=2 must be strictly between 0 and 1"),
    (lambda: fit_from_scores(calibration_scores("residual", [1], judge_scores=[1]), 0.1, delta=2), InvalidAlphaError,
     "delta=2 must be strictly between 0 and 1"),
    (lambda: fit_conformal("nope", 0.1, [1], judge_scores=[1]), UnknownMethodError,
     f"method='nope' is not one of {METHOD_LIST}"),
    (lambda: label_scores("nope", n_labels=5, probabilities=np.full((1, 5), 0.2)), UnknownMethodError,
     f"method='nope' is not one of {METHOD_LIST}"),
    (lambda: fit_conformal("residual", 0.1, [1]), ScoreOutOfRangeError,
     "method='residual' needs the judge's integer score; none given"),
    (lambda: fit_conformal("learned_lac", 0.1, [1, 2]), ScoreOutOfRangeError,
     "method='learned_lac' needs the judge's score or its probabilities; none given"),
    (lambda: fit_conformal("lac", 0.1, [1, 2]), InvalidProbabilitiesError,
     "method='lac' needs the judge's probabilities (log-probs); none given"),
    (lambda: predict_sets(LEARNED, judge_scores=[1, 2], probabilities=[ONE_HOT]), EmptyCalibrationError,
     "judge_scores has 2 items but probabilities has 1"),
    (lambda: prediction_set(RESIDUAL, judge_score=2.0), ScoreOutOfRangeError,  # type: ignore[arg-type]
     "judge_score=2.0 must be an integer on the scale 1..5"),
    (lambda: prediction_set(RESIDUAL, judge_score=True), ScoreOutOfRangeError,
     "judge_score=True must be an integer on the scale 1..5"),
    (lambda: prediction_set(RESIDUAL), ScoreOutOfRangeError,
     "method='residual' needs the judge's integer score; none given"),
    (lambda: prediction_set(LAC), InvalidProbabilitiesError,
     "method='lac' needs the judge's probabilities (log-probs); none given"),
    (lambda: prediction_set(LEARNED), ScoreOutOfRangeError,
     "method='learned_lac' needs the judge's score or its probabilities; none given"),
    (lambda: prediction_set(LAC, probabilities=[1, 0, 0]), InvalidProbabilitiesError,
     "probabilities must have 5 entries, got 3"),
    (lambda: prediction_set(LAC, probabilities=[1, 0, 0, 0, -1]), InvalidProbabilitiesError,
     "probabilities must be finite and non-negative: [1.0, 0.0, 0.0, 0.0, -1.0]"),
    (lambda: prediction_set(LAC, probabilities=[0, 0, 0, 0, 0]), InvalidProbabilitiesError,
     "probabilities [0.0, 0.0, 0.0, 0.0, 0.0] sum to 0; they cannot be renormalised"),
    (lambda: evaluate_sets(np.ones(5, bool), [1]), EmptyCalibrationError,
     "sets must be an (n, K) boolean matrix, got shape (5,)"),
    (lambda: evaluate_sets(np.ones((2, 5), bool), [1]), EmptyCalibrationError,
     "2 sets but 1 labels; both must be equal and > 0"),
    (lambda: evaluate_sets(np.ones((1, 5), bool), [1.5]), ScoreOutOfRangeError,
     "labels[0]=np.float64(1.5) is not an integer on the scale 1..5"),
    (lambda: coverage_by_group(np.ones((2, 5), bool), [1, 2], [1]), EmptyCalibrationError,
     "groups has 1 entries but there are 2 sets"),
    (lambda: repeated_splits("residual", 0.1, [1, 2, 3], judge_scores=[1, 2, 3], cal_fraction=0.1),
     EmptyCalibrationError, "cal_fraction=0.1 of 3 items leaves an empty calibration or test part"),
    (lambda: repeated_splits("residual", 0.1, [1, 2, 3], judge_scores=[1, 2, 3], cal_fraction=1.0),
     EmptyCalibrationError, "cal_fraction=1.0 of 3 items leaves an empty calibration or test part"),
    (lambda: repeated_splits("residual", 0.1, [1, 2, 3], judge_scores=[1, 2, 3], n_splits=0), EmptyCalibrationError,
     "n_splits=0 must be at least 1"),
    (lambda: repeated_splits("residual", 0.1, [1, 2.5, 3], judge_scores=[1, 2, 3]), ScoreOutOfRangeError,
     "labels[1]=np.float64(2.5) is not an integer on the scale 1..5"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "error", "message"), ERRORS)
def test_every_refusal_names_what_is_wrong(call, error, message: str) -> None:
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        call()


# ------------------------------------------------------------------------------------ edges accepted


def test_the_smallest_inputs_each_rule_accepts() -> None:
    assert fit_conformal("residual", 0.5, [2], judge_scores=[2], n_labels=2).threshold == 0.0  # n_labels = 2, n = 1
    two = fit_conformal("learned_lac", 0.5, [1, 2], judge_scores=[1, 2], rng=np.random.default_rng(0))
    assert (two.n_model_fit, two.n_cal) == (1, 1)
    study = repeated_splits("residual", 0.5, [1, 2, 3, 4], judge_scores=[1, 2, 3, 4], cal_fraction=0.25, n_splits=1)
    assert (study.n_cal, study.n_test) == (1, 3)  # n_cal = 1 is enough
    assert study.coverage_std == 0.0 and study.set_size_std == 0.0  # one split: ddof 0, not nan
    last = repeated_splits("residual", 0.5, [1, 2, 3, 4], judge_scores=[1, 2, 3, 4], cal_fraction=0.75, n_splits=2)
    assert (last.n_cal, last.n_test) == (3, 1)
    assert evaluate_sets(np.ones((1, 5), bool), [3]).coverage == 1.0  # one item


@pytest.mark.parametrize(("fraction", "n_model"), [(0.0, 1), (0.3, 3), (0.5, 5), (1.0, 9)])
def test_learned_model_size_is_clipped_to_leave_both_parts(fraction: float, n_model: int) -> None:
    labels = [1, 2, 3, 4, 5, 1, 2, 3, 4, 5]
    fitted = fit_conformal(
        "learned_lac", 0.5, labels, judge_scores=labels, rng=np.random.default_rng(0), model_fraction=fraction
    )
    assert (fitted.n_model_fit, fitted.n_cal) == (n_model, 10 - n_model)


def test_defaults_are_seed_zero_and_recorded() -> None:
    labels = np.array([1, 2, 3, 4, 5] * 8)
    judge = np.roll(labels, 1)
    seeded = fit_conformal("learned_lac", 0.2, labels, judge_scores=judge, rng=np.random.default_rng(0))
    assert fit_conformal("learned_lac", 0.2, labels, judge_scores=judge) == seeded
    other = fit_conformal("learned_lac", 0.2, labels, judge_scores=judge, rng=np.random.default_rng(1))
    assert other != seeded  # the seed matters, so the equality above says something
    p = np.random.default_rng(2).dirichlet(np.ones(5), size=30)
    aps = FittedConformal(method="aps_randomized", alpha=0.1, n_labels=5, n_cal=100, threshold=0.6)
    default = predict_sets(aps, probabilities=p)
    np.testing.assert_array_equal(default, predict_sets(aps, probabilities=p, rng=np.random.default_rng(0)))
    assert not np.array_equal(default, predict_sets(aps, probabilities=p, rng=np.random.default_rng(1)))
    rows = [prediction_set(aps, probabilities=list(row)) for row in p]
    assert rows == [prediction_set(aps, probabilities=list(row), rng=np.random.default_rng(0)) for row in p]
    assert rows != [prediction_set(aps, probabilities=list(row), rng=np.random.default_rng(1)) for row in p]
    assert fit_conformal("residual", 0.1, [1, 2], judge_scores=[1, 2], delta=0.05).delta == 0.05
    assert fit_from_scores(calibration_scores("residual", [1, 2], judge_scores=[1, 2]), 0.1, delta=0.2).delta == 0.2
    assert calibration_scores("lac", [1, 2], probabilities=[ONE_HOT, ONE_HOT]).group_keys is None


def test_repeated_splits_reports_every_field() -> None:
    labels = np.array([1, 2, 3, 4, 5] * 6)
    judge = np.clip(labels + np.array([0, 1, -1] * 10), 1, 5)
    study = repeated_splits("residual", 0.2, labels, judge_scores=judge, n_splits=3, seed=7)
    assert (study.method, study.alpha, study.n_cal, study.n_test) == ("residual", 0.2, 15, 15)
    assert len(repeated_splits("residual", 0.2, labels, judge_scores=judge).splits) == 20  # default n_splits
    assert repeated_splits("residual", 0.2, labels, judge_scores=judge, n_splits=2).splits[0].test_index.tolist() == (
        repeated_splits("residual", 0.2, labels, judge_scores=judge, n_splits=2, seed=0).splits[0].test_index.tolist()
    )  # default seed 0
    sizes = [split.set_size for split in study.splits]
    assert study.set_size_std == pytest.approx(np.std(sizes, ddof=1))
    for split in study.splits:
        fitted = fit_conformal(
            "residual", 0.2, np.delete(labels, split.test_index), judge_scores=np.delete(judge, split.test_index)
        )
        assert split.threshold == fitted.threshold
        sets = predict_sets(fitted, judge_scores=judge[split.test_index])
        np.testing.assert_array_equal(split.set_sizes, sets.sum(axis=1))
        np.testing.assert_array_equal(split.covered, sets[np.arange(15), labels[split.test_index] - 1])


def test_evaluation_of_empty_sets_and_group_sizes() -> None:
    sets = np.array([[False] * 5, [False, True, True, False, True], [True] + [False] * 4])
    evaluation = evaluate_sets(sets, [1, 3, 1])
    assert evaluation.spans.tolist() == [0, 4, 1] and evaluation.set_sizes.tolist() == [0, 3, 1]
    groups = coverage_by_group(sets, [1, 3, 1], [7, 7, 8])
    assert [(g.group, g.n, g.coverage, g.mean_set_size) for g in groups] == [(7, 2, 0.5, 1.5), (8, 1, 1.0, 1.0)]


@pytest.mark.parametrize(
    ("row", "scores"),
    [
        ([0.1, 0.2, 0.4, 0.05, 0.25], [0.7, 0.6, 0.4, 0.75, 1.0]),  # mode 3, left side heavier first
        ([0.5, 0.2, 0.1, 0.1, 0.1], [0.5, 0.7, 0.8, 0.9, 1.0]),  # mode at the low end: grows right only
        ([0.1, 0.1, 0.1, 0.2, 0.5], [1.0, 0.9, 0.8, 0.7, 0.5]),  # mode at the high end: grows left only
        ([0.3, 0.1, 0.2, 0.1, 0.3], [0.3, 0.4, 0.6, 0.7, 1.0]),  # tied modes: the lower label is the mode
        # tied modes 2, 4: from 2; then 3 (.2 > .1), 4 (.3 > .1); then 1 and 5 tie at .1: the lower label first
        ([0.1, 0.3, 0.2, 0.3, 0.1], [0.9, 0.3, 0.5, 0.8, 1.0]),
    ],
)
def test_ordinal_single_item_growth_by_hand(row: list[float], scores: list[float]) -> None:
    np.testing.assert_allclose(label_scores("ordinal", n_labels=5, probabilities=np.array([row])), [scores])
    for threshold in sorted(set(scores)):
        fitted = FittedConformal(method="ordinal", alpha=0.1, n_labels=5, n_cal=100, threshold=threshold)
        expected = tuple(y + 1 for y, s in enumerate(scores) if s <= threshold + 1e-9)
        assert prediction_set(fitted, probabilities=row) == expected
        assert expected == tuple(range(expected[0], expected[-1] + 1))  # an interval


def test_randomised_aps_single_item_uses_its_uniform() -> None:
    # scores: order 3 (.4), 5 (.25), 2 (.2), 1 (.1), 4 (.05); cumulative minus u * p with u drawn from rng
    row = [0.1, 0.2, 0.4, 0.05, 0.25]
    u = float(np.random.default_rng(5).uniform())
    cumulative = {3: 0.4, 5: 0.65, 2: 0.85, 1: 0.95, 4: 1.0}
    randomised = {y: cumulative[y] - u * row[y - 1] for y in cumulative}
    fitted = FittedConformal(method="aps_randomized", alpha=0.1, n_labels=5, n_cal=100, threshold=0.7)
    expected = tuple(sorted(y for y, s in randomised.items() if s <= 0.7))
    assert prediction_set(fitted, probabilities=row, rng=np.random.default_rng(5)) == expected
    plain = FittedConformal(method="aps", alpha=0.1, n_labels=5, n_cal=100, threshold=0.7)
    assert prediction_set(plain, probabilities=row) == (3, 5)  # no uniform subtracted


def test_learned_single_item_scores_for_other_scales() -> None:
    # n_labels = 3 takes the generic path; the matrix is read per judge score (rows) and label (columns).
    matrix = [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.2, 0.7]]
    fitted = FittedConformal(
        method="learned_lac", alpha=0.1, n_labels=3, n_cal=100, threshold=0.65, learned_matrix=matrix
    )
    assert prediction_set(fitted, probabilities=[0.0, 0.0, 1.0]) == (3,)  # scores .9 .8 .3
    assert prediction_set(fitted, probabilities=[0.5, 0.5, 0.0]) == (1, 2)  # scores .6 .6 .8
    assert prediction_set(fitted, judge_score=1) == (1,)  # one-hot: scores .4 .7 .9


def test_logprobs_are_renormalised_row_by_row() -> None:
    logprobs = np.log([[0.2, 0.2, 0.1, 1.0, 1.0], [0.05, 0.05, 0.1, 0.2, 0.1]])  # masses 0.5 in each row
    logprobs[0, 3:] = -np.inf
    np.testing.assert_allclose(
        probabilities_from_logprobs(logprobs), [[0.4, 0.4, 0.2, 0.0, 0.0], [0.1, 0.1, 0.2, 0.4, 0.2]]
    )
    shifted = probabilities_from_logprobs([[800.0, 799.0], [-800.0, -801.0]])  # no overflow either way
    np.testing.assert_allclose(shifted, [[1 / (1 + np.exp(-1))] * 1 + [np.exp(-1) / (1 + np.exp(-1))]] * 2)


def test_repeated_splits_uses_each_splits_generator_for_fit_and_sets() -> None:
    rng = np.random.default_rng(9)
    labels = rng.integers(1, 6, 60)
    probabilities = rng.dirichlet(np.ones(5), size=60)
    study = repeated_splits("aps_randomized", 0.2, labels, probabilities=probabilities, n_splits=2, seed=4)
    for i, split in enumerate(study.splits):
        generator = np.random.default_rng([4, i])  # the documented rule: split i uses default_rng([seed, i])
        order = generator.permutation(60)
        cal, test = order[:30], order[30:]
        fitted = fit_conformal("aps_randomized", 0.2, labels[cal], probabilities=probabilities[cal], rng=generator)
        sets = predict_sets(fitted, probabilities=probabilities[test], rng=generator)
        np.testing.assert_array_equal(split.test_index, test)
        assert split.threshold == pytest.approx(fitted.threshold, rel=1e-12)  # inputs renormalised once more
        np.testing.assert_array_equal(split.set_sizes, sets.sum(axis=1))
    assert study.coverage_std == pytest.approx(np.std([s.coverage for s in study.splits], ddof=1))  # n_splits = 2


def test_the_threshold_is_the_rank_th_smallest_score_on_a_large_calibration_set():
    # 1,255 uniform scores (seed 237), alpha = 0.842: rank ceil(0.158 * 1256) = 199; checked against a full sort
    # (a partition around rank - 2 would leave another score at position 199 on this draw)
    from calibration.conformal import conformal_quantile

    values = np.random.default_rng(237).random(1255)
    assert conformal_quantile(values, 0.842) == np.sort(values)[198]


def _ordinal_by_sets(p: list[float]) -> list[float]:
    """The ordinal rule written with explicit sets: start at the most probable label (the lower on ties), then add
    whichever neighbour of the current interval is more probable (the lower one on ties, the only one at an end);
    a label's score is the interval's mass when it joins."""
    k = len(p)
    mode = min(range(k), key=lambda i: (-p[i], i))
    members, mass, scores = {mode}, p[mode], [0.0] * k
    scores[mode] = mass
    while len(members) < k:
        below, above = min(members) - 1, max(members) + 1
        options = [i for i in (below, above) if 0 <= i < k]
        joining = min(options, key=lambda i: (-p[i], i))
        members.add(joining)
        mass += p[joining]
        scores[joining] = mass
    return scores


@pytest.mark.parametrize("k", [3, 4, 5, 7])
def test_ordinal_scores_follow_the_rule_at_both_ends_of_the_scale(k):
    # probabilities rounded to tenths: many ties, modes at either end, neighbours beyond the second label
    from tests.calibration.reference.scores import label_scores_one

    rng = np.random.default_rng(k)
    rows = np.round(rng.dirichlet(np.full(k, 0.7), size=300), 1) + 1e-3
    rows = rows / rows.sum(axis=1, keepdims=True)
    matrix = label_scores("ordinal", n_labels=k, probabilities=rows)
    for row, scores in zip(rows, matrix, strict=True):
        expected = _ordinal_by_sets(row.tolist())
        np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-12)
        np.testing.assert_allclose(
            label_scores_one("ordinal", k, None, row.tolist(), None, 0.0), expected, rtol=0, atol=1e-12
        )
