"""calibration.decisions.cell_rules: a cell's kinds and features as the service computes them, one rule per kind over
the artifact's grid, the documents as the bound's unit (the shipped rules themselves:
tests/offline/studies/decisions/test_study.py)."""

from __future__ import annotations

import numpy as np

from calibration.decisions.cell_rules import ARTIFACT_GRID, decision_input_kinds, fit_cell_rules
from calibration.decisions.fit import DecisionData, fit_decision_rule
from calibration.decisions.rule import feature_of


def _cell(n_docs: int, per_doc: int, seed: int = 3) -> dict:
    rng = np.random.default_rng(seed)
    n = n_docs * per_doc
    labels = rng.integers(1, 6, size=n)
    scores = np.clip(labels + rng.integers(-1, 2, size=n), 1, 5)
    logits = -((np.arange(1, 6)[None, :] - scores[:, None]) ** 2).astype(float)
    probabilities = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return dict(
        labels=labels,
        judge_scores=scores,
        probabilities=probabilities,
        groups=[f"d{i // per_doc}" for i in range(n)],
        n_labels=5,
    )


def test_kinds_and_features_are_those_the_service_computes() -> None:
    cell = _cell(10, 3)
    score, probs = decision_input_kinds(
        cell["labels"], cell["judge_scores"], cell["probabilities"], None, cell["groups"], 5
    )
    assert (score.kind, score.feature, probs.kind, probs.feature) == (
        "score",
        "score",
        "probabilities",
        "expected_score",
    )
    assert probs.data.features[4] == feature_of(
        "expected_score", score=None, mean=None, probabilities=[float(p) for p in cell["probabilities"][4]]
    )
    assert np.array_equal(score.data.features, cell["judge_scores"].astype(float))
    assert set(probs.data.signals) == {"spread", "margin"}
    means = np.linspace(1, 5, 30)
    [mean] = decision_input_kinds(cell["labels"], cell["judge_scores"], cell["probabilities"], means, cell["groups"], 5)
    assert mean.kind == "mean" and np.array_equal(mean.data.features, means)


def test_one_rule_per_kind_over_the_grid_equal_to_the_direct_fit() -> None:
    cell = _cell(60, 4)
    rules = fit_cell_rules(judge="j", prompt_family="p", criterion="c", means=None, **cell)
    assert [r.input_kind for r in rules] == ["score", "probabilities"]
    for rule in rules:
        assert {(c.tolerance, c.accept_alpha, c.mode) for c in rule.certifications} == {
            (t, a, m) for t in ARTIFACT_GRID.tolerances for a in ARTIFACT_GRID.alphas for m in ("expected", "pac")
        }
        assert {g.pass_threshold for g in rule.quality_gates} == set(ARTIFACT_GRID.gates)
        assert all(c.bound == "betting" and c.delta == 0.05 for c in rule.certifications if c.mode == "pac")
        assert all(c.bound == "selective_test" and c.delta is None for c in rule.certifications if c.mode == "expected")
    direct = fit_decision_rule(
        DecisionData(
            labels=cell["labels"],
            features=cell["judge_scores"].astype(float),
            groups=np.asarray(cell["groups"]),
            n_labels=5,
        ),
        judge="j",
        prompt_family="p",
        criterion="c",
        input_kind="score",
        feature="score",
    )
    assert rules[0] == direct


def test_documents_are_the_unit() -> None:
    cell = _cell(20, 8)  # 160 items in 20 documents: 16 certify, too few for the document-level bound at 0.10
    [by_document] = fit_cell_rules(
        judge="j", prompt_family="p", criterion="c", means=None, **{**cell, "probabilities": None}
    )
    row = next(c for c in by_document.certifications if c.tolerance == 2 and c.accept_alpha == 0.1 and c.mode == "pac")
    assert row.rule_failed and row.n_groups == 16 and "certification documents" in row.reason
    each_row = [str(i) for i in range(len(cell["labels"]))]  # a file without groups: every row its own group
    [by_row] = fit_cell_rules(
        judge="j", prompt_family="p", criterion="c", means=None, **{**cell, "probabilities": None, "groups": each_row}
    )
    assert all(c.n_groups == 128 for c in by_row.certifications)  # pac: CERTIFY documents; expected: one drawn each
