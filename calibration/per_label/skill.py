"""Skill before trust: does the judge say more about the human label than the label distribution alone?

Rules, stated once (documents as the unit, nothing random):

* **The no-information baseline** predicts every item with the label distribution alone: the calibration labels'
  frequencies, Laplace-smoothed ((count + 1) / (n + K)). Its constant label, shown beside it, is the lower median
  of the labels (the constant with the least absolute error).
* **The judge's predictor** reads the verdict's feature rounded half up to a label (clipped to 1..K) and predicts
  the smoothed label frequencies of the calibration items in the same rounded bin.
* **Held out by document.** For each calibration document d both predictors are fitted on the other documents
  only (leave one document out), and d's losses are the mean log losses -ln p(human label) over its items (a
  proper score: a judge that carries no information about the label cannot beat the baseline on average).
* **Test.** D_d = baseline loss - judge loss per document; the Wilcoxon signed-rank test (``scipy.stats.wilcoxon``,
  one-sided "greater", zero differences dropped) at level ``SKILL_LEVEL``; skill iff p <= SKILL_LEVEL. Fewer than
  ``MIN_SKILL_DOCUMENTS`` documents, or every difference zero (a constant judge): no skill.
* **Figures**: both mean log losses (documents weighed equally), the baseline's constant label, the p-value.
* **Projected** (:func:`projected_skill_test`, the planner's projection to a file of w times as many documents
  like these, :mod:`calibration.report_card.planner`): the p-value's normal score z = Phi^-1(1 - p) grows as the
  square root of the number of documents at a fixed effect (the standardised statistic of an asymptotically normal
  test), so the projected p-value is 1 - Phi(z sqrt(w)); skill iff it is <= ``SKILL_LEVEL``. A judge worse than the
  baseline (p > 1/2) only gets worse, a test that did not run (p = 1) stays at 1. A projection, not a test.
"""

from __future__ import annotations

import math

import msgspec
import numpy as np
from scipy import stats

__all__ = [
    "MIN_SKILL_DOCUMENTS",
    "SKILL_LEVEL",
    "NO_SKILL_WORDS",
    "SkillTest",
    "projected_skill_test",
    "skill_test",
]

SKILL_LEVEL = 0.05
MIN_SKILL_DOCUMENTS = 6
NO_SKILL_WORDS = "the judge adds no information over the label distribution here"


class SkillTest(msgspec.Struct, frozen=True, kw_only=True):
    """The judge against the no-information baseline, documents as the unit (module rules)."""

    skilled: bool
    p_value: float
    level: float
    n_documents: int
    baseline_label: int  # the constant label the label distribution alone predicts (lower median)
    baseline_error: float  # the baseline's mean log loss, held out by document
    judge_error: float  # the judge's predictor's mean log loss, held out by document
    test: str = "wilcoxon signed-rank over documents, one-sided, leave-one-document-out log losses"


def _lower_median(counts: np.ndarray) -> int | None:
    """The lower median label of a count vector over 1..K (None when empty)."""
    total = counts.sum()
    if total <= 0:
        return None
    return int(np.searchsorted(np.cumsum(counts), total / 2.0, side="left")) + 1


def _feature_bins(features: np.ndarray, n_labels: int) -> np.ndarray:
    return np.clip(np.floor(features + 0.5), 1, n_labels).astype(np.int64)


def skill_test(features: object, labels: object, documents: object, n_labels: int) -> SkillTest:
    """The skill test of one cell and input kind (module rules)."""
    f = np.asarray(features, dtype=float)
    y = np.asarray(labels, dtype=np.int64)
    _, codes = np.unique(np.asarray(documents), return_inverse=True)
    n_docs = int(codes.max()) + 1 if codes.size else 0
    bins = _feature_bins(f, n_labels)
    # table[d, b, l]: items of document d in bin b with label l
    table = np.zeros((n_docs, n_labels, n_labels), dtype=np.int64)
    np.add.at(table, (codes, bins - 1, y - 1), 1)
    total = table.sum(axis=0)
    baseline_all = _lower_median(total.sum(axis=0)) or 1
    baseline_losses, judge_losses = [], []
    for d in range(n_docs):
        rest = total - table[d]
        marginal = rest.sum(axis=0)
        baseline = (marginal + 1.0) / (marginal.sum() + n_labels)
        by_bin = (rest + 1.0) / (rest.sum(axis=1, keepdims=True) + n_labels)
        mine = codes == d
        # exactly rounded sums (math.fsum): the figures do not depend on the order of the items
        baseline_losses.append(-math.fsum(np.log(baseline[y[mine] - 1])) / int(mine.sum()))
        judge_losses.append(-math.fsum(np.log(by_bin[bins[mine] - 1, y[mine] - 1])) / int(mine.sum()))
    differences = np.asarray(baseline_losses) - np.asarray(judge_losses)
    p_value = 1.0
    if n_docs >= MIN_SKILL_DOCUMENTS and np.any(np.abs(differences) > 1e-12):
        nonzero = differences[np.abs(differences) > 1e-12]
        p_value = float(stats.wilcoxon(nonzero, alternative="greater").pvalue)
        if not math.isfinite(p_value):
            p_value = 1.0
    return SkillTest(
        skilled=p_value <= SKILL_LEVEL,
        p_value=p_value,
        level=SKILL_LEVEL,
        n_documents=n_docs,
        baseline_label=baseline_all,
        baseline_error=math.fsum(baseline_losses) / n_docs if n_docs else 0.0,
        judge_error=math.fsum(judge_losses) / n_docs if n_docs else 0.0,
    )


def projected_skill_test(test: SkillTest, document_weight: float) -> SkillTest:
    """``test`` projected to a file of ``document_weight`` times as many documents (module rules)."""
    if document_weight == 1.0:
        return test
    z = float(stats.norm.isf(test.p_value)) * math.sqrt(document_weight)
    p_value = float(stats.norm.sf(z))
    return msgspec.structs.replace(
        test,
        skilled=p_value <= test.level,
        p_value=p_value,
        n_documents=round(document_weight * test.n_documents),
        test=f"projected from {test.n_documents} documents: the normal score of the p-value times "
        f"sqrt({document_weight:.6g}) ({test.test})",
    )
