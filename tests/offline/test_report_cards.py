"""Report cards on the real SummEval data: one cell's card (the figures against independent computations) and the
planner's prediction checked against a measurement (offline.report_cards, artifact.report_evidence).

The whole shipped file (24 cells) is computed by ``python -m offline report-cards`` (``make calibrate``), not here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from artifact.report_cards import ReportCards, decode_report_cards, encode_report_cards, load_report_cards
from artifact.report_evidence import ReportOptions, planner_point_at
from artifact.thresholds import load_artifact
from calibration.decisions.cell_rules import decision_input_kinds
from calibration.per_label.fit import fit_label_rule
from offline.build.inputs.summeval import load_summeval
from offline.report_cards import expert_annotations, labelled_cell, planner_check, recorded_report_cards

SHIPPED = Path(__file__).resolve().parents[2] / "artifact"
FAST = ReportOptions(n_resamples=200, planner_sizes=(20, 120), planner_draws=3)


@pytest.fixture(scope="module")
def artifact():
    return load_artifact(SHIPPED / "thresholds.json")


def _cell(recorded_cells, judge: str, criterion: str):
    return labelled_cell(next(c for c in recorded_cells if c.judge == judge and c.criterion == criterion))


@pytest.fixture(scope="module")
def card_and_cell(recorded_cells, artifact, data_dir):
    cell = _cell(recorded_cells, "gpt-4o-mini-2024-07-18", "consistency")
    items = load_summeval(data_dir).items
    (card,) = recorded_report_cards(
        [c for c in recorded_cells if c.judge == cell.judge and c.criterion == cell.criterion], items, artifact, FAST
    )
    return card, cell


def test_the_cards_skill_is_the_judges_score_against_the_rounded_expert_mean(card_and_cell) -> None:
    card, cell = card_and_cell
    assert (card.judge, card.criterion, card.n_items, card.n_documents) == (cell.judge, "consistency", 1600, 100)
    assert card.input_kind in ("score", "probabilities")
    assert card.skill.weighted_kappa is not None
    if card.input_kind == "score":
        expected = cohen_kappa_score(cell.judge_scores, cell.labels, weights="quadratic")
        assert card.skill.weighted_kappa.estimate == pytest.approx(expected)
        assert card.skill.exact_agreement.estimate == pytest.approx(np.mean(cell.judge_scores == cell.labels))
    assert card.skill.weighted_kappa.low < card.skill.weighted_kappa.estimate < card.skill.weighted_kappa.high
    assert card.skill.weighted_kappa.n_units == 100  # documents resampled, not items
    assert sum(map(sum, card.confusion)) == 1600
    assert card.baseline.label_counts == np.bincount(cell.labels, minlength=6)[1:].tolist()


def test_the_ceiling_is_the_three_experts_of_the_abstractive_systems(card_and_cell) -> None:
    card, _ = card_and_cell
    assert card.ceiling is not None and card.ceiling.n_annotators == 3
    assert card.ceiling.n_items == 1200  # individual ratings survive for the 12 abstractive systems only
    assert card.ceiling.weighted_kappa is not None and card.ceiling.weighted_kappa.estimate > 0.5


def test_held_out_evidence_covers_every_item_once_per_mode(card_and_cell) -> None:
    card, _ = card_and_cell
    assert [m.mode for m in card.modes] == ["per_label", "expected", "pac"]
    for mode in card.modes:
        assert sum(row.n_items for row in mode.per_label) == 1600
        assert sum(mode.set_size_counts) == 1600
        at = next(p for p in mode.operating_curve if abs(p.accept_alpha - mode.accept_alpha) < 1e-9)
        assert at.accept_share == pytest.approx(mode.accept_share)
        weighted = sum(r.n_items * (r.wrongly_accepted_share or 0) for r in mode.per_label) / 1600
        assert weighted == pytest.approx(mode.wrongly_accepted_share)
        assert [p.accept_alpha for p in mode.operating_curve] == sorted(p.accept_alpha for p in mode.operating_curve)


def test_the_planner_measures_below_the_files_size_and_projects_from_it(card_and_cell) -> None:
    card, _ = card_and_cell
    planner = card.planner
    assert planner is not None and [p.n_documents for p in planner.points] == [20, 120]
    assert [p.projected for p in planner.points] == [False, True]
    for point in planner.points:
        assert point.accept_share_low <= point.accept_share <= point.accept_share_high
        assert 1 <= point.mean_set_size <= 5


def test_expert_annotations_follow_the_cells_item_order(recorded_cells, data_dir) -> None:
    cell = _cell(recorded_cells, "llama-2-7b-chat", "fluency")
    marks = expert_annotations(load_summeval(data_dir).items, cell.item_ids, "fluency")
    assert marks is not None and marks.shape == (len(cell.item_ids), 3)
    rounded = [int(np.floor(m.mean() + 0.5)) for m in marks if (m > 0).all()]
    assert rounded == [label for label, m in zip(cell.labels, marks, strict=True) if (m > 0).all()]


@pytest.mark.parametrize("criterion", ["coherence", "consistency", "fluency", "relevance"])
def test_the_planners_share_at_50_documents_from_a_30_document_file_is_within_010_of_the_measured(
    recorded_cells, artifact, criterion: str
) -> None:
    # The G-Eval judge with log-probs, every criterion, in the served default mode (per_label); every shipped cell's
    # figure is in docs/report-cards.md (python -m offline report-cards --planner-check)
    check = planner_check(_cell(recorded_cells, "gpt-4o-mini-2024-07-18", criterion), artifact)
    assert (check.file_documents, check.at_documents) == (30, 50)
    assert check.predicted_low <= check.predicted <= check.predicted_high
    assert check.within, check


def test_the_file_projected_to_its_own_size_is_the_rule_fitted_on_it_answering_its_own_verdicts(card_and_cell) -> None:
    # w = 1: the served rule of the whole file, as /v1/score would answer the file's own verdicts (its summary's
    # served_accept_share, computed by calibration.per_label.summary at the same alpha, accept_alpha and tolerance)
    card, cell = card_and_cell
    options = ReportOptions(planner_draws=2)
    point = planner_point_at(cell, card.input_kind, card.n_documents, options)
    kinds = decision_input_kinds(
        cell.labels, cell.judge_scores, cell.probabilities, cell.means, cell.groups, cell.n_labels
    )
    (kind,) = [k for k in kinds if k.kind == card.input_kind]
    rule = fit_label_rule(
        kind.data.features, cell.labels, np.asarray(cell.groups), n_labels=cell.n_labels, judge=cell.judge,
        prompt_family=cell.prompt_family, criterion=cell.criterion, input_kind=kind.kind, feature=kind.feature,
    )  # fmt: skip
    assert rule.summary is not None and (rule.summary.alpha, rule.summary.tolerance) == (0.10, 2)
    assert point.projected and point.accept_share == pytest.approx(rule.summary.served_accept_share)
    assert point.mean_set_size == pytest.approx(rule.summary.served_set_size)


def test_the_shipped_report_cards_file_reads_back_and_names_every_summeval_judge() -> None:
    cards = load_report_cards(SHIPPED / "report_cards.json")
    assert isinstance(cards, ReportCards) and len(cards.cards) == 24
    assert decode_report_cards(encode_report_cards(cards)) == cards
    assert {c.judge for c in cards.cards} >= {"gpt-4o-mini-2024-07-18", "qwen2.5-72b-instruct", "llama-2-7b-chat"}
    with pytest.raises(ValueError, match="format"):
        decode_report_cards(encode_report_cards(cards).replace(b'"format_version": 1', b'"format_version": 9'))
