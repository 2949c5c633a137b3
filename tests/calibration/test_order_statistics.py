"""The threshold's rank: marginal and PAC rules against scipy's binomial/beta laws, brute force and simulation."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import beta, binom

from calibration.conformal import conformal_quantile, fit_conformal
from calibration.errors import InvalidAlphaError
from calibration.order_statistics import as_fraction, binomial_upper_tail, marginal_rank, pac_rank, threshold_rank


@pytest.mark.parametrize("n", [1, 2, 5, 19, 20, 57, 100, 400, 1600])
@pytest.mark.parametrize("alpha", [Fraction(1, 100), Fraction(1, 20), Fraction(1, 10), Fraction(3, 10)])
@pytest.mark.parametrize("delta", [Fraction(1, 100), Fraction(1, 20), Fraction(1, 5)])
def test_pac_rank_is_the_smallest_rank_whose_binomial_tail_is_at_most_delta(n, alpha, delta):
    k = pac_rank(n, alpha, delta)
    p = float(1 - alpha)
    # scipy: P(Binomial(n, 1 - alpha) >= k) = sf(k - 1)
    if k <= n:
        assert binom.sf(k - 1, n, p) <= float(delta) * (1 + 1e-9)
    if k > 1:
        assert binom.sf(k - 2, n, p) > float(delta) * (1 - 1e-9)


def test_pac_rank_equals_exact_rational_brute_force_on_small_n():
    for n in range(1, 41):
        for alpha in (Fraction(1, 10), Fraction(1, 4)):
            delta = Fraction(1, 20)
            brute = next((k for k in range(1, n + 1) if binomial_upper_tail(n, 1 - alpha, k) <= delta), n + 1)
            assert pac_rank(n, alpha, delta) == brute, (n, alpha)


def test_the_beta_law_of_the_threshold_coverage_gives_the_same_rank():
    # Coverage of the k-th order statistic of continuous scores is Beta(k, n + 1 - k):
    # P(coverage < 1 - alpha) = beta.cdf(1 - alpha, k, n + 1 - k) <= delta at the PAC rank, > delta one below.
    n, alpha, delta = 300, Fraction(1, 10), Fraction(1, 20)
    k = pac_rank(n, alpha, delta)
    assert beta.cdf(0.9, k, n + 1 - k) <= 0.05 < beta.cdf(0.9, k - 1, n + 2 - k)


def test_pac_is_never_below_the_marginal_rank_and_marginal_is_the_split_conformal_rank():
    for n in (10, 50, 200, 1000):
        assert marginal_rank(n, Fraction(1, 10)) == math.ceil(0.9 * (n + 1))
        assert pac_rank(n, Fraction(1, 10), Fraction(1, 20)) >= marginal_rank(n, Fraction(1, 10))
        assert threshold_rank(n, Fraction(1, 10), None) == marginal_rank(n, Fraction(1, 10))


def test_simulated_calibration_draws_fall_below_the_target_at_most_delta_of_the_time():
    # Continuous exchangeable scores U(0, 1): a threshold's true coverage is the threshold itself.
    rng = np.random.default_rng(20261130)
    n, alpha, delta, draws = 200, 0.1, 0.05, 4000
    thresholds = np.array([conformal_quantile(rng.uniform(size=n), alpha, delta) for _ in range(draws)])
    below = float((thresholds < 1 - alpha).mean())
    monte_carlo = 3 * math.sqrt(delta * (1 - delta) / draws)
    assert below <= delta + monte_carlo
    # and the marginal rule, which promises only the average, does fall below far more often
    marginal = np.array([conformal_quantile(rng.uniform(size=n), alpha) for _ in range(draws)])
    assert float((marginal < 1 - alpha).mean()) > 0.3
    assert float(marginal.mean()) >= (1 - alpha) - 0.01


def test_fit_records_delta_and_pac_thresholds_are_higher():
    labels = np.tile(np.arange(1, 6), 40)
    scores = np.clip(labels + np.tile([-1, 0, 0, 1, 0, 2, -2, 0], 25), 1, 5)
    marginal = fit_conformal("residual", 0.2, labels, judge_scores=scores)
    pac = fit_conformal("residual", 0.2, labels, judge_scores=scores, delta=0.05)
    assert marginal.delta is None and pac.delta == 0.05
    assert pac.threshold >= marginal.threshold


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.1, float("nan")])
def test_delta_outside_zero_one_is_refused(delta):
    with pytest.raises(InvalidAlphaError):
        conformal_quantile([0.1, 0.2, 0.3], 0.1, delta)


def test_binomial_upper_tail_by_hand():
    half = Fraction(1, 2)
    # Binomial(3, 1/2): P(X >= k) = 1, 7/8, 1/2, 1/8, 0 for k = 0..4; any k <= 0 is certain
    assert [binomial_upper_tail(3, half, k) for k in (-1, 0, 1, 2, 3, 4, 9)] == [
        1,
        1,
        Fraction(7, 8),
        Fraction(1, 2),
        Fraction(1, 8),
        0,
        0,
    ]
    assert binomial_upper_tail(2, Fraction(9, 10), 2) == Fraction(81, 100)
    assert binomial_upper_tail(2, Fraction(9, 10), 1) == Fraction(99, 100)
    assert isinstance(binomial_upper_tail(3, half, 0), Fraction)
    assert isinstance(binomial_upper_tail(3, half, 5), Fraction)


def test_as_fraction_refusals_and_its_denominator_limit():
    for value in (True, "0.1", None, float("inf"), float("nan")):
        with pytest.raises(ValueError) as refused:
            as_fraction(value, "alpha")  # type: ignore[arg-type]
        assert str(refused.value) == f"alpha={value!r} must be a finite number strictly between 0 and 1"
    for value in (0, 1, 1.5, -0.1):
        with pytest.raises(ValueError) as refused:
            as_fraction(value, "delta")
        assert str(refused.value) == f"delta={value!r} must be strictly between 0 and 1"
    assert as_fraction(0.1, "alpha") == Fraction(1, 10)
    assert as_fraction(0.123456789, "alpha") == Fraction(123456789, 10**9)
    # 1/1999999999 needs a denominator above 10**9: the nearest fraction within the limit is used instead
    near = as_fraction(1 / 1999999999, "alpha")
    assert near.denominator <= 10**9 and near == Fraction(1, 1999999999).limit_denominator(10**9)


def test_no_calibration_scores_give_rank_one():
    assert pac_rank(0, Fraction(1, 10), Fraction(1, 20)) == 1
    assert threshold_rank(0, Fraction(1, 10), Fraction(1, 20)) == 1
