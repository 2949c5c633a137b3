"""Calibrate one labelled cell (judge, prompt family, criterion): held-out figures by group, fit on all, a default.

Pure: a :class:`calibration.labels.LabelledCell` in, typed results out (the service's ``POST /v1/calibrations``
runs it in a worker thread; ``offline`` reports its decision figures). Rules, stated once:

* **Methods.** Every method of :data:`calibration.conformal.METHODS` when every item has probabilities, else the
  score-only ones; each at every alpha given. The score-only methods (including the learned ones) are fitted on the
  integer scores alone, the probability methods on the probabilities: an entry is fitted on exactly the kind of
  verdict it is applied to (a caller who sends only a score never gets a threshold fitted on log-probs).
* **Held-out splits by group.** The distinct group ids (documents, sources) are sorted; split i permutes them with
  ``numpy.random.default_rng([seed, i])`` and puts the first ``floor(G / 2)`` groups in the calibration half (all
  items of a group on one side). The learned methods and ``aps_randomized`` draw from
  ``numpy.random.default_rng([seed, i, 1])``. A cell with fewer than 2 groups has no held-out figures.
* **Figures** per (method, alpha), means over splits: coverage (and its sample std, ddof = 1), set size, the shares
  of test items whose set is empty or the full scale, the decision shares under the service's rule (empty set ->
  escalate; size >= min(escalate_min_set_size, K) -> escalate; size <= accept_max_set_size -> accept; else
  review), ``accept_accuracy`` = the share of accepted items whose human label lies in their set, and the lowest
  coverage within a human label among labels with >= 20 test items summed over the splits.
* **Default method**, at ``headline_alpha`` (0.10, else the alpha nearest it): the smallest mean set size (ties:
  METHODS order) among methods with coverage >= 1 - alpha - 0.01 whose lowest per-label coverage is >= 1 - alpha
  - 0.05; when none qualifies, ``residual`` (the paper's method).
* **Fit.** Every (method, alpha) is then fitted on all items with ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec
import numpy as np

from calibration.conformal import METHODS, PROBABILITY_METHODS, fit_conformal, predict_sets
from calibration.labels import LabelledCell
from calibration.thresholds import (
    FORMAT_VERSION,
    DefaultMethod,
    ThresholdEntry,
    ThresholdsArtifact,
)

__all__ = [
    "COVERAGE_SLACK",
    "LABEL_SLACK",
    "MIN_LABEL_ITEMS",
    "CellCalibration",
    "HeldoutFigures",
    "calibrate_cell",
    "cell_artifact",
    "decision_of",
    "methods_for_cell",
]

COVERAGE_SLACK = 0.01
LABEL_SLACK = 0.05
MIN_LABEL_ITEMS = 20
PAPER_METHOD = "residual"


class HeldoutFigures(msgspec.Struct, frozen=True, kw_only=True):
    """Held-out (by group) figures of one method at one alpha, means over the splits."""

    method: str
    alpha: float
    coverage: float
    coverage_std: float
    set_size: float
    n_splits: int
    n_test: float
    share_empty: float
    share_full_scale: float
    share_accept: float
    share_review: float
    share_escalate: float
    accept_accuracy: float | None
    min_label_coverage: float | None


class CellCalibration(msgspec.Struct, frozen=True, kw_only=True):
    """One calibrated cell: its fitted entries, its default method and the held-out figures behind them."""

    judge: str
    prompt_family: str
    criterion: str
    n_labels: int
    n_items: int
    n_groups: int
    entries: list[ThresholdEntry]
    default: DefaultMethod
    figures: list[HeldoutFigures]


def methods_for_cell(cell: LabelledCell) -> tuple[str, ...]:
    """All methods when the cell has probabilities, else the score-only ones."""
    if cell.probabilities is not None:
        return METHODS
    return tuple(m for m in METHODS if m not in PROBABILITY_METHODS)


def _inputs_of(cell: LabelledCell, method: str) -> np.ndarray | None:
    """The probabilities a method is fitted on: the cell's for the probability methods, none for the others, so
    an entry is applied only to the kind of verdict it was fitted on (a score-only method never saw log-probs)."""
    return cell.probabilities if method in PROBABILITY_METHODS else None


def decision_of(set_sizes: np.ndarray, n_labels: int, *, accept_max: int = 2, escalate_min: int = 5) -> np.ndarray:
    """Decision per item as 0 accept, 1 review, 2 escalate (module rule; an empty set escalates)."""
    sizes = np.asarray(set_sizes)
    escalate = (sizes == 0) | (sizes >= min(escalate_min, n_labels))
    return np.where(escalate, 2, np.where(sizes <= accept_max, 0, 1))


def _group_splits(groups: Sequence[str], n_splits: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    keys = np.asarray(groups, dtype=object)
    distinct = sorted(set(groups))
    if len(distinct) < 2:
        return []
    position = {g: i for i, g in enumerate(distinct)}
    index = np.array([position[g] for g in keys])
    n_cal = len(distinct) // 2
    splits = []
    for split in range(n_splits):
        order = np.random.default_rng([seed, split]).permutation(len(distinct))
        in_cal = np.zeros(len(distinct), dtype=bool)
        in_cal[order[:n_cal]] = True
        member = in_cal[index]
        splits.append((np.flatnonzero(member), np.flatnonzero(~member)))
    return splits


def _figures(cell: LabelledCell, method: str, alpha: float, splits: list[tuple[np.ndarray, np.ndarray]], *,
             seed: int, accept_max: int, escalate_min: int) -> HeldoutFigures:
    k = cell.n_labels
    coverages, sizes, empty, full, shares = [], [], [], [], []
    accepted = accepted_hits = 0
    label_n = np.zeros(k + 1)
    label_hits = np.zeros(k + 1)
    for number, (cal, test) in enumerate(splits):
        probs = _inputs_of(cell, method)
        fitted = fit_conformal(
            method, alpha, cell.labels[cal], judge_scores=cell.judge_scores[cal],
            probabilities=None if probs is None else probs[cal], n_labels=k,
            rng=np.random.default_rng([seed, number, 1]),
        )
        membership = predict_sets(fitted, judge_scores=cell.judge_scores[test],
                                  probabilities=None if probs is None else probs[test],
                                  rng=np.random.default_rng([seed, number, 2]))
        y = cell.labels[test]
        hit = membership[np.arange(test.size), y - 1]
        size = membership.sum(axis=1)
        decision = decision_of(size, k, accept_max=accept_max, escalate_min=escalate_min)
        coverages.append(hit.mean())
        sizes.append(size.mean())
        empty.append((size == 0).mean())
        full.append((size == k).mean())
        shares.append(np.bincount(decision, minlength=3) / test.size)
        accepted += int((decision == 0).sum())
        accepted_hits += int(hit[decision == 0].sum())
        label_n += np.bincount(y, minlength=k + 1)
        label_hits += np.bincount(y, weights=hit.astype(float), minlength=k + 1)
    counted = label_n >= MIN_LABEL_ITEMS
    share = np.mean(shares, axis=0)
    return HeldoutFigures(
        method=method, alpha=float(alpha), coverage=float(np.mean(coverages)),
        coverage_std=float(np.std(coverages, ddof=1)) if len(coverages) > 1 else 0.0,
        set_size=float(np.mean(sizes)), n_splits=len(splits), n_test=float(np.mean([t.size for _, t in splits])),
        share_empty=float(np.mean(empty)), share_full_scale=float(np.mean(full)),
        share_accept=float(share[0]), share_review=float(share[1]), share_escalate=float(share[2]),
        accept_accuracy=accepted_hits / accepted if accepted else None,
        min_label_coverage=float((label_hits[counted] / label_n[counted]).min()) if counted.any() else None,
    )


def _default(cell: LabelledCell, figures: list[HeldoutFigures], alphas: Sequence[float],
             headline_alpha: float) -> DefaultMethod:
    alpha = min(alphas, key=lambda a: (abs(a - headline_alpha), a))
    at = [f for f in figures if f.alpha == alpha]
    floor, label_floor = 1 - alpha - COVERAGE_SLACK, 1 - alpha - LABEL_SLACK
    rule = (f"held-out coverage by group >= {floor:.2f} and coverage within every human label (>= "
            f"{MIN_LABEL_ITEMS} test items) >= {label_floor:.2f} at alpha={alpha}")
    qualifying = [f for f in at if f.coverage >= floor - 1e-12
                  and (f.min_label_coverage is None or f.min_label_coverage >= label_floor - 1e-12)]
    if qualifying:
        chosen = min(qualifying, key=lambda f: (round(f.set_size, 9), METHODS.index(f.method)))
        reason = (f"smallest mean set size ({chosen.set_size:.2f} of {cell.n_labels}, coverage {chosen.coverage:.3f}) "
                  f"among {len(qualifying)} of {len(at)} methods with {rule}")
    elif at:
        chosen = next(f for f in at if f.method == PAPER_METHOD)
        reason = f"fallback to {PAPER_METHOD}: no method had {rule}"
    else:
        chosen = None
        reason = f"{PAPER_METHOD}: too few groups for held-out figures"
    return DefaultMethod(judge=cell.judge, prompt_family=cell.prompt_family, criterion=cell.criterion,
                         method=PAPER_METHOD if chosen is None else chosen.method, reason=reason)


def calibrate_cell(
    cell: LabelledCell,
    *,
    alphas: Sequence[float],
    n_splits: int = 20,
    seed: int = 0,
    accept_max: int = 2,
    escalate_min: int = 5,
    headline_alpha: float = 0.10,
    progress: Callable[[int, int], None] | None = None,
) -> CellCalibration:
    """Held-out figures by group, the default method and the entries fitted on all items (module rules).

    ``progress(done, total)`` is called after each (method, alpha).
    """
    methods = methods_for_cell(cell)
    splits = _group_splits(cell.groups, n_splits, seed)
    tasks = [(m, a) for m in methods for a in alphas]
    figures: list[HeldoutFigures] = []
    entries: list[ThresholdEntry] = []
    for done, (method, alpha) in enumerate(tasks, start=1):
        held = None
        if splits:
            held = _figures(cell, method, alpha, splits, seed=seed, accept_max=accept_max, escalate_min=escalate_min)
            figures.append(held)
        fitted = fit_conformal(method, alpha, cell.labels, judge_scores=cell.judge_scores,
                               probabilities=_inputs_of(cell, method), n_labels=cell.n_labels,
                               rng=np.random.default_rng(seed))
        entries.append(ThresholdEntry(
            judge=cell.judge, prompt_family=cell.prompt_family, criterion=cell.criterion, method=method,
            alpha=float(alpha), fitted=fitted, heldout_coverage=None if held is None else held.coverage,
            heldout_coverage_std=None if held is None else held.coverage_std,
            heldout_set_size=None if held is None else held.set_size, n_splits=len(splits),
        ))
        if progress is not None:
            progress(done, len(tasks))
    return CellCalibration(
        judge=cell.judge, prompt_family=cell.prompt_family, criterion=cell.criterion, n_labels=cell.n_labels,
        n_items=len(cell.item_ids), n_groups=len(set(cell.groups)), entries=entries,
        default=_default(cell, figures, alphas, headline_alpha), figures=figures,
    )


def cell_artifact(
    cells: Sequence[CellCalibration], *, created_at: str, code_version: str, data_hash: str, source: str
) -> ThresholdsArtifact:
    """An artifact holding exactly these cells (label_scale 1..K of the widest cell)."""
    k = max((c.n_labels for c in cells), default=5)
    return ThresholdsArtifact(
        format_version=FORMAT_VERSION, created_at=created_at, code_version=code_version, data_hash=data_hash,
        label_scale=list(range(1, k + 1)), entries=[e for c in cells for e in c.entries],
        default_methods=[c.default for c in cells], source=source,
    )
