"""The change detector: one document at a time equals the vectorised path equals a brute-force sum over change
points; a long healthy stretch leaves it near its floor; the state is bounded and serialisable; bad tallies are
refused."""

from __future__ import annotations

import math

import msgspec
import numpy as np
import pytest

from calibration.monitoring import (
    DetectorState,
    DocumentTally,
    GuaranteeSpec,
    add_item,
    bets,
    detector_path,
    e_value,
    prior,
    single_level_tally,
    start_detector,
    update_detector,
)

SPEC = GuaranteeSpec(guarantee="accept_error", level=0.1, tolerance=2, max_items=16)


def _brute(spec: GuaranteeSpec, failures: list[int], counted: list[int]) -> float:
    """sum_g pi_g sum_{j <= t} prod_{j <= d <= t} (1 + lambda_g (f_d / a - c_d) / M), in plain floats."""
    total = 0.0
    size = spec.grid_size
    t = len(failures)
    for g in range(1, size + 1):
        bet = g / size * spec.bet_fraction
        statistic = 0.0
        for start in range(t):
            wealth = 1.0
            for f, c in zip(failures[start:], counted[start:], strict=True):
                wealth *= 1.0 + bet * (f / spec.level - c) / spec.max_items
            statistic += wealth
        total += statistic * (size + 1 - g) / (size * (size + 1) / 2)
    return total


def _documents(rng: np.random.Generator, n: int) -> tuple[list[int], list[int]]:
    counted = rng.integers(0, 17, size=n)
    failures = rng.binomial(counted, 0.2)
    return [int(v) for v in failures], [int(v) for v in counted]


def _tally(failures: int, counted: int) -> DocumentTally:
    return single_level_tally(labels=16, counted=counted, failures=failures, level=SPEC.level)


def test_sequential_vectorised_and_brute_force_agree() -> None:
    failures, counted = _documents(np.random.default_rng(3), 40)
    state = start_detector(SPEC)
    values = []
    for f, c in zip(failures, counted, strict=True):
        state = update_detector(SPEC, state, _tally(f, c))
        values.append(e_value(SPEC, state))
    path = detector_path(SPEC, np.array(failures), np.array(counted))
    assert np.allclose(values, path, rtol=1e-9)
    for t in (1, 10, 40):
        assert math.isclose(path[t - 1], _brute(SPEC, failures[:t], counted[:t]), rel_tol=1e-9)
    assert state.documents == 40 and state.labels == 40 * 16


def test_items_at_different_levels_enter_by_their_own_level() -> None:
    # one item failing at level 0.2 and one counted at 0.05: excess (1/0.2 - 1) + (0 - 1) = 3
    tally = add_item(add_item(DocumentTally(), counted=True, failed=True, level=0.2), counted=True, failed=False,
                     level=0.05)  # fmt: skip
    assert math.isclose(tally.excess, 3.0) and math.isclose(tally.allowed, 0.25)
    state = update_detector(SPEC, start_detector(SPEC), tally)
    expected = float(np.sum(prior(SPEC) * (1.0 + bets(SPEC) * 3.0 / 16)))
    assert math.isclose(e_value(SPEC, state), expected, rel_tol=1e-12)


def test_paths_over_many_streams_match_one_at_a_time() -> None:
    rng = np.random.default_rng(5)
    counted = rng.integers(0, 17, size=(4, 30))
    failures = rng.binomial(counted, 0.15)
    paths = detector_path(SPEC, failures, counted)
    assert paths.shape == (4, 30)
    for stream in range(4):
        assert np.allclose(paths[stream], detector_path(SPEC, failures[stream], counted[stream]))


def test_bets_keep_every_factor_positive_and_a_healthy_stretch_costs_nothing_later() -> None:
    assert math.isclose(float(prior(SPEC).sum()), 1.0) and np.all(np.diff(prior(SPEC)) < 0)
    lam = bets(SPEC)
    assert lam.size == 10 and math.isclose(lam.max(), 0.9) and lam.min() > 0
    # the worst document for the bettor: every item counted, none failed (x = -1)
    assert np.all(1.0 - lam >= 1 - SPEC.bet_fraction - 1e-12)
    state = start_detector(SPEC)
    for _ in range(5000):
        state = update_detector(SPEC, state, _tally(0, 16))
    # a since-the-start test would sit at exp(-thousands); each R_g settles at the fixed point of
    # R = (1 - lambda)(R + 1), i.e. (1 - lambda) / lambda: bounded, no underflow
    floor = e_value(SPEC, state)
    assert math.isclose(floor, float(np.sum(prior(SPEC) * (1 - lam) / lam)), rel_tol=1e-9)
    assert min(state.log_statistic) > 0.0
    fresh, healthy = start_detector(SPEC), state
    for _ in range(5):
        fresh = update_detector(SPEC, fresh, _tally(8, 16))
        healthy = update_detector(SPEC, healthy, _tally(8, 16))
    assert e_value(SPEC, healthy) >= e_value(SPEC, fresh)


def test_state_is_bounded_and_round_trips_as_json() -> None:
    state = start_detector(SPEC)
    for k in range(200):
        state = update_detector(SPEC, state, _tally(k % 3, 12))
    assert len(state.log_statistic) == SPEC.grid_size
    back = msgspec.json.decode(msgspec.json.encode(state), type=DetectorState)
    assert back == state and e_value(SPEC, back) == e_value(SPEC, state)


def test_bad_tallies_and_specs_are_refused() -> None:
    state = start_detector(SPEC)
    with pytest.raises(ValueError, match="max_items"):
        update_detector(SPEC, state, DocumentTally(labels=17, counted=17, failures=0))
    with pytest.raises(ValueError, match="failures <= counted"):
        update_detector(SPEC, state, DocumentTally(labels=5, counted=2, failures=3))
    with pytest.raises(ValueError, match="excess"):
        update_detector(SPEC, state, DocumentTally(labels=5, counted=2, failures=0, excess=-3.0))
    with pytest.raises(ValueError, match="cannot fail"):
        add_item(DocumentTally(), counted=False, failed=True, level=0.1)
    with pytest.raises(ValueError, match="level"):
        add_item(DocumentTally(), counted=True, failed=True, level=1.0)
    with pytest.raises(ValueError, match="level"):
        GuaranteeSpec(guarantee="coverage", level=0.0, max_items=4)
    with pytest.raises(ValueError, match="tolerance"):
        GuaranteeSpec(guarantee="coverage", level=0.1, tolerance=2, max_items=4)
    with pytest.raises(ValueError, match="human_label"):
        GuaranteeSpec(guarantee="coverage", level=0.1, human_label=0, max_items=4)
    with pytest.raises(ValueError, match="counts"):
        detector_path(SPEC, np.array([3]), np.array([2]))
    tally = add_item(add_item(DocumentTally(), counted=True, failed=True, level=0.1), counted=False, failed=False,
                     level=0.1)  # fmt: skip
    assert tally == DocumentTally(labels=2, counted=1, failures=1, excess=9.0, allowed=0.1)
