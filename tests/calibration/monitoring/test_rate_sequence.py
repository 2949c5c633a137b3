"""The running failure rate's confidence sequence: the inequality it rests on (brute force), the exact interval
against a grid scan of the two capitals, the sums against an independent replay of the bet rule, and
time-uniform coverage of the true rate on clustered documents (simulation)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calibration.monitoring import DocumentTally, RateSequence, rate_estimate, update_rate

DELTA = 0.05
M = 16


def test_fan_inequality_holds_on_a_grid() -> None:
    lam = np.linspace(0.0, 0.99, 100)[:, None]
    y = np.linspace(-1.0, 5.0, 601)[None, :]
    psi = -np.log1p(-lam) - lam
    assert np.all(np.exp(lam * y - psi * y * y) <= 1.0 + lam * y + 1e-12)


def _stream(rng: np.random.Generator, n: int, rate: float) -> list[DocumentTally]:
    counted = rng.integers(4, M + 1, size=n)
    per_document = rng.beta(1.0, (1 - rate) / rate, size=n)
    failures = rng.binomial(counted, per_document)
    return [DocumentTally(labels=M, counted=int(c), failures=int(f)) for c, f in zip(counted, failures, strict=True)]


def _replay(tallies: list[DocumentTally]) -> list[float]:
    """The bets as the module's docstring states them, recomputed here."""
    bets, w2, fails, count = [], 0.0, 0, 0
    for d, t in enumerate(tallies, start=1):
        s2 = (0.01 + w2) / d
        bets.append(min(0.75, math.sqrt(2 * math.log(2 / DELTA) / (s2 * d * math.log(1 + d)))))
        previous = fails / count if count else 0.0
        w2 += (t.failures / M - previous * t.counted / M) ** 2
        fails, count = fails + t.failures, count + t.counted
    return bets


def _capitals(tallies: list[DocumentTally], r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lower = np.zeros_like(r)
    upper = np.zeros_like(r)
    for bet, t in zip(_replay(tallies), tallies, strict=True):
        z = (t.failures - r * t.counted) / M
        psi = -math.log1p(-bet) - bet
        lower += bet * z - psi * z * z
        upper += -bet * z - psi * z * z
    return lower, upper


def test_interval_matches_a_grid_scan_of_both_capitals() -> None:
    rng = np.random.default_rng(1)
    tallies = _stream(rng, 80, 0.12)
    state = RateSequence()
    for t in tallies:
        state = update_rate(state, t, max_items=M, delta=DELTA)
    estimate = rate_estimate(state, delta=DELTA)
    r = np.linspace(0, 1, 20001)
    lower, upper = _capitals(tallies, r)
    kept = r[(lower < math.log(2 / DELTA)) & (upper < math.log(2 / DELTA))]
    assert estimate.low == pytest.approx(kept.min(), abs=1e-4)
    assert estimate.high == pytest.approx(kept.max(), abs=1e-4)
    assert estimate.low < estimate.rate < estimate.high
    assert estimate.rate == pytest.approx(sum(t.failures for t in tallies) / sum(t.counted for t in tallies))
    # bets stay below 1 (a document may fail wholly), so the sequence is wide at first and narrows with documents
    assert estimate.high - estimate.low < 0.25
    for t in _stream(rng, 320, 0.12):
        state = update_rate(state, t, max_items=M, delta=DELTA)
    later = rate_estimate(state, delta=DELTA)
    assert later.high - later.low < 0.6 * (estimate.high - estimate.low)


def test_no_data_gives_the_whole_range() -> None:
    estimate = rate_estimate(RateSequence(), delta=DELTA)
    assert (estimate.rate, estimate.low, estimate.high) == (None, 0.0, 1.0)
    state = update_rate(RateSequence(), DocumentTally(labels=3), max_items=M, delta=DELTA)
    assert rate_estimate(state, delta=DELTA).high == 1.0


def test_the_sequence_covers_the_true_rate_at_all_times() -> None:
    rng = np.random.default_rng(2026)
    rate, streams, misses = 0.1, 400, 0
    for _ in range(streams):
        state = RateSequence()
        for t in _stream(rng, 60, rate):
            state = update_rate(state, t, max_items=M, delta=DELTA)
            e = rate_estimate(state, delta=DELTA)
            # true ratio E[f]/E[c] = rate: counts are independent of the per-document rate
            if not e.low <= rate <= e.high:
                misses += 1
                break
    assert misses / streams <= DELTA + 3 * math.sqrt(DELTA * (1 - DELTA) / streams)
