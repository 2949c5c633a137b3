"""Held-out evaluation by group: splits keep groups whole, and the one-fit-every-level engine equals
fit_conformal + predict_sets level by level."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.conformal import METHODS, fit_conformal, predict_sets
from calibration.errors import EmptyCalibrationError
from calibration.heldout import evaluate_split, group_splits, pooled_group_coverage


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
    engine = evaluate_split(method, labels, split, levels=[(a, delta) for a in alphas], judge_scores=scores,
                            probabilities=probs, n_labels=5, rng=np.random.default_rng(11))
    for position, alpha in enumerate(alphas):
        rng = np.random.default_rng(11)
        cal, test = split.calibration, split.test
        fitted = fit_conformal(method, alpha, labels[cal], judge_scores=scores[cal], probabilities=probs[cal],
                               rng=rng, delta=delta)
        sets = predict_sets(fitted, judge_scores=scores[test], probabilities=probs[test], rng=rng)
        assert np.array_equal(engine.set_sizes[position], sets.sum(axis=1))
        assert np.array_equal(engine.covered[position], sets[np.arange(test.size), labels[test] - 1])


def test_pac_sets_are_never_smaller_than_marginal_ones():
    groups, labels, scores, probs = _data()
    split = group_splits(groups, n_splits=1, seed=4)[0]
    result = evaluate_split("lac", labels, split, levels=[(0.1, None), (0.1, 0.05)], judge_scores=scores,
                            probabilities=probs, n_labels=5, rng=np.random.default_rng(0))
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
