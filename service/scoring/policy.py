"""The decision: what a pipeline does with a verdict, from the cell's certified rule (calibration.decisions.rule).

Every outcome has one documented action: ``accept`` (use ``point`` as the label), ``escalate`` (ask a human) or,
in a cascade, ``second_opinion`` (ask the next judge). The rule, in order (the first that fires decides):

=============================================================== =========== ==========================
condition                                                       decision    guarantees listed
=============================================================== =========== ==========================
no thresholds serve the verdict (uncalibrated)                  escalate    none
the cell's conformal method-selection rule failed (the default  escalate    none (``rule_failed``)
method is the fallback: no method met the rule)
no certified decision rule for the cell and the verdict's kinds escalate    set_coverage
the rule cannot read the verdict (feature missing)              escalate    set_coverage
quality-gate mode (``pass_threshold``): no gate row at that     escalate    set_coverage (``rule_failed``
threshold and level, or a failed gate (e.g. too few failing                 for a failed gate)
items)
  an empty set, a fail reading, a pass in an uncertified bin    escalate    set_coverage, quality_gate
  a pass in a certified bin                                     accept      set_coverage, quality_gate
no certification at (tolerance, accept_alpha), or a failed one  escalate    set_coverage (``rule_failed``
                                                                            for a failed one)
the prediction set is empty (the verdict is atypical)           escalate    set_coverage, accept_error
the verdict's bin is not certified                              escalate    set_coverage, accept_error
the verdict's bin is certified (``decide`` accepted)            accept      set_coverage, accept_error
=============================================================== =========== ==========================

``accept_error`` is listed whenever a (non-failed) certification row decided, accepted or not: it states the rate
among accepted verdicts that the decision was drawn under. A rule for a cell is looked up by the verdict's input
kinds in the verdict's own preference order (``probabilities`` before ``score``): a fixed order, never chosen by
the data, so each served rule keeps its own certificate. ``point`` is the rule's calibrated label; without a rule
it is the judge's own score (and the decision escalates). A prompt-injection flag escalates afterwards
(service.screening.injection).

Sets without holes: a conformal set with a hole ({2, 4}) is served as its interval hull ({2, 3, 4}): a superset, so
the coverage guarantee still holds, and on an ordinal scale a label between two plausible ones is plausible too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

import msgspec

from artifact.serving import interval_hull
from calibration.decisions.rule import DecisionRule, accept_promise, decide, feature_of, gate_at
from service.wire.score import Guarantee

__all__ = [
    "Decision",
    "DecisionPolicy",
    "PolicyDecision",
    "RuleKey",
    "escalate_for_injection",
    "find_rule",
    "full_scale",
    "interval_hull",
    "set_guarantee",
    "set_note",
]

Decision = Literal["accept", "escalate", "second_opinion"]
RuleKey = tuple[str, str, str, str]  # judge, prompt family, criterion, input kind


def full_scale(n_labels: int) -> tuple[int, ...]:
    """The whole label scale 1..n_labels: the set of an uncalibrated verdict."""
    return tuple(range(1, n_labels + 1))


def set_note(conformal: tuple[int, ...], served: tuple[int, ...], alpha: float) -> str:
    """The reason's words on the set: the served set, and the conformal set when its hull was served instead."""
    shown = "{" + ", ".join(map(str, served)) + "}"
    note = f"; the {1 - alpha:.0%} prediction set is {shown}"
    if conformal != served:
        holed = "{" + ", ".join(map(str, conformal)) + "}"
        note += f" (the interval hull of the conformal set {holed}, which has a hole; a superset, so still covered)"
    return note


def set_guarantee(alpha: float, delta: float | None) -> Guarantee:
    """The set-coverage guarantee of a served entry: level alpha; pac (confidence 1 - delta) for PAC thresholds,
    else expected."""
    if delta is None:
        return Guarantee(kind="set_coverage", alpha=alpha, mode="expected")
    return Guarantee(kind="set_coverage", alpha=alpha, mode="pac", confidence=round(1.0 - delta, 12))


