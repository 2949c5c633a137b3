"""A cell's monitor: the weighted-mean detector, the alarm (first crossing, sticky, names a guarantee whose own
statistic passed horizon/delta, explained in words), the report, JSON round trips of every state, refusals."""

from __future__ import annotations

import math

import msgspec
import numpy as np
import pytest

from calibration.monitoring import (
    TRAIL_POINTS,
    CellMonitor,
    CellSpec,
    DocumentTally,
    GuaranteeSpec,
    Trail,
    cell_alarm_index,
    cell_e_path,
    cell_e_value,
    cell_report,
    e_value,
    explain_alarm,
    observe_document,
    single_level_tally,
    start_cell,
    trail_points,
)

M = 16
COVERAGE = GuaranteeSpec(guarantee="coverage", level=0.1, max_items=M)
ACCEPT = GuaranteeSpec(guarantee="accept_error", level=0.1, tolerance=2, max_items=M)
SPEC = CellSpec(guarantees=[COVERAGE, ACCEPT], delta=0.05, horizon=10)
THRESHOLD = 200.0


def _t(labels: int, counted: int, failures: int = 0) -> DocumentTally:
    return single_level_tally(labels=labels, counted=counted, failures=failures, level=0.1)


def _feed(spec: CellSpec, docs: list[tuple[DocumentTally, DocumentTally]]) -> tuple[CellMonitor, list[float]]:
    state = start_cell(spec)
    values = []
    for cov, acc in docs:
        state = observe_document(spec, state, [cov, acc])
        values.append(cell_e_value(spec, state))
    return state, values


def _harmful_accept(n: int) -> list[tuple[DocumentTally, DocumentTally]]:
    rng = np.random.default_rng(4)
    docs = []
    for _ in range(n):
        accepted = int(rng.integers(10, 17))
        docs.append(
            (
                _t(16, 16, int(rng.binomial(16, 0.02))),
                _t(16, accepted, int(rng.binomial(accepted, 0.3))),
            )
        )
    return docs


def test_alarm_rises_at_the_first_crossing_names_the_failing_guarantee_and_stays() -> None:
    docs = _harmful_accept(60)
    state, values = _feed(SPEC, docs)
    first = next(i for i, v in enumerate(values) if v >= THRESHOLD)
    assert state.alarm is not None
    assert state.alarm.document == first + 1 and state.alarm.label == 16 * (first + 1)
    assert state.alarm.guarantee == "accept_error" and state.alarm.tolerance == 2
    assert state.alarm.guarantee_e_value >= SPEC.threshold == THRESHOLD
    assert math.isclose(state.alarm.e_value, values[first], rel_tol=1e-12)
    assert state.alarm.counted > 0 and state.alarm.failures / state.alarm.counted > 0.2
    words = explain_alarm(state.alarm)
    assert words.startswith("error among accepted:") and f"of {state.alarm.counted} items" in words
    assert "allows 10%" in words
    # sticky: later documents that pull the e-value down do not clear it
    quiet = [(_t(16, 16), _t(16, 16))] * 200
    later = state
    for cov, acc in quiet:
        later = observe_document(SPEC, later, [cov, acc])
    assert cell_e_value(SPEC, later) < THRESHOLD and later.alarm == state.alarm
    # the vectorised path finds the same document
    f = [np.array([d[j].failures for d in docs]) for j in (0, 1)]
    c = [np.array([d[j].counted for d in docs]) for j in (0, 1)]
    path = cell_e_path(SPEC, f, c)
    assert np.allclose(path, values) and int(cell_alarm_index(SPEC, path)) == first


def test_the_cell_e_value_is_the_weighted_mean_and_weights_move_the_alarm() -> None:
    docs = _harmful_accept(40)
    state, _ = _feed(SPEC, docs)
    parts = [e_value(g, s.test) for g, s in zip(SPEC.guarantees, state.guarantees, strict=True)]
    assert math.isclose(cell_e_value(SPEC, state), (parts[0] + parts[1]) / 2)
    heavy = CellSpec(guarantees=[COVERAGE, ACCEPT], weights=[0.1, 0.9], delta=0.05, horizon=10)
    light = CellSpec(guarantees=[COVERAGE, ACCEPT], weights=[0.9, 0.1], delta=0.05, horizon=10)
    early, late = _feed(heavy, docs)[0].alarm, _feed(light, docs)[0].alarm
    assert early is not None and (late is None or late.document >= early.document)


def test_report_and_json_round_trip() -> None:
    state, _ = _feed(SPEC, _harmful_accept(30))
    back = msgspec.json.decode(msgspec.json.encode(state), type=CellMonitor)
    assert back == state
    report = cell_report(SPEC, back)
    assert report.status == "alarm" and report.labels == 30 * 16 and report.documents == 30
    assert report.threshold == THRESHOLD
    accept = report.guarantees[1]
    assert accept.guarantee == "accept_error" and accept.estimate.rate is not None
    assert accept.estimate.low <= accept.estimate.rate <= accept.estimate.high
    assert report.guarantees[0].estimate.rate < 0.1
    assert msgspec.json.decode(msgspec.json.encode(SPEC), type=CellSpec) == SPEC
    fresh = cell_report(SPEC, start_cell(SPEC))
    assert fresh.status == "ok" and fresh.e_value == 0.0 and fresh.alarm is None


def test_state_does_not_grow_with_the_stream() -> None:
    small, _ = _feed(SPEC, _harmful_accept(5))
    large, _ = _feed(SPEC, _harmful_accept(400))
    no_trail = [msgspec.structs.replace(s, trail=Trail()) for s in (small, large)]
    sizes = [len(msgspec.json.encode(s)) for s in no_trail]
    assert abs(sizes[1] - sizes[0]) < 400  # the alarm record
    assert len(trail_points(large.trail)) <= TRAIL_POINTS and len(msgspec.json.encode(large.trail)) < 5_000


def test_refusals() -> None:
    with pytest.raises(ValueError, match="tallies"):
        observe_document(SPEC, start_cell(SPEC), [DocumentTally()])
    with pytest.raises(ValueError, match="weights"):
        CellSpec(guarantees=[COVERAGE, ACCEPT], weights=[0.5, 0.6])
    with pytest.raises(ValueError, match="at least one"):
        CellSpec(guarantees=[])
    with pytest.raises(ValueError, match="max_items"):
        observe_document(SPEC, start_cell(SPEC), [DocumentTally(labels=20, counted=20), DocumentTally()])
    with pytest.raises(ValueError, match="horizon"):
        CellSpec(guarantees=[COVERAGE], horizon=0)


def test_a_per_label_alarm_is_explained_by_its_label() -> None:
    spec = CellSpec(guarantees=[GuaranteeSpec(guarantee="coverage", level=0.1, human_label=2, max_items=M)], horizon=1)
    state = start_cell(spec)
    while state.alarm is None:
        state = observe_document(spec, state, [_t(4, 4, 4)])
    assert state.alarm.human_label == 2
    words = explain_alarm(state.alarm)
    assert words.startswith("set coverage of human label 2:") and "items labelled 2 (100%) fell outside" in words
