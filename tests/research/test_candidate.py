"""research.panels.candidate: balanced probabilities, pooled score bins and their PAC thresholds, checked against
independent computations (exact binomial tails with math.comb, hand-pooled bins)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from research.panels.candidate import (
    balanced_probabilities,
    bin_thresholds,
    candidate_sets,
    finite_rank_items,
    label_prior,
    pooled_bins,
)


def _pac_rank_by_hand(n: int, alpha: Fraction, delta: Fraction) -> int:
    """Smallest k with P(Binomial(n, 1 - alpha) >= k) <= delta, summed exactly term by term (n + 1 if none)."""
    p = 1 - alpha
    for k in range(1, n + 1):
        tail = sum(Fraction(math.comb(n, i)) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))
        if tail <= delta:
            return k
    return n + 1


def test_label_prior_is_laplace_smoothed_and_checks_the_scale() -> None:
    np.testing.assert_allclose(label_prior(np.array([1, 1, 3]), 5), np.array([3, 1, 2, 1, 1]) / 8)
    with pytest.raises(ValueError, match="1..5"):
        label_prior(np.array([0, 2]), 5)


def test_balanced_probabilities_divide_by_the_prior_and_renormalise() -> None:
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])
    prior = np.array([0.2, 0.3, 0.5])
    expected = probs / prior
    expected /= expected.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(balanced_probabilities(probs, prior), expected)
    np.testing.assert_allclose(balanced_probabilities(probs, np.full(3, 1 / 3)), probs)  # flat prior: unchanged
    # a rare label gains: its balanced probability exceeds its raw one
    assert balanced_probabilities(probs, prior)[0, 0] > probs[0, 0]
    with pytest.raises(ValueError):
        balanced_probabilities(probs, np.array([0.5, 0.5]))
    with pytest.raises(ValueError):
        balanced_probabilities(probs, np.array([0.0, 0.5, 0.5]))


@pytest.mark.parametrize(
    ("alpha", "delta", "expected"), [(0.1, 0.05, 29), (0.1, None, 9), (0.2, 0.05, 14), (0.05, 0.1, 45)]
)
def test_finite_rank_items_is_the_first_n_with_a_finite_threshold(
    alpha: float, delta: float | None, expected: int
) -> None:
    assert finite_rank_items(alpha, delta) == expected
    a = Fraction(alpha).limit_denominator(10**9)
    if delta is None:
        assert math.ceil((1 - a) * (expected + 1)) <= expected  # n items: rank ceil((1 - alpha)(n + 1)) <= n
        assert math.ceil((1 - a) * expected) > expected - 1  # n - 1 items: no finite rank
    else:
        d = Fraction(delta).limit_denominator(10**9)
        assert _pac_rank_by_hand(expected, a, d) <= expected
        assert _pac_rank_by_hand(expected - 1, a, d) == expected  # n - 1 items: no finite rank


def test_small_bins_pool_with_their_smaller_neighbour() -> None:
    bins = np.repeat([1, 2, 3, 4, 5], [5, 40, 3, 50, 31])
    # bin 3 (3 items) joins bin 1? no: its neighbours are 2 (40) and 4 (50) -> 2; then bin 1 (5) joins 2+3
    assert pooled_bins(bins, 30) == {1: 1, 2: 1, 3: 1, 4: 4, 5: 5}
    assert pooled_bins(bins, 1) == {1: 1, 2: 2, 3: 3, 4: 4, 5: 5}
    assert pooled_bins(np.array([], dtype=np.int64), 30) == {}


def test_bin_thresholds_are_each_pools_pac_order_statistic() -> None:
    rng = np.random.default_rng(3)
    bins = np.repeat([1, 2, 3, 4], [12, 45, 20, 60])
    scores = rng.uniform(size=bins.size)
    found = bin_thresholds(scores, bins, alpha=0.1, delta=0.05, min_items=29)
    # 12 joins its only neighbour (45 -> 57); then 20 joins the smaller neighbour, the pool of 57 (not 60)
    pools = {1: [1, 2, 3], 2: [1, 2, 3], 3: [1, 2, 3], 4: [4]}
    for b, members in pools.items():
        values = np.sort(scores[np.isin(bins, members)])
        k = _pac_rank_by_hand(values.size, Fraction(1, 10), Fraction(1, 20))
        assert found[b] == (values[k - 1] if k <= values.size else None)
    assert found[1] == found[2] == found[3] != found[4]
    # fewer items than a finite rank needs, and nothing to pool with: no threshold (full scale)
    assert bin_thresholds(scores[:10], np.ones(10, dtype=np.int64), alpha=0.1, delta=0.05, min_items=29) == {1: None}


def test_candidate_sets_compare_with_the_bins_threshold() -> None:
    matrix = np.array([[0.1, 0.5, 0.9], [0.2, 0.3, 0.4], [0.9, 0.9, 0.9]])
    sets = candidate_sets(matrix, np.array([1, 2, 7]), {1: 0.5, 2: None})
    np.testing.assert_array_equal(sets, [[True, True, False], [True, True, True], [True, True, True]])


def test_mondrian_bins_cover_within_every_bin_on_exchangeable_data() -> None:
    """Marginal thresholds per bin: over many calibration draws, coverage within each bin >= 1 - alpha."""
    rng = np.random.default_rng(11)
    hits = {b: [] for b in (1, 2, 3)}
    for _ in range(300):
        bins = rng.integers(1, 4, 400)
        scores = rng.uniform(size=400) * bins  # a different score law per bin
        cal, test = np.arange(200), np.arange(200, 400)
        thresholds = bin_thresholds(scores[cal], bins[cal], alpha=0.1, delta=None, min_items=9)
        limits = np.array([thresholds[b] for b in bins[test]])
        for b in hits:
            hits[b].append(np.mean(scores[test][bins[test] == b] <= limits[bins[test] == b] + 1e-12))
    for b, values in hits.items():
        assert np.mean(values) >= 0.9 - 0.01, b
