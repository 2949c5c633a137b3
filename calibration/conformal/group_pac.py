"""The PAC threshold with documents as the unit: coverage >= 1 - alpha with probability >= 1 - delta over the
calibration *documents*, whatever the dependence between the items of one document.

The item rule (:mod:`calibration.order_statistics`) counts calibration items as independent; 16 SummEval summaries
share each article, so its ``delta`` is not what a user gets when documents are drawn (resampling whole documents,
continuous-score methods fall below 1 - alpha in 7-17% of draws at delta = 0.05). This rule treats documents as
i.i.d. units and their items as arbitrarily dependent.

Rules, stated once:

* **Miscoverage.** For a threshold q, document d contributes ``e_d(q)`` = its items whose true label's score
  exceeds q (by more than the sets' membership tolerance, so "covered" means exactly what a set does) and ``a_d``
  = its number of items. The miscoverage of q is ``m(q) = E[e_d(q)] / E[a_d]``: the share of uncovered items
  among the items of new documents (item-weighted, what pooled coverage over fresh documents measures).
  ``m`` is non-increasing in q.
* **Test.** H0(q): m(q) > alpha is tested at level delta by the document-level betting test of
  :func:`calibration.decisions.risk_control.betting_test` (Ville's inequality on z_d = e_d - alpha * a_d, scaled by M =
  the largest ``a_d`` among the calibration documents used), documents in the order ``ORDER_SEED`` fixes (a seeded
  permutation of their sorted ids: independent of the scores).
* **Walk (fixed sequence).** The candidates are the distinct calibration scores, from the largest down; the walk
  rejects H0 at each in turn and stops at the first non-rejection. The threshold is the last rejected candidate;
  ``None`` (every set is the full scale) when the largest is not rejected.
* **Guarantee.** If documents are i.i.d. (items within a document arbitrarily dependent) then, with probability
  >= 1 - delta over the calibration documents, the fitted threshold's miscoverage on new documents is <= alpha.
  Proof: let q* = inf{q : m(q) <= alpha}. Failure means the threshold is < q*, so the walk rejected c, the largest
  calibration score below q*. No calibration score lies in (c, q*), so e_d(c) = #{items of d with score >= q*}
  (up to the tolerance), whose mean is m(q*-) * E[a_d] >= alpha * E[a_d]: a true null, rejected with probability
  <= delta. Monotonicity of m is what makes a data-dependent grid valid; the test need not be monotone in q.
* **Grouped methods** (``mondrian_residual``: per judge score; ``label_conditional``: per human label) apply the
  rule inside each key: e_d and a_d count the document's items with that key; documents without such items are
  left out (documents with a_d > 0 are i.i.d. too, and E[e_d | a_d > 0] / E[a_d | a_d > 0] is the key's
  miscoverage). Guarantee per key: P(miss | key) <= alpha with probability >= 1 - delta for that key.
* **M.** The scale M is the largest document (within the key) in the calibration data. The bound is the one for
  documents of at most M items; with equal document sizes (SummEval: 16) M is a constant.

:func:`group_pac_threshold_reference` is the same rule one candidate at a time through
:func:`calibration.decisions.risk_control.betting_test` (the definition; tests check the vectorised walk against it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from calibration.conformal.inputs import check_alpha, check_delta
from calibration.conformal.methods import MEMBERSHIP_TOLERANCE
from calibration.decisions.risk_control import BET_CAP, PRIOR_VARIANCE, betting_test
from calibration.errors import EmptyCalibrationError, InvalidProbabilitiesError

__all__ = [
    "ORDER_SEED",
    "PAC_UNIT_GROUP",
    "document_codes",
    "group_pac_threshold",
    "group_pac_threshold_reference",
    "group_pac_thresholds",
    "keyed_group_pac_levels",
    "keyed_group_pac_thresholds",
]

ORDER_SEED = 0
PAC_UNIT_GROUP = "group"
_TOLERANCE = MEMBERSHIP_TOLERANCE  # a label joins when score <= q + 1e-12 (the set rule)
_CHUNK = 32


def document_codes(groups: object) -> np.ndarray:
    """Group ids (any hashable values) as codes 0..G-1 in sorted-id order."""
    keys = np.asarray(groups)
    if keys.ndim != 1:
        raise EmptyCalibrationError("groups must be one id per item")
    return np.unique(keys, return_inverse=True)[1].astype(np.int64).ravel()


@lru_cache(maxsize=1024)
def _order(n_documents: int) -> np.ndarray:
    """The documents' test order (memoised per count, read-only: every fit of a cell asks for the same one)."""
    order = np.random.default_rng(ORDER_SEED).permutation(n_documents)
    order.flags.writeable = False
    return order


