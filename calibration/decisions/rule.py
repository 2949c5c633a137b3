"""Certified decisions: the artifact's per-cell decision rule and the one function that applies it.

A cell (judge x prompt family x criterion x input kind) carries a ``DecisionRule``: a scalar feature of the verdict
(the judge's integer score, the expected score under its renormalised log-probs, or a mean of samples), bins over
that feature, the calibrated point label of each bin (the most likely human label given the bin, fitted on
calibration documents), and ``Certification`` rows, one per (tolerance, accept_alpha) of the offline grid: the bins
whose verdicts may be accepted, with an upper confidence bound on the error rate among accepted verdicts

    P(|human - point| >= tolerance | accepted) <= accept_alpha,  with probability >= 1 - delta over calibration
    documents (documents, not items, are the exchangeable unit)                         (mode "pac"),

or, in mode ``"expected"`` (:mod:`calibration.decisions.selective_risk`), on average over the calibration documents: the
error rate among accepted verdicts on new documents is <= accept_alpha (a calibration that accepts nothing counts
as zero error). Every row names its ``mode`` (``MODES``); an expected row has ``delta`` None and no certified
bound, but the evidence of its test (drawn items in the region, errors, acceptance probability, the uniform).

``QualityGate`` rows certify a pass/fail reading instead: a verdict whose point is >= ``pass_threshold`` may be
accepted as a pass only in ``pass_bins``, where P(human < pass_threshold | accepted pass) <= accept_alpha.

Serving (``decide``) is a pure look-up: feature -> bin (``bisect_right`` over ``bin_edges``: bin k holds
edges[k-1] <= x < edges[k]) -> point; the certification used is the one with the requested tolerance and the
largest calibrated accept_alpha <= the requested one in the requested mode (:mod:`calibration.levels`, the
conservative side, as for the conformal level). No such row, or a row whose rule failed, gives ``accepted =
False`` with the reason. ``decide_gate`` is the same look-up for a quality gate (pass threshold, largest
calibrated accept_alpha <= the requested one, same mode).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

import msgspec

from calibration.levels import LEVEL_TOLERANCE, same_level, served_level

__all__ = [
    "accept_promise",
    "FEATURES",
    "MODES",
    "Certification",
    "CertifiedDecision",
    "DecisionRule",
    "LabelRow",
    "QualityGate",
    "SelectiveEvidence",
    "certification_at",
    "gate_at",
    "GateDecision",
    "decide",
    "decide_gate",
    "feature_of",
    "validate_rule",
]

# Which scalar of a verdict a rule bins: "score" (integer judge score), "expected_score" (sum_k k * p_k over the
# renormalised probabilities of 1..K), "mean" (a mean of sampled scores).
FEATURES: tuple[str, ...] = ("score", "expected_score", "mean")
# The two guarantees: "expected" (on average over the calibration documents) and "pac" (w.p. >= 1 - delta).
MODES: tuple[str, ...] = ("expected", "pac")


class SelectiveEvidence(msgspec.Struct, frozen=True, kw_only=True):
    """An expected row's test (calibration.decisions.selective_risk): the tested region, one drawn item per CERTIFY
    document, how many fell in the region, errors among them, the acceptance probability and the uniform."""

    tested_bins: list[int]
    n_drawn: int
    n_in_region: int
    n_errors: int
    acceptance_probability: float
    uniform: float
    seed: int  # the uniform's seed (calibration.decisions.selective_risk.row_uniform)


class Certification(msgspec.Struct, frozen=True, kw_only=True):
    """One (tolerance, accept_alpha) of a rule: accepted bins and the certified bound on error among accepted."""

    tolerance: int  # an error is |human - point| >= tolerance labels (1 = exact match required)
    accept_alpha: float
    delta: float | None  # pac: the bound holds with probability >= 1 - delta over calibration documents
    accepted_bins: list[int]  # bin indices whose verdicts are accepted
    certified_error: float | None  # upper confidence bound on the error among accepted (None: nothing accepted)
    rule_failed: bool = False  # the certification could not be made (too few documents, no bin certified...)
    reason: str = ""
    n_groups: int = 0  # calibration documents used for the bound
    n_items: int = 0
    accept_share: float | None = None  # share of calibration items in accepted bins
    # which upper bound certified the row (calibration.decisions.risk_control.BOUNDS; "betting" is group-valid); ""
    # unknown; "selective_test" for an expected row
    bound: str = ""
    mode: str = "pac"  # one of MODES (rows written before modes existed are pac)
    test: SelectiveEvidence | None = None  # expected rows: the test of the region


class QualityGate(msgspec.Struct, frozen=True, kw_only=True):
    """Pass/fail reading at ``pass_threshold``: bins where a pass is certified, bound on false passes."""

    pass_threshold: int  # pass iff label >= pass_threshold
    accept_alpha: float
    delta: float | None  # None in expected rows
    pass_bins: list[int]
    certified_false_pass: float | None  # upper bound on P(human < pass_threshold | accepted pass)
    rule_failed: bool = False
    reason: str = ""
    n_groups: int = 0
    n_failing_items: int = 0  # calibration items humans would fail (the evidence the bound rests on)
    bound: str = ""  # as Certification.bound
    mode: str = "pac"
    test: SelectiveEvidence | None = None


class LabelRow(msgspec.Struct, frozen=True, kw_only=True):
    """Per-human-label evidence of a rule, never pooled: count, accept share and error among accepted."""

    label: int
    n_items: int
    n_groups: int
    tolerance: int
    accept_alpha: float
    accept_share: float | None
    error_among_accepted: float | None
    certifiable: bool  # False: too few items of this label to say anything (listed, never pooled away)
    mode: str = "pac"


class DecisionRule(msgspec.Struct, frozen=True, kw_only=True):
    """The decision rule of one cell and input kind."""

    judge: str
    prompt_family: str
    criterion: str
    input_kind: str  # score | probabilities | mean (calibration.input_kinds.verdicts)
    feature: str  # one of FEATURES
    n_labels: int
    bin_edges: list[float]  # ascending cut points; len(points) == len(bin_edges) + 1
    points: list[int]  # calibrated point label per bin
    certifications: list[Certification] = []
    quality_gates: list[QualityGate] = []
    per_label: list[LabelRow] = []
    signal: str = ""  # what orders the bins for the fixed-sequence test, in words


class CertifiedDecision(msgspec.Struct, frozen=True, kw_only=True):
    """What ``decide`` returns: the point, whether it is accepted, the certification used and why."""

    point: int
    bin_index: int
    accepted: bool
    certification: Certification | None
    rule_failed: bool
    reason: str


def feature_of(feature: str, *, score: int | None, probabilities: Sequence[float] | None, mean: float | None) -> float:
    """The rule's scalar feature of a verdict; ValueError when the verdict lacks what the feature needs."""
    if feature == "score":
        if score is None:
            raise ValueError("this rule needs the judge's integer score")
        return float(score)
    if feature == "expected_score":
        if probabilities is None:
            raise ValueError("this rule needs the judge's probabilities over the labels")
        total = math.fsum(probabilities)
        if not total > 0:
            raise ValueError("the probabilities sum to zero")
        return math.fsum((k + 1) * p for k, p in enumerate(probabilities)) / total
    if feature == "mean":
        if mean is None:
            raise ValueError("this rule needs mean_of_samples")
        return float(mean)
    raise ValueError(f"unknown feature {feature!r}; known: {', '.join(FEATURES)}")


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"unknown guarantee mode {mode!r}; known: {', '.join(MODES)}")


