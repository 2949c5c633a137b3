"""Evaluating prediction sets on labelled items: coverage, set size and span per item, coverage per group, and
repeated seeded calibration/test splits.

- **Split seeds.** Split i of ``repeated_splits`` permutes the items with ``numpy.random.default_rng([seed, i])``;
  the first ``floor(cal_fraction * n)`` are the calibration part, and the same generator then fits and predicts.
  Standard deviations across splits use ddof=1 (ddof=0 when there is one split).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from calibration.conformal.fit import fit_conformal
from calibration.conformal.inputs import as_labels, check_alpha, check_method, judge_inputs
from calibration.conformal.sets import predict_sets
from calibration.errors import EmptyCalibrationError

__all__ = [
    "GroupCoverage",
    "SetEvaluation",
    "SplitResult",
    "SplitStudy",
    "coverage_by_group",
    "evaluate_sets",
    "repeated_splits",
]


@dataclass(frozen=True)
class SetEvaluation:
    """Coverage and size of prediction sets on labelled items (arrays are per item)."""

    coverage: float
    mean_set_size: float
    set_sizes: np.ndarray
    covered: np.ndarray
    spans: np.ndarray  # max - min + 1 of each set; equals the set size for contiguous sets


@dataclass(frozen=True)
class GroupCoverage:
    """Coverage within one group (e.g. one judge-score bin or one human label)."""

    group: int
    n: int
    coverage: float
    mean_set_size: float


@dataclass(frozen=True)
class SplitResult:
    """One random calibration/test split: its coverage, mean set size and per-test-item detail."""

    coverage: float
    set_size: float
    test_index: np.ndarray
    set_sizes: np.ndarray
    covered: np.ndarray
    threshold: float | None


@dataclass(frozen=True)
class SplitStudy:
    """Repeated seeded splits: mean and sample standard deviation (ddof=1) of coverage and set size."""

    method: str
    alpha: float
    coverage: float
    coverage_std: float
    set_size: float
    set_size_std: float
    n_cal: int
    n_test: int
    splits: tuple[SplitResult, ...]


def evaluate_sets(sets: np.ndarray, labels: object) -> SetEvaluation:
    """Empirical coverage, mean set size, and per-item size, coverage and span of (n, K) boolean sets."""
    membership = np.asarray(sets, dtype=bool)
    if membership.ndim != 2:
        raise EmptyCalibrationError(f"sets must be an (n, K) boolean matrix, got shape {membership.shape}")
    y = as_labels(labels, membership.shape[1], "labels")
    if y.size != membership.shape[0] or y.size == 0:
        raise EmptyCalibrationError(f"{membership.shape[0]} sets but {y.size} labels; both must be equal and > 0")
    covered = membership[np.arange(y.size), y - 1]
    sizes = membership.sum(axis=1)
    any_member = sizes > 0
    first = np.where(any_member, np.argmax(membership, axis=1), 0)
    last = np.where(any_member, membership.shape[1] - 1 - np.argmax(membership[:, ::-1], axis=1), -1)
    spans = np.where(any_member, last - first + 1, 0)
    return SetEvaluation(
        coverage=float(covered.mean()),
        mean_set_size=float(sizes.mean()),
        set_sizes=sizes,
        covered=covered,
        spans=spans,
    )


def coverage_by_group(sets: np.ndarray, labels: object, groups: object) -> list[GroupCoverage]:
    """Coverage and mean set size within each distinct group value (sorted), e.g. judge score or human label."""
    evaluation = evaluate_sets(sets, labels)
    keys = np.asarray(groups)
    if keys.shape[0] != evaluation.covered.size:
        raise EmptyCalibrationError(f"groups has {keys.shape[0]} entries but there are {evaluation.covered.size} sets")
    result = []
    for group in np.unique(keys):
        members = keys == group
        result.append(
            GroupCoverage(
                group=int(group),
                n=int(members.sum()),
                coverage=float(evaluation.covered[members].mean()),
                mean_set_size=float(evaluation.set_sizes[members].mean()),
            )
        )
    return result


def repeated_splits(
    method: str,
    alpha: float,
    labels: object,
    *,
    judge_scores: object | None = None,
    probabilities: object | None = None,
    n_splits: int = 20,
    cal_fraction: float = 0.5,
    seed: int = 0,
    n_labels: int = 5,
) -> SplitStudy:
    """Fit on a random calibration part and evaluate on the rest, n_splits times with seeds (seed, split).

    Split i permutes the items with ``numpy.random.default_rng([seed, i])``; the first
    ``floor(cal_fraction * n)`` are the calibration part. Standard deviations use ddof=1.
    """
    check_method(method)
    check_alpha(alpha)
    y = as_labels(labels, n_labels, "labels")
    scores, probs = judge_inputs(method, n_labels, judge_scores, probabilities, y.size)
    n_cal = int(math.floor(cal_fraction * y.size))
    if n_cal < 1 or n_cal >= y.size:
        raise EmptyCalibrationError(
            f"cal_fraction={cal_fraction} of {y.size} items leaves an empty calibration or test part"
        )
    if n_splits < 1:
        raise EmptyCalibrationError(f"n_splits={n_splits} must be at least 1")
    results = []
    for split in range(n_splits):
        generator = np.random.default_rng([seed, split])
        order = generator.permutation(y.size)
        cal, test = order[:n_cal], order[n_cal:]
        fitted = fit_conformal(
            method,
            alpha,
            y[cal],
            judge_scores=None if scores is None else scores[cal],
            probabilities=None if probs is None else probs[cal],
            n_labels=n_labels,
            rng=generator,
        )
        sets = predict_sets(
            fitted,
            judge_scores=None if scores is None else scores[test],
            probabilities=None if probs is None else probs[test],
            rng=generator,
        )
        evaluation = evaluate_sets(sets, y[test])
        results.append(
            SplitResult(
                coverage=evaluation.coverage,
                set_size=evaluation.mean_set_size,
                test_index=test,
                set_sizes=evaluation.set_sizes,
                covered=evaluation.covered,
                threshold=fitted.threshold,
            )
        )
    coverages = np.array([r.coverage for r in results])
    sizes = np.array([r.set_size for r in results])
    ddof = 1 if n_splits > 1 else 0
    return SplitStudy(
        method=method,
        alpha=float(alpha),
        coverage=float(coverages.mean()),
        coverage_std=float(coverages.std(ddof=ddof)),
        set_size=float(sizes.mean()),
        set_size_std=float(sizes.std(ddof=ddof)),
        n_cal=n_cal,
        n_test=int(y.size - n_cal),
        splits=tuple(results),
    )
