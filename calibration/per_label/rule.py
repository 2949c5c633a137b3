"""The ``per_label`` rule of one cell and input kind, and the one function that answers a verdict with it.

Rules, stated once (K labels; the levels of :func:`calibration.levels.served_level`: a request's level is served at
the largest calibrated level <= the asked one):

* **Set**: the labels of :func:`calibration.per_label.intervals.label_set` at the served ``alpha``.
* **Decision set**: the same at the served ``accept_alpha``; the accept and the gate read it.
* **Point**: the middle of the decision set [low, high]; when (low + high) / 2 is a half-integer, the lower of the
  two middle labels when the feature is below that middle, else the upper; then clipped into the served set (it
  already lies there when alpha <= accept_alpha). The point never decreases as the feature rises, and it always
  lies in the served set.
* **Skill first**: a rule whose judge failed the skill test (:mod:`calibration.per_label.skill`) accepts and passes
  nothing ("the judge adds no information over the label distribution here"); its sets are still served.
* **Accept** at ``tolerance`` t: every label of the decision set is within t - 1 of the point. An accepted verdict
  whose human label y is t or more away from the point has y outside the decision set, so for every label y the
  share of label-y items accepted with a wrong point is at most the set's miscoverage of y: <= accept_alpha.
* **Quality gate** at ``pass_threshold`` tau: pass iff every label of the decision set is >= tau. An item whose human
  label y < tau passes only when y is outside the set: for every label below tau at most accept_alpha of its items
  pass, whatever the labels' mix.
* **Evidence for the verdict**: a feature whose rounded label (half up, clipped to 1..K) holds fewer than
  ``MIN_FEATURE_ITEMS`` calibration items is never accepted or passed: verdicts like it were too rarely seen.
* A pooled label (:mod:`calibration.per_label.support`) keeps these promises for its group taken together.
"""

from __future__ import annotations

import math

import msgspec

from calibration.levels import same_level, served_level
from calibration.per_label.intervals import LabelIntervals, label_set
from calibration.per_label.skill import NO_SKILL_WORDS, SkillTest

__all__ = [
    "MIN_FEATURE_ITEMS",
    "FEATURE_OF_KIND",
    "feature_bin",
    "LabelAnswer",
    "LabelAsk",
    "LabelRule",
    "LabelSummary",
    "RuleSummary",
    "answer_per_label",
    "pooled_groups",
    "validate_label_rule",
]

FEATURE_OF_KIND = {"score": "score", "probabilities": "expected_score", "mean": "mean"}
MIN_FEATURE_ITEMS = 20


def feature_bin(feature: float, n_labels: int) -> int:
    """The feature rounded half up to a label, clipped to 1..n_labels."""
    return int(min(max(math.floor(feature + 0.5), 1), n_labels))


class LabelSummary(msgspec.Struct, frozen=True, kw_only=True):
    """One human label on the file, held out."""

    label: int
    n_items: int
    coverage: float | None
    accept_share: float | None
    wrongly_accepted: float | None


class RuleSummary(msgspec.Struct, frozen=True, kw_only=True):
    """A rule's figures on its calibration file (module rules)."""

    held_out: bool
    folds: int
    alpha: float
    tolerance: int
    set_size: float
    accept_share: float
    labels: list[LabelSummary]
    # the rule fitted on the whole file answering the file's own verdicts: exactly what /v1/score serves for them
    served_set_size: float = 0.0
    served_accept_share: float = 0.0


class LabelRule(msgspec.Struct, frozen=True, kw_only=True):
    """The per-label rule of one (judge, prompt family, criterion, input kind)."""

    judge: str
    prompt_family: str
    criterion: str
    input_kind: str  # score | probabilities | mean (calibration.input_kinds.verdicts)
    feature: str  # calibration.decisions.rule.FEATURES
    n_labels: int
    levels: list[LabelIntervals]  # ascending alpha
    groups: list[list[int]]  # label y's evidence group at index y - 1 (calibration.per_label.support)
    supported: list[bool]  # whether label y's group has any evidence (False: always in the set)
    label_items: list[int]  # calibration items per human label
    n_items: int
    n_documents: int
    feature_items: list[int]  # calibration items per rounded feature (feature_bin) 1..K
    skill: SkillTest
    summary: RuleSummary | None = None  # held-out figures on the calibration file (calibration.per_label.summary)


class LabelAsk(msgspec.Struct, frozen=True, kw_only=True):
    """What a request asks: the set's level, and the decision's tolerance, level and optional pass threshold."""

    alpha: float
    tolerance: int
    accept_alpha: float
    pass_threshold: int | None = None


class LabelAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """The rule's answer to one verdict: the set, the point, accepted or not and why."""

    prediction_set: tuple[int, ...]
    alpha: float | None  # the served set level (None: no calibrated level <= the asked one; the full scale)
    point: int
    accept_alpha: float | None  # the served decision level (None: none <= the asked one)
    accepted: bool
    skilled: bool
    reason: str


def pooled_groups(rule: LabelRule) -> list[list[int]]:
    """The evidence groups that pool several labels (each once), for the answer's words and guarantees."""
    seen: list[list[int]] = []
    for label, group in enumerate(rule.groups, start=1):
        if group != [label] and group not in seen:
            seen.append(group)
    return seen


