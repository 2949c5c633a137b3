"""Calibrate one cell for one input kind, as it will be served: figures by document, a default chosen without
peeking, and the predictors fitted on every item.

Pure: arrays in (:class:`KindData`), typed results out (:class:`InputKindFit`). Offline (``make calibrate``,
``--labels``) and the service's calibration jobs call the same function. Rules, stated once:

* **Held-out figures per (method, alpha)**: ``n_splits`` splits by group
  (:func:`calibration.input_kinds.heldout.group_splits`, seed ``seed``), each method fitted on the calibration
  groups with the
  artifact's rule (PAC at ``delta``, or marginal when ``delta`` is None) and evaluated on the test groups. Reported:
  mean coverage, its sample std (ddof = 1), 5th percentile (numpy's linear interpolation), mean set size, the shares of
  empty, full-scale and non-interval sets, the decision shares under the service's rule (empty -> escalate; size >=
  min(escalate_min, K) -> escalate; size <= accept_max -> accept; else review), the accuracy of accepted verdicts (human
  label in the set), and the lowest coverage within a human label and within a judge-score bin, small groups pooled with
  a neighbour (:func:`calibration.input_kinds.heldout.pooled_group_coverage`, >= ``min_group_items`` test items per
  split).
* **Default method** (:mod:`calibration.input_kinds.selection`) at ``headline_alpha`` (and, when ``qualify_alphas``
  names
  further levels, a method must qualify at each of them too; by default it does not: requiring alpha = 0.05, 0.10
  and 0.20 at once left 13 of the 32 shipped cells with no qualifying method, and the fallback is no better), from
  cross-fitting by group over all items: ``selection_repeats`` repeats of a 2-fold
  group split (repeat r is :func:`calibration.input_kinds.heldout.group_splits` with seed ``seed + 10_000 + r``;
  fit on one
  half, evaluate on the other, both ways). The nested selection of outer split i uses seed ``seed + 1 + i``.
* **The procedure as served, checked without peeking** (``procedure``): in each of the ``n_splits`` outer splits
  the default is chosen by the same rule from cross-fitting inside the calibration groups only
  (``nested_repeats`` repeats), then that method is fitted on the calibration groups and evaluated on the test
  groups at every ``report_alphas`` level. This is the coverage a user gets from the whole recipe (selection
  included) on documents it never saw. ``mean_set_size_ci``: 95% percentile bootstrap over groups (documents
  resampled whole, every split's test side reweighted; :func:`calibration.unit_bootstrap.split_mean_interval`,
  2,000 draws from ``default_rng(seed)``).
* **Unit.** With ``group_pac`` (the default), when some group holds more than one item, every fit here (held-out,
  selection, nested, final) counts documents: with a ``delta`` the document-level PAC rule
  (:mod:`calibration.conformal.group_pac`: coverage >= 1 - alpha with probability >= 1 - delta over calibration
  documents), without one the in-expectation rule (:mod:`calibration.conformal.document_crc`: mean within-document
  coverage >= 1 - alpha on average over calibrations); the predictors record ``pac_unit = "group"``. Otherwise
  the item-level rank (exact when every group is one item).
* **Fit.** Every (method, alpha) is fitted on all items with ``numpy.random.default_rng(seed)``.
* **Randomness.** An evaluation's generator is ``default_rng([seed, 1, split])`` (outer), ``default_rng([seed,
  2, repeat, fold])`` (selection), ``default_rng([seed, 3, split, repeat, fold])`` (nested selection), each used
  as in :func:`calibration.input_kinds.heldout.evaluate_split`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import msgspec
import numpy as np

from calibration.conformal import FittedConformal, calibration_scores
from calibration.conformal.fit import fits_from_scores
from calibration.input_kinds.evaluation import (
    PooledSets,
    choose_on_splits,
    cross_fit_splits,
    evaluate_method,
    pooled_evidence,
)
from calibration.input_kinds.heldout import SplitSets, group_splits
from calibration.input_kinds.selection import QUALIFY_CHECKS, MethodChoice, MethodEvidence
from calibration.input_kinds.verdicts import kind_inputs, methods_for_input_kind
from calibration.unit_bootstrap import split_mean_interval

__all__ = [
    "HeldoutFigures",
    "KindData",
    "InputKindFit",
    "ProcedureFigures",
    "cell_kind_data",
    "decision_shares",
    "fit_input_kind",
    "uses_group_pac",
]


@dataclass(frozen=True)
class KindData:
    """One cell's labelled items as verdicts of one input kind (core inputs already mapped by the kind's rule)."""

    kind: str
    labels: np.ndarray
    judge_scores: np.ndarray
    probabilities: np.ndarray | None
    groups: np.ndarray
    n_labels: int = 5


class HeldoutFigures(msgspec.Struct, frozen=True, kw_only=True):
    """Held-out figures of one (method, alpha) over the outer splits by group (module rules)."""

    method: str
    alpha: float
    n_splits: int
    coverage: float
    coverage_std: float
    coverage_p5: float
    set_size: float
    empty_share: float
    full_scale_share: float
    non_interval_share: float
    accept_share: float
    review_share: float
    escalate_share: float
    accept_accuracy: float | None
    min_label_coverage: float
    min_bin_coverage: float


class ProcedureFigures(msgspec.Struct, frozen=True, kw_only=True):
    """The served recipe (selection + fit) evaluated on unseen groups, per level: one value per outer split."""

    alpha: float
    coverage: list[float]
    set_size: list[float]
    chosen: list[str]
    mean_coverage: float
    p5_coverage: float
    mean_set_size: float
    mean_set_size_ci: list[float] | None = None  # over groups (module rules); None when read from an older file


class InputKindFit(msgspec.Struct, frozen=True, kw_only=True):
    """Everything calibration produces for one (cell, input kind)."""

    kind: str
    n_items: int
    n_groups: int
    delta: float | None
    fitted: dict[str, dict[float, FittedConformal]]  # method -> alpha -> predictor fitted on every item
    heldout: list[HeldoutFigures]
    default: MethodChoice
    selection_evidence: list[MethodEvidence]
    procedure: list[ProcedureFigures]


def cell_kind_data(
    labels: np.ndarray,
    judge_scores: np.ndarray,
    probabilities: np.ndarray | None,
    means: np.ndarray | None,
    groups: object,
    n_labels: int,
) -> list[KindData]:
    """One cell's items as verdicts of every input kind it supports: a mean-of-samples judge (``means``) only
    ``mean``; otherwise ``score``, and ``probabilities`` when every item has them (calibration.input_kinds.verdicts)."""
    kinds = ["mean"] if means is not None else ["score"] + (["probabilities"] if probabilities is not None else [])
    result = []
    for kind in kinds:
        scores, probs = kind_inputs(kind, n_labels, judge_scores=judge_scores, probabilities=probabilities, means=means)
        result.append(
            KindData(
                kind=kind,
                labels=labels,
                judge_scores=scores,
                probabilities=probs,
                groups=np.asarray(groups),
                n_labels=n_labels,
            )
        )
    return result


def decision_shares(
    sizes: np.ndarray, n_labels: int, *, accept_max: int, escalate_min: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boolean accept, review, escalate per set size under the service's rule (empty sets escalate)."""
    escalate = (sizes == 0) | (sizes >= min(escalate_min, n_labels))
    accept = ~escalate & (sizes <= accept_max)
    return accept, ~escalate & ~accept, escalate


