"""Prediction sets from a fitted predictor: ``predict_sets`` (boolean (n, K) membership of labels 1..K) and
``prediction_set`` (one item's sorted set, pure Python); ``compile_rule`` reads a fitted predictor's set rule once
into a ``SetRule``, whose ``prediction_set`` (the service's path) gives the same set without re-reading it.

Both read the method's registered score, grouping and set rule (:mod:`calibration.conformal.methods`), on arrays
and on floats respectively; the single-item set is the corresponding row of the vectorised sets.

- **Comparison.** A label is in the set when its score is <= its threshold + 1e-12 (``MEMBERSHIP_TOLERANCE``).
- **Full scale.** A ``None`` threshold (too few calibration items) puts every label in the set; with a threshold
  per group, a group whose threshold is ``None`` (or that calibration never saw) has every label, and a human label
  whose threshold is ``None`` is always in the set (:mod:`calibration.conformal.fit`).
- ``aps_randomized`` draws one uniform per item from ``rng`` (``None``: ``numpy.random.default_rng(0)``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import compress, repeat
from operator import truediv

import numpy as np
from numpy.typing import NDArray

from calibration.conformal.fit import FittedConformal
from calibration.conformal.inputs import judge_inputs
from calibration.conformal.kernels import SCALAR, ArrayOps, ItemColumns, LearnedTable
from calibration.conformal.methods import MEMBERSHIP_TOLERANCE, ConformalMethod, Needs, conformal_method
from calibration.errors import CalibrationError, InvalidProbabilitiesError, ScoreOutOfRangeError

__all__ = [
    "MEMBERSHIP_TOLERANCE",
    "SetRule",
    "compile_rule",
    "predict_sets",
    "prediction_set",
]


def predict_sets(
    fitted: FittedConformal,
    *,
    judge_scores: object | None = None,
    probabilities: object | None = None,
    rng: np.random.Generator | None = None,
) -> NDArray[np.bool_]:
    """Boolean (n, K) membership of labels 1..K in each item's prediction set."""
    scores, probs = judge_inputs(fitted.method, fitted.n_labels, judge_scores, probabilities, None)
    method = conformal_method(fitted.method)
    n_items = scores.size if scores is not None else probs.shape[0]  # type: ignore[union-attr]
    generator = rng if rng is not None else np.random.default_rng(0)
    uniforms = generator.uniform(size=n_items) if method.score.randomised else None
    matrix = method.score.matrix(
        n_labels=fitted.n_labels,
        judge_scores=scores,
        probabilities=probs,
        learned_matrix=fitted.learned_matrix,
        uniforms=uniforms,
    )
    table = method.grouping.table(fitted.threshold, fitted.group_thresholds, fitted.n_labels)
    judge = None if scores is None else scores - 1
    limits = method.grouping.limits(table, judge, fitted.n_labels, ArrayOps(n_items))
    columns = [matrix[:, k] for k in range(fitted.n_labels)]
    members = method.members(columns, limits)
    return np.column_stack([np.broadcast_to(member, (n_items,)) for member in members])


def prediction_set(
    fitted: FittedConformal,
    *,
    judge_score: int | None = None,
    probabilities: list[float] | tuple[float, ...] | None = None,
    rng: np.random.Generator | None = None,
) -> tuple[int, ...]:
    """The sorted prediction set of one item (pure Python); a caller serving many items compiles the rule once
    (:func:`compile_rule`) and asks :meth:`SetRule.prediction_set`, which gives the same set."""
    method = conformal_method(fitted.method)
    score = method.score
    n_labels = fitted.n_labels
    judge = _judge_index(judge_score, n_labels)
    # A score-only method never reads the probabilities, so it does not check them either.
    probs = _one_probability_row(probabilities, n_labels) if score.reads_probabilities else None
    method.check_inputs(judge is not None, probs is not None)
    uniform = _uniform(rng) if score.randomised else None
    scores = score.one(n_labels, None if judge is None else judge + 1, probs, fitted.learned_matrix, uniform)
    grouping = method.grouping
    table = grouping.table(fitted.threshold, fitted.group_thresholds, n_labels)
    limits = grouping.limits(table, judge, n_labels, SCALAR)
    return tuple(compress(range(1, n_labels + 1), method.members(scores, limits)))


