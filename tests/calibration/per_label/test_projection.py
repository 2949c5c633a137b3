"""The per-label rule projected to a file of more documents like its own (``document_weight``, the planner's
projection): exactly the rule of the file with every document copied, except the skill test, which is projected."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calibration.per_label.fit import fit_label_rule
from calibration.per_label.skill import SKILL_LEVEL, SkillTest, projected_skill_test
from calibration.per_label.support import evidence_groups, is_supported
from tests.calibration.per_label.synthetic import labelled_file


def _fit(scores: np.ndarray, labels: np.ndarray, documents: np.ndarray, weight: float = 1.0):
    return fit_label_rule(
        scores, labels, documents, n_labels=5, judge="j", prompt_family="f", criterion="c", input_kind="score",
        feature="score", summarised=False, document_weight=weight,
    )  # fmt: skip


@pytest.mark.parametrize(("seed", "weight"), [(0, 2), (1, 3), (2, 2)])
def test_a_file_counted_w_times_is_the_file_copied_w_times_except_the_skill_test(seed: int, weight: int) -> None:
    labels, scores, documents = labelled_file(np.random.default_rng(seed), 12, 4)  # too few for most labels alone
    n_docs = int(documents.max()) + 1
    copies = np.concatenate([documents + copy * n_docs for copy in range(weight)])
    projected = _fit(scores, labels, documents, weight)
    copied = _fit(np.tile(scores, weight), np.tile(labels, weight), copies)
    assert projected.groups == copied.groups and projected.supported == copied.supported
    assert projected.levels == copied.levels
    assert projected.feature_items == copied.feature_items
    assert projected.groups != _fit(scores, labels, documents).groups  # the weight changed the evidence
    # the skill test: the file's own, projected (a copy would leak across leave-one-document-out)
    assert projected.skill == projected_skill_test(_fit(scores, labels, documents).skill, weight)
    assert projected.skill.n_documents == weight * n_docs


def test_weighted_support_counts_items_and_documents_w_times() -> None:
    documents = np.repeat(np.arange(8), 2)  # label 1: 16 items in 8 documents
    labels = np.ones(16, dtype=np.int64)
    assert not is_supported(labels, documents, (1,))
    assert not is_supported(labels, documents, (1,), document_weight=1.2)  # 9.6 documents
    assert is_supported(labels, documents, (1,), document_weight=1.25)  # 20 items, 10 documents
    assert evidence_groups(labels, documents, 3, document_weight=1.25)[0] == (1,)


def test_a_projected_rule_has_no_held_out_summary() -> None:
    labels, scores, documents = labelled_file(np.random.default_rng(3), 10, 4)
    with pytest.raises(ValueError, match="summary"):
        fit_label_rule(scores, labels, documents, n_labels=5, judge="j", prompt_family="f", criterion="c",
                       input_kind="score", feature="score", document_weight=2.0)  # fmt: skip


def _skill(p_value: float, n_documents: int = 20) -> SkillTest:
    return SkillTest(skilled=p_value <= SKILL_LEVEL, p_value=p_value, level=SKILL_LEVEL, n_documents=n_documents,
                     baseline_label=3, baseline_error=1.2, judge_error=1.1)  # fmt: skip


def test_the_projected_skill_test_scales_the_normal_score_by_the_root_of_the_weight() -> None:
    assert projected_skill_test(_skill(0.2), 1.0) == _skill(0.2)
    four_times = projected_skill_test(_skill(0.2), 4.0)  # z = 0.8416 -> 1.6832
    assert four_times.p_value == pytest.approx(0.04617, abs=1e-5) and four_times.skilled
    assert four_times.n_documents == 80 and "projected from 20 documents" in four_times.test
    assert not projected_skill_test(_skill(0.2), 3.0).skilled  # z = 1.458: p = 0.072
    assert projected_skill_test(_skill(0.5), 50.0).p_value == pytest.approx(0.5)
    assert projected_skill_test(_skill(0.7), 4.0).p_value > 0.7  # worse than the baseline only gets worse
    assert projected_skill_test(_skill(1.0), 10.0).p_value == 1.0  # a test that did not run stays at 1
    smaller = [projected_skill_test(_skill(0.1), w).p_value for w in (1.0, 1.5, 2.0, 4.0)]
    assert smaller == sorted(smaller, reverse=True) and not math.isnan(smaller[-1])
