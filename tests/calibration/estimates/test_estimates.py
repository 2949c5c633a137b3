"""calibration.estimates.system: PPI++ and classical against ppi_py (the PPI authors' package), Clopper-Pearson against
scipy, the betting interval's bounds against a brute-force grid, and coverage by simulation with known truth."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate
from scipy import stats

from calibration.errors import CalibrationError, EmptyCalibrationError, InvalidAlphaError
from calibration.estimates.betting import (
    ALPHA_JUDGE_SHARE,
    _bets,
    _betting_core,
    _predictable_lambda,
    _rejects,
    betting_intervals,
    judge_mean_bounds,
)
from calibration.estimates.intervals import classical_intervals, clopper_pearson, fisher_z_interval, ppi_intervals
from calibration.estimates.system import (
    MIN_N_CLT,
    Sample,
    estimate_difference,
    estimate_mean,
    estimate_pass_rate,
    estimate_win_rate,
    label_budget,
    served_uses_clt,
    switch_reason,
)


def _population(rng: np.random.Generator, size: int, *, skewed: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Human scores on 1..5 (thirds, like SummEval's expert means) and a biased, noisy judge in [1, 5]."""
    if skewed:  # like SummEval consistency: mostly 5, a few low scores
        human = np.where(rng.random(size) < 0.9, 5.0, rng.integers(3, 13, size) / 3)
    else:
        human = np.round(np.clip(rng.normal(3.3, 0.8, size), 1, 5) * 3) / 3
    judge = np.clip(0.8 * human + 0.5 + rng.normal(0, 0.5, size), 1, 5)
    return human, judge


@pytest.mark.parametrize(("n", "big_n", "seed"), [(10, 90, 0), (30, 300, 1), (200, 100, 2), (50, 5000, 3)])
def test_ppi_matches_ppi_py(n: int, big_n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    y, f = _population(rng, n)
    _, f_unl = _population(rng, big_n)
    ours = ppi_intervals(y, f, f_unl, 0.05)
    low, high = ppi_mean_ci(y, f, f_unl, alpha=0.05)
    np.testing.assert_allclose([ours.low[0], ours.high[0]], [low[0], high[0]], rtol=1e-10)
    np.testing.assert_allclose(ours.estimate[0], ppi_mean_pointestimate(y, f, f_unl)[0], rtol=1e-10)
    # fixed lambda (plain PPI, lambda = 1) as well
    low1, high1 = ppi_mean_ci(y, f, f_unl, alpha=0.1, lam=1)
    fixed = ppi_intervals(y, f, f_unl, 0.1, lam=1.0)
    np.testing.assert_allclose([fixed.low[0], fixed.high[0]], [low1[0], high1[0]], rtol=1e-10)


def test_ppi_rows_are_independent_resamples() -> None:
    rng = np.random.default_rng(4)
    y, f = _population(rng, 3 * 20)
    _, f_unl = _population(rng, 200)
    batch = ppi_intervals(y.reshape(3, 20), f.reshape(3, 20), f_unl, 0.05)
    for row in range(3):
        low, high = ppi_mean_ci(y[row * 20 : (row + 1) * 20], f[row * 20 : (row + 1) * 20], f_unl, alpha=0.05)
        np.testing.assert_allclose([batch.low[row], batch.high[row]], [low[0], high[0]], rtol=1e-10)


def test_lambda_is_clipped_to_unit_interval() -> None:
    rng = np.random.default_rng(5)
    y = rng.normal(size=40)
    anti = -y + rng.normal(0, 0.1, 40)  # negatively correlated judge: the unclipped optimum is < 0
    assert ppi_intervals(y, anti, rng.normal(size=400), 0.05).lam[0] == 0.0
    scaled = 0.2 * y  # cov / var = 5: clipped to 1
    assert ppi_intervals(y, scaled, 0.2 * rng.normal(size=4000), 0.05).lam[0] == 1.0


def test_classical_matches_ppi_py() -> None:
    y = np.random.default_rng(6).normal(3, 1, 25)
    ours = classical_intervals(y, 0.1)
    np.testing.assert_allclose([ours.low[0], ours.high[0]], classical_mean_ci(y, alpha=0.1), rtol=1e-12)


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (10, 10), (17, 40), (1, 1)])
def test_clopper_pearson_matches_scipy(k: int, n: int) -> None:
    expected = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    np.testing.assert_allclose(clopper_pearson(k, n, 0.05), (expected.low, expected.high), atol=1e-12)


