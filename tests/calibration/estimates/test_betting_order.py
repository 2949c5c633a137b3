"""The betting interval depends on the multiset of the sample, not on its order; it is bounded in memory for every
input the caps admit; and every served interval holds its estimate.

Cross-checks: the streamed rejection test against a plain loop over the items (an independent implementation of
the hedged capital), and the answer of shuffled input against the answer of the input as sent (identical floats).
"""

from __future__ import annotations

import math
import tracemalloc

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calibration.estimates.betting as betting
from calibration.estimates.betting import arrival_permutation, betting_intervals, canonical_order
from calibration.estimates.system import Sample, estimate_mean, estimate_pass_rate, label_budget


def _reference_rejects(m: float, y: np.ndarray, f: np.ndarray, lam: np.ndarray, bets: np.ndarray,
                       human_bets: np.ndarray, mu_lo: float, mu_hi: float, lo: float, hi: float,
                       log_threshold: float) -> bool:  # fmt: skip
    """The mixture of the four hedged capitals item by item (plain floats), rejected at the first crossing."""
    capitals = [1.0, 1.0, 1.0, 1.0]
    for t in range(y.size):
        factors = []
        for weight, bet in ((lam[t], bets[t]), (0.0, human_bets[t])):
            neg_span = max(m - lo + weight * (hi - mu_lo), 1e-12)
            pos_span = max(hi - m + weight * (mu_hi - lo), 1e-12)
            up = y[t] - m - weight * (f[t] - mu_lo)
            down = y[t] - m - weight * (f[t] - mu_hi)
            factors += [1 + min(bet, 0.5 / neg_span) * up, 1 - min(bet, 0.5 / pos_span) * down]
        capitals = [c * x for c, x in zip(capitals, factors, strict=True)]
        if math.log(sum(capitals) / 4) >= log_threshold:
            return True
    return False


@pytest.mark.parametrize("alpha", [0.05, 0.5, 0.95])
def test_streamed_rejection_equals_a_plain_loop(monkeypatch: pytest.MonkeyPatch, alpha: float) -> None:
    """Blocks of 8 items (forced), carried from block to block, give the rejections of the item-by-item loop."""
    monkeypatch.setattr(betting, "_CELL_BUDGET", 8)
    monkeypatch.setattr(betting, "_MIN_BLOCK", 8)
    rng = np.random.default_rng(11)
    y = rng.integers(1, 6, 30).astype(float)[None, :]
    f = np.clip(y + rng.integers(-1, 2, 30), 1, 5).astype(float)
    lam = betting._predictable_lambda(y, f, 1.5, 0.2)
    bets = betting._bets(y - lam * (f - 3.0), 3.0, 4.0, alpha)
    human_bets = betting._bets(y, 3.0, 4.0, alpha)
    grid = np.linspace(1, 5, 81)
    threshold = math.log(1 / alpha)
    streamed = betting._rejects(grid, y, f, lam, bets, 2.8, 3.2, 1.0, 5.0, threshold, human_bets)
    expected = [
        _reference_rejects(m, y[0], f[0], lam[0], bets[0], human_bets[0], 2.8, 3.2, 1.0, 5.0, threshold) for m in grid
    ]
    assert streamed.tolist() == expected
    assert 0 < sum(expected) < grid.size  # the check sees both outcomes


def test_arrival_order_is_sorted_then_the_seeded_permutation() -> None:
    y = np.array([[5.0, 1.0, 3.0, 1.0]])
    f = np.array([[4.0, 2.0, 3.0, 1.0]])
    ordered_y, ordered_f = canonical_order(y, f)
    permutation = np.random.default_rng(betting.ORDER_SEED).permutation(4)
    np.testing.assert_array_equal(arrival_permutation(4), permutation)
    np.testing.assert_array_equal(ordered_y[0], np.array([1.0, 1.0, 3.0, 5.0])[permutation])
    np.testing.assert_array_equal(ordered_f[0], np.array([1.0, 2.0, 3.0, 4.0])[permutation])  # pairs kept


def _sample(pairs: list[tuple[float, float]], unlabelled: list[float]) -> Sample:
    return Sample(human=[p[0] for p in pairs], judge=[p[1] for p in pairs], judge_unlabelled=unlabelled)


def test_the_three_orders_of_one_multiset_give_one_interval() -> None:
    """20 x (1, 1) then 20 x (5, 5), 200 unlabelled alternating 1 / 5: sorted, reversed and interleaved were
    [1.31, 2.18], [3.82, 4.69] and [2.00, 3.91] (disjoint) when the betting read the order sent."""
    pairs = [(1.0, 1.0)] * 20 + [(5.0, 5.0)] * 20
    unlabelled = [1.0, 5.0] * 100
    interleaved = [pair for two in zip(pairs[:20], pairs[20:], strict=True) for pair in two]
    answers = [estimate_mean(_sample(order, unlabelled), 0.05) for order in (pairs, pairs[::-1], interleaved)]
    assert answers[0] == answers[1] == answers[2]
    assert answers[0].interval[0] <= 3.0 <= answers[0].interval[1]
    assert answers[0].human_only_interval[0] <= 3.0 <= answers[0].human_only_interval[1]


