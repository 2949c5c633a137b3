"""The decision rule: what to do with a verdict given its conformal prediction set (paper 000, section 6).

=========================================== ===========
condition (K = 5 labels, defaults)          decision
=========================================== ===========
not calibrated (no threshold for the cell)  escalate
empty set (no label conforms)               escalate
set_size >= ESCALATE_MIN_SET_SIZE (5 = 1..K) escalate
set_size <= ACCEPT_MAX_SET_SIZE (2)         accept
otherwise                                   review
=========================================== ===========

``escalate`` means: ask a human. ``review``: usable, but look at it when the stakes are high. The reason
string states the set, its size and the rule that fired, so a caller can log it as is.

A decision is a pure function of (set, K, level), and a scale of K labels has at most 2**K sets, so the
policy keeps each decision it has drawn, keyed by (set, K, alpha), up to ``_MEMO_LIMIT`` of them.
"""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = ["Decision", "DecisionPolicy", "PolicyDecision", "full_scale"]

_MEMO_LIMIT = 4096

Decision = Literal["accept", "review", "escalate"]


def full_scale(n_labels: int) -> tuple[int, ...]:
    """The whole label scale 1..n_labels: the set of an uncalibrated verdict."""
    return tuple(range(1, n_labels + 1))


class PolicyDecision(msgspec.Struct, frozen=True, kw_only=True):
    """The decision, whether it escalates, and why."""

    decision: Decision
    escalate: bool
    reason: str


class DecisionPolicy:
    """Thresholds of the rule; ``accept_max_set_size < escalate_min_set_size`` (checked by the settings)."""

    __slots__ = ("_decisions", "accept_max_set_size", "escalate_min_set_size")

    def __init__(self, *, accept_max_set_size: int = 2, escalate_min_set_size: int = 5) -> None:
        self.accept_max_set_size = accept_max_set_size
        self.escalate_min_set_size = escalate_min_set_size
        self._decisions: dict[tuple[tuple[int, ...], int, float], PolicyDecision] = {}

    def __repr__(self) -> str:
        return (
            f"DecisionPolicy(accept_max_set_size={self.accept_max_set_size}, "
            f"escalate_min_set_size={self.escalate_min_set_size})"
        )

    def decide(self, prediction_set: tuple[int, ...] | list[int], *, n_labels: int, alpha: float) -> PolicyDecision:
        """Apply the table in the module docstring to a calibrated prediction set at level alpha."""
        key = (tuple(prediction_set), n_labels, alpha)
        decision = self._decisions.get(key)
        if decision is None:
            decision = self._draw(key[0], n_labels=n_labels, alpha=alpha)
            if len(self._decisions) < _MEMO_LIMIT:
                self._decisions[key] = decision
        return decision

    def _draw(self, prediction_set: tuple[int, ...], *, n_labels: int, alpha: float) -> PolicyDecision:
        size = len(prediction_set)
        coverage = f"{(1 - alpha):.0%}"
        shown = "{" + ", ".join(str(label) for label in prediction_set) + "}"
        if size == 0:
            return PolicyDecision(
                decision="escalate",
                escalate=True,
                reason=(f"the {coverage} prediction set is empty: no label conforms: the verdict is atypical for this "
                        "calibration; ask a human"),
            )
        if size >= min(self.escalate_min_set_size, n_labels):
            return PolicyDecision(
                decision="escalate",
                escalate=True,
                reason=(
                    f"the {coverage} prediction set {shown} has {size} of {n_labels} labels "
                    f"(>= {min(self.escalate_min_set_size, n_labels)}): the verdict carries no usable "
                    "information; ask a human"
                ),
            )
        if size <= self.accept_max_set_size:
            return PolicyDecision(
                decision="accept",
                escalate=False,
                reason=(
                    f"the {coverage} prediction set {shown} has {size} label(s) "
                    f"(<= {self.accept_max_set_size}): the judge is reliable for this item"
                ),
            )
        return PolicyDecision(
            decision="review",
            escalate=False,
            reason=(
                f"the {coverage} prediction set {shown} has {size} labels "
                f"(between {self.accept_max_set_size} and {min(self.escalate_min_set_size, n_labels)}): "
                "usable with care"
            ),
        )

    def uncalibrated(self, why: str) -> PolicyDecision:
        """The decision for a verdict without calibration: always escalate, with the reason."""
        return PolicyDecision(
            decision="escalate",
            escalate=True,
            reason=f"not calibrated: {why}; no prediction set can be trusted, so the full scale is returned",
        )