def certification_at(
    rule: DecisionRule, tolerance: int, accept_alpha: float, mode: str = "pac"
) -> Certification | None:
    """The row ``decide`` uses: at ``tolerance`` and ``mode``, the largest calibrated accept_alpha <= the asked
    one (calibration.levels); else None."""
    _check_mode(mode)
    rows = [c for c in rule.certifications if c.tolerance == tolerance and c.mode == mode]
    level = served_level((c.accept_alpha for c in rows), accept_alpha)
    return None if level is None else next(c for c in rows if same_level(c.accept_alpha, level))


def gate_at(rule: DecisionRule, pass_threshold: int, accept_alpha: float, mode: str = "pac") -> QualityGate | None:
    """The gate ``decide_gate`` uses: at ``pass_threshold`` and ``mode``, the largest calibrated accept_alpha
    <= the asked one; else None."""
    _check_mode(mode)
    rows = [g for g in rule.quality_gates if g.pass_threshold == pass_threshold and g.mode == mode]
    level = served_level((g.accept_alpha for g in rows), accept_alpha)
    return None if level is None else next(g for g in rows if same_level(g.accept_alpha, level))


def accept_promise(mode: str, bound: float | None, alpha: float, delta: float | None) -> str:
    """The accepted row's promise in words."""
    if mode == "expected":
        return f"at most {alpha:g} on average over calibrations (new documents)"
    return f"at most {bound:.3f} (<= {alpha:g}) with confidence {1 - (delta or 0.0):g}"