def test_betting_bounds_equal_the_brute_force_grid_hull() -> None:
    """The bisection's bounds agree with the hull of the non-rejected points of a fine grid, and those points are
    contiguous (the rejected set lies outside an interval)."""
    rng = np.random.default_rng(7)
    for _ in range(4):
        y, f = _population(rng, 15)
        _, f_unl = _population(rng, 150)
        y, f = y[None, :], f[None, :]
        mu_lo, mu_hi = judge_mean_bounds(f_unl, 1, 5, 0.005)
        lam = _predictable_lambda(y, f, float(f_unl.var(ddof=1)), 15 / 150)
        low, high, _ = _betting_core(y, f, lam, 1.0, 5.0, 0.045, mu_lo, mu_hi, mix_human=True)
        grid = np.linspace(1, 5, 4001)
        z = y - lam * (f - 0.5 * (mu_lo + mu_hi))
        reps = grid.size
        rejected = _rejects(
            grid,
            np.repeat(y, reps, 0),
            np.repeat(f, reps, 0),
            np.repeat(lam, reps, 0),
            np.repeat(_bets(z, 3.0, 4.0, 0.045), reps, 0),
            mu_lo,
            mu_hi,
            1.0,
            5.0,
            math.log(1 / 0.045),
            np.repeat(_bets(y, 3.0, 4.0, 0.045), reps, 0),
        )
        kept = np.flatnonzero(~rejected)
        assert kept.size and np.all(np.diff(kept) == 1)
        step = grid[1] - grid[0]
        assert grid[kept[0]] - step <= low[0] <= grid[kept[0]] + 1e-9
        assert grid[kept[-1]] - 1e-9 <= high[0] <= grid[kept[-1]] + step


@pytest.mark.parametrize("skewed", [False, True])
@pytest.mark.parametrize("n", [10, 20])
def test_betting_covers_at_small_n(n: int, skewed: bool) -> None:
    """Known truth (the population mean), 400 seeded resamples: coverage >= 1 - alpha - 3 MC standard errors."""
    rng = np.random.default_rng([8, n, skewed])
    human, judge = _population(rng, 2000, skewed=skewed)
    truth = human.mean()
    index = rng.integers(0, human.size, size=(400, n))
    result = betting_intervals(human[index], judge[index], judge, 1, 5, 0.05)
    mc = 3 * math.sqrt(0.05 * 0.95 / 400)
    assert result.covers(truth).mean() >= 0.95 - mc
    # valid but not vacuous: narrower than the scale
    assert result.width.mean() < 4


def test_betting_human_only_covers_and_is_finite_sample() -> None:
    rng = np.random.default_rng(9)
    human, _ = _population(rng, 2000, skewed=True)
    index = rng.integers(0, human.size, size=(400, 10))
    result = betting_intervals(human[index], None, None, 1, 5, 0.05)
    assert result.covers(human.mean()).mean() >= 0.95 - 3 * math.sqrt(0.05 * 0.95 / 400)
    # a zero-variance sample (all 5s) still gets a non-degenerate interval, unlike the CLT one
    ones = np.full((1, 10), 5.0)
    assert betting_intervals(ones, None, None, 1, 5, 0.05).low[0] < 4.9
    assert classical_intervals(ones, 0.05).width[0] == 0


@pytest.mark.parametrize("n", [10, 50, 100, 200])
def test_served_rule_covers_by_simulation(n: int) -> None:
    """The switching rule (PPI++ where it holds, betting elsewhere) on a skewed population with known truth."""
    rng = np.random.default_rng([10, n])
    human, judge = _population(rng, 3000, skewed=True)
    truth = human.mean()
    reps = 400
    index = rng.integers(0, human.size, size=(reps, n))
    y, f = human[index], judge[index]
    ppi = ppi_intervals(y, f, judge, 0.05)
    clt = served_uses_clt(y, f, ppi.lam)
    covered = ppi.covers(truth).copy()
    if (~clt).any():
        bounds = judge_mean_bounds(judge, 1, 5, ALPHA_JUDGE_SHARE * 0.05)
        bet = betting_intervals(y[~clt], f[~clt], judge, 1, 5, 0.05, judge_bounds=bounds)
        covered[~clt] = bet.covers(truth)
    assert covered.mean() >= 0.95 - 3 * math.sqrt(0.05 * 0.95 / reps)
    if n < MIN_N_CLT:
        assert not clt.any()


