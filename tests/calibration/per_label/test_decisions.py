"""The per-label rule as served: synthetic files of known skill, and the negative controls (a constant judge, a judge
shuffled across documents) that must earn no accept."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.per_label.fit import fit_label_rule
from calibration.per_label.rule import LabelAsk, answer_per_label
from tests.calibration.per_label.synthetic import labelled_file

ASK = LabelAsk(alpha=0.10, tolerance=2, accept_alpha=0.10)


def _rule(labels: np.ndarray, scores: np.ndarray, documents: np.ndarray):
    return fit_label_rule(
        scores, labels, documents, n_labels=5, judge="j", prompt_family="f", criterion="c", input_kind="score",
        feature="score",
    )  # fmt: skip


def _served(rule, labels: np.ndarray, scores: np.ndarray, ask: LabelAsk = ASK):
    answers = [answer_per_label(rule, float(s), ask) for s in scores]
    accepted = np.array([a.accepted for a in answers])
    points = np.array([a.point for a in answers])
    covered = np.array([int(y) in a.prediction_set for a, y in zip(answers, labels, strict=True)])
    return accepted, points, covered


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_good_judge_on_a_small_file_accepts_at_least_half(seed: int) -> None:
    rng = np.random.default_rng(seed)
    labels, scores, documents = labelled_file(rng, 50, 4)
    rule = _rule(labels, scores, documents)
    assert rule.skill.skilled
    new_labels, new_scores, _ = labelled_file(np.random.default_rng(1000 + seed), 400, 4)
    accepted, points, _ = _served(rule, new_labels, new_scores)
    assert accepted.mean() >= 0.50
    for label in range(1, 6):  # every label's wrongly accepted share stays within accept_alpha
        mine = new_labels == label
        assert (accepted & (np.abs(points - new_labels) >= 2))[mine].mean() <= 0.10


@pytest.mark.parametrize("judge", ["constant", "shuffled"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_judge_without_information_accepts_nothing(judge: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    labels, scores, documents = labelled_file(rng, 50, 4, judge=judge)
    rule = _rule(labels, scores, documents)
    new_labels, new_scores, _ = labelled_file(np.random.default_rng(2000 + seed), 200, 4, judge=judge)
    accepted, _, _ = _served(rule, new_labels, new_scores)
    assert accepted.mean() <= 0.02
    if judge == "constant":
        assert not rule.skill.skilled
        assert all(len(answer_per_label(rule, 5.0, ASK).prediction_set) == 5 for _ in range(1))


def test_no_information_is_said_in_the_answer() -> None:
    labels, scores, documents = labelled_file(np.random.default_rng(7), 50, 4, judge="constant")
    answer = answer_per_label(_rule(labels, scores, documents), 5.0, ASK)
    assert not answer.accepted
    assert "adds no information over the label distribution" in answer.reason


def test_coverage_holds_for_every_label_on_exchangeable_documents() -> None:
    """Mean over 60 calibrations of each label's coverage on new documents >= 1 - alpha minus Monte-Carlo slack."""
    coverage = {label: [] for label in range(1, 6)}
    wrong = {label: [] for label in range(1, 6)}
    for seed in range(60):
        labels, scores, documents = labelled_file(np.random.default_rng(seed), 60, 8)
        rule = _rule(labels, scores, documents)
        new_labels, new_scores, _ = labelled_file(np.random.default_rng(10_000 + seed), 60, 8)
        accepted, points, covered = _served(rule, new_labels, new_scores)
        for label in range(1, 6):
            mine = new_labels == label
            coverage[label].append(covered[mine].mean())
            wrong[label].append((accepted & (np.abs(points - new_labels) >= 2))[mine].mean())
    for label in range(1, 6):
        slack = 2 * np.std(coverage[label]) / np.sqrt(len(coverage[label]))
        assert np.mean(coverage[label]) >= 0.90 - slack, label
        assert np.mean(wrong[label]) <= 0.10 + 2 * np.std(wrong[label]) / np.sqrt(len(wrong[label])), label


def test_quality_gate_passes_few_bad_outputs() -> None:
    labels, scores, documents = labelled_file(np.random.default_rng(3), 80, 6)
    rule = _rule(labels, scores, documents)
    ask = LabelAsk(alpha=0.10, tolerance=2, accept_alpha=0.10, pass_threshold=3)
    new_labels, new_scores, _ = labelled_file(np.random.default_rng(33), 400, 6)
    passed, _, _ = _served(rule, new_labels, new_scores, ask)
    assert passed[new_labels <= 2].mean() <= 0.10
    assert passed[new_labels >= 4].mean() > 0.3  # the gate passes good outputs too: it is not fail-everything


def test_the_same_file_gives_the_same_rule() -> None:
    labels, scores, documents = labelled_file(np.random.default_rng(5), 50, 4)
    assert _rule(labels, scores, documents) == _rule(labels.copy(), scores.copy(), documents.copy())


def test_the_rule_does_not_depend_on_the_order_of_the_file() -> None:
    labels, scores, documents = labelled_file(np.random.default_rng(9), 50, 4)
    order = np.random.default_rng(10).permutation(labels.size)
    assert _rule(labels, scores, documents) == _rule(labels[order], scores[order], documents[order])
    by_score = np.argsort(scores, kind="stable")  # sorted input
    assert _rule(labels, scores, documents) == _rule(labels[by_score], scores[by_score], documents[by_score])


@pytest.mark.parametrize("shape", ["alternating", "one_document", "one_label"])
def test_degenerate_files_give_valid_rules_that_accept_nothing_unearned(shape: str) -> None:
    rng = np.random.default_rng(4)
    labels, scores, documents = labelled_file(rng, 50, 4)
    if shape == "alternating":  # the judge flips between the scale's ends whatever the label
        scores = np.where(np.arange(labels.size) % 2 == 0, 1.0, 5.0)
    elif shape == "one_document":
        documents = np.zeros_like(documents)
    else:
        labels = np.full_like(labels, 3)
    rule = _rule(labels, scores, documents)
    answers = [answer_per_label(rule, float(s), ASK) for s in (1.0, 3.0, 5.0)]
    assert all(a.prediction_set for a in answers)
    if shape in ("alternating", "one_document"):
        assert not any(a.accepted for a in answers)
