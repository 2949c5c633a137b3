"""A cell's certified decision rules over the artifact's grid: the one fit ``offline`` and the service share.

Pure: one cell's arrays in, :class:`calibration.decisions.rule.DecisionRule` per input kind out. ``offline``
(``make artifact``, ``calibrate --labels``:
``offline.build.rules.export_rules``) and the service's calibration jobs (``POST /v1/calibrations``) both
call :func:`fit_cell_rules`, so a cell calibrated over HTTP carries the same rules as the same cell calibrated offline.
Rules, stated once:

* **Kinds and features** (:func:`decision_input_kinds`, the rule of
  :func:`calibration.input_kinds.fit.cell_kind_data`): a
  mean-of-samples cell (``means`` given) has kind ``mean`` only (feature: the mean); otherwise ``score`` (feature:
  the integer score) and, when every item has probabilities, ``probabilities`` (feature: the expected score under
  the renormalised probabilities). Every feature is computed item by item with
  :func:`calibration.decisions.rule.feature_of`, exactly as the service computes it from a request.
* **Signals** (``probabilities`` only, for the studies' alternative bin orders): the standard deviation of the
  renormalised distribution (``spread``) and the log-prob margin top-1 minus top-2 (``margin``).
* **Grid** (:data:`ARTIFACT_GRID`, what the shipped artifact carries): tolerances 1 and 2, accept_alpha 0.05 /
  0.10 / 0.20, quality gates at 3 and 4, delta 0.05, FIT = 20% of the documents, bins ordered by FIT error,
  the document-level ``betting`` bound (:mod:`calibration.decisions.risk_control`), seed 0.
* **Unit**: ``groups`` (documents) are the exchangeable unit of every bound; a caller without documents passes
  one group per item.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from calibration.decisions.fit import (
    DEFAULT_ALPHAS,
    DEFAULT_FIT_FRACTION,
    DEFAULT_GATES,
    DEFAULT_TOLERANCES,
    DecisionData,
    fit_decision_rule,
)
from calibration.decisions.rule import DecisionRule, feature_of

__all__ = [
    "ARTIFACT_GRID",
    "INPUT_KIND_FEATURES",
    "DecisionKind",
    "RuleGrid",
    "decision_input_kinds",
    "fit_cell_rules",
    "fit_kind_rule",
    "probability_signals",
]

INPUT_KIND_FEATURES: Mapping[str, str] = {"score": "score", "probabilities": "expected_score", "mean": "mean"}


@dataclass(frozen=True)
class RuleGrid:
    """The levels and settings a cell's rules are certified at (module rules)."""

    tolerances: tuple[int, ...] = DEFAULT_TOLERANCES
    alphas: tuple[float, ...] = DEFAULT_ALPHAS
    gates: tuple[int, ...] = DEFAULT_GATES
    delta: float = 0.05
    fit_fraction: float = DEFAULT_FIT_FRACTION
    signal: str = "fit_error"
    bound: str = "betting"


ARTIFACT_GRID = RuleGrid()


@dataclass(frozen=True)
class DecisionKind:
    """One input kind of a cell as decision inputs: the kind, the feature its rule bins, and the items."""

    kind: str
    feature: str
    data: DecisionData


def probability_signals(probabilities: np.ndarray) -> dict[str, np.ndarray]:
    """Per item: ``spread`` (std of the renormalised law over 1..K) and ``margin`` (log top-1 minus log top-2)."""
    normalised = probabilities / probabilities.sum(axis=1, keepdims=True)
    labels = np.arange(1, normalised.shape[1] + 1)
    mean = normalised @ labels
    spread = np.sqrt(np.maximum(normalised @ labels**2 - mean**2, 0.0))
    top = np.sort(normalised, axis=1)
    with np.errstate(divide="ignore"):
        margin = np.log(top[:, -1]) - np.log(np.maximum(top[:, -2], 1e-300))
    return {"spread": spread, "margin": margin}


def decision_input_kinds(
    labels: np.ndarray,
    judge_scores: np.ndarray,
    probabilities: np.ndarray | None,
    means: np.ndarray | None,
    groups: object,
    n_labels: int,
) -> list[DecisionKind]:
    """The cell's input kinds with their per-item features (module rules), in the order mean | score, probabilities."""
    labels, groups = np.asarray(labels), np.asarray(groups)
    kinds: list[tuple[str, np.ndarray, dict[str, np.ndarray] | None]] = []
    if means is not None:
        kinds.append(
            ("mean", np.array([feature_of("mean", score=None, probabilities=None, mean=float(m)) for m in means]), None)
        )
    else:
        kinds.append(
            (
                "score",
                np.array([feature_of("score", score=int(s), probabilities=None, mean=None) for s in judge_scores]),
                None,
            )
        )
        if probabilities is not None:
            values = np.array(
                [
                    feature_of("expected_score", score=None, probabilities=[float(p) for p in row], mean=None)
                    for row in probabilities
                ]
            )
            kinds.append(("probabilities", values, probability_signals(np.asarray(probabilities))))
    return [
        DecisionKind(
            kind=kind,
            feature=INPUT_KIND_FEATURES[kind],
            data=DecisionData(labels=labels, features=values, groups=groups, n_labels=n_labels, signals=signals),
        )
        for kind, values, signals in kinds
    ]


def fit_kind_rule(
    kind: DecisionKind,
    data: DecisionData,
    *,
    judge: str,
    prompt_family: str,
    criterion: str,
    grid: RuleGrid = ARTIFACT_GRID,
    seed: int = 0,
    uniform_seed: int | None = None,
) -> DecisionRule:
    """The rule of one (cell, kind) fitted on ``data`` (the kind's items or a subset of them) over ``grid``."""
    return fit_decision_rule(
        data,
        judge=judge,
        prompt_family=prompt_family,
        criterion=criterion,
        input_kind=kind.kind,
        feature=kind.feature,
        tolerances=grid.tolerances,
        alphas=grid.alphas,
        gates=grid.gates,
        delta=grid.delta,
        fit_fraction=grid.fit_fraction,
        signal=grid.signal,
        bound=grid.bound,
        seed=seed,
        uniform_seed=uniform_seed,
    )


def fit_cell_rules(
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
    grid: RuleGrid = ARTIFACT_GRID,
    seed: int = 0,
    uniform_seed: int | None = None,
) -> list[DecisionRule]:
    """One rule per input kind of the cell, fitted on all its items over ``grid`` (module rules); ``uniform_seed``
    seeds the expected rows' uniforms (default ``seed``)."""
    return [
        fit_kind_rule(
            kind,
            kind.data,
            judge=judge,
            prompt_family=prompt_family,
            criterion=criterion,
            grid=grid,
            seed=seed,
            uniform_seed=uniform_seed,
        )
        for kind in decision_input_kinds(labels, judge_scores, probabilities, means, groups, n_labels)
    ]
