"""research.panels.nested_study: contenders' feature sets, the ratio to the best member, and the written report, on
the small synthetic judges of the panel study's tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from offline.build.cell_data import JudgeCriterionData
from offline.build.panels import panel_cells
from offline.studies.panels.cells import member_kind_data
from research.panels.nested_study import LOG_FLOOR, contenders, run_nested_study, write_nested_study

MEMBERS = ["a-judge", "b-judge", "c-judge"]


def test_contenders_are_the_panel_then_every_member_kind_with_the_modules_features(
    datasets: list[JudgeCriterionData],
) -> None:
    cell = panel_cells(datasets, MEMBERS, "coherence")
    assert cell is not None
    found = contenders(cell, member_kind_data(datasets, cell))
    assert [c.name for c in found] == [
        "panel",
        "a-judge/score",
        "b-judge/score",
        "b-judge/probabilities",
        "c-judge/score",
    ]
    panel = found[0]
    assert panel.data.kind == "mean"
    np.testing.assert_allclose(panel.features["expected"], cell.expected)
    spread = cell.expected.max(axis=1) - cell.expected.min(axis=1)
    np.testing.assert_allclose(panel.features["disagreement"][:, 3], cell.expected.std(axis=1))
    np.testing.assert_allclose(panel.features["disagreement"][:, 4], spread)
    full = panel.features["full"]
    assert full.shape == (cell.labels.size, 15)  # a: one-hot score, b: log-probs, c: one-hot score
    a_scores = found[1].data.judge_scores
    np.testing.assert_array_equal(np.argmax(full[:, :5], axis=1) + 1, a_scores)
    np.testing.assert_allclose(full[:, :5].sum(axis=1), 1.0)
    b_probs = found[3].data.probabilities
    np.testing.assert_allclose(full[:, 5:10], np.log(np.maximum(b_probs, LOG_FLOOR)))
    assert full[:, 5:10].min() >= np.log(LOG_FLOOR)
    # a member's own features: its expected score of the kind and its full output
    np.testing.assert_allclose(found[3].features["expected"][:, 0], b_probs @ np.arange(1, 6))
    np.testing.assert_allclose(found[2].features["expected"][:, 0], found[2].data.judge_scores)
    assert "disagreement" not in found[1].features


def test_the_ratio_is_the_panels_nested_size_over_the_smallest_members(
    datasets: list[JudgeCriterionData],
    tmp_path: Path,
) -> None:
    study = run_nested_study(datasets, members=MEMBERS, outer_seeds=[0], n_splits=2, repeats=1)
    assert [(r.criterion, r.menu) for r in study.rows] == [("coherence", "full"), ("coherence", "core")]
    for row in study.rows:
        sizes = {m.contender: m.set_size for m in row.members}
        assert len(sizes) == 4
        assert row.best_member == min(sizes, key=sizes.__getitem__)
        assert row.ratio == pytest.approx(row.panel.set_size / min(sizes.values()))
        assert row.panel.n_evaluations == 2 and row.n_items == 239 and row.n_documents == 30
        valid = {m.contender: m.set_size for m in row.members if m.meets_rule}
        if valid:
            assert row.best_valid_member == min(valid, key=valid.__getitem__)
            assert row.ratio_to_valid == pytest.approx(row.panel.set_size / min(valid.values()))
        # the bound is chosen after the fact among fixed recipes: never larger than any rule-meeting fixed recipe
        assert len(row.member_bounds) == 4 and row.panel_bound.contender == "panel"
        if row.panel_bound.set_size is not None:
            assert row.panel_bound.coverage >= 0.89 - 1e-12 and row.panel_bound.min_label_coverage >= 0.85 - 1e-12
            assert row.panel_bound_ratio == pytest.approx(row.panel_bound.set_size / min(sizes.values()))
            bounds = [b.set_size for b in row.member_bounds if b.set_size is not None]
            if bounds:
                assert row.bound_ratio == pytest.approx(row.panel_bound.set_size / min(bounds))
    core = next(r for r in study.rows if r.menu == "core")
    assert all(":" not in name for name in core.panel.chosen)  # core methods only
    json_path, md_path = write_nested_study(study, tmp_path)
    loaded = json.loads(json_path.read_text())
    assert loaded["outer_seeds"] == [0] and len(loaded["rows"]) == 2
    text = md_path.read_text()
    full = next(r for r in study.rows if r.menu == "full")
    assert f"Mean ratio: **{full.ratio:.3f}**" in text
    assert "## Menu: core" in text
