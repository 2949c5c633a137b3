"""The certified-decisions study's inputs: every (cell, input kind) as decision data, and a rule fitted on part of
its items and served item by item.

:func:`cell_input_kinds` computes the features with :func:`calibration.decisions.rule.feature_of` exactly as the service
does (:func:`calibration.decisions.cell_rules.decision_input_kinds`); :func:`fit_rule` fits a rule on a subset of
the items
over a grid with the artifact's delta and fit fraction (:data:`calibration.decisions.cell_rules.ARTIFACT_GRID`);
:func:`served` answers each item with :func:`calibration.decisions.rule.decide`, the look-up the service applies. The
study's rules are stated in :mod:`offline.studies.decisions.study`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from calibration.decisions.cell_rules import ARTIFACT_GRID, DecisionKind, RuleGrid, decision_input_kinds, fit_kind_rule
from calibration.decisions.fit import DecisionData
from calibration.decisions.rule import DecisionRule, decide
from offline.build.cell_data import JudgeCriterionData

__all__ = [
    "DELTA",
    "CellKind",
    "cell_input_kinds",
    "fit_rule",
    "served",
    "subset",
]

DELTA = ARTIFACT_GRID.delta


@dataclass(frozen=True)
class CellKind:
    """One (cell, input kind) as decision inputs: the verdicts' features and what a caller would send."""

    judge: str
    prompt_family: str
    criterion: str
    kind: str
    feature: str
    data: DecisionData
    judge_scores: np.ndarray
    headline: bool


def cell_input_kinds(data: JudgeCriterionData) -> list[CellKind]:
    """The cell's kinds as decision inputs (:func:`calibration.decisions.cell_rules.decision_input_kinds`: features
    computed
    with ``feature_of`` exactly as the service does); the headline kind is the last."""
    groups = np.asarray(data.documents)
    kinds = decision_input_kinds(data.labels, data.judge_scores, data.probabilities, data.means, groups, data.n_labels)
    return [
        CellKind(
            judge=data.judge,
            prompt_family=data.prompt_family,
            criterion=data.criterion,
            kind=k.kind,
            feature=k.feature,
            data=k.data,
            judge_scores=np.asarray(data.judge_scores),
            headline=k is kinds[-1],
        )
        for k in kinds
    ]


def subset(data: DecisionData, index: np.ndarray) -> DecisionData:
    """The items of ``data`` at ``index`` (signals included)."""
    signals = None if data.signals is None else {k: v[index] for k, v in data.signals.items()}
    return DecisionData(
        labels=data.labels[index],
        features=data.features[index],
        groups=data.groups[index],
        n_labels=data.n_labels,
        signals=signals,
    )


def fit_rule(
    cell: CellKind,
    data: DecisionData,
    *,
    bound: str,
    signal: str,
    seed: int,
    alphas: Sequence[float],
    tolerances: Sequence[int],
    gates: Sequence[int],
) -> DecisionRule:
    """A rule fitted on ``data`` (a subset of the cell's items) with the given bound, signal and grid."""
    grid = RuleGrid(
        tolerances=tuple(tolerances),
        alphas=tuple(alphas),
        gates=tuple(gates),
        delta=DELTA,
        fit_fraction=ARTIFACT_GRID.fit_fraction,
        signal=signal,
        bound=bound,
    )
    return fit_kind_rule(
        DecisionKind(kind=cell.kind, feature=cell.feature, data=cell.data),
        data,
        judge=cell.judge,
        prompt_family=cell.prompt_family,
        criterion=cell.criterion,
        grid=grid,
        seed=seed,
    )


def served(rule: DecisionRule, features: np.ndarray, *, tolerance: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(accepted, point) per item from ``decide`` (memoised per distinct feature value: the same call)."""
    memo: dict[float, tuple[bool, int]] = {}
    accepted = np.zeros(features.size, dtype=bool)
    points = np.zeros(features.size, dtype=np.int64)
    for position, value in enumerate(features.tolist()):
        if value not in memo:
            outcome = decide(rule, value, tolerance=tolerance, accept_alpha=alpha)
            memo[value] = (outcome.accepted, outcome.point)
        accepted[position], points[position] = memo[value]
    return accepted, points