def _row_guarantee(
    kind: Literal["accept_error", "quality_gate"],
    alpha: float,
    mode: str,
    delta: float | None,
    bound: float | None,
    *,
    tolerance: int | None = None,
    pass_threshold: int | None = None,
) -> Guarantee:
    """An accept or gate row's guarantee: pac rows carry their confidence and bound, expected rows neither."""
    if mode == "expected" or delta is None:
        return Guarantee(kind=kind, alpha=alpha, mode="expected", tolerance=tolerance, pass_threshold=pass_threshold)
    return Guarantee(
        kind=kind,
        alpha=alpha,
        mode="pac",
        confidence=round(1.0 - delta, 12),
        tolerance=tolerance,
        pass_threshold=pass_threshold,
        bound=bound,
    )


def find_rule(
    rules: Mapping[RuleKey, DecisionRule], cell: tuple[str, str, str], kinds: Sequence[str]
) -> DecisionRule | None:
    """The cell's rule for the first of the verdict's kinds (its preference order) that has one, or None."""
    for kind in kinds:
        rule = rules.get((*cell, kind))
        if rule is not None:
            return rule
    return None


class PolicyDecision(msgspec.Struct, frozen=True, kw_only=True):
    """The decision, the point, what is guaranteed, whether a rule failed, and why."""

    decision: Decision
    escalate: bool
    point: int
    guarantees: tuple[Guarantee, ...]
    rule_failed: bool
    reason: str


def _escalate(
    point: int, reason: str, guarantees: tuple[Guarantee, ...] = (), *, rule_failed: bool = False
) -> PolicyDecision:
    return PolicyDecision(
        decision="escalate", escalate=True, point=point, guarantees=guarantees, rule_failed=rule_failed, reason=reason
    )


