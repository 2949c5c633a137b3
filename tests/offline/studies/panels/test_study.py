"""The panel study (offline.studies.panels.study) on small synthetic judges: cells, rows, leave-one-out, export."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from calibration.input_kinds.mean_panel import expected_scores
from offline.build.cell_data import JudgeCriterionData
from offline.build.panels import export_panel_fits, panel_cells
from offline.studies.panels.report import write_panel_study
from offline.studies.panels.study import run_panel_study

N_DOCS, PER_DOC = 30, 8


def _judge(
    name: str,
    noise: float,
    rng: np.random.Generator,
    truth: np.ndarray,
    *,
    probabilities: bool,
    drop: int | None = None,
) -> JudgeCriterionData:
    ids = [f"d{d:02d}/M{s}" for d in range(N_DOCS) for s in range(PER_DOC)]
    raw = np.clip(np.rint(truth + rng.normal(0, noise, truth.size)), 1, 5).astype(np.int64)
    probs = None
    if probabilities:
        logits = -((np.arange(1, 6)[None, :] - (truth + rng.normal(0, noise, truth.size))[:, None]) ** 2)
        probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    keep = np.array([k != drop for k in range(len(ids))])
    return JudgeCriterionData(
        judge=name,
        prompt_family="fam",
        criterion="coherence",
        item_ids=tuple(np.array(ids)[keep]),
        labels=truth[keep].astype(np.int64),
        judge_scores=raw[keep],
        probabilities=None if probs is None else probs[keep],
        n_answered=int(keep.sum()),
        n_excluded=0,
        groups=tuple(i.split("/")[0] for i in np.array(ids)[keep]),
    )


@pytest.fixture(scope="module")
def datasets() -> list[JudgeCriterionData]:
    rng = np.random.default_rng(7)
    truth = rng.integers(1, 6, N_DOCS * PER_DOC).astype(float)
    return [
        _judge("b-judge", 0.8, rng, truth, probabilities=True),
        _judge("a-judge", 1.0, rng, truth, probabilities=False, drop=5),
        _judge("c-judge", 1.2, rng, truth, probabilities=False),
    ]


def test_panel_cell_holds_the_common_items_in_member_order(datasets: list[JudgeCriterionData]) -> None:
    cell = panel_cells(datasets, ["b-judge", "a-judge"], "coherence")
    assert cell is not None
    assert cell.members == ("a-judge", "b-judge")
    assert cell.inputs == ("score", "probabilities") and cell.family == "panel:score+probabilities"
    assert len(cell.item_ids) == N_DOCS * PER_DOC - 1  # a-judge lacks one item
    b = datasets[0]
    index = [b.item_ids.index(i) for i in cell.item_ids]
    np.testing.assert_allclose(cell.expected[:, 1], expected_scores(5, probabilities=b.probabilities[index]))
    np.testing.assert_array_equal(cell.labels, b.labels[index])
    assert panel_cells(datasets, ["a-judge", "nobody"], "coherence") is None
    assert panel_cells(datasets, ["a-judge", "b-judge"], "fluency") is None


def test_study_rows_defaults_ratio_and_leave_one_out(datasets: list[JudgeCriterionData], tmp_path: Path) -> None:
    study = run_panel_study(datasets, n_splits=4, seed=0)
    panels = {row.panel for row in study.rows}
    assert panels == {
        "panel:a-judge+b-judge",
        "panel:a-judge+c-judge",
        "panel:b-judge+c-judge",
        "panel:a-judge+b-judge+c-judge",
    }
    for name in panels:
        rows = [r for r in study.rows if r.panel == name]
        assert sum(r.is_default for r in rows) == 1
        assert {r.method for r in rows} == {
            "residual",
            "residual_expected",
            "mondrian_residual",
            "learned_lac",
            "label_conditional",
        }
        default = next(r for r in rows if r.is_default)
        assert default.ratio_to_best_member == pytest.approx(default.served_set_size / default.best_member_set_size)
        assert default.best_member in default.members
        assert 0.0 <= default.served_coverage <= 1.0
        assert default.accept_share + default.review_share + default.escalate_share == pytest.approx(1.0)
    served = {r.panel: r.served_set_size for r in study.rows if r.is_default}
    assert len(study.leave_one_out) == 3
    for loo in study.leave_one_out:
        rest = "panel:" + "+".join(m for m in loo.members if m != loo.dropped)
        assert loo.set_size_without == served[rest]
        assert loo.gain == pytest.approx(served[rest] - served["panel:a-judge+b-judge+c-judge"])
    paths = write_panel_study(study, tmp_path)
    payload = json.loads(paths[0].read_text())
    required = {
        "members",
        "criterion",
        "alpha",
        "method",
        "is_default",
        "coverage",
        "set_size",
        "best_member",
        "best_member_set_size",
    }
    assert payload["rows"] and all(required <= set(row) for row in payload["rows"])
    assert paths[2].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_export_keys_the_panel_and_its_sub_panels(datasets: list[JudgeCriterionData]) -> None:
    fits = export_panel_fits(datasets, members=("a-judge", "b-judge", "c-judge"), n_splits=3, alphas=(0.1, 0.2))
    assert set(fits) == {
        (name, family, "coherence", "mean")
        for name, family in (
            ("panel:a-judge+b-judge", "panel:score+probabilities"),
            ("panel:a-judge+c-judge", "panel:score+score"),
            ("panel:b-judge+c-judge", "panel:probabilities+score"),
            ("panel:a-judge+b-judge+c-judge", "panel:score+probabilities+score"),
        )
    }
    assert export_panel_fits(datasets, members=("a-judge", "z-judge"), n_splits=3) == {}


@pytest.fixture(scope="module")
def recorded(recorded_cells: tuple[JudgeCriterionData, ...]) -> list[JudgeCriterionData]:
    """``offline.validation.artifact.recorded_datasets(data_dir)``, once per session (tests/recorded_fixtures.py)."""
    return list(recorded_cells)


def test_the_issues_panel_keeps_coverage_on_unseen_documents(recorded: list[JudgeCriterionData]) -> None:
    """Real SummEval: the panel {gpt-4o-mini, qwen2.5-72b, gpt-3.5, llama-2-70b} at alpha 0.10, served recipe on
    unseen documents >= 1 - alpha - 0.01, and its default covers >= 1 - alpha - 0.05 within every human label."""
    from offline.build.panels import EXPORTED_PANEL, fit_panel

    for criterion in ("coherence", "consistency", "fluency", "relevance"):
        cell = panel_cells(recorded, EXPORTED_PANEL, criterion)
        assert cell is not None and cell.family == "panel:score+probabilities+score+probabilities"
        assert len(cell.item_ids) >= 1199 and np.unique(cell.groups).size == 100
        fit = fit_panel(cell, alphas=(0.05, 0.1, 0.2), n_splits=20, seed=0, delta=0.05)
        served = next(p for p in fit.procedure if abs(p.alpha - 0.1) < 1e-9)
        assert served.mean_coverage >= 0.89, criterion
        default = next(h for h in fit.heldout if h.method == fit.default.method and abs(h.alpha - 0.1) < 1e-9)
        assert default.min_label_coverage >= 0.85, criterion


def test_members_refitted_on_the_panels_items(datasets: list[JudgeCriterionData]) -> None:
    from offline.studies.panels.study import members_on_items

    cell = panel_cells(datasets, ["a-judge", "b-judge"], "coherence")
    assert cell is not None
    found = members_on_items(datasets, cell, alpha=0.1, delta=0.05, n_splits=3, seed=0)
    assert [m.member for m in found] == ["a-judge", "b-judge"]
    assert all(m.n_items == len(cell.item_ids) for m in found)  # b-judge's extra item is left out
    assert found[0].kind == "score" and found[1].kind in ("score", "probabilities")
