"""calibration.rank_sets: hand cases, brute force over the confidence regions, explicit sums for the covariance,
and coverage of the true ranking by simulation with known truth."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from calibration.errors import CalibrationError, InvalidAlphaError
from calibration.rank_sets import (
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
