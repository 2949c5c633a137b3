"""Evaluating the conformal methods of one input kind over splits by group, and choosing among them: the
cross-fitting splits, each method's sets pooled over its evaluations, the selection evidence they give, and the
selection rule of :mod:`calibration.input_kinds.selection` applied to it. Used by
:func:`calibration.input_kinds.fit.fit_input_kind`,
whose docstring states the rules (splits, seeds, levels, the PAC unit); the items are any :class:`KindItems` (a
:class:`calibration.input_kinds.fit.KindData`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from calibration.input_kinds.heldout import GroupSplit, SplitSets, evaluate_split, group_splits, pooled_group_coverage
from calibration.input_kinds.selection import QUALIFY_CHECKS, MethodChoice, MethodEvidence, choose_method

__all__ = [
    "PAPER_METHOD",
    "KindItems",
    "PooledSets",
    "choose_on_splits",
    "cross_fit_splits",
    "evaluate_method",
    "pooled_evidence",
]

PAPER_METHOD = "residual"


class KindItems(Protocol):
    """One cell's labelled items as verdicts of one input kind (what :class:`calibration.input_kinds.fit.KindData`
    holds)."""

    @property
    def labels(self) -> np.ndarray: ...

    @property
    def judge_scores(self) -> np.ndarray: ...

    @property
    def probabilities(self) -> np.ndarray | None: ...

    @property
    def groups(self) -> np.ndarray: ...

    @property
    def n_labels(self) -> int: ...


def cross_fit_splits(groups: np.ndarray, *, repeats: int, seed: int) -> list[GroupSplit]:
    """``repeats`` 2-fold splits by group, both directions: 2 * repeats evaluations."""
    result = []
    for repeat in range(repeats):
        (half,) = group_splits(groups, n_splits=1, seed=seed + 10_000 + repeat)
        result.append(GroupSplit(split=2 * repeat, calibration=half.calibration, test=half.test))
        result.append(GroupSplit(split=2 * repeat + 1, calibration=half.test, test=half.calibration))
    return result


@dataclass(frozen=True)
class PooledSets:
    """One method's evaluations laid end to end: (levels, items) arrays and each item's position in the data."""

    coverages: np.ndarray  # (levels, evaluations)
    covered: np.ndarray
    sizes: np.ndarray
    spans: np.ndarray
    index: np.ndarray
    n_evaluations: int

    @classmethod
    def of(cls, results: Sequence[SplitSets]) -> PooledSets:
        return cls(
            coverages=np.stack([r.covered.mean(axis=1) for r in results], axis=1),
            covered=np.concatenate([r.covered for r in results], axis=1),
            sizes=np.concatenate([r.set_sizes for r in results], axis=1),
            spans=np.concatenate([r.spans for r in results], axis=1),
            index=np.concatenate([r.test_index for r in results]),
            n_evaluations=len(results),
        )


def pooled_evidence(
    method: str, alpha: float, level: int, pooled: PooledSets, data: KindItems, *, min_group_items: int
) -> MethodEvidence:
    covered, sizes, spans = pooled.covered[level], pooled.sizes[level], pooled.spans[level]
    minimum = min_group_items * pooled.n_evaluations
    labels = pooled_group_coverage(covered, data.labels[pooled.index], min_items=minimum)
    bins = pooled_group_coverage(covered, data.judge_scores[pooled.index], min_items=minimum)
    coverages = pooled.coverages[level]
    return MethodEvidence(
        method=method,
        alpha=float(alpha),
        n_evaluations=pooled.n_evaluations,
        mean_coverage=float(coverages.mean()),
        p5_coverage=float(np.percentile(coverages, 5)),
        min_label_coverage=min(c for _, _, c in labels),
        min_bin_coverage=min(c for _, _, c in bins),
        mean_set_size=float(sizes.mean()),
        non_interval_share=float((spans > sizes).mean()),
        full_scale_share=float((sizes == data.n_labels).mean()),
        empty_share=float((sizes == 0).mean()),
    )


def evaluate_method(
    method: str,
    data: KindItems,
    splits: Sequence[GroupSplit],
    levels: list[tuple[float, float | None]],
    seeds: Sequence[list[int]],
    pac_groups: bool,
) -> list[SplitSets]:
    return [
        evaluate_split(
            method,
            data.labels,
            split,
            levels=levels,
            judge_scores=data.judge_scores,
            probabilities=data.probabilities,
            n_labels=data.n_labels,
            rng=np.random.default_rng(s),
            groups=data.groups if pac_groups else None,
        )
        for split, s in zip(splits, seeds, strict=True)
    ]


def choose_on_splits(
    data: KindItems,
    splits: Sequence[GroupSplit],
    seeds: Sequence[list[int]],
    methods: Sequence[str],
    *,
    alpha: float,
    also: Sequence[float],
    delta: float | None,
    min_group_items: int,
    context: str,
    checks: Sequence[str] = QUALIFY_CHECKS,
    pac_groups: bool = False,
) -> tuple[MethodChoice, list[MethodEvidence]]:
    """The selection rule at ``alpha``, a method also having to qualify at every level of ``also``."""
    levels = [alpha, *[a for a in also if abs(a - alpha) > 1e-9]]
    pooled = {
        m: PooledSets.of(evaluate_method(m, data, splits, [(a, delta) for a in levels], seeds, pac_groups))
        for m in methods
    }
    by_level = [
        [pooled_evidence(m, a, position, pooled[m], data, min_group_items=min_group_items) for m in methods]
        for position, a in enumerate(levels)
    ]
    fallback = PAPER_METHOD if PAPER_METHOD in methods else methods[0]
    choice = choose_method(by_level[0], fallback=fallback, context=context, other_levels=by_level[1:], checks=checks)
    return choice, by_level[0]