@dataclass(frozen=True, slots=True)
class SetRule:
    """A fitted predictor's set rule read once (:func:`compile_rule`): the method, the label scale, the learned
    table, each label's bound (threshold + MEMBERSHIP_TOLERANCE) per judge score, and the sets of the inputs that
    the judge's score alone decides, held ready. Immutable; built from the fitted predictor, never serialised."""

    method: ConformalMethod
    n_labels: int
    labels: tuple[int, ...]  # 1..K
    learned: LearnedTable | None
    bounds: tuple[tuple[float, ...], ...]  # [judge score - 1][label - 1]
    free_bounds: tuple[float, ...] | None  # the bounds of an item without a judge score (None: the grouping reads it)
    accepts: tuple[bool, ...]  # [2 * has judge score + has probabilities]: the method's check_inputs, read once
    judge_sets: tuple[tuple[int, ...], ...] | None = None  # [judge score - 1]: the set when no probabilities count

    def prediction_set(
        self,
        *,
        judge_score: int | None = None,
        probabilities: list[float] | tuple[float, ...] | None = None,
        rng: np.random.Generator | None = None,
    ) -> tuple[int, ...]:
        """The sorted prediction set of one item: :func:`prediction_set` of the compiled predictor, read faster."""
        n_labels = self.n_labels
        judge = _judge_index(judge_score, n_labels)
        method = self.method
        score = method.score
        if probabilities is not None and score.reads_probabilities:
            probs = _one_probability_row(probabilities, n_labels)
        else:
            if judge is not None and self.judge_sets is not None:
                return self.judge_sets[judge]
            probs = None
        if not self.accepts[2 * (judge is not None) + (probs is not None)]:
            method.check_inputs(judge is not None, probs is not None)  # raises the method's refusal
        uniform = _uniform(rng) if score.randomised else None
        scores = score.kernel(ItemColumns(n_labels, judge, probs, uniform, self.learned), SCALAR)
        bounds = self.free_bounds if judge is None else self.bounds[judge]
        assert bounds is not None  # check_inputs refused an item without the judge score its grouping reads
        return tuple(compress(self.labels, method.within(scores, bounds)))


def compile_rule(fitted: FittedConformal) -> SetRule:
    """The set rule of a fitted predictor, read once: its method, bounds and judge-score-only sets (pure)."""
    method = conformal_method(fitted.method)
    n_labels = fitted.n_labels
    grouping = method.grouping
    table = grouping.table(fitted.threshold, fitted.group_thresholds, n_labels)

    def bounds(judge: int | None) -> tuple[float, ...]:
        return tuple(method.bounds(grouping.limits(table, judge, n_labels, SCALAR)))

    learned = fitted.learned_matrix
    rule = SetRule(
        method=method,
        n_labels=n_labels,
        labels=tuple(range(1, n_labels + 1)),
        learned=None if learned is None else LearnedTable.of(learned),
        bounds=tuple(bounds(judge) for judge in range(n_labels)),
        free_bounds=None if grouping.reads_judge else bounds(None),
        accepts=tuple(
            _accepts(method, has_score, has_probabilities)
            for has_score in (False, True)
            for has_probabilities in (False, True)
        ),
    )
    if method.score.randomised or method.needs is Needs.PROBABILITIES:
        return rule
    # The judge's score alone decides the set (a score-only method, or no probabilities given): hold them ready.
    judge_sets = tuple(rule.prediction_set(judge_score=score) for score in rule.labels)
    return replace(rule, judge_sets=judge_sets)


def _accepts(method: ConformalMethod, has_score: bool, has_probabilities: bool) -> bool:
    """Whether ``method.check_inputs`` lets an item with these inputs through."""
    try:
        method.check_inputs(has_score, has_probabilities)
    except CalibrationError:
        return False
    return True


def _judge_index(judge_score: int | None, n_labels: int) -> int | None:
    """The judge's score index (score - 1) after checking it lies on the scale 1..n_labels (None: no score)."""
    if judge_score is None:
        return None
    if type(judge_score) is int and 1 <= judge_score <= n_labels:  # the common case first: a plain int on the scale
        return judge_score - 1
    if isinstance(judge_score, bool) or not isinstance(judge_score, (int, np.integer)):
        raise ScoreOutOfRangeError(f"judge_score={judge_score!r} must be an integer on the scale 1..{n_labels}")
    if not 1 <= judge_score <= n_labels:
        raise ScoreOutOfRangeError(f"judge_score={judge_score} lies outside the label scale 1..{n_labels}")
    return int(judge_score) - 1


def _uniform(rng: np.random.Generator | None) -> float:
    """The one tie-breaking uniform of a randomised score (``rng`` None: ``numpy.random.default_rng(0)``)."""
    return float((rng if rng is not None else np.random.default_rng(0)).uniform())


def _one_probability_row(probabilities: Sequence[float] | None, n_labels: int) -> list[float] | None:
    """Validate and renormalise one probability vector in pure Python (the single-item fast path)."""
    if probabilities is None:
        return None
    row = list(map(float, probabilities))  # map: C speed on the fixed per-call work
    if len(row) != n_labels:
        raise InvalidProbabilitiesError(f"probabilities must have {n_labels} entries, got {len(row)}")
    if not all(map(math.isfinite, row)) or min(row) < 0:  # finite first: min() is then well defined
        raise InvalidProbabilitiesError(f"probabilities must be finite and non-negative: {row}")
    total = math.fsum(row)
    if total <= 0:
        raise InvalidProbabilitiesError(f"probabilities {row} sum to 0; they cannot be renormalised")
    return list(map(truediv, row, repeat(total)))
