"""The decision step for one request on one served cell: the request's decision parameters, then the module table of
:mod:`service.scoring.policy` on the cell's certified rule in the calibration snapshot.

``asked`` reads what a request asks of the decision (``tolerance``, ``accept_alpha``, defaulting to the request's
``alpha`` and then the service's default, ``pass_threshold``) and refuses with a 422 naming the field what does not
fit the cell's scale. ``decide_for_cell`` finds the cell's rule (:func:`service.scoring.policy.find_rule`, the
verdict's kinds in their preference order), reads whether the cell's method selection failed (once per snapshot,
memoised in it) and applies :class:`service.scoring.policy.DecisionPolicy`.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from service.artifacts.snapshot import CalibrationSnapshot
from service.errors import InvalidRequestError
from service.scoring.policy import DecisionPolicy, PolicyDecision, find_rule, set_guarantee

__all__ = ["DecisionAsk", "asked", "decide_for_cell"]


class DecisionAsk(msgspec.Struct, frozen=True):
    """What a request asks of the decision: tolerance, accept_alpha (its alpha by default) and a pass threshold."""

    tolerance: int
    accept_alpha: float
    pass_threshold: int | None


def asked(
    *,
    tolerance: int,
    accept_alpha: float | None,
    alpha: float | None,
    default_alpha: float,
    pass_threshold: int | None,
    n_labels: int,
) -> DecisionAsk:
    """The request's decision parameters; InvalidRequestError naming the field when one does not fit 1..n_labels."""
    if tolerance >= n_labels:
        raise InvalidRequestError(
            f"tolerance={tolerance} must be below this cell's scale size {n_labels} (an error "
            f"is |human - point| >= tolerance; 1..{n_labels - 1} can happen)"
        )
    if pass_threshold is not None and pass_threshold > n_labels:
        raise InvalidRequestError(f"pass_threshold={pass_threshold} is outside this cell's scale 2..{n_labels}")
    level = accept_alpha if accept_alpha is not None else alpha if alpha is not None else default_alpha
    return DecisionAsk(tolerance, level, pass_threshold)


def decide_for_cell(
    policy: DecisionPolicy,
    snapshot: CalibrationSnapshot,
    *,
    cell: tuple[str, str, str],
    kinds: Sequence[str],
    served_input_kind: str,
    alpha: float,
    delta: float | None,
    judge_score: int,
    probabilities: Sequence[float] | None,
    mean: float | None,
    prediction_set: Sequence[int],
    ask: DecisionAsk,
    mode: str = "pac",
) -> PolicyDecision:
    """The module table for a verdict served by the cell's entry of ``served_input_kind`` at level ``alpha``, the
    decision
    rule's rows of ``mode`` deciding."""
    failed = snapshot.default_failures.get((*cell, served_input_kind, mode))
    rule = find_rule(snapshot.decision_rules, cell, kinds)
    no_rule = (
        f"the calibration has none for judge={cell[0]!r}, prompt_family={cell[1]!r}, criterion={cell[2]!r} "
        f"and {' or '.join(kinds)} verdicts"
    )
    return policy.decide(
        rule=rule,
        judge_score=judge_score,
        probabilities=probabilities,
        mean=mean,
        coverage=set_guarantee(alpha, delta),
        prediction_set=prediction_set,
        selection_failed=failed,
        tolerance=ask.tolerance,
        accept_alpha=ask.accept_alpha,
        pass_threshold=ask.pass_threshold,
        no_rule=no_rule,
        mode=mode,
    )
