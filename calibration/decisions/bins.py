"""The FIT side of a certified decision rule (:mod:`calibration.decisions.fit`): the parts by document, the bins,
their points, the order of the bins and where the betting walk starts; all fitted on the FIT part only.

Rules, stated once:

* **Parts.** The distinct documents (groups) are sorted and permuted with ``numpy.random.default_rng([seed, 1])``;
  the first ``max(1, floor(fit_fraction * G))`` form the FIT part (bins, points, the order of the bins), the rest
  the CERTIFY part (the bounds). Nothing fitted on FIT looks at CERTIFY, so the fixed sequence is fixed before
  the certification data is seen.
* **Bins.** Candidate cut points: for ``score`` the half-integers 1.5 .. K - 0.5 (one bin per integer score); for
  ``expected_score`` and ``mean`` every ``width`` (0.25) from 1 + width to K - width. Sparse bins are merged
  left to right: a bin is closed once it holds >= ``min_bin_items`` FIT items; a last bin short of that joins
  the previous one. A bin holds edges[k-1] <= x < edges[k] (:func:`calibration.decisions.rule.decide`).
* **Points.** Per bin the most frequent human label among its FIT items; ties go to the tied label nearest the
  bin's median FIT feature, then to the lower label. A bin without FIT items (only possible when FIT is empty
  there after merging, i.e. never for a merged continuous bin) gets the feature's own nearest label.
* **Order** (:func:`bin_order`) and **start** (:func:`walk_start`): the confidence signal and the betting
  walk's first nested set, both from FIT alone (rules in :mod:`calibration.decisions.fit`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["DEFAULT_WIDTH", "MIN_BIN_ITEMS", "bin_edges", "bin_order", "fit_parts", "points_of", "walk_start"]

DEFAULT_WIDTH = 0.25
MIN_BIN_ITEMS = 20


def fit_parts(groups: np.ndarray, *, fit_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks (FIT, CERTIFY) of the items, split by document (module rules)."""
    distinct = np.unique(np.asarray(groups))
    order = np.random.default_rng([seed, 1]).permutation(distinct.size)
    n_fit = min(max(1, int(math.floor(fit_fraction * distinct.size))), max(distinct.size - 1, 1))
    fit_groups = distinct[order[:n_fit]]
    fit = np.isin(np.asarray(groups), fit_groups)
    return fit, ~fit


def _candidate_edges(feature: str, n_labels: int, width: float) -> list[float]:
    if feature == "score":
        return [k + 0.5 for k in range(1, n_labels)]
    steps = int(round((n_labels - 1) / width))
    return [round(1 + width * j, 9) for j in range(1, steps)]


def bin_edges(
    feature: str, fit_values: np.ndarray, n_labels: int, *, width: float = DEFAULT_WIDTH, min_items: int = MIN_BIN_ITEMS
) -> list[float]:
    """The rule's bin edges: candidate cuts, sparse bins merged left to right (module rules)."""
    candidates = _candidate_edges(feature, n_labels, width)
    counts = np.bincount(
        np.searchsorted(candidates, np.asarray(fit_values, dtype=float), side="right"), minlength=len(candidates) + 1
    )
    kept: list[float] = []
    running = 0
    for index, count in enumerate(counts):
        running += int(count)
        if index < len(candidates) and running >= min_items:
            kept.append(candidates[index])
            running = 0
    if running < min_items and kept:
        kept.pop()  # the last bin is short: it joins the previous one
    return kept


def points_of(edges: Sequence[float], fit_values: np.ndarray, fit_labels: np.ndarray, n_labels: int) -> list[int]:
    """Most frequent FIT label per bin; ties: nearest the bin's median feature, then lower (module rules)."""
    index = np.searchsorted(edges, fit_values, side="right")
    points = []
    for b in range(len(edges) + 1):
        inside = index == b
        if not inside.any():
            low = edges[b - 1] if b > 0 else 1.0
            high = edges[b] if b < len(edges) else float(n_labels)
            points.append(int(min(n_labels, max(1, math.floor((low + high) / 2 + 0.5)))))
            continue
        counts = np.bincount(fit_labels[inside], minlength=n_labels + 1)[1:]
        tied = np.flatnonzero(counts == counts.max()) + 1
        median = float(np.median(fit_values[inside]))
        points.append(int(min(tied, key=lambda label: (abs(label - median), label))))
    return points


def bin_order(
    bin_index: np.ndarray, bad: np.ndarray, candidates: Sequence[int], signal: str, signal_values: np.ndarray | None
) -> list[int]:
    """Candidate bins, most confident first, from FIT items only (module rules)."""
    keys = {}
    for b in candidates:
        inside = bin_index == b
        n = int(inside.sum())
        if signal == "fit_error" or signal_values is None or n == 0:
            value = (float(bad[inside].sum()) + 1) / (n + 2)
        elif signal == "spread":
            value = float(signal_values[inside].mean())
        else:  # margin: larger is more confident
            value = -float(signal_values[inside].mean())
        keys[b] = (value, -n, b)
    return sorted(candidates, key=lambda b: keys[b])


def walk_start(sequence: list[int], fit_bins: np.ndarray, fit_bad: np.ndarray, alpha: float) -> int:
    """Index of the first nested set tested: the prefix maximising the FIT estimate of accept share x (alpha -
    smoothed error rate), the drift of the betting capital per document; 0 when no prefix has a positive one."""
    best, best_value = 0, 0.0
    n_fit = max(int(fit_bins.size), 1)
    inside = np.zeros(fit_bins.size, dtype=bool)
    for j, b in enumerate(sequence):
        inside |= fit_bins == b
        n = int(inside.sum())
        rate = (float(fit_bad[inside].sum()) + 1) / (n + 2)
        value = n / n_fit * (alpha - rate)
        if value > best_value:
            best, best_value = j, value
    return best
