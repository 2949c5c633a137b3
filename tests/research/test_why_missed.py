"""research.panels.why_missed: the three looks at a panel's gap on small synthetic judges, its report files, and
the learned model's rows (both fixed methods, their ratio to the best member)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from offline.build.cell_data import JudgeCriterionData
from offline.build.panels import panel_cells
from research.panels.gap import STEPS
from research.panels.learned import learned_rows
from research.panels.why_missed import WhyMissed, run_why_missed
from research.panels.why_missed_report import JSON_FILE, MARKDOWN_FILE, gap_table, write_why_missed
from tests.offline.studies.panels.test_study import datasets  # noqa: F401  (the synthetic judges fixture)

MEMBERS = ("a-judge", "b-judge", "c-judge")


def test_learned_rows_cover_and_report_both_methods(datasets: list[JudgeCriterionData]) -> None:  # noqa: F811
    cell = panel_cells(datasets, list(MEMBERS), "coherence")
    assert cell is not None
    rows = learned_rows(cell, alpha=0.1, delta=0.05, n_splits=4, seed=0, best_member_set_size=2.0)
    assert [r.method for r in rows] == ["multinomial_lac", "multinomial_label_conditional"]
    for row in rows:
        assert 0.8 <= row.coverage <= 1.0 and 1.0 <= row.set_size <= 5.0
        assert row.ratio_to_best_member == pytest.approx(row.set_size / 2.0)


@pytest.fixture(scope="module")
def study(datasets: list[JudgeCriterionData]) -> WhyMissed:  # noqa: F811
    return run_why_missed(datasets, members=MEMBERS, n_splits=3, seed=0)


def test_every_look_runs_on_the_panel_cell(study: WhyMissed) -> None:
    assert study.members == list(MEMBERS) and study.n_splits == 3 and study.alpha == pytest.approx(0.1)
    assert [r.step for r in study.gap] == [s.key for s in STEPS]
    assert {r.criterion for r in study.gap} == {"coherence"}
    assert study.candidate and all(r.criterion == "coherence" for r in study.candidate)
    assert [r.method for r in study.learned] == ["multinomial_lac", "multinomial_label_conditional"]
    # the learned rows are compared with the best member's served set size from the members' own fits
    best = {round(r.set_size / r.ratio_to_best_member, 9) for r in study.learned}
    assert len(best) == 1 and 1.0 <= best.pop() <= 5.0


def test_a_panel_not_in_the_data_gives_no_rows(datasets: list[JudgeCriterionData]) -> None:  # noqa: F811
    empty = run_why_missed(datasets, members=("a-judge", "nobody"), n_splits=3, seed=0)
    assert empty.gap == [] and empty.candidate == [] and empty.learned == []


def test_the_report_writes_json_and_markdown(study: WhyMissed, tmp_path: Path) -> None:
    json_path, md_path = write_why_missed(study, tmp_path)
    assert json_path == tmp_path / JSON_FILE and md_path == tmp_path / MARKDOWN_FILE
    assert msgspec.json.decode(json_path.read_bytes(), type=WhyMissed) == study
    assert json.loads(json_path.read_text())["learned"][0]["method"] == "multinomial_lac"
    page = md_path.read_text()
    assert "research, nothing here is served" in page
    assert "one validity rule at a time" in page and "A learned model of the human label" in page
    lines = gap_table(study)
    assert len(lines) == len(STEPS) and all("mean" in line for line in lines)
