"""Choosing a cell's default method from held-out evidence, and saying why in figures that are true.

The evidence for each method comes from data the final figures do not use (the caller's job: cross-fitting by
document inside the calibration data). The rule, stated once (``SELECTION_RULE``):

1. A method **qualifies** when, at level alpha, over the evidence's evaluations: mean coverage
   >= 1 - alpha - 0.01; 5th-percentile coverage >= 1 - alpha - 0.02; and the lowest coverage within a human
   label and within a judge-score bin (small groups pooled with a neighbour, never skipped) >= 1 - alpha - 0.05.
2. Among qualifying methods, the smallest mean set size wins, except that a method whose sets are intervals more
   often is preferred when its mean size is within 0.05 of the smallest (a set with a hole, {2, 4}, puzzles a
   reader of an ordinal scale). Remaining ties: METHODS order.
   A method must qualify at every level it is checked at (the headline level and the caller's further levels).
3. When no method qualifies: the ``fallback`` method (the paper's ``residual``), and the reason says that none
   qualified and what failed.

A method whose sets are always the full scale can only win when nothing smaller qualifies, by rule 2.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from calibration.conformal import METHODS

__all__ = [
    "BIN_SLACK",
    "CHECK_WORDS",
    "COVERAGE_SLACK",
    "INTERVAL_MARGIN",
    "P5_SLACK",
    "QUALIFY_CHECKS",
    "SELECTION_RULE",
    "MethodChoice",
    "MethodEvidence",
    "choose_method",
    "failed_checks",
    "qualifies",
]

COVERAGE_SLACK = 0.01
P5_SLACK = 0.02
BIN_SLACK = 0.05
INTERVAL_MARGIN = 0.05
QUALIFY_CHECKS: tuple[str, ...] = ("mean", "p5", "label", "bin")  # rule 1's four conditions
SELECTION_RULE = (
    f"qualifies when mean coverage >= 1-alpha-{COVERAGE_SLACK}, 5th-percentile coverage >= 1-alpha-{P5_SLACK}, "
    f"and min coverage within human labels and judge-score bins (small groups pooled with a neighbour) >= "
    f"1-alpha-{BIN_SLACK}; smallest mean set size wins, an interval-valued method preferred within "
    f"{INTERVAL_MARGIN}; none qualifies -> the fallback"
)


class MethodEvidence(msgspec.Struct, frozen=True, kw_only=True):
    """One method's held-out figures at one level, over several evaluations (e.g. cross-fitted folds)."""

    method: str
    alpha: float
    n_evaluations: int
    mean_coverage: float
    p5_coverage: float
    min_label_coverage: float
    min_bin_coverage: float
    mean_set_size: float
    non_interval_share: float
    full_scale_share: float
    empty_share: float


class MethodChoice(msgspec.Struct, frozen=True, kw_only=True):
    """The chosen method, whether it qualified, the qualifying methods, and the reason in figures."""

    method: str
    qualified: bool
    qualifying: list[str]
    reason: str
    failed_checks: list[str] = []  # not qualified: each check the fallback fails, with its figure and floor


def qualifies(evidence: MethodEvidence, checks: Sequence[str] = QUALIFY_CHECKS) -> bool:
    """Rule 1 of the module docstring. ``checks`` names which of its four conditions apply (all of them unless a
    study asks what one condition costs: ``mean``, ``p5``, ``label``, ``bin``)."""
    unknown = set(checks) - set(QUALIFY_CHECKS)
    if unknown:
        raise ValueError(f"unknown qualification checks {sorted(unknown)}; known: {', '.join(QUALIFY_CHECKS)}")
    target = 1.0 - evidence.alpha
    conditions = {
        "mean": evidence.mean_coverage >= target - COVERAGE_SLACK - 1e-12,
        "p5": evidence.p5_coverage >= target - P5_SLACK - 1e-12,
        "label": evidence.min_label_coverage >= target - BIN_SLACK - 1e-12,
        "bin": evidence.min_bin_coverage >= target - BIN_SLACK - 1e-12,
    }
    return all(conditions[c] for c in checks)


CHECK_WORDS = {
    "mean": ("mean coverage", COVERAGE_SLACK),
    "p5": ("5th-percentile coverage", P5_SLACK),
    "label": ("coverage within a human label", BIN_SLACK),
    "bin": ("coverage within a judge-score bin", BIN_SLACK),
}


