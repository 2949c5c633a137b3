"""calibration.estimates.rank_sets: hand cases, brute force over the confidence regions, explicit sums for the
covariance, and coverage of the true ranking by simulation with known truth."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from calibration.errors import CalibrationError, InvalidAlphaError
from calibration.estimates.rank_sets import (
    Battles,
    WinRateEstimate,
    ppr_win_rates,
    rank_sets,
    rank_sets_from_intervals,
    rank_sets_grid,
    true_ranks,
    win_rates,
)


def test_rank_sets_from_intervals_by_hand() -> None:
    sets = rank_sets_from_intervals(np.array([0.10, 0.15, 0.50, 0.05]), np.array([0.20, 0.30, 0.60, 0.12]))
    # model 2 is above everyone; 0 and 1 overlap; 3 overlaps 0 but lies below 1 (0.12 < 0.15)
    assert sets.low.tolist() == [2, 2, 1, 3]
    assert sets.high.tolist() == [4, 3, 1, 4]
    assert sets.size.tolist() == [3, 2, 1, 2]


def test_true_ranks_ties_share_the_best_rank() -> None:
    assert true_ranks(np.array([0.3, 0.5, 0.3, 0.1])).tolist() == [2, 1, 2, 4]


@pytest.mark.parametrize("seed", range(5))
def test_rank_sets_equal_brute_force_over_the_box(seed: int) -> None:
    """Every theta in the box of intervals (a 6-point grid per model, corners included): the smallest and largest
    rank each model takes are its rank set."""
    rng = np.random.default_rng(seed)
    k = 4
    centre = rng.random(k)
    half = rng.uniform(0.02, 0.2, k)
    lower, upper = centre - half, centre + half
    sets = rank_sets_from_intervals(lower, upper)
    grids = [np.linspace(lo, hi, 6) for lo, hi in zip(lower, upper, strict=True)]
    ranks = np.array([true_ranks(np.array(theta)) for theta in itertools.product(*grids)])
    assert sets.low.tolist() == ranks.min(axis=0).tolist()
    assert sets.high.tolist() == ranks.max(axis=0).tolist()


def test_ellipsoid_separation_is_the_minimum_over_the_ellipsoid() -> None:
    """j is 'certainly above' i exactly when theta_j - theta_i > 0 on the whole chi-square ellipsoid (checked on
    random points of its surface, where the minimum of a linear function lies)."""
    rng = np.random.default_rng(3)
    k = 5
    root = rng.normal(size=(k, k)) * 0.03
    sigma = root @ root.T + np.eye(k) * 1e-4
    theta = rng.random(k)
    estimate = WinRateEstimate(method="test", theta=theta, sigma=sigma, counts=np.ones(k), lam=0.0)
    alpha = 0.1
    sets = rank_sets(estimate, alpha)
    radius = math.sqrt(stats.chi2.ppf(1 - alpha, k))
    chol = np.linalg.cholesky(sigma)
    directions = rng.normal(size=(20000, k))
    surface = theta + radius * (directions / np.linalg.norm(directions, axis=1, keepdims=True)) @ chol.T
    for i, j in itertools.permutations(range(k), 2):
        smallest = float(np.min(surface[:, j] - surface[:, i]))
        if sets.above[i, j]:
            assert smallest > 0
        else:
            assert smallest < 0.02  # not separated: the ellipsoid reaches (about) theta_j <= theta_i


def test_bonferroni_uses_per_model_quantile() -> None:
    k = 3
    estimate = WinRateEstimate(
        method="test", theta=np.array([0.2, 0.5, 0.8]), sigma=np.diag([0.01, 0.01, 0.01]), counts=np.ones(k), lam=0.0
    )
    z = stats.norm.ppf(1 - 0.05 / (2 * k))
    expected = rank_sets_from_intervals(estimate.theta - z * 0.1, estimate.theta + z * 0.1)
    got = rank_sets(estimate, 0.05, "bonferroni")
    assert got.low.tolist() == expected.low.tolist() and got.high.tolist() == expected.high.tolist()
    grid = rank_sets_grid(estimate, [0.05, 0.3], "bonferroni")
    assert grid[0].low.tolist() == got.low.tolist()
    assert grid[1].size.sum() <= grid[0].size.sum()  # a larger alpha never widens the sets


def _battles(rng: np.random.Generator, size: int, strength: np.ndarray) -> tuple[Battles, Battles]:
    """Random pairs; a Bradley-Terry winner for the human and a judge that agrees 80% of the time."""
    k = strength.size
    a = rng.integers(0, k, size)
    b = (a + rng.integers(1, k, size)) % k
    p_a = 1 / (1 + np.exp(strength[b] - strength[a]))
    win_a = (rng.random(size) < p_a).astype(float)
    flip = rng.random(size) < 0.2
    judge_a = np.where(flip, 1 - win_a, win_a)
    return (
        Battles(model_a=a, model_b=b, win_a=win_a, win_b=1 - win_a),
        Battles(model_a=a, model_b=b, win_a=judge_a, win_b=1 - judge_a),
    )


def test_win_rates_and_covariance_equal_explicit_sums() -> None:
    rng = np.random.default_rng(4)
    human, _ = _battles(rng, 300, np.array([0.0, 0.5, 1.0, 1.5]))
    k = 4
    est = win_rates(human, k)
    for i in range(k):
        outcomes = np.concatenate([human.win_a[human.model_a == i], human.win_b[human.model_b == i]])
        assert est.theta[i] == pytest.approx(outcomes.mean())
        assert est.counts[i] == outcomes.size
    residual = np.zeros((k, len(human)))
    for t in range(len(human)):
        residual[human.model_a[t], t] = human.win_a[t] - est.theta[human.model_a[t]]
        residual[human.model_b[t], t] = human.win_b[t] - est.theta[human.model_b[t]]
    np.testing.assert_allclose(est.sigma, residual @ residual.T / np.outer(est.counts, est.counts), rtol=1e-12)


def test_ppr_with_lambda_zero_is_human_only_and_with_one_is_plain_ppi() -> None:
    rng = np.random.default_rng(5)
    human, judge = _battles(rng, 200, np.array([0.0, 0.4, 0.8]))
    _, unl = _battles(rng, 2000, np.array([0.0, 0.4, 0.8]))
    base = win_rates(human, 3)
    zero = ppr_win_rates(human, judge, unl, 3, lam=0.0)
    np.testing.assert_allclose(zero.theta, base.theta)
    np.testing.assert_allclose(zero.sigma, base.sigma, atol=1e-15)
    one = ppr_win_rates(human, judge, unl, 3, lam=1.0)
    np.testing.assert_allclose(one.theta, win_rates(unl, 3).theta + base.theta - win_rates(judge, 3).theta)
    rect = Battles(
        model_a=human.model_a, model_b=human.model_b, win_a=human.win_a - judge.win_a, win_b=human.win_b - judge.win_b
    )
    np.testing.assert_allclose(one.sigma, win_rates(unl, 3).sigma + win_rates(rect, 3).sigma, atol=1e-15)
    tuned = ppr_win_rates(human, judge, unl, 3)
    assert 0 < tuned.lam <= 1  # a judge right 80% of the time is worth something
    assert np.trace(tuned.sigma) <= min(np.trace(zero.sigma), np.trace(one.sigma)) + 1e-15


def test_rank_sets_cover_the_true_ranking_by_simulation() -> None:
    """Known truth: win rates of the generating model (by simulation on a very large sample); 150 seeded runs."""
    strength = np.array([0.0, 0.3, 0.6, 1.2])
    k = strength.size
    rng = np.random.default_rng(6)
    truth_human, _ = _battles(rng, 400_000, strength)
    truth = win_rates(truth_human, k).theta
    ranks = true_ranks(truth)
    alpha, runs = 0.1, 150
    hits_ppr, hits_human, size_ppr, size_human = [], [], [], []
    for _ in range(runs):
        human, judge = _battles(rng, 400, strength)
        _, unlabelled = _battles(rng, 4000, strength)
        ppr = rank_sets(ppr_win_rates(human, judge, unlabelled, k), alpha)
        base = rank_sets(win_rates(human, k), alpha)
        hits_ppr.append(ppr.covers(ranks).all())
        hits_human.append(base.covers(ranks).all())
        size_ppr.append(ppr.size.mean())
        size_human.append(base.size.mean())
    slack = 3 * math.sqrt(alpha * (1 - alpha) / runs)
    assert np.mean(hits_ppr) >= 1 - alpha - slack
    assert np.mean(hits_human) >= 1 - alpha - slack
    assert np.mean(size_ppr) <= np.mean(size_human)


def test_bad_input_is_refused() -> None:
    estimate = WinRateEstimate(method="t", theta=np.zeros(2), sigma=np.eye(2), counts=np.ones(2), lam=0.0)
    with pytest.raises(InvalidAlphaError):
        rank_sets(estimate, 0.0)
    with pytest.raises(CalibrationError, match="construction"):
        rank_sets(estimate, 0.1, "box")  # type: ignore[arg-type]
    with pytest.raises(CalibrationError, match="different models"):
        win_rates(Battles(model_a=np.array([0]), model_b=np.array([0]), win_a=np.ones(1), win_b=np.zeros(1)), 2)
    with pytest.raises(CalibrationError, match="0..1"):
        win_rates(Battles(model_a=np.array([0]), model_b=np.array([2]), win_a=np.ones(1), win_b=np.zeros(1)), 2)


# ----------------------------------------------------------------------------------------- under-labelled guard


def _random_estimate(rng: np.random.Generator, k: int, counts: np.ndarray) -> WinRateEstimate:
    root = rng.normal(size=(k, k)) * 0.03
    sigma = root @ root.T + np.eye(k) * 1e-4
    return WinRateEstimate(method="t", theta=rng.random(k), sigma=sigma, counts=counts.astype(float), lam=0.0)


@pytest.mark.parametrize("seed", range(6))
def test_guarded_ellipsoid_sets_equal_sets_with_the_variances_made_infinite_by_hand(seed: int) -> None:
    """The guard equals, pair by pair, the chi-square test with Var(hat_j - hat_i) = inf for every pair touching an
    unknown model (computed here in plain loops), and the limit of the unguarded sets as those models' variances
    grow (covariances 0)."""
    rng = np.random.default_rng(seed)
    k = 5
    counts = rng.integers(0, 40, k)
    counts[rng.integers(0, k)] = 3  # at least one under-labelled model
    estimate = _random_estimate(rng, k, counts)
    alpha, floor = 0.1, 20
    unknown = counts < floor
    guarded = rank_sets(estimate, alpha, min_labelled=floor)
    q = math.sqrt(stats.chi2.ppf(1 - alpha, k))
    above = np.zeros((k, k), dtype=bool)
    for i, j in itertools.product(range(k), range(k)):
        if i == j or unknown[i] or unknown[j]:
            continue  # infinite variance of the difference: never rejected
        var = estimate.sigma[i, i] + estimate.sigma[j, j] - 2 * estimate.sigma[i, j]
        above[i, j] = estimate.theta[j] - estimate.theta[i] > q * math.sqrt(var)
    assert guarded.above.tolist() == above.tolist()
    assert guarded.low.tolist() == (1 + above.sum(axis=1)).tolist()
    assert guarded.high.tolist() == (k - above.sum(axis=0)).tolist()
    assert all(guarded.low[unknown] == 1) and all(guarded.high[unknown] == k)
    huge = estimate.sigma.copy()
    huge[unknown, :], huge[:, unknown] = 0.0, 0.0
    huge[unknown, unknown] = 1e12
    by_hand = rank_sets(WinRateEstimate(method="t", theta=estimate.theta, sigma=huge, counts=counts, lam=0.0), alpha)
    assert by_hand.low.tolist() == guarded.low.tolist() and by_hand.high.tolist() == guarded.high.tolist()


@pytest.mark.parametrize("seed", range(4))
def test_guarded_bonferroni_sets_equal_brute_force_with_unknown_intervals_unbounded(seed: int) -> None:
    """Every theta in the box where an unknown model's interval spans all the others (which, for ranks, is the
    same as [-inf, inf]): the smallest and largest rank each model takes are its guarded rank set."""
    rng = np.random.default_rng(100 + seed)
    k = 4
    counts = np.array([50, 2, 30, 60])
    estimate = _random_estimate(rng, k, counts)
    alpha, floor = 0.2, 20
    guarded = rank_sets(estimate, alpha, "bonferroni", min_labelled=floor)
    z = stats.norm.ppf(1 - alpha / (2 * k))
    sd = np.sqrt(np.diag(estimate.sigma))
    lower, upper = estimate.theta - z * sd, estimate.theta + z * sd
    lower[1], upper[1] = -np.inf, np.inf
    by_hand = rank_sets_from_intervals(lower, upper)
    assert guarded.low.tolist() == by_hand.low.tolist() and guarded.high.tolist() == by_hand.high.tolist()
    lower[1], upper[1] = lower[[0, 2, 3]].min() - 1, upper[[0, 2, 3]].max() + 1
    grids = [np.linspace(lo, hi, 6) for lo, hi in zip(lower, upper, strict=True)]
    ranks = np.array([true_ranks(np.array(theta)) for theta in itertools.product(*grids)])
    assert guarded.low.tolist() == ranks.min(axis=0).tolist()
    assert guarded.high.tolist() == ranks.max(axis=0).tolist()
    assert (guarded.low[1], guarded.high[1]) == (1, k)


def _with_a_sparse_loser(rng: np.random.Generator) -> tuple[Battles, Battles, Battles]:
    """Models 0..2 with 600 labelled battles among them; model 3 in 3 labelled battles, lost all three (humans
    and judge agree), and in 400 unlabelled ones where the judge gives it a win a third of the time."""
    human, judge = _battles(rng, 600, np.array([0.0, 0.4, 0.8]))
    sparse_a, sparse_b = np.array([3, 3, 3]), np.array([0, 1, 2])
    lose = np.zeros(3)
    human = Battles(
        model_a=np.r_[human.model_a, sparse_a],
        model_b=np.r_[human.model_b, sparse_b],
        win_a=np.r_[human.win_a, lose],
        win_b=np.r_[human.win_b, 1 - lose],
    )
    judge = Battles(
        model_a=human.model_a, model_b=human.model_b, win_a=np.r_[judge.win_a, lose], win_b=np.r_[judge.win_b, 1 - lose]
    )
    _, unl = _battles(rng, 4000, np.array([0.0, 0.4, 0.8]))
    other = rng.integers(0, 3, 400)
    win = (rng.random(400) < 1 / 3).astype(float)
    unl = Battles(
        model_a=np.r_[unl.model_a, np.full(400, 3)],
        model_b=np.r_[unl.model_b, other],
        win_a=np.r_[unl.win_a, win],
        win_b=np.r_[unl.win_b, 1 - win],
    )
    return human, judge, unl


def test_a_model_with_three_equal_labelled_outcomes_is_separable_only_without_the_guard() -> None:
    human, judge, unl = _with_a_sparse_loser(np.random.default_rng(8))
    for estimate in (win_rates(human, 4), ppr_win_rates(human, judge, unl, 4)):
        assert estimate.counts[3] == 3
        for construction in ("ellipsoid", "bonferroni"):
            bare = rank_sets(estimate, 0.05, construction)
            # the bug: three equal outcomes, a zero rectifier variance, and model 3 "certainly" below others
            assert bare.above[3].any(), (estimate.method, construction)
            guarded = rank_sets(estimate, 0.05, construction, min_labelled=20)
            assert not guarded.above[3].any() and not guarded.above[:, 3].any()
            assert (guarded.low[3], guarded.high[3]) == (1, 4)
            known = np.arange(3)
            assert guarded.above[np.ix_(known, known)].tolist() == bare.above[np.ix_(known, known)].tolist()
        low, high = estimate.intervals(0.05, min_labelled=20)
        assert (low[3], high[3]) == (-np.inf, np.inf) and np.isfinite(low[:3]).all() and np.isfinite(high[:3]).all()


@pytest.mark.parametrize("construction", ["ellipsoid", "bonferroni"])
def test_the_guard_at_zero_leaves_results_bit_identical(construction: str) -> None:
    human, judge, unl = _with_a_sparse_loser(np.random.default_rng(9))
    estimate = ppr_win_rates(human, judge, unl, 4)
    alphas = (0.01, 0.1, 0.3)
    bare, zero = (
        rank_sets_grid(estimate, alphas, construction),
        rank_sets_grid(estimate, alphas, construction, min_labelled=0),
    )
    for a, b in zip(bare, zero, strict=True):
        assert a.low.tobytes() == b.low.tobytes() and a.high.tobytes() == b.high.tobytes()
        assert a.above.tobytes() == b.above.tobytes()
    pairs = zip(estimate.intervals(0.1), estimate.intervals(0.1, 0), strict=True)
    assert all(x.tobytes() == y.tobytes() for x, y in pairs)
    assert not estimate.under_labelled(0).any() and estimate.under_labelled(4).tolist() == [False] * 3 + [True]


def test_the_guard_makes_no_nan_and_refuses_a_bad_floor() -> None:
    """A model with no battle (theta NaN) and an under-labelled one: no warning, no NaN in sets or intervals."""
    estimate = WinRateEstimate(
        method="t",
        theta=np.array([0.2, 0.5, np.nan, 1.0]),
        sigma=np.diag([1e-3, 1e-3, np.nan, 0.0]),
        counts=np.array([40.0, 40.0, 0.0, 2.0]),
        lam=0.0,
    )
    with np.errstate(all="raise"):
        for construction in ("ellipsoid", "bonferroni"):
            sets = rank_sets(estimate, 0.1, construction, min_labelled=5)  # type: ignore[arg-type]
            assert sets.low.tolist() == [2, 1, 1, 1] and sets.high.tolist() == [4, 3, 4, 4]
        low, high = estimate.intervals(0.1, min_labelled=5)
    assert not np.isnan(low).any() and not np.isnan(high).any()
    for bad in (-1, 2.5, True):
        with pytest.raises(CalibrationError, match="min_labelled"):
            rank_sets(estimate, 0.1, min_labelled=bad)  # type: ignore[arg-type]