def checked_scores(true_scores: object, documents: object) -> tuple[np.ndarray, np.ndarray]:
    """Calibration scores as floats and their documents as codes; EmptyCalibrationError / InvalidProbabilitiesError
    for an empty, mismatched or non-finite input (shared by the document-level rules)."""
    scores = np.asarray(true_scores, dtype=float).ravel()
    codes = document_codes(documents)
    if scores.size == 0:
        raise EmptyCalibrationError("the calibration set is empty: a threshold needs at least one score")
    if codes.size != scores.size:
        raise EmptyCalibrationError(f"{codes.size} group ids for {scores.size} calibration scores")
    if not np.isfinite(scores).all():
        raise InvalidProbabilitiesError("calibration scores hold NaN or infinity")
    return scores, codes


def _log_capitals(x: np.ndarray, alpha: float | np.ndarray) -> np.ndarray:
    """Row-wise max log-capital of the aGRAPA betting test (calibration.decisions.risk_control's arithmetic,
    vectorised); ``alpha`` is one level or a column of one level per row (each row's arithmetic is the same either
    way)."""
    n = x.shape[1]
    counts = np.arange(1, n + 1, dtype=float)
    zeros = np.zeros((x.shape[0], 1))
    before = np.concatenate((zeros, np.cumsum(x, axis=1)[:, :-1]), axis=1)
    mean = before / counts
    before_sq = np.concatenate((zeros, np.cumsum(x * x, axis=1)[:, :-1]), axis=1)
    variance = np.maximum((PRIOR_VARIANCE + before_sq - counts * mean * mean) / counts, 1e-12)
    lambdas = np.clip(-mean / (variance + mean * mean), 0.0, BET_CAP / (1.0 - alpha))
    factors = 1.0 - lambdas * x
    with np.errstate(divide="ignore"):
        logs = np.where(factors > 0, np.log(np.where(factors > 0, factors, 1.0)), -np.inf)
    paths = np.cumsum(logs, axis=1)
    wealth: NDArray[np.float64] = np.maximum(0.0, paths.max(axis=1))
    return wealth


class _Counts:
    """Per document (in test order) and per candidate (ascending distinct scores): misses e[d, j], sizes a[d]."""

    def __init__(self, scores: np.ndarray, codes: np.ndarray) -> None:
        self.candidates = np.unique(scores)
        present, codes = np.unique(codes, return_inverse=True)  # drop documents with no items here
        n_documents = present.size
        # item i is missed at candidate j iff candidates[j] + tol < score_i iff j < c_i
        c = np.searchsorted(self.candidates + _TOLERANCE, scores, side="left")
        width = self.candidates.size + 1
        table = np.bincount(codes * width + c, minlength=n_documents * width).reshape(n_documents, width)
        # misses at j = items with c_i > j = suffix sum over columns j+1..m
        suffix = np.cumsum(table[:, ::-1], axis=1)[:, ::-1]
        order = _order(n_documents)
        self.misses = suffix[order, 1:].astype(float)  # (G, m): column j = candidate j
        self.sizes = np.bincount(codes, minlength=n_documents)[order].astype(float)
        self.scale = float(self.sizes.max())

    def threshold(self, alpha: float, delta: float) -> float | None:
        """The fixed-sequence walk from the largest candidate down (module rules)."""
        return self.thresholds([(alpha, delta)])[0]

    def thresholds(self, levels: Sequence[tuple[float, float]]) -> list[float | None]:
        """:meth:`threshold` at each (alpha, delta), the levels' walks stepped together: each step tests the next
        chunk of candidates of every level still walking in one array (one row per candidate, its level's alpha
        beside it), so the numbers are those of one walk at a time, row for row."""
        limits = [math.log(1.0 / delta) for _, delta in levels]
        lowest: list[int | None] = [None] * len(levels)
        tops = [self.candidates.size] * len(levels)
        walking = list(range(len(levels)))
        while walking:
            chunks = [np.arange(tops[i] - 1, max(tops[i] - 1 - _CHUNK, -1), -1) for i in walking]  # descending
            x = np.concatenate(
                [
                    (self.misses[:, columns].T - levels[i][0] * self.sizes) / self.scale
                    for i, columns in zip(walking, chunks, strict=True)
                ]
            )
            rows = np.repeat(np.arange(len(walking)), [c.size for c in chunks])
            alphas = np.array([levels[i][0] for i in walking])[rows, None]
            passed = _log_capitals(x, alphas) >= np.array([limits[i] for i in walking])[rows]
            still = []
            for position, (i, columns) in enumerate(zip(walking, chunks, strict=True)):
                rejected = passed[rows == position]
                if not rejected.all():
                    stop = int(np.argmin(rejected))
                    if stop > 0:
                        lowest[i] = int(columns[stop - 1])
                    continue
                lowest[i] = int(columns[-1])
                tops[i] = int(columns[-1])
                if tops[i] > 0:
                    still.append(i)
            walking = still
        return [None if low is None else float(self.candidates[low]) for low in lowest]