def test_estimate_mean_switches_and_reports() -> None:
    rng = np.random.default_rng(11)
    human, judge = _population(rng, 400)
    small = estimate_mean(Sample(human=human[:10], judge=judge[:10], judge_unlabelled=judge[10:]), 0.05)
    assert small.method == "betting" and small.human_only_method == "betting (human only)"
    assert small.interval == small.betting_interval
    large = estimate_mean(Sample(human=human[:150], judge=judge[:150], judge_unlabelled=judge[150:]), 0.05)
    assert large.method == "ppi++" and large.interval == large.ppi_interval
    assert large.human_only_interval == large.classical_interval
    assert (large.n_labelled, large.n_unlabelled) == (150, 250)
    # effective sample gain = ratio of the CLT variances = squared width ratio of the CLT intervals
    c_width = large.classical_interval[1] - large.classical_interval[0]
    p_width = large.ppi_interval[1] - large.ppi_interval[0]
    assert large.effective_sample_gain == pytest.approx((c_width / p_width) ** 2, rel=1e-9)
    assert large.effective_sample_gain > 1  # a correlated judge helps
    constant = estimate_mean(Sample(human=[5.0] * 60, judge=judge[:60], judge_unlabelled=judge[60:]), 0.05)
    assert constant.method == "betting"  # zero variance never gets a CLT interval


def test_label_budget_formula() -> None:
    rng = np.random.default_rng(12)
    human, judge = _population(rng, 2200)
    y, f, f_unl = human[:100], judge[:100], judge[100:]
    ppi = ppi_intervals(y, f, f_unl, 0.05)
    half = float(ppi.high[0] - ppi.low[0]) / 2
    same = label_budget(y, f, f_unl, 0.05, target_half_width=half)
    assert abs(same.labels_needed - 100) <= 2  # today's half-width needs today's labels
    default = label_budget(y, f, f_unl, 0.05)
    assert default.target_half_width == pytest.approx(half / 2)
    # half the width: a little over four times the labels, as the unlabelled term stays (closed form)
    z, lam = stats.norm.ppf(0.975), float(ppi.lam[0])
    room = (half / 2) ** 2 - z**2 * lam**2 * f_unl.var() / f_unl.size
    assert default.labels_needed == math.ceil(z**2 * (y - lam * f).var() / room)
    assert default.labels_needed > 4 * 100
    assert default.more_labels == default.labels_needed - 100
    assert default.labels_needed_human_only >= default.labels_needed
    # the unlabelled term alone exceeds W: PPI++ at lambda = 0 (the classical interval) still reaches it
    unreachable = label_budget(y, f, f_unl[:5], 0.05, target_half_width=1e-4)
    assert unreachable.labels_needed == unreachable.labels_needed_human_only


def test_pass_rate_uses_clopper_pearson_for_the_human_only_interval() -> None:
    rng = np.random.default_rng(13)
    human, judge = _population(rng, 300)
    answer = estimate_pass_rate(
        Sample(human=human[:20], judge=judge[:20], judge_unlabelled=judge[20:]), 0.05, threshold=4
    )
    passed = int((human[:20] >= 4).sum())
    assert answer.human_only_method == "clopper-pearson"
    assert answer.human_only_interval == pytest.approx(clopper_pearson(passed, 20, 0.05))
    assert 0 <= answer.interval[0] <= answer.interval[1] <= 1


def test_win_rate_validates_values_and_counts_ties_half() -> None:
    rng = np.random.default_rng(14)
    human = rng.choice([0.0, 0.5, 1.0], 30)
    judge = np.where(rng.random(30) < 0.8, human, 1 - human)
    unl = rng.choice([0.0, 0.5, 1.0], 300)
    answer = estimate_win_rate(Sample(human=human, judge=judge, judge_unlabelled=unl), 0.05)
    assert answer.human_only_method == "betting (human only)"  # ties: not binomial, so not Clopper-Pearson
    with pytest.raises(CalibrationError, match="0, 0.5 or 1"):
        estimate_win_rate(Sample(human=[0.3, 1.0], judge=[1.0, 0.0], judge_unlabelled=[1.0, 0.0]), 0.05)


def test_difference_covers_by_simulation() -> None:
    rng = np.random.default_rng(15)
    a_h, a_j = _population(rng, 2000)
    b_h, b_j = _population(rng, 2000, skewed=True)
    truth = a_h.mean() - b_h.mean()
    hits = []
    for _ in range(60):
        ia, ib = rng.integers(0, 2000, 15), rng.integers(0, 2000, 15)
        a = estimate_mean(Sample(human=a_h[ia], judge=a_j[ia], judge_unlabelled=a_j), 0.025)
        b = estimate_mean(Sample(human=b_h[ib], judge=b_j[ib], judge_unlabelled=b_j), 0.025)
        diff = estimate_difference(a, b)
        assert diff.alpha == pytest.approx(0.05)
        assert diff.interval == pytest.approx((a.interval[0] - b.interval[1], a.interval[1] - b.interval[0]))
        hits.append(diff.interval[0] <= truth <= diff.interval[1])
    assert np.mean(hits) >= 0.95 - 3 * math.sqrt(0.05 * 0.95 / 60)


