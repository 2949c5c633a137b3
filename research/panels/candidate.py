"""A learned panel combination the panel study screens (not served): balanced LAC with Mondrian thresholds per
pooled score bin.

Pure (numbers in, numbers out). Rules, stated once:

* **Model.** A multinomial model of the human label given the members' expected scores
  (:func:`research.panels.model.fit_multinomial`), fitted on items the thresholds do not use.
* **Balanced probabilities** (:func:`balanced_probabilities`): the model's P(y | x) divided by the prior of y
  among the model's training labels (Laplace-smoothed: (count + 1) / (n + K), :func:`label_prior`), renormalised
  per item. Up to a constant per item this is the likelihood P(x | y): a rare human label is not excluded merely
  for being rare (plain LAC's sets miss the lowest labels, which the selection rule's within-label check rejects).
* **Score** of label y: 1 - balanced P(y | x) (LAC on the balanced probabilities).
* **Mondrian thresholds by pooled score bin** (:func:`pooled_bins`, :func:`bin_thresholds`): one threshold per
  score bin (the panel's rounded mean), a bin with fewer than ``min_items`` threshold items pooled with its smaller
  adjacent bin until every pooled bin has enough (the pooling rule of
  :func:`calibration.input_kinds.heldout.pooled_group_coverage`); each pooled bin's threshold is the PAC (or
  marginal) order
  statistic of its items' scores (:func:`calibration.conformal.conformal_quantile`), None (full scale) when too
  few. A bin never seen among the threshold items gets the full scale. ``min_items`` defaults to the smallest n
  whose PAC rank is finite (:func:`finite_rank_items`), so pooling happens exactly where a bin alone could only
  answer the full scale.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from calibration.conformal import conformal_quantile
from calibration.input_kinds.heldout import pooled_group_coverage
from calibration.order_statistics import as_fraction, threshold_rank

__all__ = [
    "balanced_probabilities",
    "bin_thresholds",
    "candidate_sets",
    "finite_rank_items",
    "label_prior",
    "pooled_bins",
]


def label_prior(labels: np.ndarray, n_labels: int) -> np.ndarray:
    """(count_y + 1) / (n + K) for y = 1..K."""
    y = np.asarray(labels, dtype=np.int64)
    if y.size and (y.min() < 1 or y.max() > n_labels):
        raise ValueError(f"labels must lie in 1..{n_labels}")
    counts = np.bincount(y, minlength=n_labels + 1)[1:].astype(float)
    prior: NDArray[np.float64] = (counts + 1.0) / (counts.sum() + n_labels)
    return prior


def balanced_probabilities(probabilities: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """Rows of P(y | x) / prior(y), renormalised to sum to 1."""
    probs = np.asarray(probabilities, dtype=float)
    weights = np.asarray(prior, dtype=float)
    if probs.ndim != 2 or probs.shape[1] != weights.size or (weights <= 0).any():
        raise ValueError("probabilities must be (n, K) and the prior K positive numbers")
    ratio = probs / weights[None, :]
    reweighted: NDArray[np.float64] = ratio / ratio.sum(axis=1, keepdims=True)
    return reweighted


def finite_rank_items(alpha: float, delta: float | None) -> int:
    """The smallest n whose threshold rank at (alpha, delta) is <= n (fewer items can only give the full scale)."""
    level = as_fraction(alpha, "alpha")
    confidence = None if delta is None else as_fraction(delta, "delta")
    n = max(1, math.ceil(1 / float(level)) - 1)
    while threshold_rank(n, level, confidence) > n:
        n += 1
    while n > 1 and threshold_rank(n - 1, level, confidence) <= n - 1:
        n -= 1
    return n


def pooled_bins(bins: np.ndarray, min_items: int) -> dict[int, int]:
    """Each bin seen in ``bins`` -> its pooled bin's key (the smallest bin of the pool)."""
    keys = np.asarray(bins, dtype=np.int64)
    if keys.size == 0:
        return {}
    pools = pooled_group_coverage(np.ones(keys.size), keys, min_items=min_items)
    return {int(b): int(members[0]) for members, _, _ in pools for b in members}


def bin_thresholds(
    scores: np.ndarray, bins: np.ndarray, *, alpha: float, delta: float | None, min_items: int
) -> dict[int, float | None]:
    """Bin -> threshold of its pooled bin (module rules) from the threshold items' true-label scores."""
    values = np.asarray(scores, dtype=float)
    keys = np.asarray(bins, dtype=np.int64)
    pool_of = pooled_bins(keys, min_items)
    pools = np.array([pool_of[int(b)] for b in keys], dtype=np.int64)
    per_pool = {p: conformal_quantile(values[pools == p], alpha, delta) for p in set(pool_of.values())}
    return {b: per_pool[p] for b, p in pool_of.items()}


def candidate_sets(score_matrix: np.ndarray, bins: np.ndarray, thresholds: Mapping[int, float | None]) -> np.ndarray:
    """(n, K) membership: label y is in an item's set when its score <= its bin's threshold + 1e-12; a bin without
    a threshold (None or unseen) gets the full scale."""
    matrix = np.asarray(score_matrix, dtype=float)
    limits = np.array([np.inf if thresholds.get(int(b)) is None else thresholds[int(b)] for b in bins], dtype=float)
    return matrix <= limits[:, None] + 1e-12
