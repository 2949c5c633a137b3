"""The conformal methods: one registry of objects, each a nonconformity score with a Mondrian grouping.

Everything that depends on which method runs is an attribute of its ``ConformalMethod`` (looked up once with
:func:`conformal_method`); no other module branches on a method's name. A score's rule is written once
(:mod:`calibration.conformal.kernels`) and gives both the (n, K) matrix (:meth:`NonconformityScore.matrix`) and one
item's K scores (:meth:`NonconformityScore.one`); the set rule (:meth:`ConformalMethod.members`) is likewise one.

================== ===================== ===================== =========================================================
method             score                 grouping              the score of candidate label y
================== ===================== ===================== =========================================================
``residual``          residual           marginal              the paper's ``|s - y|`` on the judge's integer score s
``residual_expected`` residual_expected  marginal              ``|E_p[score] - y|`` under the judge's distribution
``lac``               lac                marginal              ``1 - p(y)`` (least ambiguous set-valued classifier)
``aps``               aps                marginal              mass of the labels at least as probable as y, y included
``aps_randomized``    aps (randomised)   marginal              APS minus ``u * p(y)``, ``u ~ U(0, 1)`` per item
``ordinal``           ordinal            marginal              mass of the interval grown from the mode when y joins
``mondrian_residual`` residual           by judge score        ``residual``, one threshold per judge score
``learned_lac``       learned_lac        marginal              ``1 - P(y | judge)`` on the learned model
                                                               (:mod:`calibration.conformal.learned_model`)
``label_conditional`` learned_lac        by human label        ``learned_lac``, one threshold per human label
================== ===================== ===================== =========================================================

- **Comparison.** A label is in the set when its score is <= its threshold + 1e-12 (``MEMBERSHIP_TOLERANCE``),
  which absorbs rounding between a threshold and the scores of the same rule on other inputs.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import add, le
from types import MappingProxyType
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from calibration.conformal import kernels
from calibration.conformal.kernels import SCALAR, ArrayOps, C, Condition, ItemColumns, Ix, LearnedTable, Ops
from calibration.conformal.mondrian import BY_JUDGE, BY_LABEL, MARGINAL, Grouping
from calibration.errors import InvalidProbabilitiesError, ScoreOutOfRangeError, UnknownMethodError

__all__ = [
    "CONFORMAL_METHODS",
    "LEARNED_METHODS",
    "MEMBERSHIP_TOLERANCE",
    "METHODS",
    "PROBABILITY_METHODS",
    "SCORE_METHODS",
    "ConformalMethod",
    "Kernel",
    "Needs",
    "NonconformityScore",
    "conformal_method",
]

MEMBERSHIP_TOLERANCE = 1e-12
PRECOMPUTED_SCALE = 10  # the largest K whose score-only rows NonconformityScore holds ready


class Needs(enum.Enum):
    """What a score reads of the judge's output."""

    SCORE = "the judge's integer score"
    PROBABILITIES = "the judge's probabilities (log-probs)"
    SCORE_OR_PROBABILITIES = "the judge's score or its probabilities"


class Kernel(Protocol):
    """A score's rule (:mod:`calibration.conformal.kernels`): K score columns from the judge's output, for one item
    (floats) or n items (arrays)."""

    def __call__(self, x: ItemColumns[C, Ix], ops: Ops[C, Ix], /) -> list[C]:
        """The K score columns."""
        ...


