"""Watching skill on the recorded SummEval judges: a cell calibrated with label-conditional sets on one judge and
fed a weaker judge's verdicts (llama-2-7b-chat, which says 5 for most items) with the true labels alarms fast in
every order; the same judge's own stream on the other documents raises no alarm in >= 95% of orders; a swap to a
judge as good does not alarm. Seeded, 100 orders a row."""

from __future__ import annotations

import numpy as np
import pytest

from offline.studies.monitoring.skill import SkillSettings, skill_markdown, skill_row

SETTINGS = SkillSettings(streams=100)
WEAK = "llama-2-7b-chat"
SWAPS = [("gpt-4o-mini-2024-07-18", "relevance"), ("qwen2.5-72b-instruct", "relevance")]


def _cell(recorded_cells, judge: str, criterion: str):
    return next(c for c in recorded_cells if (c.judge, c.criterion) == (judge, criterion))


@pytest.mark.parametrize(("judge", "criterion"), SWAPS)
def test_a_judge_silently_replaced_by_a_weak_one_alarms_and_its_own_stream_does_not(
    recorded_cells, judge: str, criterion: str
) -> None:
    calibrated = _cell(recorded_cells, judge, criterion)
    swap = skill_row(calibrated, _cell(recorded_cells, WEAK, criterion), SETTINGS)
    assert swap.alarm_rate == 1.0 and swap.median_labels <= 800, swap
    assert swap.worst_label_coverage < 0.5  # a label the weak judge no longer tells apart
    own = skill_row(calibrated, None, SETTINGS)
    assert own.alarm_rate <= 0.05, own
    assert own.worst_label_coverage >= 0.85
    table = skill_markdown([own, swap])
    assert f"| {criterion} | {judge} | {WEAK} |" in table and "(own)" in table


def test_a_swap_to_a_judge_as_good_keeps_quiet(recorded_cells) -> None:
    row = skill_row(
        _cell(recorded_cells, "gpt-4o-mini-2024-07-18", "relevance"),
        _cell(recorded_cells, "qwen2.5-72b-instruct", "relevance"),
        SETTINGS,
    )
    assert row.coverage >= 0.9 and row.alarm_rate <= 0.05 and not np.isfinite(row.median_labels)
