"""research.panels.rule_cascades: cascades whose stage methods the validity rule chooses, on the small synthetic
judges of the panel study's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from offline.build.cell_data import JudgeCriterionData
from research.panels.rule_cascades import MAX_CALLS, SIZE_MARGIN, WIDTHS, run_rule_cascades, write_rule_cascades


def test_points_calls_and_the_goal_follow_the_modules_rules(
    datasets: list[JudgeCriterionData],
    tmp_path: Path,
) -> None:
    study = run_rule_cascades(datasets, judges=["a-judge", "b-judge"], n_splits=2, seed=0, repeats=1)
    assert {(p.first, p.second) for p in study.points} == {("a-judge", "b-judge"), ("b-judge", "a-judge")}
    for first in ("a-judge", "b-judge"):
        mine = [p for p in study.points if p.first == first]
        assert [p.width for p in mine if p.kind == "cascade"] == list(WIDTHS)
        pair = next(p for p in mine if p.kind == "pair")
        assert pair.calls == 2.0 and pair.width is None
        calls = [p.calls for p in mine if p.kind == "cascade"]
        assert all(1.0 <= c <= 2.0 for c in calls)
        assert calls == sorted(calls, reverse=True)  # a wider routing threshold routes fewer items on
        for p in mine:
            expected = (
                p.coverage >= 0.89 - 1e-12
                and p.coverage_p5 >= 0.88 - 1e-12
                and p.min_label_coverage >= 0.85 - 1e-12
                and p.min_bin_coverage >= 0.85 - 1e-12
            )
            assert p.meets_rule == expected
            assert 0 < p.set_size <= 5
    # the pair reference is the same calibrated pair whichever judge comes first (its bins: the pair's own mean)
    pairs = [p for p in study.points if p.kind == "pair"]
    assert len(pairs) == 2
    assert (pairs[0].coverage, pairs[0].min_bin_coverage, pairs[0].set_size, pairs[0].meets_rule) == (
        pairs[1].coverage,
        pairs[1].min_bin_coverage,
        pairs[1].set_size,
        pairs[1].meets_rule,
    )
    for g in study.goal:
        points = [
            p for p in study.points if (p.first, p.second, p.criterion) == (g["first"], g["second"], g["criterion"])
        ]
        good = [p for p in points if p.kind == "cascade" and p.calls < MAX_CALLS and p.meets_rule]
        pair = next(p for p in points if p.kind == "pair")
        if good:
            best = min(good, key=lambda p: (p.set_size, p.calls))
            assert g["best_width"] == best.width and g["set_size"] == pytest.approx(best.set_size)
            assert g["met"] == (pair.meets_rule and best.set_size <= pair.set_size + SIZE_MARGIN)
        else:
            assert g["best_width"] is None and g["met"] is False
    json_path, md_path = write_rule_cascades(study, tmp_path)
    assert json_path.exists() and f"of {len(study.goal)} (pair, criterion)" in md_path.read_text()
