"""The alarm statistic: one document at a time equals the vectorised path equals a brute-force product; the state
is bounded and serialisable; bad tallies are refused."""

from __future__ import annotations

import math

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibration.monitoring import (
    DocumentTally,
    EProcess,
    GuaranteeSpec,
    add_item,
    bets,
    e_process_path,
    e_value,
    prior,
    start_eprocess,
    update_eprocess,
)

SPEC = GuaranteeSpec(guarantee="accept_error", level=0.1, tolerance=2, max_items=16)


def _brute(spec: GuaranteeSpec, failures: list[int], counted: list[int]) -> float:
    """sum_g pi_g prod_d (1 + lambda_g (f_d - a c_d) / M), pi_g = (G + 1 - g) / (G (G + 1) / 2), in plain floats."""
    total = 0.0
    size = spec.grid_size
    for g in range(1, size + 1):
        bet = g / spec.grid_size * spec.bet_fraction / spec.level
        wealth = 1.0
        for f, c in zip(failures, counted, strict=True):
            wealth *= 1.0 + bet * (f - spec.level * c) / spec.max_items
        total += wealth * (size + 1 - g) / (size * (size + 1) / 2)
    return total


def _documents(rng: np.random.Generator, n: int) -> tuple[list[int], list[int]]:
    counted = rng.integers(0, 17, size=n)
    failures = rng.binomial(counted, 0.2)
    return [int(v) for v in failures], [int(v) for v in counted]


def test_sequential_vectorised_and_brute_force_agree() -> None:
    failures, counted = _documents(np.random.default_rng(3), 60)
    state = start_eprocess(SPEC)
    values = []
    for f, c in zip(failures, counted, strict=True):
        state = update_eprocess(SPEC, state, DocumentTally(labels=16, counted=c, failures=f))
        values.append(e_value(SPEC, state))
    path = e_process_path(SPEC, np.array(failures), np.array(counted))
    assert np.allclose(values, path, rtol=1e-10)
    for t in (1, 10, 60):
        assert math.isclose(path[t - 1], _brute(SPEC, failures[:t], counted[:t]), rel_tol=1e-10)
    assert state.documents == 60 and state.labels == 60 * 16


def test_paths_over_many_streams_match_one_at_a_time() -> None:
    rng = np.random.default_rng(5)
    counted = rng.integers(0, 17, size=(4, 30))
    failures = rng.binomial(counted, 0.15)
    paths = e_process_path(SPEC, failures, counted)
    assert paths.shape == (4, 30)
    for stream in range(4):
        assert np.allclose(paths[stream], e_process_path(SPEC, failures[stream], counted[stream]))


def test_bets_are_sized_by_the_level_and_keep_every_factor_positive() -> None:
    assert math.isclose(float(prior(SPEC).sum()), 1.0) and np.all(np.diff(prior(SPEC)) < 0)
    lam = bets(SPEC)
    assert lam.size == 10 and math.isclose(lam.max(), 0.9 / 0.1) and lam.min() > 0
    # the worst document for the bettor: every item counted, none failed
    assert np.all(1.0 + lam * (-SPEC.level) >= 1 - SPEC.bet_fraction - 1e-12)
    state = start_eprocess(SPEC)
    for _ in range(500):
        state = update_eprocess(SPEC, state, DocumentTally(labels=16, counted=16, failures=0))
    assert 0.0 < e_value(SPEC, state) < 1.0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 16), st.integers(0, 16)), min_size=1, max_size=25), st.randoms())
def test_the_final_e_value_does_not_depend_on_the_document_order(rows, shuffler) -> None:
    counted = [max(a, b) for a, b in rows]
    failures = [min(a, b) for a, b in rows]
    order = list(range(len(rows)))
    shuffler.shuffle(order)
    one = e_process_path(SPEC, np.array(failures), np.array(counted))[-1]
    two = e_process_path(SPEC, np.array(failures)[order], np.array(counted)[order])[-1]
    assert math.isclose(one, two, rel_tol=1e-9)


def test_state_is_bounded_and_round_trips_as_json() -> None:
    state = start_eprocess(SPEC)
    for k in range(200):
        state = update_eprocess(SPEC, state, DocumentTally(labels=16, counted=12, failures=k % 3))
    assert len(state.log_wealth) == SPEC.grid_size
    back = msgspec.json.decode(msgspec.json.encode(state), type=EProcess)
    assert back == state and e_value(SPEC, back) == e_value(SPEC, state)


def test_bad_tallies_and_specs_are_refused() -> None:
    state = start_eprocess(SPEC)
    with pytest.raises(ValueError, match="max_items"):
        update_eprocess(SPEC, state, DocumentTally(labels=17, counted=17, failures=0))
    with pytest.raises(ValueError, match="failures <= counted"):
        update_eprocess(SPEC, state, DocumentTally(labels=5, counted=2, failures=3))
    with pytest.raises(ValueError, match="cannot fail"):
        add_item(DocumentTally(), counted=False, failed=True)
    with pytest.raises(ValueError, match="level"):
        GuaranteeSpec(guarantee="coverage", level=0.0, max_items=4)
    with pytest.raises(ValueError, match="tolerance"):
        GuaranteeSpec(guarantee="coverage", level=0.1, tolerance=2, max_items=4)
    with pytest.raises(ValueError, match="counts"):
        e_process_path(SPEC, np.array([3]), np.array([2]))
    tally = add_item(add_item(DocumentTally(), counted=True, failed=True), counted=False, failed=False)
    assert tally == DocumentTally(labels=2, counted=1, failures=1)
