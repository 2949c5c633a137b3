"""Validity and delay by simulation, documents as the unit (seeds fixed; a few seconds):

* null streams at the boundary over the horizon, items of a document failing all together (the strongest
  dependence): false alarms <= delta + Monte-Carlo slack, per guarantee and per cell;
* the same bets with items as the unit alarm far more often (they break);
* a change: an error rate moving from 0.05 to 0.20 (alpha 0.10) after 32,000 healthy labels is caught within 3x the
  median delay on a fresh stream (a since-the-start test needed 100x: its evidence underflows while healthy)."""

from __future__ import annotations

import math

import numpy as np

from calibration.monitoring import CellSpec, GuaranteeSpec, cell_alarm_index, cell_e_path, detector_path

ALPHA = 0.1
DELTA = 0.05
M = 16
STREAMS = 2000
HORIZON = 100  # documents
COVERAGE = GuaranteeSpec(guarantee="coverage", level=ALPHA, max_items=M)
ACCEPT = GuaranteeSpec(guarantee="accept_error", level=ALPHA, tolerance=2, max_items=M)
CELL = CellSpec(guarantees=[COVERAGE, ACCEPT], delta=DELTA, horizon=HORIZON)
ALONE = {g.guarantee: CellSpec(guarantees=[g], delta=DELTA, horizon=HORIZON) for g in (COVERAGE, ACCEPT)}
MC_SLACK = 3 * math.sqrt(DELTA * (1 - DELTA) / STREAMS)


def _clustered(rng: np.random.Generator, rate: float, *, accepted: bool) -> tuple[np.ndarray, np.ndarray]:
    """Documents whose items fail all together: a document fails wholly with probability ``rate``, so
    E[failures] = rate * E[counted] exactly (the null's boundary at rate = ALPHA)."""
    shape = (STREAMS, HORIZON)
    counted = rng.integers(8, M + 1, size=shape) if accepted else np.full(shape, M)
    fails = rng.random(shape) < rate
    return np.where(fails, counted, 0), counted


def _false_alarms(spec: CellSpec, path: np.ndarray) -> float:
    return float(np.mean(cell_alarm_index(spec, path) >= 0))


def test_the_detector_keeps_false_alarms_over_the_horizon_at_delta_on_clustered_null_streams() -> None:
    rng = np.random.default_rng(20261202)
    cov_f, cov_c = _clustered(rng, ALPHA, accepted=False)
    acc_f, acc_c = _clustered(rng, ALPHA, accepted=True)
    for spec, f, c in ((COVERAGE, cov_f, cov_c), (ACCEPT, acc_f, acc_c)):
        alone = ALONE[spec.guarantee]
        rate = _false_alarms(alone, detector_path(spec, f, c))
        assert rate <= DELTA + MC_SLACK, (spec.guarantee, rate)
    cell = cell_e_path(CELL, [cov_f, acc_f], [cov_c, acc_c])
    assert _false_alarms(CELL, cell) <= DELTA + MC_SLACK
    assert np.all(cell_alarm_index(CELL, cell)[np.max(cell, axis=1) < CELL.threshold] == -1)


def test_the_same_bets_with_items_as_the_unit_break_on_the_same_streams() -> None:
    rng = np.random.default_rng(20261202)
    failures, _ = _clustered(rng, ALPHA, accepted=False)
    failures = failures[:300, :50]
    # every item one step: each document becomes 16 one-item steps (max_items = 1), the same threshold
    item_spec = GuaranteeSpec(guarantee="coverage", level=ALPHA, max_items=1)
    item_failures = np.repeat((failures > 0).astype(int), M, axis=1)
    path = detector_path(item_spec, item_failures, np.ones_like(item_failures))
    rate = _false_alarms(CellSpec(guarantees=[item_spec], delta=DELTA, horizon=HORIZON), path)
    assert rate > 4 * DELTA, rate


def _labels_to_alarm(healthy_documents: int, seed: int, streams: int = 200) -> np.ndarray:
    """Labels after the change until the alarm (inf: none within 200 documents after it), per stream."""
    rng = np.random.default_rng(seed)
    after = 200
    failures = np.concatenate(
        [rng.binomial(M, 0.05, size=(streams, healthy_documents)), rng.binomial(M, 0.20, size=(streams, after))],
        axis=1,
    )
    spec = CellSpec(guarantees=[COVERAGE], delta=DELTA, horizon=1000)
    first = cell_alarm_index(spec, detector_path(COVERAGE, failures, np.full(failures.shape, M)))
    assert np.all((first < 0) | (first >= healthy_documents)), "a false alarm in the healthy stretch"
    return np.where(first >= 0, (first - healthy_documents + 1) * M, np.inf).astype(float)


def test_delay_after_32000_healthy_labels_stays_within_three_times_the_fresh_delay() -> None:
    fresh = _labels_to_alarm(0, seed=1)
    late = _labels_to_alarm(32_000 // M, seed=2)
    assert np.all(np.isfinite(fresh)) and np.all(np.isfinite(late))
    assert np.median(late) <= 3 * np.median(fresh), (np.median(late), np.median(fresh))
    assert np.median(fresh) <= 600  # labels


def test_a_null_strictly_inside_keeps_the_detector_low() -> None:
    rng = np.random.default_rng(11)
    failures, counted = _clustered(rng, 0.05, accepted=True)
    path = detector_path(ACCEPT, failures, counted)
    assert _false_alarms(ALONE["accept_error"], path) <= DELTA / 2
    assert np.median(path[:, -1]) < 0.01 * ALONE["accept_error"].threshold