@dataclass(frozen=True)
class NonconformityScore:
    """A nonconformity score: its rule (one kernel), what it reads, and whether it draws or learns."""

    name: str
    needs: Needs
    kernel: Kernel
    randomised: bool = False  # reads one uniform draw per item (tie-breaking)
    learned: bool = False  # reads a table fitted on part of the calibration data
    accepts_mean: bool = (
        True  # meaningful on a mean of sampled scores read as a two-point law (calibration.input_kinds.verdicts)
    )
    # What ``needs`` asks of an item, as flags read once here (the single-item path checks them on every call).
    reads_probabilities: bool = field(init=False, repr=False, compare=False)
    requires_score: bool = field(init=False, repr=False, compare=False)
    requires_probabilities: bool = field(init=False, repr=False, compare=False)
    requires_either: bool = field(init=False, repr=False, compare=False)
    # A score of the judge's integer score alone has one row per (K, score index): the kernel's rows, run once here
    # for the scales up to PRECOMPUTED_SCALE (empty for every other score); one() reads them instead of rerunning it.
    rows: MappingProxyType[tuple[int, int], tuple[float, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Derive the input flags from ``needs``, and the rows of a score of the judge's integer score alone."""
        fixed = self.needs is Needs.SCORE and not self.learned and not self.randomised
        object.__setattr__(
            self,
            "rows",
            MappingProxyType(
                {
                    (n_labels, judge): tuple(self.kernel(ItemColumns(n_labels, judge, None, None, None), SCALAR))
                    for n_labels in range(2, PRECOMPUTED_SCALE + 1)
                    for judge in range(n_labels)
                }
                if fixed
                else {}
            ),
        )
        object.__setattr__(self, "reads_probabilities", self.needs is not Needs.SCORE)
        object.__setattr__(self, "requires_score", self.needs is Needs.SCORE)
        object.__setattr__(self, "requires_probabilities", self.needs is Needs.PROBABILITIES)
        object.__setattr__(self, "requires_either", self.needs is Needs.SCORE_OR_PROBABILITIES)

    def matrix(
        self,
        *,
        n_labels: int,
        judge_scores: NDArray[np.int64] | None = None,
        probabilities: NDArray[np.float64] | None = None,
        learned_matrix: NDArray[np.float64] | Sequence[Sequence[float]] | None = None,
        uniforms: NDArray[np.float64] | None = None,
    ) -> NDArray[np.float64]:
        """The (n, K) score of every candidate label 1..K for each item."""
        n_items = judge_scores.size if judge_scores is not None else probabilities.shape[0]  # type: ignore[union-attr]
        assert uniforms is not None or not self.randomised
        columns: ItemColumns[NDArray[np.float64], NDArray[np.int64]] = ItemColumns(
            n_labels=n_labels,
            judge=None if judge_scores is None else judge_scores.astype(np.int64) - 1,
            probabilities=None if probabilities is None else [probabilities[:, k] for k in range(n_labels)],
            uniform=None if uniforms is None else np.asarray(uniforms, dtype=float),
            learned=None if learned_matrix is None else LearnedTable.of(np.asarray(learned_matrix, dtype=float)),
        )
        scores = self.kernel(columns, ArrayOps(n_items))
        return np.column_stack(scores).astype(float, copy=False)

    def one(
        self,
        n_labels: int,
        judge_score: int | None,
        probabilities: Sequence[float] | None,
        learned_matrix: Sequence[Sequence[float]] | None,
        uniform: float | None,
    ) -> list[float]:
        """One item's K scores, by the same kernel as :meth:`matrix` (pure Python: the service's fast path)."""
        judge = None if judge_score is None else int(judge_score) - 1
        if self.rows:
            row = self.rows.get((n_labels, judge))  # type: ignore[arg-type]
            if row is not None:
                return list(row)
        learned = None if learned_matrix is None else LearnedTable.of(learned_matrix)
        columns: ItemColumns[float, int] = ItemColumns(n_labels, judge, probabilities, uniform, learned)
        return self.kernel(columns, SCALAR)


@dataclass(frozen=True)
class ConformalMethod:
    """A conformal method: a nonconformity score, a Mondrian grouping, and the set rule."""

    name: str
    score: NonconformityScore
    grouping: Grouping = MARGINAL

    @property
    def needs(self) -> Needs:
        """What the method reads of the judge's output."""
        return self.score.needs

    def check_inputs(self, has_score: bool, has_probabilities: bool) -> None:
        """Refuse inputs without what the method needs (InvalidProbabilitiesError or ScoreOutOfRangeError)."""
        score = self.score
        if (
            (has_score or not score.requires_score)
            and (has_probabilities or not score.requires_probabilities)
            and (has_score or has_probabilities or not score.requires_either)
        ):
            return
        needs = score.needs
        if needs is Needs.PROBABILITIES and not has_probabilities:
            raise InvalidProbabilitiesError(f"method={self.name!r} needs {needs.value}; none given")
        if needs is Needs.SCORE and not has_score:
            raise ScoreOutOfRangeError(f"method={self.name!r} needs {needs.value}; none given")
        if needs is Needs.SCORE_OR_PROBABILITIES and not (has_score or has_probabilities):
            raise ScoreOutOfRangeError(f"method={self.name!r} needs {needs.value}; none given")

    def members(self, scores: Iterable[C], limits: Iterable[C | float]) -> Iterator[Condition]:
        """The set rule, per label (read once, in label order): in the set when the score is at most its
        threshold + MEMBERSHIP_TOLERANCE."""
        return self.within(scores, self.bounds(limits))

    @staticmethod
    def bounds(limits: Iterable[C | float]) -> Iterator[C | float]:
        """Each label's bound: its threshold + MEMBERSHIP_TOLERANCE (a compiled rule holds them ready)."""
        return map(add, limits, repeat(MEMBERSHIP_TOLERANCE))  # map: C speed on one item

    @staticmethod
    def within(scores: Iterable[C], bounds: Iterable[C | float]) -> Iterator[Condition]:
        """Per label, whether its score is at most its bound (:meth:`bounds`)."""
        return map(le, scores, bounds)


_RESIDUAL = NonconformityScore("residual", Needs.SCORE, kernels.residual)
_LEARNED = NonconformityScore("learned_lac", Needs.SCORE_OR_PROBABILITIES, kernels.learned_lac, learned=True)
_APS = NonconformityScore("aps", Needs.PROBABILITIES, kernels.aps, accepts_mean=False)

CONFORMAL_METHODS: MappingProxyType[str, ConformalMethod] = MappingProxyType(
    {
        method.name: method
        for method in (
            ConformalMethod("residual", _RESIDUAL),
            ConformalMethod(
                "residual_expected",
                NonconformityScore("residual_expected", Needs.PROBABILITIES, kernels.residual_expected),
            ),
            ConformalMethod("lac", NonconformityScore("lac", Needs.PROBABILITIES, kernels.lac, accepts_mean=False)),
            ConformalMethod("aps", _APS),
            ConformalMethod(
                "aps_randomized",
                NonconformityScore(
                    "aps_randomized", Needs.PROBABILITIES, kernels.aps, randomised=True, accepts_mean=False
                ),
            ),
            ConformalMethod(
                "ordinal", NonconformityScore("ordinal", Needs.PROBABILITIES, kernels.ordinal, accepts_mean=False)
            ),
            ConformalMethod("mondrian_residual", _RESIDUAL, BY_JUDGE),
            ConformalMethod("learned_lac", _LEARNED),
            ConformalMethod("label_conditional", _LEARNED, BY_LABEL),
        )
    }
)

# Names, in preference order (ties in method selection), and the names by what they read: data for menus,
# artifact checks and refusals, derived from the registry.
METHODS: tuple[str, ...] = tuple(CONFORMAL_METHODS)
PROBABILITY_METHODS = frozenset(m.name for m in CONFORMAL_METHODS.values() if m.needs is Needs.PROBABILITIES)
LEARNED_METHODS = frozenset(m.name for m in CONFORMAL_METHODS.values() if m.score.learned)
SCORE_METHODS = frozenset(m.name for m in CONFORMAL_METHODS.values() if m.needs is Needs.SCORE)


def conformal_method(name: str) -> ConformalMethod:
    """The registered method called ``name``; UnknownMethodError for any other name."""
    method = CONFORMAL_METHODS.get(name) if isinstance(name, str) else None
    if method is None:
        raise UnknownMethodError(f"method={name!r} is not one of {', '.join(METHODS)}")
    return method
