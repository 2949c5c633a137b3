"""Held-out evaluation by group (document): one fit per split serves every level at once.

Items of one document are not exchangeable with each other one by one (16 summaries of one article share it),
and a user's new items come from new documents; so every held-out figure here splits by **group**: all items of
a group fall on one side.

Rules, stated once:

* **Group splits.** The distinct group ids are sorted; split i permutes them with
  ``numpy.random.default_rng([seed, i])`` and puts the first ``floor(cal_fraction * G)`` groups (at least 1, at
  most G - 1) in the calibration part, the rest in the test part.
* **One fit, every level.** For a split, the level-free part of the fit (:func:`calibration.conformal.
  calibration_scores`) is computed once; the threshold at each (alpha, delta) is the order statistic of
  :mod:`calibration.order_statistics` among the sorted calibration scores (per group for grouped methods), and
  a label joins a set when its score is <= threshold + 1e-12: exactly what :func:`calibration.conformal.
  fit_conformal` and :func:`calibration.conformal.predict_sets` give for the same generator (a test checks it).
* **Unit.** With ``groups`` given to :func:`evaluate_split`, PAC levels use the document-level rule of
  :mod:`calibration.conformal.group_pac` on the calibration part (per key for grouped methods), levels without
  delta the in-expectation rule of :mod:`calibration.conformal.document_crc`, and the learned
  methods split their model part by document: again exactly what ``fit_conformal(..., groups=...)`` gives.
* **Randomness.** The split's generator is ``numpy.random.default_rng([seed, i])`` after the permutation; it draws
  the learned methods' model half, then ``aps_randomized``'s calibration and test uniforms, in that order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from calibration.conformal.document_crc import document_crc_thresholds
from calibration.conformal.fit import calibration_scores
from calibration.conformal.group_pac import group_pac_thresholds
from calibration.conformal.inputs import check_alpha, check_delta
from calibration.conformal.kernels import ArrayOps
from calibration.conformal.methods import conformal_method
from calibration.errors import EmptyCalibrationError
from calibration.order_statistics import threshold_rank

__all__ = ["GroupSplit", "SplitSets", "evaluate_split", "group_splits", "pooled_group_coverage"]


@dataclass(frozen=True)
class GroupSplit:
    """Item indices of one calibration/test split by group, and the split's number."""

    split: int
    calibration: np.ndarray
    test: np.ndarray


@dataclass(frozen=True)
class SplitSets:
    """Sets of one split's test items at every level: arrays are (n_levels, n_test)."""

    test_index: np.ndarray
    covered: np.ndarray
    set_sizes: np.ndarray
    spans: np.ndarray  # max - min + 1 of each set (0 when empty); > size means the set has a hole


def group_splits(groups: object, *, n_splits: int, seed: int, cal_fraction: float = 0.5) -> list[GroupSplit]:
    """``n_splits`` seeded splits by group (module rules); EmptyCalibrationError with fewer than 2 groups."""
    keys = np.asarray(groups)
    distinct = np.unique(keys)
    if distinct.size < 2:
        raise EmptyCalibrationError(f"{distinct.size} group(s): a split by group needs at least 2")
    n_cal_groups = min(max(1, int(math.floor(cal_fraction * distinct.size))), distinct.size - 1)
    positions = np.searchsorted(distinct, keys)
    splits = []
    for split in range(n_splits):
        order = np.random.default_rng([seed, split]).permutation(distinct.size)
        in_cal = np.zeros(distinct.size, dtype=bool)
        in_cal[order[:n_cal_groups]] = True
        member = in_cal[positions]
        splits.append(GroupSplit(split=split, calibration=np.flatnonzero(member), test=np.flatnonzero(~member)))
    return splits


def _thresholds(sorted_scores: np.ndarray, levels: tuple[tuple[float, float | None], ...]) -> np.ndarray:
    """Threshold per level from ascending scores (+inf where the rank exceeds n or there are no scores)."""
    n = sorted_scores.size
    if n == 0:
        return np.full(len(levels), np.inf)
    padded = np.append(sorted_scores, np.inf)  # rank n + 1 (no finite threshold) reads +inf
    thresholds: NDArray[np.float64] = padded[_ranks(n, levels) - 1]
    return thresholds


def _level_thresholds(
    scores: np.ndarray, documents: np.ndarray | None, levels: tuple[tuple[float, float | None], ...]
) -> np.ndarray:
    """Threshold per level (+inf = full scale): the item rank, or with ``documents`` the document-level rule
    (PAC for PAC levels, in expectation for the others)."""
    result = _thresholds(np.sort(scores), levels)
    if documents is None or scores.size == 0:
        return result
    pac = [i for i, (_, delta) in enumerate(levels) if delta is not None]
    if pac:
        pac_levels = [(alpha, delta) for alpha, delta in levels if delta is not None]  # the levels at pac, in order
        values = group_pac_thresholds(scores, documents, pac_levels)
        result[pac] = [np.inf if v is None else v for v in values]
    expected = [i for i, (_, delta) in enumerate(levels) if delta is None]
    if expected:
        crc = document_crc_thresholds(scores, documents, [levels[i][0] for i in expected])
        result[expected] = [np.inf if v is None else v for v in crc]
    return result


