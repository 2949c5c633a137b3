"""Bootstrap intervals over units: scipy cross-checks, brute force, and coverage on clustered data of known truth."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from calibration.errors import CalibrationError, EmptyCalibrationError
from calibration.estimates.intervals import clopper_pearson
from calibration.unit_bootstrap import (
    cluster_bootstrap_interval,
    mean_interval,
    ratio_interval,
    split_mean_interval,
)


def test_mean_interval_is_scipys_percentile_bootstrap() -> None:
    values = np.random.default_rng(1).gamma(2.0, size=37)
    ours = mean_interval(values, n_resamples=3000, seed=11)
    theirs = stats.bootstrap(
        (values,), np.mean, n_resamples=3000, method="percentile", rng=np.random.default_rng(11), vectorized=True
    ).confidence_interval
    assert ours.estimate == pytest.approx(values.mean())
    assert (ours.low, ours.high) == (pytest.approx(theirs.low, abs=1e-12), pytest.approx(theirs.high, abs=1e-12))
    assert ours.n_units == 37 and ours.n_dropped == 0 and ours.seed == 11


def test_ratio_interval_is_scipys_paired_bootstrap_of_the_pooled_share() -> None:
    rng = np.random.default_rng(2)
    totals = rng.integers(1, 9, size=45).astype(float)
    counts = rng.binomial(totals.astype(int), 0.7).astype(float)
    ours = ratio_interval(counts, totals, alpha=0.1, n_resamples=2500, seed=4)

    def pooled(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        return a.sum(axis=axis) / b.sum(axis=axis)

    theirs = stats.bootstrap(
        (counts, totals),
        pooled,
        paired=True,
        n_resamples=2500,
        confidence_level=0.9,
        method="percentile",
        rng=np.random.default_rng(4),
        vectorized=True,
    ).confidence_interval
    assert ours.estimate == pytest.approx(counts.sum() / totals.sum())
    assert (ours.low, ours.high) == (pytest.approx(theirs.low, abs=1e-12), pytest.approx(theirs.high, abs=1e-12))


def test_split_mean_interval_point_is_the_mean_of_split_means_and_matches_brute_force() -> None:
    rng = np.random.default_rng(3)
    units = np.repeat(np.arange(12), 4)
    values = rng.integers(0, 5, size=units.size).astype(float)
    tests = [np.flatnonzero(np.isin(units, rng.permutation(12)[:6])) for _ in range(5)]
    result = split_mean_interval(units, tests, [values[t] for t in tests], n_resamples=400, seed=9)
    assert result.estimate == pytest.approx(np.mean([values[t].mean() for t in tests]))
    # Brute force: rebuild every draw's weighted split means from the same draws.
    present = np.unique(units[np.concatenate(tests)])
    draws = np.random.default_rng(9).integers(0, present.size, (400, present.size))
    figures = []
    for draw in draws:
        weight = np.bincount(draw, minlength=present.size)
        weight_of_unit = dict(zip(present, weight, strict=True))
        means = []
        for t in tests:
            w = np.array([weight_of_unit[u] for u in units[t]], dtype=float)
            if w.sum() > 0:
                means.append((w * values[t]).sum() / w.sum())
        figures.append(np.mean(means))
    low, high = np.quantile(figures, [0.025, 0.975])
    assert (result.low, result.high) == (pytest.approx(low), pytest.approx(high))


def _clustered(rng: np.random.Generator, n_units: int) -> tuple[np.ndarray, np.ndarray]:
    """Units of 2..20 items whose success probability varies by unit (Beta(2, 2): strong within-unit correlation);
    the truth of the pooled share is E[p] = 0.5 by symmetry (sizes independent of p)."""
    sizes = rng.integers(2, 21, size=n_units)
    p = rng.beta(2.0, 2.0, size=n_units)
    return rng.binomial(sizes, p).astype(float), sizes.astype(float)


def test_cluster_bootstrap_covers_near_nominal_on_clustered_data_where_items_do_not() -> None:
    rng = np.random.default_rng(20261201)
    runs, truth = 400, 0.5
    cluster_hits = item_hits = 0
    for run in range(runs):
        counts, totals = _clustered(rng, 60)
        interval = ratio_interval(counts, totals, n_resamples=600, seed=run)
        cluster_hits += interval.low <= truth <= interval.high
        low, high = clopper_pearson(int(counts.sum()), int(totals.sum()), 0.05)  # items as if independent
        item_hits += low <= truth <= high
    # 400 runs: binomial sd of a 95% coverage is 1.1 points; the percentile bootstrap runs slightly under nominal.
    assert 0.91 <= cluster_hits / runs <= 0.985
    assert item_hits / runs < 0.80  # ignoring the units is badly anti-conservative on the same data


def test_more_units_give_a_narrower_interval() -> None:
    rng = np.random.default_rng(5)
    counts, totals = _clustered(rng, 400)
    small = ratio_interval(counts[:40], totals[:40], seed=0)
    large = ratio_interval(counts, totals, seed=0)
    assert large.high - large.low < small.high - small.low
    assert small.low <= small.estimate <= small.high and large.low <= large.estimate <= large.high


def test_clopper_pearson_is_scipys_exact_binomial_interval() -> None:
    for k, n in [(0, 30), (7, 30), (30, 30), (52, 80), (1, 1)]:
        expected = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
        assert clopper_pearson(k, n, 0.05) == (pytest.approx(expected.low), pytest.approx(expected.high))


def test_columns_with_no_units_drawn_are_left_out_and_undefined_draws_dropped() -> None:
    # Column 1 has a single contributing unit: draws missing it fall back to column 0 alone.
    a = np.array([[1.0, 0.0], [0.0, 3.0], [2.0, 0.0]])
    b = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 0.0]])
    result = cluster_bootstrap_interval(a, b, n_resamples=200, seed=1)
    assert result.estimate == pytest.approx((1.0 + 3.0) / 2)
    assert result.n_dropped == 0 and 0.0 <= result.low <= result.high <= 3.0


@pytest.mark.parametrize(
    ("numerators", "denominators", "error"),
    [
        ([], [], EmptyCalibrationError),
        ([1.0, 2.0], [1.0], CalibrationError),
        ([1.0, 2.0], [1.0, -1.0], CalibrationError),
        ([1.0, float("nan")], [1.0, 1.0], CalibrationError),
        ([0.0, 0.0], [0.0, 0.0], EmptyCalibrationError),
    ],
)
def test_refused_input(numerators: list[float], denominators: list[float], error: type[Exception]) -> None:
    with pytest.raises(error):
        cluster_bootstrap_interval(numerators, denominators)