def uses_group_pac(groups: np.ndarray, delta: float | None, group_pac: bool) -> bool:
    """Whether fits count documents (module rules): asked for, and some group holds more than one item; PAC
    (``delta``) or in expectation alike."""
    del delta  # documents are the unit in both modes
    return group_pac and groups.size > np.unique(groups).size


def _subset(data: KindData, index: np.ndarray) -> KindData:
    return KindData(
        kind=data.kind,
        labels=data.labels[index],
        judge_scores=data.judge_scores[index],
        probabilities=None if data.probabilities is None else data.probabilities[index],
        groups=data.groups[index],
        n_labels=data.n_labels,
    )


def fit_input_kind(
    data: KindData,
    *,
    alphas: Sequence[float],
    delta: float | None,
    headline_alpha: float = 0.10,
    report_alphas: Sequence[float] = (0.05, 0.10, 0.20),
    n_splits: int = 20,
    selection_repeats: int = 5,
    nested_repeats: int = 2,
    seed: int = 0,
    accept_max: int = 2,
    escalate_min: int = 5,
    min_group_items: int = 20,
    methods: Sequence[str] | None = None,
    qualify_alphas: Sequence[float] = (),
    qualify_checks: Sequence[str] = QUALIFY_CHECKS,
    group_pac: bool = True,
) -> InputKindFit:
    """Held-out figures, the default method, the served recipe's unseen-group figures, and the fitted predictors
    of one (cell, input kind) (module rules). ``qualify_checks`` relaxes the selection rule's conditions
    (:func:`calibration.input_kinds.selection.qualifies`) for studies that measure what each one costs; calibration
    keeps all.
    ``group_pac`` False keeps the item-level PAC rank even when groups hold several items (module rules)."""
    data = KindData(
        kind=data.kind,
        labels=data.labels,
        judge_scores=data.judge_scores,
        probabilities=data.probabilities,
        groups=np.unique(data.groups, return_inverse=True)[1],
        n_labels=data.n_labels,
    )  # integer group codes: the same splits, cheaper to compare
    usable = [m for m in methods_for_input_kind(data.kind) if methods is None or m in methods]
    if data.probabilities is None:
        usable = [m for m in usable if m in methods_for_input_kind("score")]
    levels = [(float(a), delta) for a in alphas]
    outer = group_splits(data.groups, n_splits=n_splits, seed=seed)
    outer_seeds = [[seed, 1, s.split] for s in outer]
    pac_groups = uses_group_pac(data.groups, delta, group_pac)

    heldout = []
    for method in usable:
        pooled = PooledSets.of(evaluate_method(method, data, outer, levels, outer_seeds, pac_groups))
        for level, alpha in enumerate(alphas):
            heldout.append(
                _figures(
                    method,
                    float(alpha),
                    level,
                    pooled,
                    data,
                    accept_max=accept_max,
                    escalate_min=escalate_min,
                    min_group_items=min_group_items,
                )
            )

    selection = cross_fit_splits(data.groups, repeats=selection_repeats, seed=seed)
    selection_seeds = [[seed, 2, s.split // 2, s.split % 2] for s in selection]
    default, evidence = choose_on_splits(
        data,
        selection,
        selection_seeds,
        usable,
        alpha=headline_alpha,
        also=qualify_alphas,
        delta=delta,
        min_group_items=min_group_items,
        context=f" (cross-fitting by document, {selection_repeats} x 2 folds, alpha={headline_alpha})",
        checks=qualify_checks,
        pac_groups=pac_groups,
    )

    procedure_rows: dict[float, tuple[list[float], list[float], list[str]]] = {
        float(a): ([], [], []) for a in report_alphas
    }
    report_levels = [(float(a), delta) for a in report_alphas]
    served: list[SplitSets] = []
    for split in outer:
        inner_data = _subset(data, split.calibration)
        inner = cross_fit_splits(inner_data.groups, repeats=nested_repeats, seed=seed + 1 + split.split)
        inner_seeds = [[seed, 3, split.split, s.split // 2, s.split % 2] for s in inner]
        choice, _ = choose_on_splits(
            inner_data,
            inner,
            inner_seeds,
            usable,
            alpha=headline_alpha,
            also=qualify_alphas,
            delta=delta,
            min_group_items=min_group_items,
            context="",
            checks=qualify_checks,
            pac_groups=pac_groups,
        )
        (result,) = evaluate_method(choice.method, data, [split], report_levels, [[seed, 1, split.split]], pac_groups)
        served.append(result)
        for level, alpha in enumerate(report_alphas):
            coverage, size, chosen = procedure_rows[float(alpha)]
            coverage.append(float(result.covered[level].mean()))
            size.append(float(result.set_sizes[level].mean()))
            chosen.append(choice.method)
    procedure = [
        ProcedureFigures(
            alpha=a,
            coverage=c,
            set_size=s,
            chosen=m,
            mean_coverage=float(np.mean(c)),
            p5_coverage=float(np.percentile(c, 5)),
            mean_set_size=float(np.mean(s)),
            mean_set_size_ci=split_mean_interval(
                data.groups, [r.test_index for r in served], [r.set_sizes[level] for r in served], seed=seed
            ).bounds,
        )
        for level, (a, (c, s, m)) in enumerate(procedure_rows.items())
    ]

    fitted: dict[str, dict[float, FittedConformal]] = {}
    for method in usable:
        prepared = calibration_scores(
            method,
            data.labels,
            judge_scores=data.judge_scores,
            probabilities=data.probabilities,
            n_labels=data.n_labels,
            rng=np.random.default_rng(seed),
            groups=data.groups if pac_groups else None,
        )
        levels_fitted = fits_from_scores(prepared, [float(a) for a in alphas], delta)
        fitted[method] = {float(a): f for a, f in zip(alphas, levels_fitted, strict=True)}
    return InputKindFit(
        kind=data.kind,
        n_items=int(data.labels.size),
        n_groups=int(np.unique(data.groups).size),
        delta=delta,
        fitted=fitted,
        heldout=heldout,
        default=default,
        selection_evidence=evidence,
        procedure=procedure,
    )


def _figures(
    method: str,
    alpha: float,
    level: int,
    pooled: PooledSets,
    data: KindData,
    *,
    accept_max: int,
    escalate_min: int,
    min_group_items: int,
) -> HeldoutFigures:
    evidence = pooled_evidence(method, alpha, level, pooled, data, min_group_items=min_group_items)
    coverages = pooled.coverages[level]
    sizes, covered = pooled.sizes[level], pooled.covered[level]
    accept, review, escalate = decision_shares(sizes, data.n_labels, accept_max=accept_max, escalate_min=escalate_min)
    return HeldoutFigures(
        method=method,
        alpha=alpha,
        n_splits=pooled.n_evaluations,
        coverage=evidence.mean_coverage,
        coverage_std=float(coverages.std(ddof=1)) if pooled.n_evaluations > 1 else 0.0,
        coverage_p5=evidence.p5_coverage,
        set_size=evidence.mean_set_size,
        empty_share=evidence.empty_share,
        full_scale_share=evidence.full_scale_share,
        non_interval_share=evidence.non_interval_share,
        accept_share=float(accept.mean()),
        review_share=float(review.mean()),
        escalate_share=float(escalate.mean()),
        accept_accuracy=float(covered[accept].mean()) if accept.any() else None,
        min_label_coverage=evidence.min_label_coverage,
        min_bin_coverage=evidence.min_bin_coverage,
    )