class DecisionPolicy:
    """The service step over calibration.decisions.rule.decide (module table); stateless, one per app."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DecisionPolicy()"

    def uncalibrated(self, why: str, *, point: int) -> PolicyDecision:
        """The decision for a verdict without calibration: always escalate, with the reason."""
        return _escalate(
            point, f"not calibrated: {why}; no prediction set can be trusted, so the full scale is returned"
        )

    def decide(
        self,
        *,
        rule: DecisionRule | None,
        judge_score: int,
        probabilities: Sequence[float] | None,
        mean: float | None,
        coverage: Guarantee,
        prediction_set: Sequence[int],
        selection_failed: str | None,
        tolerance: int,
        accept_alpha: float,
        pass_threshold: int | None,
        no_rule: str,
        mode: str = "pac",
    ) -> PolicyDecision:
        """Apply the module table to a calibrated verdict (the set already served from the cell's entry), the rows of
        ``mode`` (calibration.decisions.rule.MODES) deciding."""
        point, decided, unreadable = judge_score, None, ""
        if rule is not None:
            try:
                value = feature_of(rule.feature, score=judge_score, probabilities=probabilities, mean=mean)
            except ValueError as error:
                unreadable = str(error)
            else:
                if math.isfinite(value):
                    decided = decide(rule, value, tolerance=tolerance, accept_alpha=accept_alpha, mode=mode)
                    point = decided.point
                else:
                    unreadable = f"the verdict's {rule.feature} is not finite"
        if selection_failed is not None:
            return _escalate(
                point,
                f"the cell's conformal rule failed: {selection_failed}; the set is shown but not "
                "guaranteed; ask a human",
                rule_failed=True,
            )
        covered = (coverage,)
        if rule is None:
            return _escalate(
                point,
                f"no certified decision rule: {no_rule}; the point is the judge's own score; ask a human",
                covered,
            )
        if decided is None:
            return _escalate(
                point, f"the cell's decision rule cannot read this verdict: {unreadable}; ask a human", covered
            )
        if pass_threshold is not None:
            return self._quality_gate(
                rule, decided.point, decided.bin_index, covered, prediction_set, pass_threshold, accept_alpha, mode
            )
        certification = decided.certification
        if certification is None or decided.rule_failed:
            return _escalate(point, decided.reason + "; ask a human", covered, rule_failed=decided.rule_failed)
        guarantees = (
            *covered,
            _row_guarantee(
                "accept_error",
                certification.accept_alpha,
                certification.mode,
                certification.delta,
                certification.certified_error,
                tolerance=certification.tolerance,
            ),
        )
        if not prediction_set:
            return _escalate(
                point,
                "the prediction set is empty: no label conforms, the verdict is atypical for "
                "this calibration; ask a human",
                guarantees,
            )
        if not decided.accepted:
            return _escalate(point, decided.reason.removesuffix(": escalate") + "; ask a human", guarantees)
        return PolicyDecision(
            decision="accept",
            escalate=False,
            point=point,
            guarantees=guarantees,
            rule_failed=False,
            reason=decided.reason,
        )

    def _quality_gate(
        self,
        rule: DecisionRule,
        point: int,
        bin_index: int,
        covered: tuple[Guarantee, ...],
        prediction_set: Sequence[int],
        pass_threshold: int,
        accept_alpha: float,
        mode: str,
    ) -> PolicyDecision:
        """Quality-gate mode: accept only a pass the gate certifies; everything else escalates, saying why."""
        gate = gate_at(rule, pass_threshold, accept_alpha, mode)
        if gate is None:
            levels = sorted(
                {g.accept_alpha for g in rule.quality_gates if g.pass_threshold == pass_threshold and g.mode == mode}
            )
            thresholds = sorted({g.pass_threshold for g in rule.quality_gates})
            known = (
                f" (calibrated at accept_alpha {', '.join(f'{a:g}' for a in levels)})"
                if levels
                else f" (calibrated pass thresholds: {', '.join(map(str, thresholds)) or 'none'})"
            )
            return _escalate(
                point,
                f"no quality gate certified at pass_threshold {pass_threshold} and accept_alpha "
                f"<= {accept_alpha:g} ({mode}){known}; ask a human",
                covered,
            )
        if gate.rule_failed:
            return _escalate(
                point,
                f"the quality gate at pass_threshold {pass_threshold} could not be certified: "
                f"{gate.reason or 'no reason recorded'} ({gate.n_failing_items} failing items in "
                f"{gate.n_groups} documents); ask a human",
                covered,
                rule_failed=True,
            )
        guarantees = (
            *covered,
            _row_guarantee(
                "quality_gate",
                gate.accept_alpha,
                gate.mode,
                gate.delta,
                gate.certified_false_pass,
                pass_threshold=pass_threshold,
            ),
        )
        if not prediction_set:
            return _escalate(
                point,
                "the prediction set is empty: no label conforms, the verdict is atypical for "
                "this calibration; ask a human",
                guarantees,
            )
        if point < pass_threshold:
            return _escalate(
                point,
                f"a fail reading (point {point} < pass_threshold {pass_threshold}): the gate "
                "certifies passes only; ask a human",
                guarantees,
            )
        if bin_index not in gate.pass_bins:
            return _escalate(
                point,
                f"a pass reading (point {point} >= {pass_threshold}) in a bin the gate does not "
                f"certify at accept_alpha {gate.accept_alpha:g}; ask a human",
                guarantees,
            )
        promise = accept_promise(gate.mode, gate.certified_false_pass, gate.accept_alpha, gate.delta)
        return PolicyDecision(
            decision="accept",
            escalate=False,
            point=point,
            guarantees=guarantees,
            rule_failed=False,
            reason=f"pass accepted (point {point} >= {pass_threshold}): the share of accepted passes humans would "
            f"fail is {promise}",
        )


def escalate_for_injection(decision: PolicyDecision, findings: list[str]) -> PolicyDecision:
    """``decision`` turned into ``escalate``, its reason saying which texts tripped which rules
    (``service.screening.injection.screen_texts`` findings)."""
    return msgspec.structs.replace(
        decision,
        decision="escalate",
        escalate=True,
        reason=f"{decision.reason}; escalated: possible prompt injection in the judged text ({', '.join(findings)})",
    )