def test_bad_input_is_refused() -> None:
    with pytest.raises(InvalidAlphaError):
        classical_intervals([1.0, 2.0], 1.5)
    with pytest.raises(CalibrationError, match="lie in"):
        betting_intervals([1.0, 7.0], None, None, 1, 5, 0.05)
    with pytest.raises(EmptyCalibrationError):
        estimate_mean(Sample(human=[1.0, 2.0], judge=[1.0], judge_unlabelled=[1.0, 2.0]), 0.05)
    with pytest.raises(CalibrationError, match="finite"):
        ppi_intervals([1.0, float("nan")], [1.0, 2.0], [1.0, 2.0], 0.05)


def test_fisher_z_interval_matches_scipy_without_covariates_and_widens_with_them() -> None:
    rng = np.random.default_rng(16)
    x = rng.normal(size=50)
    y = 0.5 * x + rng.normal(size=50)
    result = stats.pearsonr(x, y)
    expected = result.confidence_interval(confidence_level=0.95)
    np.testing.assert_allclose(
        fisher_z_interval(result.statistic, 50, 0, 0.05), (expected.low, expected.high), rtol=1e-10
    )
    low0, high0 = fisher_z_interval(0.4, 200, 0, 0.05)
    low9, high9 = fisher_z_interval(0.4, 200, 9, 0.05)  # k = 9 controlled columns: df 189 instead of 198
    assert low9 < low0 and high9 > high0
    assert high9 - low9 == pytest.approx(
        math.tanh(math.atanh(0.4) + 1.959963984540054 / math.sqrt(188))
        - math.tanh(math.atanh(0.4) - 1.959963984540054 / math.sqrt(188)),
        rel=1e-9,
    )
    assert fisher_z_interval(1.0, 200, 0, 0.05) is None
    assert fisher_z_interval(0.3, 5, 2, 0.05) is None


def test_switch_reason_names_the_served_method_and_its_numbers() -> None:
    """The reason agrees with served_uses_clt on every resample and states the branch that decided it."""
    rng = np.random.default_rng(21)
    human, judge = _population(rng, 3000, skewed=True)
    for n in (10, 49, 50, 120, 400):
        index = rng.integers(0, human.size, size=(40, n))
        y, f = human[index], judge[index]
        lam = ppi_intervals(y, f, judge, 0.05).lam
        clt = served_uses_clt(y, f, lam)
        for row in range(y.shape[0]):
            reason = switch_reason(y[row], f[row], float(lam[row]))
            assert reason.startswith("ppi++:" if clt[row] else "betting:"), reason
            if n < MIN_N_CLT:
                assert f"n = {n} < {MIN_N_CLT}" in reason
    flat = np.full(60, 3.0)
    assert "every human label" in switch_reason(flat, np.linspace(1, 5, 60), 0.5)
    # labels vary but the rectifier Y - f is constant (the judge is the label plus one)
    y = np.tile([2.0, 3.0, 4.0], 20)
    assert "rectifier" in switch_reason(y, y + 1, 1.0)
    skewed = np.r_[np.full(59, 5.0), 1.0]  # g1 about -7.6: 50 g1^2 far above n = 60
    assert "g1^2" in switch_reason(skewed, np.full(60, 4.0), 0.0)
    assert switch_reason(skewed, np.full(60, 4.0), 0.0).startswith("betting:")


def test_answers_carry_the_switch_reason() -> None:
    rng = np.random.default_rng(12)
    human, judge = _population(rng, 600)
    big = estimate_mean(Sample(human=human[:200], judge=judge[:200], judge_unlabelled=judge[200:]), 0.05)
    small = estimate_mean(Sample(human=human[:20], judge=judge[:20], judge_unlabelled=judge[200:]), 0.05)
    assert big.method == "ppi++" and big.switch_reason.startswith("ppi++:")
    assert small.method == "betting" and small.switch_reason == "betting: n = 20 < 50 labelled items"
    both = estimate_difference(big, small)
    assert big.switch_reason in both.switch_reason and small.switch_reason in both.switch_reason


def test_label_budget_of_a_vanishing_width_is_none_not_an_error() -> None:
    rng = np.random.default_rng(13)
    human, judge = _population(rng, 300)
    for width in (5e-324, 1e-170):  # width^2 is 0 or the count overflows a float
        budget = label_budget(human[:60], judge[:60], judge[60:], 0.05, width)
        assert budget.labels_needed is None and budget.labels_needed_human_only is None
    tiny = label_budget(human[:60], judge[:60], judge[60:], 0.05, 1e-6)
    assert tiny.labels_needed_human_only is not None and tiny.labels_needed_human_only > 10**9
