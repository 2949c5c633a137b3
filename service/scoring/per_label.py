"""Scoring step for the ``per_label`` guarantee: the cell's per-label rule answers the set, the point and the decision
in one call (:func:`calibration.per_label.rule.answer_per_label`).

Rules: the rule is the cell's for the first of the verdict's input kinds that has one (their preference order, as
for the certified rules); its feature is computed as the rule was fitted
(:func:`calibration.decisions.rule.feature_of`).
The answer lists the ``set_coverage`` guarantee at the served level and, when the judge passed the skill test, the
``accept_error`` (or ``quality_gate``) guarantee at the served accept level, each in mode ``per_label`` naming the
pooled label groups. A cell without a per-label rule (an artifact fitted before the mode existed, or a cell such as
a panel or faithfulness that has none) is not served here: the caller serves the expected-mode set and escalates,
saying so (:func:`without_label_rule`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import msgspec

from calibration.decisions.rule import feature_of
from calibration.per_label.rule import LabelAnswer, LabelAsk, LabelRule, answer_per_label, pooled_groups
from service.artifacts.snapshot import CalibrationSnapshot
from service.scoring.cell_decision import DecisionAsk
from service.scoring.policy import PolicyDecision
from service.scoring.resolve import Plan
from service.scoring.sets import ServedSet
from service.scoring.verdict import Verdict
from service.wire.score import Guarantee

__all__ = ["PER_LABEL_METHOD", "find_label_rule", "per_label_step", "without_label_rule"]

PER_LABEL_METHOD = "per_label_intervals"


def find_label_rule(
    rules: Mapping[tuple[str, str, str, str], LabelRule], cell: tuple[str, str, str], kinds: Sequence[str]
) -> LabelRule | None:
    """The cell's per-label rule for the first of the verdict's kinds that has one, or None."""
    for kind in kinds:
        rule = rules.get((*cell, kind))
        if rule is not None:
            return rule
    return None


def _guarantees(rule: LabelRule, answer: LabelAnswer, ask: DecisionAsk) -> tuple[Guarantee, ...]:
    pooled = pooled_groups(rule) or None
    found = []
    if answer.alpha is not None:
        found.append(Guarantee(kind="set_coverage", alpha=answer.alpha, mode="per_label", pooled_labels=pooled))
    if answer.accept_alpha is not None and answer.skilled:
        if ask.pass_threshold is not None:
            found.append(
                Guarantee(
                    kind="quality_gate",
                    alpha=answer.accept_alpha,
                    mode="per_label",
                    pass_threshold=ask.pass_threshold,
                    pooled_labels=pooled,
                )
            )
        else:
            found.append(
                Guarantee(
                    kind="accept_error",
                    alpha=answer.accept_alpha,
                    mode="per_label",
                    tolerance=ask.tolerance,
                    pooled_labels=pooled,
                )
            )
    return tuple(found)


def per_label_step(
    snapshot: CalibrationSnapshot, plan: Plan, verdict: Verdict, ask: DecisionAsk
) -> tuple[ServedSet, PolicyDecision] | None:
    """The served set and decision of a verdict under the cell's per-label rule, or None when the cell has none
    (module rules)."""
    rule = find_label_rule(snapshot.label_rules, plan.cell, verdict.kinds) if plan.calibrated_cell else None
    if rule is None:
        return None
    try:
        feature = feature_of(
            rule.feature, score=verdict.judge_score, probabilities=verdict.probabilities, mean=verdict.mean
        )
    except ValueError:
        return None
    if not math.isfinite(feature):
        return None
    answer = answer_per_label(
        rule,
        feature,
        LabelAsk(
            alpha=plan.alpha, tolerance=ask.tolerance, accept_alpha=ask.accept_alpha, pass_threshold=ask.pass_threshold
        ),
    )
    pooled = pooled_groups(rule)
    words = "; labels " + ", ".join("-".join(map(str, (g[0], g[-1]))) for g in pooled) + " pooled (too few calibration "
    note = (words + "items of their own: their promise holds for each group together)") if pooled else ""
    if answer.alpha is not None and answer.alpha != plan.alpha:
        note += f"; served at the calibrated level {answer.alpha:g} <= the asked {plan.alpha:g}"
    served = ServedSet(
        labels=answer.prediction_set,
        entry=None,
        kind=rule.input_kind,
        method=PER_LABEL_METHOD,
        alpha=plan.alpha if answer.alpha is None else answer.alpha,
        note=note,
        label_rule=rule,
    )
    decision = PolicyDecision(
        decision="accept" if answer.accepted else "escalate",
        escalate=not answer.accepted,
        point=answer.point,
        guarantees=_guarantees(rule, answer, ask),
        rule_failed=False,
        reason=answer.reason + ("" if answer.accepted else "; ask a human") + note,
    )
    return served, decision


def without_label_rule(decision: PolicyDecision) -> PolicyDecision:
    """An expected-mode decision served because the cell has no per-label rule: escalate, saying so."""
    return msgspec.structs.replace(
        decision,
        decision="escalate",
        escalate=True,
        reason="this cell has no per-label calibration (recalibrate it to get the per-label guarantee): its set is "
        "served with the expected guarantee, all labels together; ask a human; " + decision.reason,
    )