@lru_cache(maxsize=65536)
def _ranks(n: int, levels: tuple[tuple[float, float | None], ...]) -> np.ndarray:
    """The threshold rank of every level among n scores, capped at n + 1 (levels read as exact fractions)."""
    return np.array([min(threshold_rank(n, check_alpha(alpha), check_delta(delta)), n + 1) for alpha, delta in levels])


def evaluate_split(
    method: str,
    labels: np.ndarray,
    split: GroupSplit,
    *,
    levels: list[tuple[float, float | None]],
    judge_scores: np.ndarray | None,
    probabilities: np.ndarray | None,
    n_labels: int,
    rng: np.random.Generator,
    groups: np.ndarray | None = None,
) -> SplitSets:
    """Fit ``method`` on the split's calibration items and form the test items' sets at every (alpha, delta);
    with ``groups`` PAC levels count calibration documents, not items (module rules)."""
    exact = tuple(levels)
    cal, test = split.calibration, split.test
    prepared = calibration_scores(
        method,
        labels[cal],
        judge_scores=None if judge_scores is None else judge_scores[cal],
        probabilities=None if probabilities is None else probabilities[cal],
        n_labels=n_labels,
        rng=rng,
        groups=None if groups is None else groups[cal],
    )
    documents = prepared.documents
    test_scores = None if judge_scores is None else judge_scores[test]
    test_probs = None if probabilities is None else probabilities[test]
    spec = conformal_method(method)
    uniforms = rng.uniform(size=test.size) if spec.score.randomised else None
    matrix = spec.score.matrix(
        n_labels=n_labels,
        judge_scores=test_scores,
        probabilities=test_probs,
        learned_matrix=prepared.learned_matrix,
        uniforms=uniforms,
    )
    if prepared.group_keys is None:  # one threshold per level (the grouping's table of one entry)
        table = _level_thresholds(prepared.true_scores, documents, exact)[:, None]
    else:  # per level, thresholds by group 1..K (index 0 unused), as calibration.conformal.mondrian tables them
        table = np.full((len(levels), n_labels + 1), np.inf)
        for group in range(1, n_labels + 1):
            members = prepared.group_keys == group
            table[:, group] = _level_thresholds(
                prepared.true_scores[members], None if documents is None else documents[members], exact
            )
    columns = [matrix[:, k] for k in range(n_labels)]
    judge = None if test_scores is None else test_scores - 1
    ops = ArrayOps(test.size)
    membership = np.stack(
        [  # (levels, n_test, K): the method's set rule at each level's thresholds
            np.column_stack(
                [
                    np.broadcast_to(member, (test.size,))
                    for member in spec.members(columns, spec.grouping.limits(row.tolist(), judge, n_labels, ops))
                ]
            )
            for row in table
        ]
    )
    y = labels[test]
    covered = membership[:, np.arange(test.size), y - 1]
    sizes = membership.sum(axis=2)
    any_member = sizes > 0
    first = np.argmax(membership, axis=2)
    last = n_labels - 1 - np.argmax(membership[:, :, ::-1], axis=2)
    spans = np.where(any_member, last - first + 1, 0)
    return SplitSets(test_index=test, covered=covered, set_sizes=sizes, spans=spans)


def pooled_group_coverage(
    covered: np.ndarray, keys: np.ndarray, *, min_items: int
) -> list[tuple[tuple[int, ...], int, float]]:
    """Coverage within each group of ``keys`` (e.g. human label 1..K), a group with fewer than ``min_items``
    items pooled with its smaller adjacent group until every pooled group is large enough (or one is left).

    Returns ``(members, n, coverage)`` per pooled group, in key order. Pooling, not skipping: a rare label still
    counts, inside the nearest group of labels.
    """
    values = np.asarray(keys, dtype=np.int64)
    hits = np.asarray(covered, dtype=float)
    offset = int(values.min()) if values.size else 0
    counts = np.bincount(values - offset)
    sums = np.bincount(values - offset, weights=hits)
    # (label keys, items, covered items) per group, in key order
    groups: list[tuple[tuple[int, ...], int, float]] = [
        ((int(key) + offset,), int(counts[key]), float(sums[key])) for key in np.flatnonzero(counts)
    ]
    while len(groups) > 1:
        small = [i for i, g in enumerate(groups) if g[1] < min_items]
        if not small:
            break
        i = min(small, key=lambda j: (groups[j][1], j))
        neighbours = [j for j in (i - 1, i + 1) if 0 <= j < len(groups)]
        j = min(neighbours, key=lambda m: (groups[m][1], m))
        low, high = sorted((i, j))
        merged = (groups[low][0] + groups[high][0], groups[low][1] + groups[high][1], groups[low][2] + groups[high][2])
        groups[low : high + 1] = [merged]
    return [(tuple(g[0]), int(g[1]), g[2] / g[1]) for g in groups if g[1] > 0]
