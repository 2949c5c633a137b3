"""The report page draws each monitor's e-process: one SVG per monitor with one dot per point of the JSON's
``e_process`` on log10(1 + e-value) against labels, the alarm threshold as a dashed line at its height, the alarm
as a diamond at its label, every point's figures in a table tagged with their JSON paths (equal to the JSON), and
the page's accessibility checks; a monitor stored before the trail says why it draws nothing. Without Redis: the
monitors come from real streams through the monitor view. Seeded."""

from __future__ import annotations

import math
import re

import msgspec
import numpy as np

from calibration.monitoring import (
    CellSpec,
    GuaranteeSpec,
    Trail,
    cell_e_value,
    observe_document,
    single_level_tally,
    start_cell,
)
from service.http.report_page import report_page
from service.http.report_svg import _BOTTOM, _HEIGHT, _TOP  # the plot's frame, to read heights back
from service.monitoring.cells import CellKey, MonitorKey
from service.monitoring.store import MonitorRecord
from service.monitoring.views import monitor_view
from service.wire.monitoring import MonitorCell
from service.wire.reports import JudgeReport
from tests.service.http.test_report_browser import _assert_accessible, _assert_figures_equal_the_json, _Page

SPEC = CellSpec(
    guarantees=[
        GuaranteeSpec(guarantee="coverage", level=0.1, max_items=8),
        GuaranteeSpec(guarantee="accept_error", level=0.1, tolerance=2, max_items=8),
    ],
    delta=0.05,
    horizon=100,
)


def _monitor(criterion: str, documents: int, harm: float, *, legacy: bool = False) -> MonitorCell:
    rng = np.random.default_rng(7)
    state = start_cell(SPEC)
    for _ in range(documents):
        tallies = [
            single_level_tally(labels=8, counted=8, failures=int(rng.binomial(8, 0.05)), level=0.1),
            single_level_tally(labels=8, counted=8, failures=int(rng.binomial(8, harm)), level=0.1),
        ]
        state = observe_document(SPEC, state, tallies)
    if legacy:
        state = msgspec.structs.replace(state, trail=Trail())
    key = MonitorKey(cell=CellKey(tenant="t", calibration_id="c", judge="j", prompt_family="paper",
                                  criterion=criterion, input_kind="score"))  # fmt: skip
    record = MonitorRecord(monitor_id=key.monitor_id, key=key, spec=SPEC, state=state, open_groups=0)
    return monitor_view(record, None)


def _svg(page: str, monitor_id: str) -> str:
    match = re.search(rf'<svg[^>]*aria-labelledby="monitor-{monitor_id}-e-process-title.*?</svg>', page)
    assert match is not None
    return match.group(0)


def _height(svg_y: float, top: float) -> float:
    """The log10(1 + e-value) drawn at ``svg_y`` on a plot whose scale reaches ``top``."""
    return (_HEIGHT - _BOTTOM - svg_y) / (_HEIGHT - _BOTTOM - _TOP) * top


def test_the_page_draws_each_monitors_e_process_with_its_threshold_and_alarm() -> None:
    alarmed, quiet, legacy = (
        _monitor("relevance", 300, 0.3),
        _monitor("coherence", 40, 0.05),
        _monitor("fluency", 10, 0.05, legacy=True),
    )
    assert alarmed.alarm is not None and quiet.alarm is None and legacy.e_process == []
    assert len(alarmed.e_process) <= 64 and alarmed.e_process_step == 8  # 300 // 4 = 75 > 63, 300 // 8 = 37
    report = JudgeReport(judge="j", source="test", created_at=None, cards=[], page="/p.html",
                         monitors=[alarmed, quiet, legacy], monitors_note="3 monitor(s)")  # fmt: skip
    page = report_page(report, "/p")

    for cell in (alarmed, quiet):
        svg = _svg(page, cell.monitor_id)
        assert svg.count("<circle") == len(cell.e_process)
        dots = [float(y) for y in re.findall(r'<circle cx="[0-9.]+" cy="([0-9.]+)"', svg)]
        ticks = [int(t) for t in re.findall(r'text-anchor="end" fill="#1a1a1a" font-size="11">(\d+)<', svg)]
        top = float(max(ticks))  # the scale's last tick is its top
        # the dots are the points' log10(1 + e-value), to the drawing's 0.1-pixel rounding
        for y, point in zip(dots, cell.e_process, strict=True):
            assert math.isclose(_height(y, top), math.log10(1 + point.e_value), abs_tol=0.01 * top)
        (line_y,) = re.findall(r'<line x1="48" y1="([0-9.]+)" x2="504" y2="\1" stroke="#a4400b"', svg)
        assert math.isclose(_height(float(line_y), top), math.log10(1 + cell.threshold), abs_tol=0.01 * top)
    alarm_svg = _svg(page, alarmed.monitor_id)
    assert alarmed.alarm is not None and f'data-alarm="{alarmed.alarm.label}"' in alarm_svg
    assert "<polygon" not in _svg(page, quiet.monitor_id)
    assert f"monitor-{legacy.monitor_id}-e-process" not in page and "stored before monitors kept" in page

    parsed = _Page()
    parsed.feed(page)
    shown = _assert_figures_equal_the_json(parsed, msgspec.to_builtins(report))
    assert {f"monitors.0.e_process.{j}.e_value" for j in range(len(alarmed.e_process))} <= set(parsed.figures)
    assert shown >= 3 * (len(alarmed.e_process) + len(quiet.e_process))
    _assert_accessible(parsed)


def test_a_statistic_past_float_range_is_the_largest_float_in_json_never_null() -> None:
    # 400 documents each failing every item: the detectors' logs pass 700, R is inf in the pure report
    monitor = _monitor("coherence", 400, 1.0)
    assert monitor.alarm is not None and math.isinf(_pure_statistic())
    decoded = msgspec.json.decode(msgspec.json.encode(monitor))
    values = [decoded["e_value"], *(g["e_value"] for g in decoded["guarantees"]), decoded["alarm"]["e_value"]]
    assert all(isinstance(v, float) and math.isfinite(v) for v in values), values
    assert decoded["e_value"] == np.finfo(float).max
    msgspec.json.decode(msgspec.json.encode(monitor), type=MonitorCell)  # and it reads back as the wire type


def _pure_statistic() -> float:
    """The pure statistic of the same stream (the view caps it): inf, so the test above tests the cap."""
    rng = np.random.default_rng(7)
    state = start_cell(SPEC)
    for _ in range(400):
        tallies = [
            single_level_tally(labels=8, counted=8, failures=int(rng.binomial(8, 0.05)), level=0.1),
            single_level_tally(labels=8, counted=8, failures=int(rng.binomial(8, 1.0)), level=0.1),
        ]
        state = observe_document(SPEC, state, tallies)
    return cell_e_value(SPEC, state)
