"""The e-process trail: at most ``cap`` points whatever the stream's length, kept points exactly at step, 2 step, ...
with step the smallest power of two keeping at most cap - 1 of them, the latest point always shown; the monitor's
trail follows its statistic exactly; states stored before the trail still decode; a statistic past float range
stays a number."""

from __future__ import annotations

import math
import sys

import msgspec
import numpy as np
import pytest

from calibration.monitoring import (
    TRAIL_POINTS,
    CellMonitor,
    CellSpec,
    GuaranteeSpec,
    Trail,
    TrailPoint,
    cell_e_value,
    cell_log_e_value,
    cell_report,
    extend_trail,
    observe_document,
    single_level_tally,
    start_cell,
    trail_points,
    trail_value,
)

M = 8
SPEC = CellSpec(
    guarantees=[
        GuaranteeSpec(guarantee="coverage", level=0.1, max_items=M),
        GuaranteeSpec(guarantee="accept_error", level=0.1, tolerance=2, max_items=M),
    ],
    delta=0.05,
    horizon=10,
)


def _point(document: int) -> TrailPoint:
    return TrailPoint(documents=document, labels=3 * document, log_e_value=document / 1000)


def _expected_step(documents: int, cap: int) -> int:
    """The smallest power of two s with documents // s <= cap - 1 (the module's closed form)."""
    step = 1
    while documents // step > cap - 1:
        step *= 2
    return step


@pytest.mark.parametrize("cap", [2, 3, 8, 64])
def test_the_trail_keeps_evenly_spaced_points_over_the_whole_stream_and_the_latest(cap: int) -> None:
    trail = Trail()
    for t in range(1, 1501):
        trail = extend_trail(trail, _point(t), cap=cap)
        step = _expected_step(t, cap)
        assert trail.step == step
        assert [p.documents for p in trail.points] == [step * k for k in range(1, t // step + 1)]
        shown = trail_points(trail)
        assert len(shown) <= cap and shown[-1] == _point(t)
        assert [p.documents for p in shown] == sorted({p.documents for p in shown})
        if t >= cap:
            assert len(trail.points) >= cap // 2  # halving never leaves fewer than half the cap


def test_a_hundred_thousand_documents_leave_at_most_the_cap() -> None:
    trail = Trail()
    for t in range(1, 100_001):
        trail = extend_trail(trail, _point(t))
    shown = trail_points(trail)
    # step 2048: 100000 // 1024 = 97 > 63 kept points, 100000 // 2048 = 48 <= 63
    assert trail.step == 2048 and len(trail.points) == 48 and len(shown) == 49 <= TRAIL_POINTS
    assert shown[0] == _point(2048) and shown[-2] == _point(48 * 2048) and shown[-1] == _point(100_000)
    assert len(msgspec.json.encode(trail)) < 80 * TRAIL_POINTS  # bounded bytes in the store too


def test_the_latest_point_is_not_shown_twice_when_it_is_kept() -> None:
    trail = Trail()
    for t in range(1, 9):
        trail = extend_trail(trail, _point(t), cap=8)
    # 8 points would exceed cap - 1 = 7: step 2 keeps 2, 4, 6, 8, and 8 is the latest
    assert [p.documents for p in trail_points(trail)] == [2, 4, 6, 8]
    trail = extend_trail(trail, _point(9), cap=8)
    assert [p.documents for p in trail_points(trail)] == [2, 4, 6, 8, 9]


def test_refusals() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        extend_trail(Trail(), _point(1), cap=1)
    one = extend_trail(Trail(), _point(5))
    with pytest.raises(ValueError, match="does not come after"):
        extend_trail(one, _point(5))


def test_a_trail_stored_with_a_larger_cap_is_halved_down_to_the_new_one() -> None:
    wide = Trail()
    for t in range(1, 101):
        wide = extend_trail(wide, _point(t), cap=128)
    assert wide.step == 1 and len(wide.points) == 100
    narrow = extend_trail(wide, _point(101), cap=16)
    assert narrow.step == 8 and [p.documents for p in narrow.points] == [8 * k for k in range(1, 13)]


def _stream(documents: int, seed: int = 3) -> tuple[CellMonitor, list[float]]:
    rng = np.random.default_rng(seed)
    state, values = start_cell(SPEC), []
    for _ in range(documents):
        accepted = int(rng.integers(4, 9))
        tallies = [
            single_level_tally(labels=8, counted=8, failures=int(rng.binomial(8, 0.05)), level=0.1),
            single_level_tally(labels=8, counted=accepted, failures=int(rng.binomial(accepted, 0.25)), level=0.1),
        ]
        state = observe_document(SPEC, state, tallies)
        values.append(cell_e_value(SPEC, state))
    return state, values


def test_the_monitors_trail_is_its_statistic_at_the_kept_documents_and_the_report_shows_it() -> None:
    state, values = _stream(300)
    assert state.alarm is not None  # a harmful stream: the trail goes on after the alarm
    shown = trail_points(state.trail)
    step = _expected_step(300, TRAIL_POINTS)
    assert [p.documents for p in shown] == [step * k for k in range(1, 300 // step + 1)] + [300]
    for p in shown:
        assert p.labels == 8 * p.documents
        assert math.isclose(trail_value(p), values[p.documents - 1], rel_tol=1e-9, abs_tol=1e-12)
    report = cell_report(SPEC, state)
    assert report.e_process == shown and report.e_process_step == step
    assert math.isclose(trail_value(shown[-1]), report.e_value, rel_tol=1e-9)
    back = msgspec.json.decode(msgspec.json.encode(state), type=CellMonitor)
    assert back == state


def test_a_state_stored_before_the_trail_decodes_and_starts_one_at_its_next_document() -> None:
    state, _ = _stream(20)
    stored = msgspec.to_builtins(state)
    del stored["trail"]  # what a monitor stored before the trail looks like
    legacy = msgspec.json.decode(msgspec.json.encode(stored), type=CellMonitor)
    assert legacy.trail == Trail() and cell_report(SPEC, legacy).e_process == []
    tally = single_level_tally(labels=8, counted=8, failures=0, level=0.1)
    later = observe_document(SPEC, legacy, [tally, tally])
    (point,) = trail_points(later.trail)
    assert point.documents == 21 and point.labels == 21 * 8
    assert math.isclose(trail_value(point), cell_e_value(SPEC, later), rel_tol=1e-9)


def test_a_statistic_past_float_range_is_a_finite_log_and_the_largest_float() -> None:
    state = start_cell(SPEC)
    huge = [msgspec.structs.replace(g, test=msgspec.structs.replace(g.test, log_statistic=[800.0] * 10))
            for g in state.guarantees]  # fmt: skip
    state = msgspec.structs.replace(state, guarantees=huge)
    assert cell_e_value(SPEC, state) == math.inf
    assert math.isclose(cell_log_e_value(SPEC, state), 800.0, rel_tol=1e-12)  # log sum_jg w_j pi_g e^800
    point = TrailPoint(documents=1, labels=1, log_e_value=cell_log_e_value(SPEC, state))
    assert trail_value(point) == sys.float_info.max
    assert b"null" not in msgspec.json.encode(point)
    assert cell_log_e_value(SPEC, start_cell(SPEC)) == 0.0 and trail_value(_point(0)) == 0.0
