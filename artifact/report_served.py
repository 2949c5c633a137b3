"""The served answers of a labelled cell's items from rules fitted on other items: what a report card counts.

Each function fits as the artifact fits (:mod:`artifact.input_kinds`) on the items it is given and answers with the
service's own functions: the conformal set (:func:`calibration.conformal.sets.predict_sets`, served as its
interval hull, :func:`artifact.serving.interval_hull`), the certified decision
(:func:`calibration.decisions.rule.decide`) and the per-label answer
(:func:`calibration.per_label.rule.answer_per_label`). Items may repeat (a document drawn twice), each copy with the
document name it is given.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from artifact.labels import LabelledCell
from artifact.serving import interval_hull
from calibration.conformal.fit import calibration_scores, fit_from_scores
from calibration.conformal.sets import predict_sets
from calibration.decisions.cell_rules import ARTIFACT_GRID, DecisionKind, fit_kind_rule
from calibration.decisions.fit import DecisionData
from calibration.decisions.rule import DecisionRule
from calibration.input_kinds.fit import KindData, uses_group_pac
from calibration.per_label.fit import fit_label_rule
from calibration.per_label.rule import FEATURE_OF_KIND, LabelAsk, LabelRule, answer_per_label

__all__ = [
    "decision_rule_on",
    "decision_subset",
    "kind_subset",
    "label_rule_on",
    "per_label_answers",
    "served_sets",
]


def kind_subset(data: KindData, index: np.ndarray, groups: np.ndarray | None = None) -> KindData:
    """The items at ``index`` (repeats allowed), with ``groups`` in place of theirs when given."""
    return KindData(
        kind=data.kind,
        labels=data.labels[index],
        judge_scores=data.judge_scores[index],
        probabilities=None if data.probabilities is None else data.probabilities[index],
        groups=data.groups[index] if groups is None else groups,
        n_labels=data.n_labels,
    )


def decision_subset(kind: DecisionKind, index: np.ndarray, groups: np.ndarray | None = None) -> DecisionData:
    data = kind.data
    signals = None if data.signals is None else {name: values[index] for name, values in data.signals.items()}
    return DecisionData(
        labels=data.labels[index],
        features=data.features[index],
        groups=data.groups[index] if groups is None else groups,
        n_labels=data.n_labels,
        signals=signals,
    )


def served_sets(
    data: KindData,
    method: str,
    alpha: float,
    delta: float | None,
    train: np.ndarray,
    test: np.ndarray,
    seed: int,
    train_groups: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of the served interval hull of each test item, from a predictor fitted on the train items."""
    fit_on = kind_subset(data, train, train_groups)
    groups = np.unique(fit_on.groups, return_inverse=True)[1]
    prepared = calibration_scores(
        method,
        fit_on.labels,
        judge_scores=fit_on.judge_scores,
        probabilities=fit_on.probabilities,
        n_labels=data.n_labels,
        rng=np.random.default_rng(seed),
        groups=groups if uses_group_pac(groups, delta, True) else None,
    )
    fitted = fit_from_scores(prepared, alpha, delta)
    served = kind_subset(data, test)
    members = predict_sets(
        fitted, judge_scores=served.judge_scores, probabilities=served.probabilities, rng=np.random.default_rng(seed)
    )
    low, high = np.zeros(test.size, dtype=np.int64), np.full(test.size, -1, dtype=np.int64)
    for row, member in enumerate(members):
        hull = interval_hull([int(k) + 1 for k in np.flatnonzero(member)])
        if hull:
            low[row], high[row] = hull[0], hull[-1]
    return low, high


def decision_rule_on(
    cell: LabelledCell,
    kind: DecisionKind,
    index: np.ndarray,
    seed: int,
    groups: np.ndarray | None = None,
    uniform_seed: int | None = None,
) -> DecisionRule:
    return fit_kind_rule(
        kind,
        decision_subset(kind, index, groups),
        judge=cell.judge,
        prompt_family=cell.prompt_family,
        criterion=cell.criterion,
        grid=ARTIFACT_GRID,
        seed=seed,
        uniform_seed=uniform_seed,
    )


def label_rule_on(
    cell: LabelledCell,
    kind: DecisionKind,
    index: np.ndarray,
    groups: np.ndarray | None = None,
    document_weight: float = 1.0,
) -> LabelRule:
    """The per-label rule fitted on the items at ``index`` as the artifact fits it (no held-out summary); a
    ``document_weight`` other than 1 is the planner's projection (:mod:`calibration.report_card.planner`)."""
    return fit_label_rule(
        kind.data.features[index],
        cell.labels[index],
        np.asarray(cell.groups)[index] if groups is None else groups,
        n_labels=cell.n_labels,
        judge=cell.judge,
        prompt_family=cell.prompt_family,
        criterion=cell.criterion,
        input_kind=kind.kind,
        feature=FEATURE_OF_KIND[kind.kind],
        summarised=False,
        document_weight=document_weight,
    )


def per_label_answers(
    rule: LabelRule, features: np.ndarray, *, alpha: float, tolerance: int, levels: Sequence[float]
) -> tuple[list[int], list[int], list[list[int]], list[list[bool]]]:
    """(set low, set high, points per level, accepted per level) of each feature under ``answer_per_label``."""
    low, high, points, accepted = [], [], [], []
    for value in features:
        answers = [
            answer_per_label(rule, float(value), LabelAsk(alpha=alpha, tolerance=tolerance, accept_alpha=a))
            for a in levels
        ]  # fmt: skip
        low.append(answers[0].prediction_set[0])
        high.append(answers[0].prediction_set[-1])
        points.append([a.point for a in answers])
        accepted.append([a.accepted for a in answers])
    return low, high, points, accepted
