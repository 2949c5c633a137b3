"""Validity by simulation on null streams of clustered documents: the document-level monitor's false alarms stay
<= delta + Monte-Carlo error; the same bets with items as the unit alarm far more often (they break); a harmful
shift is caught. Seeds fixed; 2,000 streams of 100 documents of 16 items (a few seconds)."""

from __future__ import annotations

import math

import numpy as np

from calibration.monitoring import CellSpec, GuaranteeSpec, cell_alarm_index, cell_e_path, e_process_path

ALPHA = 0.1
DELTA = 0.05
M = 16
STREAMS = 2000
DOCUMENTS = 100
COVERAGE = GuaranteeSpec(guarantee="coverage", level=ALPHA, max_items=M)
ACCEPT = GuaranteeSpec(guarantee="accept_error", level=ALPHA, tolerance=2, max_items=M)
CELL = CellSpec(guarantees=[COVERAGE, ACCEPT], delta=DELTA)
MC_SLACK = 3 * math.sqrt(DELTA * (1 - DELTA) / STREAMS)


def _clustered(rng: np.random.Generator, rate: float, *, accepted: bool) -> tuple[np.ndarray, np.ndarray]:
    """Documents whose items fail all together (the strongest dependence): a document fails wholly with
    probability ``rate``, so E[failures] = rate * E[counted] exactly (the null's boundary at rate = ALPHA)."""
    counted = rng.integers(8, M + 1, size=(STREAMS, DOCUMENTS)) if accepted else np.full((STREAMS, DOCUMENTS), M)
    fails = rng.random((STREAMS, DOCUMENTS)) < rate
    return np.where(fails, counted, 0), counted


def _false_alarms(path: np.ndarray) -> float:
    return float(np.mean(np.max(path, axis=1) >= 1 / DELTA))


def test_document_level_monitor_keeps_false_alarms_at_delta_on_clustered_null_streams() -> None:
    rng = np.random.default_rng(20261202)
    cov_f, cov_c = _clustered(rng, ALPHA, accepted=False)
    acc_f, acc_c = _clustered(rng, ALPHA, accepted=True)
    for spec, f, c in ((COVERAGE, cov_f, cov_c), (ACCEPT, acc_f, acc_c)):
        rate = _false_alarms(e_process_path(spec, f, c))
        assert rate <= DELTA + MC_SLACK, (spec.guarantee, rate)
    cell = cell_e_path(CELL, [cov_f, acc_f], [cov_c, acc_c])
    assert _false_alarms(cell) <= DELTA + MC_SLACK
    assert np.all(cell_alarm_index(CELL, cell)[np.max(cell, axis=1) < 1 / DELTA] == -1)


def test_the_same_bets_with_items_as_the_unit_break_on_the_same_streams() -> None:
    rng = np.random.default_rng(20261202)
    failures, _ = _clustered(rng, ALPHA, accepted=False)
    failures = failures[:400]
    # every item one step: each document becomes 16 one-item steps (max_items = 1), same level and bet grid
    item_spec = GuaranteeSpec(guarantee="coverage", level=ALPHA, max_items=1)
    item_failures = np.repeat((failures > 0).astype(int), M, axis=1)
    rate = _false_alarms(e_process_path(item_spec, item_failures, np.ones_like(item_failures)))
    assert rate > 4 * DELTA, rate


def test_a_harmful_shift_is_caught_quickly() -> None:
    rng = np.random.default_rng(7)
    counted = rng.integers(8, M + 1, size=(500, DOCUMENTS))
    # item-level errors at rate 0.18 with a shared document effect (a Beta(2, 9.1) rate per document)
    per_document = rng.beta(2.0, 9.1, size=(500, DOCUMENTS))
    failures = rng.binomial(counted, per_document)
    path = e_process_path(ACCEPT, failures, counted)
    first = np.argmax(path >= 1 / DELTA, axis=1)
    assert np.mean(np.max(path, axis=1) >= 1 / DELTA) > 0.99
    assert np.median(first + 1) <= 30  # documents, i.e. <= 480 labels


def test_a_null_strictly_inside_keeps_the_e_process_falling() -> None:
    rng = np.random.default_rng(11)
    failures, counted = _clustered(rng, 0.05, accepted=True)
    path = e_process_path(ACCEPT, failures, counted)
    assert _false_alarms(path) <= DELTA / 2
    assert np.median(path[:, -1]) < 1.0
