"""Fitting the ``per_label`` rules of a cell: every input kind, every calibrated level, no split and no seed.

Rules, stated once: the kinds and their features are those of
:func:`calibration.decisions.cell_rules.decision_input_kinds` (the feature computed item by item as the service computes
it); the evidence groups from :mod:`calibration.per_label.support`; the intervals at every level of ``alphas``
(:mod:`calibration.per_label.intervals`), all calibration items used (no part is spent on fitting anything); the
skill test on the same items (:mod:`calibration.per_label.skill`). The same file gives the same rules.
``document_weight`` w != 1 is the planner's projection (:mod:`calibration.report_card.planner`), never a served
rule: every document counts w times in the evidence groups and the intervals, the verdict-evidence counts
(``feature_items``) are w times the file's rounded down (1e-9 of slack), and the skill test is projected
(:func:`calibration.per_label.skill.projected_skill_test`); the other counts stay the file's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec
import numpy as np

from calibration.decisions.cell_rules import decision_input_kinds
from calibration.levels import LEVEL_GRID
from calibration.per_label.intervals import fit_label_intervals
from calibration.per_label.rule import LabelRule, feature_bin
from calibration.per_label.skill import projected_skill_test, skill_test
from calibration.per_label.summary import summarise
from calibration.per_label.support import evidence_groups, is_supported

__all__ = ["LABEL_ALPHAS", "fit_cell_label_rules", "fit_label_rule"]

# The levels a per-label rule is fitted at: the shipped set levels 0.01 .. 0.30.
LABEL_ALPHAS: tuple[float, ...] = LEVEL_GRID


def fit_label_rule(
    features: object,
    labels: object,
    documents: object,
    *,
    n_labels: int,
    judge: str,
    prompt_family: str,
    criterion: str,
    input_kind: str,
    feature: str,
    alphas: Sequence[float] = LABEL_ALPHAS,
    summarised: bool = True,
    document_weight: float = 1.0,
) -> LabelRule:
    """One (cell, input kind)'s per-label rule (module rules), with its held-out figures on the file
    (:mod:`calibration.per_label.summary`) unless ``summarised`` is False (always False for a projection)."""
    if document_weight != 1.0 and summarised:
        raise ValueError("a projected rule (document_weight != 1) has no held-out summary: pass summarised=False")
    f = np.asarray(features, dtype=float)
    y = np.asarray(labels, dtype=np.int64)
    docs = np.asarray(documents)
    weight = document_weight
    groups = evidence_groups(y, docs, n_labels, document_weight=weight)
    supported = [is_supported(y, docs, group, document_weight=weight) for group in groups]
    levels = fit_label_intervals(f, y, docs, groups, sorted(alphas), supported=supported, document_weight=weight)
    bins = np.array([feature_bin(float(v), n_labels) for v in f], dtype=np.int64)
    seen = [int((bins == label).sum()) for label in range(1, n_labels + 1)]
    rule = LabelRule(
        judge=judge,
        prompt_family=prompt_family,
        criterion=criterion,
        input_kind=input_kind,
        feature=feature,
        n_labels=n_labels,
        levels=levels,
        groups=[list(group) for group in groups],
        supported=supported,
        label_items=[int((y == label).sum()) for label in range(1, n_labels + 1)],
        n_items=int(y.size),
        n_documents=int(np.unique(docs).size),
        feature_items=seen if weight == 1.0 else [math.floor(weight * count + 1e-9) for count in seen],
        skill=projected_skill_test(skill_test(f, y, docs, n_labels), weight),
    )
    if not summarised:
        return rule

    def refit(mask: np.ndarray) -> LabelRule:
        return fit_label_rule(
            f[mask], y[mask], docs[mask], n_labels=n_labels, judge=judge, prompt_family=prompt_family,
            criterion=criterion, input_kind=input_kind, feature=feature, alphas=alphas, summarised=False,
        )  # fmt: skip

    return msgspec.structs.replace(rule, summary=summarise(f, y, docs, n_labels=n_labels, refit=refit, full=rule))


def fit_cell_label_rules(
    *,
    judge: str,
    prompt_family: str,
    criterion: str,
    labels: np.ndarray,
    judge_scores: np.ndarray,
    probabilities: np.ndarray | None,
    means: np.ndarray | None,
    groups: Sequence[object] | np.ndarray,
    n_labels: int,
    alphas: Sequence[float] = LABEL_ALPHAS,
) -> list[LabelRule]:
    """One per-label rule per input kind of the cell (module rules)."""
    return [
        fit_label_rule(
            kind.data.features,
            kind.data.labels,
            kind.data.groups,
            n_labels=n_labels,
            judge=judge,
            prompt_family=prompt_family,
            criterion=criterion,
            input_kind=kind.kind,
            feature=kind.feature,
            alphas=alphas,
        )
        for kind in decision_input_kinds(labels, judge_scores, probabilities, means, groups, n_labels)
    ]