def decide(
    rule: DecisionRule, feature_value: float, *, tolerance: int, accept_alpha: float, mode: str = "pac"
) -> CertifiedDecision:
    """Bin the feature, read the point, accept iff the bin is accepted by the row at (tolerance, mode, largest
    calibrated accept_alpha <= asked)."""
    index = bisect.bisect_right(rule.bin_edges, feature_value)
    point = rule.points[index]
    certification = certification_at(rule, tolerance, accept_alpha, mode)
    if certification is None:
        levels = sorted({c.accept_alpha for c in rule.certifications if c.tolerance == tolerance and c.mode == mode})
        reason = (
            f"no certification at tolerance {tolerance} and accept_alpha <= {accept_alpha:g}"
            + (f" (calibrated: {', '.join(f'{a:g}' for a in levels)})" if levels else "")
            + f" in {mode} mode"
        )
        return CertifiedDecision(
            point=point, bin_index=index, accepted=False, certification=None, rule_failed=False, reason=reason
        )
    if certification.rule_failed:
        return CertifiedDecision(
            point=point,
            bin_index=index,
            accepted=False,
            certification=certification,
            rule_failed=True,
            reason=f"the certification failed: {certification.reason}",
        )
    accepted = index in certification.accepted_bins
    if accepted:
        reason = (
            f"point {point} accepted: the share of accepted verdicts with |human - point| >= {tolerance} is "
            + accept_promise(mode, certification.certified_error, certification.accept_alpha, certification.delta)
        )
    else:
        reason = (
            f"this verdict's bin is not certified at tolerance {tolerance}, accept_alpha "
            f"{certification.accept_alpha:g} ({mode}): escalate"
        )
    return CertifiedDecision(
        point=point, bin_index=index, accepted=accepted, certification=certification, rule_failed=False, reason=reason
    )


class GateDecision(msgspec.Struct, frozen=True, kw_only=True):
    """What ``decide_gate`` returns: the point, whether a pass is certified, the gate row used and why."""

    point: int
    bin_index: int
    passed: bool  # True: accept as a pass; False: escalate (a fail is never certified by a gate)
    gate: QualityGate | None
    rule_failed: bool
    reason: str


def decide_gate(
    rule: DecisionRule, feature_value: float, *, pass_threshold: int, accept_alpha: float, mode: str = "pac"
) -> GateDecision:
    """Quality-gate look-up: pass iff the bin is a pass bin of the gate at ``pass_threshold`` and ``mode`` with
    the largest calibrated accept_alpha <= the requested one; no such gate, or a failed one, escalates."""
    index = bisect.bisect_right(rule.bin_edges, feature_value)
    point = rule.points[index]
    gate = gate_at(rule, pass_threshold, accept_alpha, mode)
    if gate is None:
        return GateDecision(
            point=point,
            bin_index=index,
            passed=False,
            gate=None,
            rule_failed=False,
            reason=f"no quality gate at pass threshold {pass_threshold} and accept_alpha <= {accept_alpha:g} ({mode})",
        )
    if gate.rule_failed:
        return GateDecision(
            point=point,
            bin_index=index,
            passed=False,
            gate=gate,
            rule_failed=True,
            reason=f"the quality gate failed: {gate.reason}",
        )
    if index in gate.pass_bins:
        return GateDecision(
            point=point,
            bin_index=index,
            passed=True,
            gate=gate,
            rule_failed=False,
            reason=f"pass (>= {pass_threshold}) accepted: the share of accepted passes humans would fail is "
            + accept_promise(mode, gate.certified_false_pass, gate.accept_alpha, gate.delta),
        )
    return GateDecision(
        point=point,
        bin_index=index,
        passed=False,
        gate=gate,
        rule_failed=False,
        reason=f"no accepted pass at threshold {pass_threshold}, accept_alpha {gate.accept_alpha:g} ({mode}): escalate",
    )


