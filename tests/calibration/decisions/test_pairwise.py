"""Certified pairwise decisions: signal and labels, the exact binomial bound against scipy and a math.comb brute
force, the fixed-sequence test against an independent loop, the group betting test against a plain product, and
simulations with known truth (failure <= delta + Monte-Carlo error)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from calibration.decisions.pairwise import (
    BETS,
    DEFAULT_LEVELS,
    GROUP_STARTS,
    accepted,
    binomial_p_value,
    certify_threshold,
    clopper_pearson_upper,
    disagreements,
    distinct_starts,
    group_betting_p_value,
    human_majority,
    vote_signal,
)
from calibration.errors import CalibrationError, EmptyCalibrationError, InvalidAlphaError

NAN = np.nan


def test_vote_signal_shares_ties_in_denominator_and_equal_shares_never_prefer():
    votes = np.array([[1, 1], [1, -1], [1, 0], [0, 0], [-1, -1], [1, NAN], [NAN, NAN]], dtype=float)
    signal = vote_signal(votes)
    assert signal.preferred.tolist() == [1, 0, 1, 0, -1, 1, 0]
    assert np.allclose(signal.confidence, [1.0, 0.0, 0.5, 0.0, 1.0, 1.0, 0.0])


def test_vote_signal_weights_members_equally():
    # Member 1 gave 3 verdicts (a, a, b), member 2 one verdict (b): each member counts 1/2.
    votes = np.array([[1, 1, -1, -1]], dtype=float)
    weights = np.array([[1 / 3, 1 / 3, 1 / 3, 1.0]])
    signal = vote_signal(votes, weights)
    assert signal.preferred.tolist() == [-1]
    assert signal.confidence[0] == pytest.approx(0.5 * (1 / 3) + 0.5)


@pytest.mark.parametrize("votes", [np.array([[2.0]]), np.array([1.0, -1.0])])
def test_vote_signal_refuses_bad_votes(votes):
    with pytest.raises(CalibrationError):
        vote_signal(votes)


def test_human_majority_is_strict_plurality_else_tie():
    a = np.array([2, 1, 1, 0, 2, 0])
    b = np.array([1, 1, 2, 0, 0, 1])
    t = np.array([0, 1, 0, 1, 2, 0])
    assert human_majority(a, b, t).tolist() == [1, 0, -1, 0, 0, -1]


def test_disagreements_tie_rules():
    preferred, human = np.array([1, 1, -1]), np.array([1, 0, 1])
    errors, counted = disagreements(preferred, human, "exclude")
    assert errors.tolist() == [False, True, True] and counted.tolist() == [True, False, True]
    errors, counted = disagreements(preferred, human, "error")
    assert errors.tolist() == [False, True, True] and counted.all()


def _tail(k: int, n: int, p: float) -> float:
    """P(Bin(n, p) <= k) by direct summation (brute force, no scipy)."""
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))


@settings(max_examples=150, deadline=None)
@given(n=st.integers(1, 60), data=st.data(), alpha=st.floats(0.02, 0.5), delta=st.floats(0.01, 0.3))
def test_binomial_p_value_matches_scipy_binomtest_and_brute_force(n, data, alpha, delta):
    k = data.draw(st.integers(0, n))
    p = binomial_p_value(k, n, alpha)
    assert p == pytest.approx(stats.binomtest(k, n, alpha, alternative="less").pvalue, rel=1e-9, abs=1e-12)
    assert p == pytest.approx(_tail(k, n, alpha), rel=1e-9, abs=1e-12)
    # The test certifies exactly when the one-sided Clopper-Pearson bound is at most alpha.
    upper = clopper_pearson_upper(k, n, delta)
    if abs(upper - alpha) > 1e-9:
        assert (p <= delta) == (upper <= alpha)
    if k < n:
        two_sided = stats.binomtest(k, n).proportion_ci(confidence_level=1 - 2 * delta, method="exact")
        assert upper == pytest.approx(two_sided.high, rel=1e-9)


def _brute_threshold(conf, pref, err, alpha, delta, levels, starts=None):
    """Fixed-sequence test written as plain loops over pairs with the math.comb tail; with starts, one chain per
    start at delta / k and the lowest certified level of any chain."""
    found = []
    for start in starts or [levels[0]]:
        for level in [x for x in levels if x <= start]:
            n = k = 0
            for c, p, e in zip(conf, pref, err, strict=True):
                if p != 0 and c >= level - 1e-12:
                    n += 1
                    k += int(e)
            if n == 0 or _tail(k, n, alpha) > delta / len(starts or [0]):
                break
            found.append(level)
    return min(found) if found else None


@settings(max_examples=120, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 40),
    alpha=st.sampled_from([0.1, 0.2, 0.3]),
    delta=st.sampled_from([0.05, 0.1, 0.2]),
)
def test_fixed_sequence_matches_brute_force_on_small_cases(seed, n, alpha, delta):
    rng = np.random.default_rng(seed)
    levels = (1.0, 0.75, 0.5, 0.25)
    conf = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], size=n)
    pref = np.where(conf > 0, rng.choice([-1, 1], size=n), 0)
    err = rng.random(n) < 0.6 * (1 - conf)
    groups = np.arange(n)
    cert = certify_threshold(conf, pref, err, groups, alpha=alpha, delta=delta, bound="pair_binomial", levels=levels)
    assert cert.threshold == _brute_threshold(conf, pref, err, alpha, delta, levels)
    # Every tested level but possibly the last is certified; the threshold is the last certified one.
    assert all(t.certified for t in cert.tests[:-1])
    if cert.threshold is not None:
        assert cert.tests[[t.level for t in cert.tests].index(cert.threshold)].certified
    multi = certify_threshold(
        conf, pref, err, groups, alpha=alpha, delta=delta, bound="pair_binomial", levels=levels, starts=(1.0, 0.5)
    )
    assert multi.threshold == _brute_threshold(conf, pref, err, alpha, delta, levels, starts=[1.0, 0.5])
    assert multi.starts == (1.0, 0.5) and {t.chain for t in multi.tests} <= {0, 1}
    # A larger delta never certifies less (the p-values do not depend on delta).
    looser = certify_threshold(
        conf, pref, err, groups, alpha=alpha, delta=min(0.99, 2 * delta), bound="pair_binomial", levels=levels
    )
    assert (looser.threshold or 2.0) <= (cert.threshold or 2.0) or cert.threshold is None


def test_group_betting_p_value_equals_a_plain_product():
    rng = np.random.default_rng(5)
    accepted_ = rng.integers(0, 11, size=30)
    errors = np.array([rng.integers(0, a + 1) for a in accepted_])
    alpha, m = 0.2, 10
    capitals = []
    for share in BETS:
        capital = 1.0
        for e, a in zip(errors, accepted_, strict=True):
            x = alpha + (e - alpha * a) / m
            capital *= 1 - share / (1 - alpha) * (x - alpha)
        capitals.append(capital)
    assert group_betting_p_value(errors, accepted_, alpha, m) == pytest.approx(min(1.0, 1 / np.mean(capitals)))


def test_group_betting_p_value_refuses_impossible_groups():
    with pytest.raises(CalibrationError):
        group_betting_p_value(np.array([3]), np.array([2]), 0.1, 10)
    with pytest.raises(CalibrationError):
        group_betting_p_value(np.array([0]), np.array([11]), 0.1, 10)


def test_group_betting_is_valid_at_the_worst_case_null():
    # x_g in {0, 1} with mean alpha (every group all right or all wrong): the hardest null for a bounded mean.
    alpha, delta, m, draws = 0.2, 0.1, 10, 2000
    rng = np.random.default_rng(11)
    rejections = 0
    for _ in range(draws):
        wrong = rng.random(40) < alpha
        rejections += group_betting_p_value(np.where(wrong, m, 0), np.full(40, m), alpha, m) <= delta
    assert rejections / draws <= delta + 3 * math.sqrt(delta * (1 - delta) / draws)


def _clustered(rng, n_groups, per_group, spread):
    """Pairs with confidence in {0.5..1.0}, error probability 0.05 + 1.2 (1 - c) plus a shared per-group shift."""
    conf = rng.choice([0.5, 0.6, 0.7, 0.8, 0.9, 1.0], size=(n_groups, per_group))
    shift = rng.uniform(-spread, spread, size=(n_groups, 1))
    err = rng.random((n_groups, per_group)) < np.clip(0.05 + 1.2 * (1 - conf) + shift, 0, 1)
    groups = np.repeat(np.arange(n_groups), per_group)
    return conf.ravel(), np.ones(conf.size, dtype=int), err.ravel(), groups


def _true_risk(level):
    # Confidences are uniform on the six values and the group shift has mean 0 (no clipping at these values).
    values = [c for c in (0.5, 0.6, 0.7, 0.8, 0.9, 1.0) if c >= level - 1e-12]
    return float(np.mean([0.05 + 1.2 * (1 - c) for c in values]))


@pytest.mark.parametrize(
    ("bound", "per_group", "spread", "starts"),
    [("group_betting", 10, 0.05, ()), ("group_betting", 10, 0.05, GROUP_STARTS), ("pair_binomial", 1, 0.0, ())],
)
def test_certified_error_holds_in_simulation_with_known_truth(bound, per_group, spread, starts):
    # alpha = 0.22: levels >= 0.8 have true risk <= 0.17 (false nulls), levels <= 0.7 risk >= 0.23 (true nulls).
    alpha, delta, draws = 0.22, 0.1, 300
    failures = accepted_any = 0
    for draw in range(draws):
        rng = np.random.default_rng([7, draw])
        conf, pref, err, groups = _clustered(rng, 3000 // per_group, per_group, spread)
        cert = certify_threshold(conf, pref, err, groups, alpha=alpha, delta=delta, bound=bound, starts=starts)
        if cert.threshold is not None:
            accepted_any += 1
            failures += _true_risk(cert.threshold) > alpha
    assert failures / draws <= delta + 2 * math.sqrt(delta * (1 - delta) / draws)
    assert accepted_any > draws / 2  # the test has power: it does certify the safe levels


def test_accepted_and_input_checks():
    conf, pref = np.array([1.0, 0.5, 0.9]), np.array([1, -1, 0])
    assert accepted(pref, conf, 0.5).tolist() == [True, True, False]
    assert accepted(pref, conf, None).tolist() == [False, False, False]
    ok = dict(confidence=conf, preferred=pref, errors=np.zeros(3, bool), groups=np.arange(3))
    with pytest.raises(InvalidAlphaError):
        certify_threshold(**ok, alpha=1.0, delta=0.1)
    with pytest.raises(EmptyCalibrationError):
        certify_threshold(conf[:0], pref[:0], np.zeros(0, bool), np.arange(0), alpha=0.1, delta=0.1)
    with pytest.raises(CalibrationError):
        certify_threshold(**ok, alpha=0.1, delta=0.1, levels=(0.5, 0.9))
    with pytest.raises(CalibrationError):
        certify_threshold(**ok, alpha=0.1, delta=0.1, bound="nope")
    with pytest.raises(CalibrationError):
        certify_threshold(conf, pref, np.zeros(3, bool), np.zeros(3), alpha=0.1, delta=0.1, group_size_bound=2)
    with pytest.raises(CalibrationError):
        certify_threshold(**ok, alpha=0.1, delta=0.1, starts=(0.33,))


def test_nothing_accepted_at_the_top_level_stops_the_sequence():
    conf, pref = np.array([0.5, 0.5]), np.array([1, 1])
    cert = certify_threshold(conf, pref, np.zeros(2, bool), np.arange(2), alpha=0.5, delta=0.5)
    assert cert.threshold is None and len(cert.tests) == 1 and cert.tests[0].level == DEFAULT_LEVELS[0]


def test_distinct_starts_merge_starts_with_equal_accept_sets():
    assert distinct_starts(GROUP_STARTS, 2) == (1.0,)  # shares 0, 0.5, 1: 0.8 and 0.6 accept what 1.0 does
    assert distinct_starts(GROUP_STARTS, 3) == (1.0, 0.6)  # 0.8 -> 3/3, 0.6 -> 2/3
    assert distinct_starts(GROUP_STARTS, 10) == (1.0, 0.8, 0.6)
    with pytest.raises(CalibrationError):
        distinct_starts(GROUP_STARTS, 0)


def test_pair_binomial_breaks_when_a_question_shares_its_errors_and_the_group_bound_does_not():
    # 60 questions x 10 pairs: 5 always right at confidence 1.0, 5 at 0.6 all wrong together with prob 0.46, so
    # the risk of accepting >= 0.6 is 0.23 > alpha = 0.22 (a true null). Treating the 600 pairs as independent
    # certifies it far more often than delta; the bound over questions does not (why the service serves it).
    alpha, delta, draws = 0.22, 0.1, 400
    failures = {"pair_binomial": 0, "group_betting": 0}
    for draw in range(draws):
        rng = np.random.default_rng([13, draw])
        conf = np.tile([1.0] * 5 + [0.6] * 5, (60, 1))
        err = np.where(conf < 1.0, rng.random((60, 1)) < 0.46, False)
        groups = np.repeat(np.arange(60), 10)
        for bound in failures:
            cert = certify_threshold(
                conf.ravel(), np.ones(conf.size, int), err.ravel(), groups, alpha=alpha, delta=delta, bound=bound
            )
            failures[bound] += cert.threshold is not None and cert.threshold <= 0.6
    se = math.sqrt(delta * (1 - delta) / draws)
    assert failures["pair_binomial"] / draws > delta + 2 * se
    assert failures["group_betting"] / draws <= delta + 2 * se
