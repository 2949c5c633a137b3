"""The per-label study (offline.studies.guarantees.per_label): its committed figures meet the promise's targets, the
committed docs region is the one its JSON renders, and a small run serves what the rules answer, with the constant
and shuffled judges accepting nothing."""

from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np
import pytest

from calibration.per_label.fit import fit_cell_label_rules
from calibration.per_label.rule import answer_per_label
from offline.studies.guarantees.per_label import ASK, PerLabelStudy, run_per_label_study
from offline.studies.guarantees.per_label_report import BEGIN, END, FIGURES_JSON, MIN_LABEL_ITEMS, headline, region

DOCS = Path(__file__).resolve().parents[4] / "docs"
COMMITTED = msgspec.json.decode((DOCS / FIGURES_JSON).read_bytes(), type=PerLabelStudy)


def test_the_committed_region_is_the_one_the_committed_json_renders() -> None:
    page = (DOCS / "guarantees.md").read_text()
    assert page[page.index(BEGIN) : page.index(END) + len(END)] == region(COMMITTED)


def test_the_committed_study_meets_the_targets() -> None:
    """20 splits by document, 50 calibration documents, the shipped judges served by the service's function."""
    assert (COMMITTED.n_splits, COMMITTED.calibration_documents) == (20, 50)
    judges = [r for r in COMMITTED.rows if r.judge_kind == "judge"]
    assert len(judges) == 32
    for row in judges:
        for figures in row.labels:
            if figures.coverage is not None and figures.calibration_items >= MIN_LABEL_ITEMS:
                assert figures.coverage >= 0.85, (row.judge, row.criterion, row.kind, figures)
                assert figures.coverage + 2 * (figures.coverage_se or 0.0) >= 0.90, (row.judge, row.criterion, figures)
            if figures.wrongly_accepted is not None:
                assert figures.wrongly_accepted <= 0.15
                assert figures.wrongly_accepted - 2 * (figures.wrongly_accepted_se or 0.0) <= 0.10
            if figures.label <= 2 and figures.gate_pass is not None:
                assert figures.gate_pass - 2 * (figures.gate_pass_se or 0.0) <= 0.10
    figures = headline(COMMITTED)
    assert figures["accept_share_logprob"] >= 0.35
    assert figures["set_size_logprob"] <= 3.9
    for row in COMMITTED.rows:
        if row.judge_kind != "judge":
            assert row.accept_share <= 0.02, (row.judge_kind, row.judge, row.criterion, row.kind)


@pytest.fixture(scope="module")
def small_run(recorded_cells):
    cells = [c for c in recorded_cells if c.judge == "qwen2.5-72b-instruct" and c.criterion in ("coherence", "fluency")]
    return cells, run_per_label_study(cells, n_splits=2, seed=3, calibration_documents=50)


def test_a_small_run_reports_what_the_rules_answer(small_run) -> None:
    cells, study = small_run
    rows = {(r.judge_kind, r.criterion, r.kind): r for r in study.rows}
    assert len(rows) == 2 * 2 * 2 + 2  # (judge, shuffled) x criteria x input kinds, and the constant (scores only)
    for kind in ("constant", "shuffled"):
        assert all(r.accept_share == 0.0 for (k, _, _), r in rows.items() if k == kind)
    # the judge's coherence / score row, recomputed for split 0 by hand through the same functions
    data = next(c for c in cells if c.criterion == "coherence")
    documents = np.asarray(data.groups)
    order = np.random.default_rng(3).permutation(np.unique(documents))
    calibrate = np.isin(documents, order[:50])
    [rule] = [
        r
        for r in fit_cell_label_rules(
            judge=data.judge, prompt_family=data.prompt_family, criterion=data.criterion,
            labels=data.labels[calibrate], judge_scores=data.judge_scores[calibrate],
            probabilities=data.probabilities[calibrate], means=None, groups=documents[calibrate], n_labels=5,
        )
        if r.input_kind == "score"
    ]  # fmt: skip
    served = [answer_per_label(rule, float(s), ASK) for s in data.judge_scores[~calibrate]]
    share = float(np.mean([a.accepted for a in served]))
    order = np.random.default_rng(4).permutation(np.unique(documents))
    calibrate = np.isin(documents, order[:50])
    [other] = [
        r
        for r in fit_cell_label_rules(
            judge=data.judge, prompt_family=data.prompt_family, criterion=data.criterion,
            labels=data.labels[calibrate], judge_scores=data.judge_scores[calibrate],
            probabilities=data.probabilities[calibrate], means=None, groups=documents[calibrate], n_labels=5,
        )
        if r.input_kind == "score"
    ]  # fmt: skip
    second = float(np.mean([answer_per_label(other, float(s), ASK).accepted for s in data.judge_scores[~calibrate]]))
    assert rows[("judge", "coherence", "score")].accept_share == pytest.approx((share + second) / 2)