values = st.sampled_from([1.0, 2.0, 3.0, 4.0, 5.0])


@settings(max_examples=25, deadline=None)
@given(
    pairs=st.lists(st.tuples(values, values), min_size=2, max_size=30),
    unlabelled=st.lists(values, min_size=2, max_size=60),
    seed=st.integers(0, 2**32 - 1),
    alpha=st.sampled_from([0.05, 0.2, 0.9, 0.99]),
)
def test_shuffled_input_gives_the_identical_answer(
    pairs: list[tuple[float, float]], unlabelled: list[float], seed: int, alpha: float
) -> None:
    """Estimate, served and human-only intervals, gain and label budget: equal floats for any order; the estimate
    inside both intervals at every alpha."""
    rng = np.random.default_rng(seed)
    shuffled = [pairs[i] for i in rng.permutation(len(pairs))]
    unl_shuffled = [unlabelled[i] for i in rng.permutation(len(unlabelled))]
    first = estimate_mean(_sample(pairs, unlabelled), alpha)
    second = estimate_mean(_sample(shuffled, unl_shuffled), alpha)
    assert msgspec.to_builtins(first) == msgspec.to_builtins(second)
    assert first.interval[0] <= first.estimate <= first.interval[1]
    human_mean = float(np.mean([p[0] for p in pairs]))
    assert first.human_only_interval[0] - 1e-12 <= human_mean <= first.human_only_interval[1] + 1e-12
    passing = estimate_pass_rate(_sample(pairs, unlabelled), alpha, 3.0)
    assert passing == estimate_pass_rate(_sample(shuffled, unl_shuffled), alpha, 3.0)


@pytest.mark.parametrize("alpha", [0.9, 0.95, 0.99, 0.999])
def test_the_estimate_lies_in_its_interval_at_a_large_alpha(alpha: float) -> None:
    """3 labelled items answered 4.098 with [2.94, 4.00] at alpha 0.95 when the betting bounds were not widened."""
    rng = np.random.default_rng(5)
    for _ in range(20):
        y = rng.integers(1, 6, 3).astype(float)
        f = np.clip(y + rng.integers(-1, 2, 3), 1, 5)
        result = betting_intervals(y, f, rng.integers(1, 6, 40).astype(float), 1, 5, alpha)
        assert result.low[0] <= result.estimate[0] <= result.high[0]
        human = betting_intervals(y, None, None, 1, 5, alpha)
        assert human.low[0] <= human.estimate[0] <= human.high[0]


def test_the_label_budget_never_asks_more_than_humans_alone() -> None:
    """The estimates example of docs/estimates.md answered 85 labels with the judge against 60 without it."""
    human = [4, 3, 5, 4, 2, 4, 3, 5, 4, 4]
    judge = [4, 3, 4, 4, 3, 5, 3, 5, 4, 3]
    unlabelled = [4, 5, 3, 4, 4, 2, 5, 4, 3, 4, 4, 5, 3, 4, 4, 3, 4, 5, 4, 4]
    budget = label_budget(human, judge, unlabelled, 0.1)
    assert budget.labels_needed is not None and budget.labels_needed_human_only is not None
    assert budget.labels_needed <= budget.labels_needed_human_only
    answer = estimate_mean(Sample(human=human, judge=judge, judge_unlabelled=unlabelled), 0.1)
    assert answer.method == "betting" and answer.served_gain is not None and answer.gain_note is not None
    served = (answer.human_only_interval[1] - answer.human_only_interval[0]) / (answer.interval[1] - answer.interval[0])
    assert answer.served_gain == pytest.approx(served**2)
    assert "betting" in answer.gain_note


@pytest.mark.parametrize(
    "unlabelled",
    [
        [1.0] * 99_990 + [5.0] * 99_990,  # sorted: 4.5 GB and 27 s with the 257 x n grid
        [3.0] * 199_980,  # constant
        [1.0, 5.0] * 99_990,  # alternating
    ],
    ids=["sorted", "constant", "alternating"],
)
@pytest.mark.parametrize("alpha", [0.05, 0.999])
def test_the_worst_case_estimate_has_bounded_memory(unlabelled: list[float], alpha: float) -> None:
    """10 labelled items and 199,980 unlabelled ones (the MAX_ESTIMATE_VALUES cap): the peak of numpy's
    allocations (tracemalloc) stays under 120 MB (the arrays of n items are 1.6 MB each)."""
    human = [1.0] * 5 + [5.0] * 5
    sample = Sample(human=human, judge=human, judge_unlabelled=unlabelled)
    tracemalloc.start()
    try:
        answer = estimate_mean(sample, alpha)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 120e6
    assert answer.interval[0] <= answer.estimate <= answer.interval[1]