def _level(rule: LabelRule, asked: float) -> LabelIntervals | None:
    level = served_level((row.alpha for row in rule.levels), asked)
    return None if level is None else next(row for row in rule.levels if same_level(row.alpha, level))


def _middle(low: int, high: int, feature: float) -> int:
    middle = (low + high) / 2
    if middle == math.floor(middle):
        return int(middle)
    return int(math.floor(middle)) if feature < middle else int(math.ceil(middle))


def _span(low: int, high: int) -> str:
    return "{" + ", ".join(map(str, range(low, high + 1))) + "}"


def answer_per_label(rule: LabelRule, feature: float, ask: LabelAsk) -> LabelAnswer:
    """The set, point and decision of one verdict's feature under ``rule`` (module rules)."""
    set_row = _level(rule, ask.alpha)
    low_s, high_s = (1, rule.n_labels) if set_row is None else label_set(set_row, feature)
    labels = tuple(range(low_s, high_s + 1))
    decision_row = _level(rule, ask.accept_alpha)
    low_d, high_d = (1, rule.n_labels) if decision_row is None else label_set(decision_row, feature)
    point = min(max(_middle(low_d, high_d, feature), low_s), high_s)

    def answer(accepted: bool, reason: str) -> LabelAnswer:
        return LabelAnswer(
            prediction_set=labels,
            alpha=None if set_row is None else set_row.alpha,
            point=point,
            accept_alpha=None if decision_row is None else decision_row.alpha,
            accepted=accepted,
            skilled=rule.skill.skilled,
            reason=reason,
        )

    if decision_row is None:
        calibrated = ", ".join(f"{row.alpha:g}" for row in rule.levels)
        return answer(False, f"no per-label level <= accept_alpha {ask.accept_alpha:g} (calibrated: {calibrated})")
    if not rule.skill.skilled:
        return answer(
            False,
            f"{NO_SKILL_WORDS} (held-out log loss {rule.skill.judge_error:.3f} against the label distribution's "
            f"{rule.skill.baseline_error:.3f}, p = "
            f"{rule.skill.p_value:.3g} over {rule.skill.n_documents} documents)",
        )
    seen = rule.feature_items[feature_bin(feature, rule.n_labels) - 1]
    if seen < MIN_FEATURE_ITEMS:
        return answer(
            False,
            f"too little calibration evidence for verdicts like this one ({seen} calibration items near "
            f"{feature_bin(feature, rule.n_labels)}, fewer than {MIN_FEATURE_ITEMS})",
        )
    at = f"the {1 - decision_row.alpha:.0%} per-label set {_span(low_d, high_d)}"
    if ask.pass_threshold is not None:
        tau = ask.pass_threshold
        if low_d >= tau:
            return answer(True, f"pass accepted: every label of {at} is >= {tau}")
        return answer(False, f"{at} reaches below pass_threshold {tau}: no certified pass")
    reach = max(point - low_d, high_d - point)
    if reach <= ask.tolerance - 1:
        return answer(True, f"point {point} accepted: every label of {at} is within {ask.tolerance - 1} of it")
    return answer(False, f"{at} spans more than {ask.tolerance - 1} label(s) either side of the point {point}")


def validate_label_rule(rule: LabelRule) -> None:
    """ValueError naming the first inconsistency of a per-label rule (levels, lengths, order, groups)."""
    k = rule.n_labels
    if k < 2:
        raise ValueError(f"n_labels {k} must be at least 2")
    for name, values in (("groups", rule.groups), ("supported", rule.supported), ("label_items", rule.label_items)):
        if len(values) != k:
            raise ValueError(f"{name} has {len(values)} entries for {k} labels")
    if len(rule.feature_items) != k:
        raise ValueError(f"feature_items has {len(rule.feature_items)} entries for {k} labels")
    if not rule.levels:
        raise ValueError("a per-label rule needs at least one level")
    alphas = [row.alpha for row in rule.levels]
    if any(not 0 < a < 1 for a in alphas) or any(b <= a for a, b in zip(alphas, alphas[1:], strict=False)):
        raise ValueError("levels must be strictly ascending in (0, 1)")
    for label, group in enumerate(rule.groups, start=1):
        if label not in group or any(not 1 <= g <= k for g in group):
            raise ValueError(f"label {label}'s evidence group {group} must hold it and lie in 1..{k}")
    for row in rule.levels:
        _check_level(row, k)


def _check_level(row: LabelIntervals, k: int) -> None:
    """ValueError when one level's bounds are not K monotone ends with label 1 open below and label K above."""
    if len(row.lower) != k or len(row.upper) != k:
        raise ValueError(f"level {row.alpha:g}: {len(row.lower)} / {len(row.upper)} bounds for {k} labels")
    low = [-math.inf if v is None else v for v in row.lower]
    high = [math.inf if v is None else v for v in row.upper]
    if any(b < a for a, b in zip(low, low[1:], strict=False)) or any(
        b < a for a, b in zip(high, high[1:], strict=False)
    ):
        raise ValueError(f"level {row.alpha:g}: the interval ends must be non-decreasing in the label")
    if not (math.isinf(low[0]) and math.isinf(high[-1])):
        raise ValueError(f"level {row.alpha:g}: label 1 has no lower end and label {k} no upper end")
