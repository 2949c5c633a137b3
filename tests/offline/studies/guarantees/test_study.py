"""The guarantees study (offline.studies.guarantees.study) on the shipped SummEval judges: its splits, its vectorised
decisions against the service's own ``decide`` item by item, and a one-split run of both modes whose figures are
recomputed here from the artifact it fits."""

from __future__ import annotations

import numpy as np
import pytest

from artifact.thresholds import ThresholdIndex
from calibration.decisions.rule import MODES, decide, feature_of
from offline.studies.guarantees.study import (
    _fit_half,
    run_guarantees_study,
    served_decisions,
    split_calibration,
)
from offline.validation.halves import split_documents, subset

PICK = {("gpt-4o-mini-2024-07-18", "coherence"), ("llama-2-7b-chat", "fluency")}


@pytest.fixture(scope="module")
def two_cells(recorded_cells):
    return [d for d in recorded_cells if (d.judge, d.criterion) in PICK]


def test_the_calibration_split_takes_the_first_documents_of_the_seeded_permutation(two_cells) -> None:
    documents = {g for d in two_cells for g in d.groups}
    for n in (20, 50, 80):
        fit, served = split_calibration(two_cells, 3, n)
        assert len(fit) == n and fit.isdisjoint(served) and fit | served == documents
    assert split_calibration(two_cells, 7, 50) == split_documents(two_cells, 7)  # 50: the halves check's split
    assert split_calibration(two_cells, 7, 20)[0] <= split_calibration(two_cells, 7, 80)[0]  # nested by seed
    for bad in (1, len(documents)):
        with pytest.raises(ValueError, match="calibration_documents"):
            split_calibration(two_cells, 0, bad)


@pytest.fixture(scope="module")
def fitted_split(two_cells):
    fit_docs, served_docs = split_calibration(two_cells, 0, 50)
    fit_data = [subset(d, fit_docs) for d in two_cells]
    served_data = [subset(d, served_docs) for d in two_cells]
    return _fit_half(fit_data, seed=0, rule_seed=0, inner_splits=2), served_data


@pytest.mark.parametrize("mode", ["expected", "pac"])
def test_served_decisions_are_decide_item_by_item(fitted_split, mode: str) -> None:
    artifact, served_data = fitted_split
    compared = 0
    for rule in artifact.decision_rules:
        data = next(d for d in served_data if (d.judge, d.criterion) == (rule.judge, rule.criterion))
        for tolerance, accept_alpha in ((2, 0.1), (1, 0.2), (2, 0.05)):
            accepted, points = served_decisions(
                rule, data, rule.input_kind, tolerance=tolerance, accept_alpha=accept_alpha, mode=mode
            )
            for i in range(data.labels.size):
                probabilities = None if rule.input_kind == "score" else list(data.probabilities[i])
                score = int(data.judge_scores[i])
                feature = feature_of(rule.feature, score=score, probabilities=probabilities, mean=None)
                one = decide(rule, feature, tolerance=tolerance, accept_alpha=accept_alpha, mode=mode)
                assert (bool(accepted[i]), int(points[i])) == (one.accepted, one.point), (rule.input_kind, i)
                compared += 1
    assert compared > 1000


def test_one_split_of_both_modes_reports_what_its_artifact_serves(two_cells, fitted_split) -> None:
    study = run_guarantees_study(two_cells, n_splits=1, seed=0, inner_splits=2, calibration_documents=50)
    assert (study.calibration_documents, study.served_documents) == (50, 50)
    assert {r.mode for r in study.decisions} == {r.mode for r in study.sets} == {"expected", "pac"}
    artifact, served_data = fitted_split
    rules = {(r.judge, r.criterion, r.input_kind): r for r in artifact.decision_rules}
    for row in study.decisions:
        if row.tolerance != 2 or row.accept_alpha != 0.1:
            continue
        data = next(d for d in served_data if (d.judge, d.criterion) == (row.judge, row.criterion))
        rule = rules[(row.judge, row.criterion, row.kind)]
        accepted, points = served_decisions(rule, data, row.kind, tolerance=2, accept_alpha=0.1, mode=row.mode)
        index = ThresholdIndex(artifact, row.mode)
        assert index.mode == row.mode
        # the study also escalates an empty set at alpha 0.10: at most the rule's own acceptances
        assert row.accept_share[0] <= accepted.mean() + 1e-12
        errors = np.abs(data.labels - points) >= 2
        if row.accept_share[0] == pytest.approx(accepted.mean()):
            expected_error = float(errors[accepted].mean()) if accepted.any() else 0.0
            assert row.error_among_accepted[0] == pytest.approx(expected_error)
    sets = {mode: {(r.judge, r.criterion, r.kind, r.alpha): r for r in study.sets if r.mode == mode} for mode in MODES}
    assert sets["pac"].keys() == sets["expected"].keys()
    assert all(0 <= r.mean_coverage <= 1 and 0 <= r.mean_set_size <= 5 for r in study.sets)
    # a pac threshold holds with confidence over the draw: wider sets than the expected mode's, over the cells
    assert sum(r.mean_set_size for r in sets["pac"].values()) > sum(r.mean_set_size for r in sets["expected"].values())


def test_the_per_label_figures_add_up_to_the_headline_rows(two_cells) -> None:
    study = run_guarantees_study(two_cells, n_splits=1, seed=1, inner_splits=2, calibration_documents=80)
    assert (study.calibration_documents, study.served_documents) == (80, 20)
    _, served_docs = split_calibration(two_cells, 1, 80)
    served = {(d.judge, d.criterion): subset(d, served_docs) for d in two_cells}
    for mode in MODES:
        for kind in ("score", "probabilities"):
            labels = [f for f in study.per_label if (f.mode, f.kind) == (mode, kind)]
            rows = [r for r in study.decisions if (r.mode, r.kind, r.tolerance, r.accept_alpha) == (mode, kind, 2, 0.1)]
            sizes = {(r.judge, r.criterion): served[(r.judge, r.criterion)].labels.size for r in rows}
            assert rows and sum(f.n_items for f in labels) == sum(sizes.values())  # every served item once
            accepted = sum(f.accept_share * f.n_items for f in labels)
            assert accepted == pytest.approx(sum(r.accept_share[0] * sizes[(r.judge, r.criterion)] for r in rows))
            assert all(f.error_among_accepted is None or 0 <= f.error_among_accepted <= 1 for f in labels)
            assert all(0 <= f.coverage <= 1 for f in labels)
