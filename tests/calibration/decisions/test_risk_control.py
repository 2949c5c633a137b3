"""Bounds on the error among accepted items: cross-checks against scipy and exact enumeration, and the group-level
validity that the item-level binomial bound lacks when items share a document."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import binom, binomtest

from calibration.decisions.risk_control import (
    StepOutcome,
    betting_test,
    betting_upper_bound,
    clopper_pearson_upper,
    fixed_sequence,
    group_counts,
    min_groups_to_certify,
    risk_test,
)


@pytest.mark.parametrize("n", [1, 5, 17, 120, 800])
@pytest.mark.parametrize("delta", [0.05, 0.1])
def test_clopper_pearson_upper_matches_scipy_exact_interval(n: int, delta: float) -> None:
    for k in sorted({0, 1, n // 7, n // 2, n - 1, n}):
        # The one-sided 1 - delta upper bound is the upper end of the two-sided exact interval at 1 - 2 delta.
        expected = binomtest(k, n).proportion_ci(confidence_level=1 - 2 * delta, method="exact").high
        assert clopper_pearson_upper(k, n, delta) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize(("k", "n"), [(0, 30), (3, 80), (10, 200), (40, 400), (79, 800)])
def test_clopper_pearson_rejection_equals_the_exact_binomial_test(k: int, n: int) -> None:
    # Inverting the bound is the exact one-sided binomial test of H0: rate >= alpha (scipy, an independent code).
    for alpha in (0.05, 0.1, 0.2):
        rejected = clopper_pearson_upper(k, n, 0.05) <= alpha
        assert rejected == (binomtest(k, n, alpha, alternative="less").pvalue <= 0.05)


def test_group_counts_count_errors_only_among_accepted() -> None:
    errors = np.array([1, 1, 0, 1, 0, 1], dtype=bool)
    accepted = np.array([1, 0, 1, 1, 1, 0], dtype=bool)
    e, a = group_counts(errors, accepted, np.array([0, 0, 1, 1, 2, 2]), 3)
    assert e.tolist() == [1, 1, 0] and a.tolist() == [1, 2, 1]


def test_betting_refuses_impossible_counts() -> None:
    with pytest.raises(ValueError, match="errors <= accepted"):
        betting_test(np.array([3]), np.array([2]), alpha=0.1, delta=0.05, max_group_size=4)


def test_betting_bound_is_the_inverse_of_the_test() -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(8, 17, size=90)
    e = rng.binomial(a, 0.02)
    for alpha in (0.1, 0.2):
        test = betting_test(e, a, alpha=alpha, delta=0.05, max_group_size=16)
        value = betting_upper_bound(e, a, alpha=alpha, delta=0.05, max_group_size=16)
        assert test.rejected == (value <= alpha)
        assert risk_test("betting", e, a, alpha=alpha, delta=0.05, max_group_size=16).rejected == test.rejected
    assert betting_upper_bound(e, a, alpha=0.1, delta=0.05, max_group_size=16) > e.sum() / a.sum()


def test_best_case_document_count_is_the_smallest_that_can_reject() -> None:
    for alpha in (0.1, 0.2):
        n = min_groups_to_certify(alpha=alpha, delta=0.05)
        best = np.zeros(n, dtype=int), np.full(n, 16)
        assert betting_test(*best, alpha=alpha, delta=0.05, max_group_size=16).rejected
        fewer = np.zeros(n - 1, dtype=int), np.full(n - 1, 16)
        assert not betting_test(*fewer, alpha=alpha, delta=0.05, max_group_size=16).rejected


def _exact_rejection_probability(
    types: list[tuple[int, int]], weights: list[float], n_docs: int, alpha: float, delta: float, bound: str
) -> float:
    """P(reject) when n_docs documents are drawn iid from a law on (errors, accepted) types: exact enumeration."""
    total = 0.0
    for draw in itertools.product(range(len(types)), repeat=n_docs):
        e = np.array([types[t][0] for t in draw])
        a = np.array([types[t][1] for t in draw])
        if risk_test(bound, e, a, alpha=alpha, delta=delta, max_group_size=4).rejected:
            total += math.prod(weights[t] for t in draw)
    return total


# Laws on documents of 4 accepted items whose item-level risk E[e] / E[a] is exactly alpha = 0.3 (H0 at its
# boundary): a benign-looking one, and clustered ones where a few documents hold every error.
_NULL_LAWS = [
    ([(0, 4), (1, 4), (2, 4)], [0.2, 0.4, 0.4]),  # E[e] = 1.2 = 0.3 x 4
    ([(0, 4), (4, 4)], [0.7, 0.3]),  # all-or-nothing documents
    ([(0, 4), (4, 4), (0, 1)], [0.607, 0.273, 0.12]),  # E[e] = 1.092, E[a] = 3.64
]


@pytest.mark.parametrize(("types", "weights"), _NULL_LAWS)
def test_betting_test_has_exact_level_at_most_delta_under_clustered_nulls(
    types: list[tuple[int, int]], weights: list[float]
) -> None:
    assert sum(weights) == pytest.approx(1)
    e_mean = sum(w * t[0] for t, w in zip(types, weights, strict=True))
    a_mean = sum(w * t[1] for t, w in zip(types, weights, strict=True))
    assert e_mean / a_mean == pytest.approx(0.3)
    n_docs = 8
    assert min_groups_to_certify(alpha=0.3, delta=0.2) <= n_docs  # the test can reject at all
    level = _exact_rejection_probability(types, weights, n_docs, 0.3, 0.2, "betting")
    assert 0 < level <= 0.2 + 1e-12


def test_item_level_binomial_bound_is_invalid_when_errors_cluster_by_document() -> None:
    # All-or-nothing documents at risk exactly 0.3: at delta = 0.05 the item-level bound treats 36 items as
    # independent and certifies whenever at most one of 9 documents holds errors (4 of 36 items), which happens
    # with probability 0.196, four times delta; the document-level bound stays <= delta.
    types, weights = _NULL_LAWS[1]
    item_level = _exact_rejection_probability(types, weights, 9, 0.3, 0.05, "clopper_pearson_items")
    assert item_level == pytest.approx(binom.cdf(1, 9, 0.3), abs=1e-12)
    assert item_level > 0.05 + 0.1
    assert _exact_rejection_probability(types, weights, 11, 0.3, 0.05, "betting") <= 0.05 + 1e-12


def test_betting_test_has_power_when_documents_are_many_and_clean() -> None:
    rng = np.random.default_rng(11)
    a = rng.integers(10, 17, size=150)
    e = rng.binomial(a, 0.03)
    assert betting_test(e, a, alpha=0.1, delta=0.05, max_group_size=16, order=rng.permutation(150)).rejected


def _brute_force_fixed_sequence(p_values: list[float], delta: float) -> int:
    """Number of leading rejections, written independently: the largest j with p_1..p_j all <= delta."""
    best = 0
    for j in range(1, len(p_values) + 1):
        if all(p <= delta for p in p_values[:j]):
            best = j
    return best


def test_fixed_sequence_matches_brute_force_on_every_pattern() -> None:
    for pattern in itertools.product([0.01, 0.2], repeat=5):
        outcomes = fixed_sequence(5, lambda j, p=pattern: StepOutcome(rejected=p[j] <= 0.05, bound=p[j]))
        assert len(outcomes) == _brute_force_fixed_sequence(list(pattern), 0.05)


def test_fixed_sequence_stops_at_an_untestable_step() -> None:
    outcomes = fixed_sequence(3, lambda j: None if j == 1 else StepOutcome(rejected=True, bound=0.0))
    assert len(outcomes) == 1


def _fixed_sequence_failure(n1: int, n2: int, p1: float, p2: float, alpha: float, delta: float) -> float:
    """Exact P(the accepted set's true risk > alpha) for two bins of independent items, bins tested in order
    (bin 1, then bins 1+2) with the item-level exact binomial bound: enumeration over every error count."""
    risk_first, risk_both = p1, (n1 * p1 + n2 * p2) / (n1 + n2)
    failure = 0.0
    for k1 in range(n1 + 1):
        for k2 in range(n2 + 1):
            probability = binom.pmf(k1, n1, p1) * binom.pmf(k2, n2, p2)
            steps = [
                clopper_pearson_upper(k1, n1, delta) <= alpha,
                clopper_pearson_upper(k1 + k2, n1 + n2, delta) <= alpha,
            ]
            accepted = _brute_force_fixed_sequence([0.0 if s else 1.0 for s in steps], 0.5)
            risk = {0: 0.0, 1: risk_first, 2: risk_both}[accepted]
            if risk > alpha:
                failure += probability
    return failure


@pytest.mark.parametrize(("p1", "p2"), [(0.1, 0.1), (0.05, 0.3), (0.12, 0.02), (0.1, 0.25), (0.2, 0.2)])
def test_fixed_sequence_family_wise_error_is_at_most_delta_by_enumeration(p1: float, p2: float) -> None:
    # With independent items (the unit where the binomial bound is exact) the walk's failure is <= delta.
    assert _fixed_sequence_failure(40, 30, p1, p2, 0.1, 0.05) <= 0.05 + 1e-12