def failed_checks(evidence: MethodEvidence, checks: Sequence[str] = QUALIFY_CHECKS) -> list[str]:
    """Each of rule 1's conditions ``evidence`` fails, as '<check> <figure> < <floor>' (empty when it qualifies)."""
    target = 1.0 - evidence.alpha
    figures = {
        "mean": evidence.mean_coverage,
        "p5": evidence.p5_coverage,
        "label": evidence.min_label_coverage,
        "bin": evidence.min_bin_coverage,
    }
    failed = []
    for check in checks:
        words, slack = CHECK_WORDS[check]
        if figures[check] < target - slack - 1e-12:
            failed.append(f"{words} {figures[check]:.3g} < {target - slack:.2f}")
    return failed


def _figures(e: MethodEvidence) -> str:
    return (
        f"{e.method}: size {e.mean_set_size:.2f}, coverage {e.mean_coverage:.3f} (5th pct {e.p5_coverage:.3f}), "
        f"min label {e.min_label_coverage:.2f}, min score bin {e.min_bin_coverage:.2f}, "
        f"non-interval {e.non_interval_share:.1%}"
    )


def choose_method(
    evidence: Sequence[MethodEvidence],
    *,
    fallback: str,
    context: str = "",
    other_levels: Sequence[Sequence[MethodEvidence]] = (),
    checks: Sequence[str] = QUALIFY_CHECKS,
    order: Sequence[str] = METHODS,
) -> MethodChoice:
    """Apply the module's rule to one cell's evidence (one entry per method, same alpha). A method must also
    qualify at every level of ``other_levels`` (evidence at further alphas) to qualify at all. ``checks``: rule 1's
    conditions that apply (:func:`qualifies`; all of them unless a study relaxes the rule on purpose). ``order``:
    the methods in preference order for the last tie rule (METHODS; a study's menu of recipes gives its own)."""
    by_method = {e.method: e for e in evidence}
    if fallback not in by_method:
        raise ValueError(f"fallback method {fallback!r} has no evidence")
    failing = {e.method: e.alpha for level in other_levels for e in level if not qualifies(e, checks)}
    qualifying = [m for m in order if m in by_method and qualifies(by_method[m], checks) and m not in failing]
    where = f" over {by_method[fallback].n_evaluations} held-out evaluations{context}"
    if not qualifying:
        failed = min(evidence, key=lambda e: (round(e.mean_set_size, 9), order.index(e.method)))
        elsewhere = "".join(f"; {m} fails the rule at alpha={a}" for m, a in sorted(failing.items()))
        return MethodChoice(
            method=fallback,
            qualified=False,
            qualifying=[],
            failed_checks=failed_checks(by_method[fallback], checks)
            + [f"{m} fails the rule at alpha={a}" for m, a in sorted(failing.items()) if m == fallback],
            reason=(
                f"fallback to {fallback}: no method qualified{where} ({_figures(by_method[fallback])}; "
                f"smallest sets: {_figures(failed)}{elsewhere})"
            ),
        )
    smallest = min(by_method[m].mean_set_size for m in qualifying)
    near = [m for m in qualifying if by_method[m].mean_set_size <= smallest + INTERVAL_MARGIN + 1e-12]
    chosen = min(
        near,
        key=lambda m: (round(by_method[m].non_interval_share, 9), round(by_method[m].mean_set_size, 9), order.index(m)),
    )
    reason = (
        f"smallest qualifying sets among {len(qualifying)} of {len(by_method)} methods{where}: "
        f"{_figures(by_method[chosen])}"
    )
    best = min(qualifying, key=lambda m: (round(by_method[m].mean_set_size, 9), order.index(m)))
    if best != chosen:
        reason += (
            f"; preferred to {best} (size {by_method[best].mean_set_size:.2f}, non-interval "
            f"{by_method[best].non_interval_share:.1%}) for interval-valued sets"
        )
    if fallback != chosen:
        reason += f"; {fallback} size {by_method[fallback].mean_set_size:.2f}"
    return MethodChoice(method=chosen, qualified=True, qualifying=qualifying, reason=reason)
