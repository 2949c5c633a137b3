"""Certified decisions of a fixed artifact checked on labelled data.

Per (judge, prompt family, criterion, input kind) with a rule whose kind the items carry, every item is served by
:func:`calibration.decisions.rule.decide` on :func:`calibration.decisions.rule.feature_of` of its verdict, at every
(tolerance, accept_alpha) row of the rule and every quality gate (:func:`calibration.decisions.rule.decide_gate`);
the rules are stated in :mod:`offline.validation.artifact`. Errors among accepted carry the exact 95% interval of
:func:`calibration.estimates.intervals.clopper_pearson`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np

from artifact.thresholds import ThresholdsArtifact
from calibration.decisions.rule import DecisionRule, decide, decide_gate, feature_of
from calibration.estimates.intervals import clopper_pearson
from offline.build.cell_data import JudgeCriterionData

__all__ = [
    "DecisionCheck",
    "DecisionLabel",
    "check_decisions",
]


class DecisionLabel(msgspec.Struct, frozen=True, kw_only=True):
    """One human label of a decision check: items, accepted, errors among accepted."""

    label: int
    n: int
    accepted: int
    errors: int


class DecisionCheck(msgspec.Struct, frozen=True, kw_only=True):
    """One certified-decision row of the artifact checked on labelled items (a certification or a quality gate)."""

    judge: str
    prompt_family: str
    criterion: str
    input_kind: str
    kind: str  # "accept" (tolerance row) | "gate" (quality gate row)
    tolerance: int | None
    pass_threshold: int | None
    accept_alpha: float
    rule_failed: bool
    certified: float | None  # the artifact's certified error (or false-pass) bound
    n: int
    accept_share: float
    error_among_accepted: float | None
    ci_low: float | None
    ci_high: float | None
    above_alpha: bool  # observed error among accepted > accept_alpha
    by_label: list[DecisionLabel]
    mode: str = "pac"  # the row's guarantee mode (calibration.decisions.rule.MODES): each row decided in its own mode


def _features(rule: DecisionRule, data: JudgeCriterionData) -> np.ndarray | None:
    """The rule's feature of every item, as the service computes it; None when the items lack the rule's kind."""
    if rule.input_kind == "probabilities" and data.probabilities is None:
        return None
    if rule.input_kind == "mean" and data.means is None:
        return None
    if rule.input_kind == "score" and data.means is not None:
        return None
    values = []
    for position in range(data.labels.size):
        probabilities = None if data.probabilities is None else [float(p) for p in data.probabilities[position]]
        values.append(
            feature_of(
                rule.feature,
                score=int(data.judge_scores[position]),
                probabilities=probabilities,
                mean=None if data.means is None else float(data.means[position]),
            )
        )
    return np.asarray(values)


def _check(
    base: dict, accepted: np.ndarray, bad: np.ndarray, labels: np.ndarray, n_labels: int, alpha: float, **row: Any
) -> DecisionCheck:
    taken = int(accepted.sum())
    errors = int((bad & accepted).sum())
    low, high = clopper_pearson(errors, taken, 0.05) if taken else (None, None)
    by_label = [
        DecisionLabel(
            label=k,
            n=int((labels == k).sum()),
            accepted=int((accepted & (labels == k)).sum()),
            errors=int((accepted & bad & (labels == k)).sum()),
        )
        for k in range(1, n_labels + 1)
    ]
    error = errors / taken if taken else None
    return DecisionCheck(
        **base,
        **row,
        accept_alpha=alpha,
        n=int(labels.size),
        accept_share=taken / labels.size,
        error_among_accepted=error,
        ci_low=low,
        ci_high=high,
        above_alpha=error is not None and error > alpha + 1e-12,
        by_label=by_label,
    )


def check_decisions(artifact: ThresholdsArtifact, datasets: Sequence[JudgeCriterionData]) -> list[DecisionCheck]:
    """Every decision rule of the artifact whose cell the labelled items hold, checked row by row (module rules)."""
    by_cell = {(d.judge, d.prompt_family, d.criterion): d for d in datasets}
    checks = []
    for rule in artifact.decision_rules:
        data = by_cell.get((rule.judge, rule.prompt_family, rule.criterion))
        features = None if data is None or data.labels.size == 0 else _features(rule, data)
        if data is None or features is None:
            continue
        labels = np.asarray(data.labels)
        base = dict(
            judge=rule.judge, prompt_family=rule.prompt_family, criterion=rule.criterion, input_kind=rule.input_kind
        )
        for row in rule.certifications:
            outcomes = [
                decide(rule, float(x), tolerance=row.tolerance, accept_alpha=row.accept_alpha, mode=row.mode)
                for x in features
            ]
            accepted = np.array([o.accepted for o in outcomes])
            bad = np.abs(labels - np.array([o.point for o in outcomes])) >= row.tolerance
            checks.append(
                _check(
                    base,
                    accepted,
                    bad,
                    labels,
                    rule.n_labels,
                    row.accept_alpha,
                    kind="accept",
                    tolerance=row.tolerance,
                    pass_threshold=None,
                    rule_failed=row.rule_failed,
                    certified=row.certified_error,
                    mode=row.mode,
                )
            )
        for gate in rule.quality_gates:
            accepted = np.array(
                [
                    decide_gate(
                        rule,
                        float(x),
                        pass_threshold=gate.pass_threshold,
                        accept_alpha=gate.accept_alpha,
                        mode=gate.mode,
                    ).passed
                    for x in features
                ],
                dtype=bool,
            )
            checks.append(
                _check(
                    base,
                    accepted,
                    labels < gate.pass_threshold,
                    labels,
                    rule.n_labels,
                    gate.accept_alpha,
                    kind="gate",
                    tolerance=None,
                    pass_threshold=gate.pass_threshold,
                    rule_failed=gate.rule_failed,
                    certified=gate.certified_false_pass,
                    mode=gate.mode,
                )
            )
    return checks
