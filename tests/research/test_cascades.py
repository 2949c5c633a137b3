"""The two-judge cascade study (research.panels.cascades) on the panel study's small synthetic judges."""

from __future__ import annotations

import json
from pathlib import Path

from offline.build.cell_data import JudgeCriterionData
from research.panels.cascades import WIDTHS, cascade_points, run_cascade_study, write_cascade_study


def test_cascade_points_route_and_count_calls(datasets: list[JudgeCriterionData], tmp_path: Path) -> None:
    points = cascade_points(datasets, "a-judge", "b-judge", "coherence", alpha=0.1, delta=0.05, n_splits=4, seed=0)
    by = {(p.kind, p.width): p for p in points}
    assert set(by) == {("first alone", None), ("pair", None), *(("cascade", w) for w in WIDTHS)}
    assert by[("cascade", -1)].calls == 2.0 and by[("cascade", 5)].calls == 1.0  # always / never routed on
    assert by[("pair", None)].calls == 2.0 and by[("first alone", None)].calls == 1.0
    calls = [by[("cascade", w)].calls for w in WIDTHS]
    assert calls == sorted(calls, reverse=True)  # a wider routing threshold never asks judge 2 more often
    for point in points:
        assert 0.0 <= point.coverage <= 1.0 and 0.0 <= point.set_size <= 5.0
    study = run_cascade_study(datasets, n_splits=3, pairs=[("a-judge", "b-judge")])
    (goal,) = study.goal
    assert goal["met"] == (goal["set_size"] is not None and goal["set_size"] <= goal["pair_set_size"] + 0.05)
    paths = write_cascade_study(study, tmp_path)
    assert json.loads(paths[0].read_text())["points"]
