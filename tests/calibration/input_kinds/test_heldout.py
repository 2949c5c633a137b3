"""Held-out evaluation by group: splits keep groups whole, and the one-fit-every-level engine equals
fit_conformal + predict_sets level by level."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.conformal import METHODS, fit_conformal, predict_sets
from calibration.errors import EmptyCalibrationError
from calibration.input_kinds.heldout import GroupSplit, evaluate_split, group_splits, pooled_group_coverage


def _data(seed: int = 3, n_groups: int = 40, per_group: int = 8):
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(n_groups), per_group)
    labels = rng.integers(1, 6, size=groups.size)
    noise = rng.integers(-1, 2, size=groups.size)
    scores = np.clip(labels + noise, 1, 5)
    logits = rng.normal(size=(groups.size, 5))
    logits[np.arange(groups.size), scores - 1] += 2.0
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return groups, labels, scores, probs


def test_group_splits_keep_every_group_on_one_side_and_cover_all_items():
    groups, *_ = _data()
    for split in group_splits(groups, n_splits=5, seed=1):
        assert set(groups[split.calibration]).isdisjoint(set(groups[split.test]))
        assert np.array_equal(np.sort(np.concatenate([split.calibration, split.test])), np.arange(groups.size))
        assert len(set(groups[split.calibration])) == 20


def test_group_splits_differ_between_splits_and_repeat_with_the_seed():
    groups, *_ = _data()
    a = group_splits(groups, n_splits=3, seed=7)
    b = group_splits(groups, n_splits=3, seed=7)
    assert all(np.array_equal(x.calibration, y.calibration) for x, y in zip(a, b, strict=True))
    assert not np.array_equal(a[0].calibration, a[1].calibration)


def test_one_group_cannot_be_split():
    with pytest.raises(EmptyCalibrationError):
        group_splits(np.zeros(10), n_splits=1, seed=0)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("delta", [None, 0.05])
def test_engine_equals_fit_and_predict_at_every_level(method, delta):
    groups, labels, scores, probs = _data()
    split = group_splits(groups, n_splits=1, seed=2)[0]
    alphas = [0.05, 0.1, 0.2, 0.3]
    engine = evaluate_split(
        method,
        labels,
        split,
        levels=[(a, delta) for a in alphas],
        judge_scores=scores,
        probabilities=probs,
        n_labels=5,
        rng=np.random.default_rng(11),
    )
    for position, alpha in enumerate(alphas):
        rng = np.random.default_rng(11)
        cal, test = split.calibration, split.test
        fitted = fit_conformal(
            method, alpha, labels[cal], judge_scores=scores[cal], probabilities=probs[cal], rng=rng, delta=delta
        )
        sets = predict_sets(fitted, judge_scores=scores[test], probabilities=probs[test], rng=rng)
        assert np.array_equal(engine.set_sizes[position], sets.sum(axis=1))
        assert np.array_equal(engine.covered[position], sets[np.arange(test.size), labels[test] - 1])


def test_pac_sets_are_never_smaller_than_marginal_ones():
    groups, labels, scores, probs = _data()
    split = group_splits(groups, n_splits=1, seed=4)[0]
    result = evaluate_split(
        "lac",
        labels,
        split,
        levels=[(0.1, None), (0.1, 0.05)],
        judge_scores=scores,
        probabilities=probs,
        n_labels=5,
        rng=np.random.default_rng(0),
    )
    assert (result.set_sizes[1] >= result.set_sizes[0]).all()
    assert result.set_sizes[1].sum() > result.set_sizes[0].sum()


def test_pooling_merges_a_small_group_with_its_smaller_neighbour():
    keys = np.array([1] * 3 + [2] * 30 + [3] * 10 + [4] * 40)
    covered = np.array([0] * 3 + [1] * 30 + [1] * 5 + [0] * 5 + [1] * 40, dtype=bool)
    pooled = pooled_group_coverage(covered, keys, min_items=20)
    # 1 (3 items) joins 2 (its only neighbour); then 3 (10 items) joins the smaller of {1, 2} (33) and 4 (40).
    assert pooled == [((1, 2, 3), 43, 35 / 43), ((4,), 40, 1.0)]


def test_pooling_never_drops_items():
    rng = np.random.default_rng(0)
    keys = rng.integers(1, 6, size=57)
    covered = rng.random(57) < 0.8
    pooled = pooled_group_coverage(covered, keys, min_items=25)
    assert sum(n for _, n, _ in pooled) == 57
    assert all(n >= 25 for _, n, _ in pooled) or len(pooled) == 1


def test_split_sizes_by_hand():
    # floor(cal_fraction * G) groups calibrate, at least 1 and at most G - 1
    for n_groups, fraction, n_cal in [(2, 0.5, 1), (3, 0.3, 1), (4, 0.75, 3), (5, 1.0, 4), (5, 0.0, 1), (10, 0.5, 5)]:
        groups = np.repeat(np.arange(n_groups), 2)
        (split,) = group_splits(groups, n_splits=1, seed=0, cal_fraction=fraction)
        assert np.unique(groups[split.calibration]).size == n_cal, (n_groups, fraction)
        assert np.unique(groups[split.test]).size == n_groups - n_cal
    with pytest.raises(EmptyCalibrationError) as refused:
        group_splits(np.array([7, 7, 7]), n_splits=1, seed=0)
    assert str(refused.value) == "1 group(s): a split by group needs at least 2"


def _lac_case():
    # 9 calibration items of label 1 whose true-label probabilities are 0.9 .. 0.4: LAC scores 1 - p =
    # 0.1 .. 0.6 (sorted), so the threshold is the 9th (alpha 0.1: ceil(0.9 * 10) = 9) = 0.6, or the 5th
    # (alpha 0.5: ceil(0.5 * 10) = 5) = 0.4. K = 4 labels. A label joins when 1 - p <= threshold, i.e. p >= 0.4
    # (alpha 0.1) or p >= 0.6 (alpha 0.5).
    true_p = [0.9, 0.85, 0.8, 0.7, 0.6, 0.55, 0.5, 0.45, 0.4]
    calibration = [[p, (1 - p) / 3, (1 - p) / 3, (1 - p) / 3] for p in true_p]
    test = [
        [0.5, 0.0, 0.5, 0.0],  # alpha 0.1: {1, 3} (a hole: span 3)   alpha 0.5: {}
        [0.25, 0.25, 0.25, 0.25],  # {} / {}
        [0.1, 0.6, 0.15, 0.15],  # {2} / {2}
        [0.0, 0.0, 0.5, 0.5],
    ]  # {3, 4} / {}
    probabilities = np.array(calibration + test)
    labels = np.array([1] * 9 + [3, 1, 4, 4])
    split = GroupSplit(split=0, calibration=np.arange(9), test=np.arange(9, 13))
    return labels, probabilities, split


def test_sets_sizes_spans_and_coverage_by_hand():
    labels, probabilities, split = _lac_case()
    rng = np.random.default_rng(5)
    sets = evaluate_split(
        "lac",
        labels,
        split,
        levels=[(0.1, None), (0.5, None)],
        judge_scores=None,
        probabilities=probabilities,
        n_labels=4,
        rng=rng,
    )
    assert sets.test_index.tolist() == [9, 10, 11, 12]
    assert sets.set_sizes.tolist() == [[2, 0, 1, 2], [0, 0, 1, 0]]
    assert sets.spans.tolist() == [[3, 0, 1, 2], [0, 0, 1, 0]]
    assert sets.covered.tolist() == [[True, False, False, True], [False, False, False, False]]
    # LAC draws nothing from the split's generator (only learned methods and aps_randomized do)
    assert rng.uniform() == np.random.default_rng(5).uniform()


def test_an_empty_judge_score_group_gives_the_full_scale_and_a_single_item_group_its_own_threshold():
    # mondrian_residual on K = 3: judge score 1 has one calibration item (residual 1), score 2 has two
    # (residuals 0 and 1), score 3 has none. At alpha 0.5 a group of n = 1 takes rank ceil(0.5 * 2) = 1 (its
    # residual, 1) and n = 2 rank ceil(0.5 * 3) = 2 (1); score 3 has no threshold: the full scale.
    labels = np.array([2, 2, 3, 1, 3, 2])
    scores = np.array([1, 2, 2, 1, 3, 2])
    split = GroupSplit(split=0, calibration=np.arange(3), test=np.arange(3, 6))
    sets = evaluate_split(
        "mondrian_residual",
        labels,
        split,
        levels=[(0.5, None)],
        judge_scores=scores,
        probabilities=None,
        n_labels=3,
        rng=np.random.default_rng(0),
    )
    # test: score 1 -> {1, 2}; score 3 -> {1, 2, 3}; score 2 -> {1, 2, 3}
    assert sets.set_sizes.tolist() == [[2, 3, 3]]
    assert sets.covered.tolist() == [[True, True, True]]
    fitted = fit_conformal("mondrian_residual", 0.5, labels[:3], judge_scores=scores[:3], n_labels=3)
    expected = predict_sets(fitted, judge_scores=scores[3:])
    assert sets.set_sizes[0].tolist() == np.asarray(expected).sum(axis=1).tolist()


def test_pooling_counts_items_not_hits_and_a_group_of_exactly_min_items_stands_alone():
    # label 1: 20 items, 2 covered (not pooled: 20 items, though only 2 hits); label 2: 25 items, all covered;
    # label 3: 19 items -> joins label 2, its only neighbour
    keys = np.array([1] * 20 + [2] * 25 + [3] * 19)
    covered = np.array([1] * 2 + [0] * 18 + [1] * 25 + [1] * 19, dtype=bool)
    assert pooled_group_coverage(covered, keys, min_items=20) == [((1,), 20, 0.1), ((2, 3), 44, 1.0)]
    # the same keys as floats, or shifted to start at 3, pool the same way
    assert pooled_group_coverage(covered, keys.astype(float), min_items=20) == [((1,), 20, 0.1), ((2, 3), 44, 1.0)]
    assert pooled_group_coverage(covered, keys + 2, min_items=20) == [((3,), 20, 0.1), ((4, 5), 44, 1.0)]
    assert pooled_group_coverage(np.array([], dtype=bool), np.array([], dtype=int), min_items=5) == []


def test_pooling_takes_the_smallest_group_first_and_its_smaller_neighbour():
    # counts A=3, B=18, C=2, D=18, E=100 (min 20). Smallest first: C joins B (18 = 18: the lower index) -> BC 20;
    # then A joins BC -> ABC 23; then D joins ABC (23 < 100) -> ABCD 41. Taking A first would end in AB, CD, E.
    keys = np.repeat([1, 2, 3, 4, 5], [3, 18, 2, 18, 100])
    covered = np.concatenate(
        [np.zeros(3), np.ones(18), np.ones(2), np.r_[np.ones(10), np.zeros(8)], np.ones(100)]
    ).astype(bool)
    assert pooled_group_coverage(covered, keys, min_items=20) == [((1, 2, 3, 4), 41, 30 / 41), ((5,), 100, 1.0)]
    # the smaller neighbour is the one after: B (5 items) joins C (50), not A (100)
    keys = np.repeat([1, 2, 3], [100, 5, 50])
    covered = np.ones(155, dtype=bool)
    assert pooled_group_coverage(covered, keys, min_items=20) == [((1,), 100, 1.0), ((2, 3), 55, 1.0)]


def test_pooled_groups_without_hits_or_with_one_item_are_kept():
    assert pooled_group_coverage(np.array([False, False, True]), np.array([1, 1, 2]), min_items=1) == [
        ((1,), 2, 0.0),
        ((2,), 1, 1.0),
    ]