def group_pac_threshold(true_scores: object, groups: object, alpha: float, delta: float) -> float | None:
    """The document-level PAC threshold (module rules): with probability >= 1 - delta over i.i.d. calibration
    documents, miscoverage on new documents <= alpha; None (full scale) when even the largest score fails."""
    level, confidence = check_alpha(alpha), check_delta(delta)
    if confidence is None:
        raise ValueError("the group PAC rule needs delta")
    scores, codes = checked_scores(true_scores, groups)
    return _Counts(scores, codes).threshold(float(level), float(confidence))


def group_pac_thresholds(
    true_scores: object, groups: object, levels: Sequence[tuple[float, float]]
) -> list[float | None]:
    """:func:`group_pac_threshold` at several (alpha, delta) levels, the per-document counts computed once."""
    scores, codes = checked_scores(true_scores, groups)
    counts = _Counts(scores, codes)
    return counts.thresholds([_exact_level(alpha, delta) for alpha, delta in levels])


def _exact_level(alpha: float, delta: float) -> tuple[float, float]:
    level, confidence = check_alpha(alpha), check_delta(delta)
    if confidence is None:
        raise ValueError("the group PAC rule needs delta")
    return float(level), float(confidence)


def keyed_group_pac_thresholds(
    true_scores: np.ndarray, keys: np.ndarray, groups: np.ndarray, n_labels: int, alpha: float, delta: float
) -> tuple[dict[int, float | None], dict[int, int]]:
    """One document-level PAC threshold per key value 1..K (None where the key has no items or cannot be
    certified), and the key's item count: the grouped methods' rule (module rules)."""
    (thresholds,), sizes = keyed_group_pac_levels(true_scores, keys, groups, n_labels, [(alpha, delta)])
    return thresholds, sizes


def keyed_group_pac_levels(
    true_scores: np.ndarray,
    keys: np.ndarray,
    groups: np.ndarray,
    n_labels: int,
    levels: Sequence[tuple[float, float]],
) -> tuple[list[dict[int, float | None]], dict[int, int]]:
    """:func:`keyed_group_pac_thresholds` at each (alpha, delta) of ``levels`` (one key table per level), each
    key's per-document counts computed once."""
    thresholds: list[dict[int, float | None]] = [{} for _ in levels]
    sizes: dict[int, int] = {}
    codes = document_codes(groups)
    for key in range(1, n_labels + 1):
        members = keys == key
        sizes[key] = int(members.sum())
        values = group_pac_thresholds(true_scores[members], codes[members], levels) if members.any() else None
        for position, table in enumerate(thresholds):
            table[key] = None if values is None else values[position]
    return thresholds, sizes


def group_pac_threshold_reference(true_scores: object, groups: object, alpha: float, delta: float) -> float | None:
    """The rule one candidate at a time through calibration.decisions.risk_control.betting_test (slow; the
    definition)."""
    scores, codes = checked_scores(true_scores, groups)
    present = np.unique(codes)
    order = _order(present.size)
    sizes = np.array([np.sum(codes == d) for d in present])
    chosen = None
    for candidate in sorted(set(scores.tolist()), reverse=True):
        misses = np.array([np.sum(scores[codes == d] > candidate + _TOLERANCE) for d in present])
        test = betting_test(misses, sizes, alpha=alpha, delta=delta, max_group_size=int(sizes.max()), order=order)
        if not test.rejected:
            break
        chosen = candidate
    return chosen