def validate_rule(rule: DecisionRule) -> None:
    """ValueError naming the first inconsistency of a rule (bins, points, certified rows)."""
    if rule.feature not in FEATURES:
        raise ValueError(f"feature {rule.feature!r} is not one of {', '.join(FEATURES)}")
    if rule.n_labels < 2:
        raise ValueError(f"n_labels {rule.n_labels} must be at least 2")
    if len(rule.points) != len(rule.bin_edges) + 1:
        raise ValueError(f"{len(rule.points)} points for {len(rule.bin_edges)} bin edges (need edges + 1)")
    if any(not math.isfinite(e) for e in rule.bin_edges) or any(
        b <= a for a, b in zip(rule.bin_edges, rule.bin_edges[1:], strict=False)
    ):
        raise ValueError("bin_edges must be finite and strictly ascending")
    if any(not 1 <= p <= rule.n_labels for p in rule.points):
        raise ValueError(f"points must lie in 1..{rule.n_labels}")
    _check_certifications(rule.certifications, len(rule.points))
    _check_quality_gates(rule.quality_gates, len(rule.points))


def _check_certifications(certifications: Sequence[Certification], n_bins: int) -> None:
    """ValueError for a certified row with a level outside (0, 1), a bin outside 0..n_bins-1 or uncertified bins."""
    for row in certifications:
        where = f"certification {row.tolerance}/{row.accept_alpha}/{row.mode}"
        _check_row_mode(where, row.mode, row.delta, row.test, bool(row.accepted_bins))
        if not 0 < row.accept_alpha < 1 or row.tolerance < 1:
            raise ValueError(f"{where}: tolerance >= 1, alpha in (0,1)")
        if any(not 0 <= b < n_bins for b in row.accepted_bins):
            raise ValueError(f"{where}: accepted bin outside 0..{n_bins - 1}")
        if (
            row.mode == "pac"
            and row.accepted_bins
            and (
                row.rule_failed
                or row.certified_error is None
                or row.certified_error > row.accept_alpha + LEVEL_TOLERANCE
            )
        ):
            raise ValueError(
                f"certification {row.tolerance}/{row.accept_alpha}: accepted bins need a certified "
                "error <= accept_alpha and a rule that did not fail"
            )


def _check_quality_gates(gates: Sequence[QualityGate], n_bins: int) -> None:
    """ValueError for a quality gate with a bin outside 0..n_bins-1 or pass bins without a certified rate."""
    for gate in gates:
        _check_row_mode(f"quality gate {gate.pass_threshold}", gate.mode, gate.delta, gate.test, bool(gate.pass_bins))
        if any(not 0 <= b < n_bins for b in gate.pass_bins):
            raise ValueError(f"quality gate {gate.pass_threshold}: pass bin outside 0..{n_bins - 1}")
        if (
            gate.mode == "pac"
            and gate.pass_bins
            and (
                gate.rule_failed
                or gate.certified_false_pass is None
                or gate.certified_false_pass > gate.accept_alpha + LEVEL_TOLERANCE
            )
        ):
            raise ValueError(
                f"quality gate {gate.pass_threshold}: pass bins need a certified false-pass rate "
                "<= accept_alpha and a rule that did not fail"
            )


def _check_row_mode(where: str, mode: str, delta: float | None, test: SelectiveEvidence | None, accepts: bool) -> None:
    """ValueError unless a pac row has delta in (0, 1) and an expected row has no delta and, when it accepts, a
    test whose uniform fell below its acceptance probability."""
    if mode not in MODES:
        raise ValueError(f"{where}: mode {mode!r} is not one of {', '.join(MODES)}")
    if mode == "pac" and (delta is None or not 0 < delta < 1):
        raise ValueError(f"{where}: a pac row needs delta in (0, 1)")
    if mode == "expected":
        if delta is not None:
            raise ValueError(f"{where}: an expected row has no delta")
        if accepts and (test is None or not test.uniform < test.acceptance_probability):
            raise ValueError(f"{where}: accepted bins need a passed selective test")
