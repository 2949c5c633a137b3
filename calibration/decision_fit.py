"""Fit a certified decision rule (:class:`calibration.decision_rule.DecisionRule`) on one cell's labelled items.

Rules, stated once:

* **Parts.** The distinct documents (groups) are sorted and permuted with ``numpy.random.default_rng([seed, 1])``;
  the first ``max(1, floor(fit_fraction * G))`` form the FIT part (bins, points, the order of the bins), the rest
  the CERTIFY part (the bounds). Nothing fitted on FIT looks at CERTIFY, so the fixed sequence is fixed before
  the certification data is seen. The CERTIFY documents are processed by the betting bound in the order of
  ``numpy.random.default_rng([seed, 2]).permutation``.
* **Bins.** Candidate cut points: for ``score`` the half-integers 1.5 .. K - 0.5 (one bin per integer score); for
  ``expected_score`` and ``mean`` every ``width`` (0.25) from 1 + width to K - width. Sparse bins are merged
  left to right: a bin is closed once it holds >= ``min_bin_items`` FIT items; a last bin short of that joins
  the previous one. A bin holds edges[k-1] <= x < edges[k] (:func:`calibration.decision_rule.decide`).
* **Points.** Per bin the most frequent human label among its FIT items; ties go to the tied label nearest the
  bin's median FIT feature, then to the lower label. A bin without FIT items (only possible when FIT is empty
  there after merging, i.e. never for a merged continuous bin) gets the feature's own nearest label.
* **Order (the confidence signal).** ``fit_error`` (default): bins sorted by their Laplace-smoothed FIT error rate
  (errors + 1) / (n + 2) at the row's tolerance (or false-pass rate for a gate), ascending; ties by more FIT items,
  then lower bin index. Alternatives (only where the caller gives a per-item signal): ``spread`` (ascending mean
  standard deviation of the judge's distribution over the bin's FIT items) and ``margin`` (descending mean
  log-prob margin top-1 minus top-2).
* **Certification** per (tolerance, accept_alpha): the fixed sequence of :mod:`calibration.risk_control` over the
  nested sets "first j bins of the order", stopping at the first non-rejection or at a bin without CERTIFY items.
  With the document-level ``betting`` bound the walk starts at the prefix j* that maximises, on FIT, accept share
  x (alpha - smoothed error rate) (the capital's drift per document: a tiny first set can never gather enough
  capital, and the walk would stop there), then goes on to larger prefixes; j* is fixed from FIT alone, so the
  sequence is still fixed before CERTIFY is seen. The item-level bound starts at the first bin (classical LTT).
  ``rule_failed`` when the CERTIFY part has fewer documents than the bound can ever certify with (best case,
  :func:`calibration.risk_control.min_groups_to_certify`) or fewer than ``MIN_CERTIFY_ITEMS`` items.
* **Quality gates** per (pass_threshold tau, accept_alpha): candidate bins are those whose point is >= tau; the
  error of an accepted pass is human < tau; ``rule_failed`` also when CERTIFY holds fewer than
  ``MIN_FAILING_ITEMS`` items humans would fail (label < tau).
* **Per-label rows**: every label 1..K with its CERTIFY count, its share of items in accepted bins and the error
  rate among them; ``certifiable`` iff the label has >= ``MIN_LABEL_ITEMS`` CERTIFY items. Labels are never
  pooled.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

import numpy as np

from calibration.decision_rule import Certification, DecisionRule, LabelRow, QualityGate
from calibration.risk_control import (
    BOUNDS,
    StepOutcome,
    fixed_sequence,
    group_counts,
    min_groups_to_certify,
    risk_test,
)

__all__ = [
    "DEFAULT_ALPHAS",
    "DEFAULT_GATES",
    "DEFAULT_TOLERANCES",
    "MIN_BIN_ITEMS",
    "MIN_CERTIFY_ITEMS",
    "MIN_FAILING_ITEMS",
    "MIN_LABEL_ITEMS",
    "SIGNALS",
    "DecisionData",
    "bin_edges",
    "fit_decision_rule",
    "fit_parts",
    "points_of",
]

DEFAULT_TOLERANCES: tuple[int, ...] = (1, 2)
DEFAULT_ALPHAS: tuple[float, ...] = (0.05, 0.10, 0.20)
DEFAULT_GATES: tuple[int, ...] = (3, 4)
DEFAULT_FIT_FRACTION = 0.2  # FIT fits points, order and start; the rest certifies (the bound needs documents)
DEFAULT_WIDTH = 0.25
MIN_BIN_ITEMS = 20
MIN_CERTIFY_ITEMS = 50
MIN_FAILING_ITEMS = 20
MIN_LABEL_ITEMS = 20
SIGNALS: tuple[str, ...] = ("fit_error", "spread", "margin")
_SIGNAL_WORDS = {
    "fit_error": "bins ordered by their Laplace-smoothed error rate (errors + 1) / (n + 2) on the FIT documents",
    "spread": "bins ordered by the mean standard deviation of the judge's distribution on the FIT documents",
    "margin": "bins ordered by the mean log-prob margin (top-1 minus top-2) on the FIT documents (largest first)",
}


@dataclass(frozen=True)
class DecisionData:
    """One (cell, input kind): per-item human label (1..K), feature value and group; optional per-item signals."""

    labels: np.ndarray
    features: np.ndarray
    groups: np.ndarray
    n_labels: int
    signals: Mapping[str, np.ndarray] | None = None  # "spread" / "margin" per item, where the verdict has them


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


def _order(
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


@dataclass(frozen=True)
class _Certify:
    """The CERTIFY part as arrays: bins, labels, group index, group count, largest group size, processing order."""

    bins: np.ndarray
    labels: np.ndarray
    group_index: np.ndarray
    n_groups: int
    max_group_size: int
    order: np.ndarray


def _start(sequence: list[int], fit_bins: np.ndarray, fit_bad: np.ndarray, alpha: float) -> int:
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


def _walk(
    part: _Certify, sequence: list[int], start: int, bad: np.ndarray, *, alpha: float, delta: float, bound: str
) -> tuple[list[int], float | None, float | None]:
    """Fixed sequence over the nested sets sequence[:start+1], sequence[:start+2], ...; returns (accepted bins,
    bound of the last accepted set, bound of the first tested set)."""
    first: list[float] = []

    def step(j: int) -> StepOutcome | None:
        last = start + j
        if not np.any(part.bins == sequence[last]):
            return None  # a bin without certification items is never added on no evidence
        accepted = np.isin(part.bins, sequence[: last + 1])
        e, a = group_counts(bad, accepted, part.group_index, part.n_groups)
        outcome = risk_test(bound, e, a, alpha=alpha, delta=delta, max_group_size=part.max_group_size, order=part.order)
        if j == 0:
            first.append(outcome.bound)
        return outcome

    outcomes = fixed_sequence(len(sequence) - start, step)
    if not outcomes:
        return [], None, first[0] if first else None
    return sorted(sequence[: start + len(outcomes)]), outcomes[-1].bound, first[0]


def _data_check(part: _Certify, *, alpha: float, delta: float, bound: str) -> str:
    """'' when the CERTIFY part can certify at all, else which check failed."""
    if part.bins.size < MIN_CERTIFY_ITEMS:
        return f"only {part.bins.size} certification items (< {MIN_CERTIFY_ITEMS})"
    if bound == "betting":
        needed = min_groups_to_certify(alpha=alpha, delta=delta)
        if part.n_groups < needed:
            return (
                f"only {part.n_groups} certification documents: the document-level bound cannot certify "
                f"accept_alpha {alpha:g} at delta {delta:g} with fewer than {needed} even if every item were "
                "accepted and right"
            )
    return ""


def fit_decision_rule(
    data: DecisionData,
    *,
    judge: str,
    prompt_family: str,
    criterion: str,
    input_kind: str,
    feature: str,
    tolerances: Sequence[int] = DEFAULT_TOLERANCES,
    alphas: Sequence[float] = DEFAULT_ALPHAS,
    gates: Sequence[int] = DEFAULT_GATES,
    delta: float = 0.05,
    fit_fraction: float = DEFAULT_FIT_FRACTION,
    width: float = DEFAULT_WIDTH,
    signal: str = "fit_error",
    bound: str = "betting",
    seed: int = 0,
) -> DecisionRule:
    """The cell's DecisionRule with one certification per (tolerance, alpha) and one gate per (tau, alpha)."""
    if bound not in BOUNDS:
        raise ValueError(f"unknown bound {bound!r}; known: {', '.join(BOUNDS)}")
    if signal not in SIGNALS:
        raise ValueError(f"unknown signal {signal!r}; known: {', '.join(SIGNALS)}")
    signal_values = None if signal == "fit_error" else (data.signals or {}).get(signal)
    if signal != "fit_error" and signal_values is None:
        raise ValueError(f"signal {signal!r} needs per-item values (the verdict's distribution)")
    labels = np.asarray(data.labels, dtype=np.int64)
    values = np.asarray(data.features, dtype=float)
    groups = np.asarray(data.groups)
    fit, cert = fit_parts(groups, fit_fraction=fit_fraction, seed=seed)
    edges = bin_edges(feature, values[fit], data.n_labels, width=width)
    points = points_of(edges, values[fit], labels[fit], data.n_labels)
    point_of = np.asarray(points)
    bins = np.searchsorted(edges, values, side="right")
    fit_bins, fit_labels = bins[fit], labels[fit]
    fit_signal = None if signal_values is None else np.asarray(signal_values, dtype=float)[fit]
    cert_groups, group_index = np.unique(groups[cert], return_inverse=True)
    sizes = np.bincount(group_index, minlength=cert_groups.size)
    part = _Certify(
        bins=bins[cert],
        labels=labels[cert],
        group_index=group_index,
        n_groups=int(cert_groups.size),
        max_group_size=int(sizes.max()) if sizes.size else 1,
        order=np.random.default_rng([seed, 2]).permutation(cert_groups.size),
    )
    n_bins = len(points)
    distance = np.abs(part.labels - point_of[part.bins])
    fit_distance = np.abs(fit_labels - point_of[fit_bins])
    certifications, per_label = [], []
    for tolerance in tolerances:
        sequence = _order(fit_bins, fit_distance >= tolerance, range(n_bins), signal, fit_signal)
        bad = distance >= tolerance
        for alpha in alphas:
            start = _start(sequence, fit_bins, fit_distance >= tolerance, float(alpha)) if bound == "betting" else 0
            row = _certification(
                part, sequence, start, bad, tolerance=tolerance, alpha=float(alpha), delta=delta, bound=bound
            )
            certifications.append(row)
            per_label += _label_rows(part, bad, row, data.n_labels)
    gate_rows = []
    for tau in gates:
        candidates = [b for b in range(n_bins) if points[b] >= tau]
        sequence = _order(fit_bins, fit_labels < tau, candidates, signal, fit_signal)
        for alpha in alphas:
            start = _start(sequence, fit_bins, fit_labels < tau, float(alpha)) if bound == "betting" else 0
            gate_rows.append(
                _gate(part, sequence, start, part.labels < tau, tau=tau, alpha=float(alpha), delta=delta, bound=bound)
            )
    return DecisionRule(
        judge=judge,
        prompt_family=prompt_family,
        criterion=criterion,
        input_kind=input_kind,
        feature=feature,
        n_labels=data.n_labels,
        bin_edges=[float(e) for e in edges],
        points=points,
        certifications=certifications,
        quality_gates=gate_rows,
        per_label=per_label,
        signal=f"{_SIGNAL_WORDS[signal]}; bound: {bound}; FIT {int(np.unique(groups[fit]).size)} documents, "
        f"CERTIFY {part.n_groups} documents (seed {seed})",
    )


class _CertificationBase(TypedDict):
    tolerance: int
    accept_alpha: float
    delta: float
    n_groups: int
    n_items: int
    bound: str


class _GateBase(TypedDict):
    pass_threshold: int
    accept_alpha: float
    delta: float
    n_groups: int
    n_failing_items: int
    bound: str


def _certification(
    part: _Certify,
    sequence: list[int],
    start: int,
    bad: np.ndarray,
    *,
    tolerance: int,
    alpha: float,
    delta: float,
    bound: str,
) -> Certification:
    base = _CertificationBase(
        tolerance=tolerance,
        accept_alpha=alpha,
        delta=delta,
        n_groups=part.n_groups,
        n_items=int(part.bins.size),
        bound=bound,
    )
    failed = _data_check(part, alpha=alpha, delta=delta, bound=bound)
    if failed:
        return Certification(
            **base, accepted_bins=[], certified_error=None, rule_failed=True, reason=failed, accept_share=0.0
        )
    accepted, value, first = _walk(part, sequence, start, bad, alpha=alpha, delta=delta, bound=bound)
    if not accepted:
        reason = f"no bin certified: the first tested set (the {start + 1} most confident bin(s)) has bound " + (
            f"{first:.3f} > {alpha:g}" if first is not None else "has no certification items"
        )
        return Certification(**base, accepted_bins=[], certified_error=None, reason=reason, accept_share=0.0)
    share = float(np.isin(part.bins, accepted).mean())
    return Certification(
        **base,
        accepted_bins=accepted,
        certified_error=value,
        accept_share=share,
        reason=f"{len(accepted)} bin(s) certified in the fixed sequence",
    )


def _gate(
    part: _Certify,
    sequence: list[int],
    start: int,
    failing: np.ndarray,
    *,
    tau: int,
    alpha: float,
    delta: float,
    bound: str,
) -> QualityGate:
    base = _GateBase(
        pass_threshold=tau,
        accept_alpha=alpha,
        delta=delta,
        n_groups=part.n_groups,
        n_failing_items=int(failing.sum()),
        bound=bound,
    )
    failed = _data_check(part, alpha=alpha, delta=delta, bound=bound)
    if not failed and int(failing.sum()) < MIN_FAILING_ITEMS:
        failed = (
            f"only {int(failing.sum())} certification items humans would fail (label < {tau}); at least "
            f"{MIN_FAILING_ITEMS} are needed to certify a false-pass rate"
        )
    if failed:
        return QualityGate(**base, pass_bins=[], certified_false_pass=None, rule_failed=True, reason=failed)
    if not sequence:
        return QualityGate(
            **base, pass_bins=[], certified_false_pass=None, reason=f"no bin's point is >= {tau}: nothing can pass"
        )
    accepted, value, first = _walk(part, sequence, start, failing, alpha=alpha, delta=delta, bound=bound)
    if not accepted:
        return QualityGate(
            **base,
            pass_bins=[],
            certified_false_pass=None,
            reason=f"no pass bin certified: the first tested set (the {start + 1} most confident "
            "pass bin(s)) has bound "
            + (f"{first:.3f} > {alpha:g}" if first is not None else "has no certification items"),
        )
    return QualityGate(
        **base,
        pass_bins=accepted,
        certified_false_pass=value,
        reason=f"{len(accepted)} pass bin(s) certified in the fixed sequence",
    )


def _label_rows(part: _Certify, bad: np.ndarray, row: Certification, n_labels: int) -> list[LabelRow]:
    accepted = np.isin(part.bins, row.accepted_bins)
    rows = []
    for label in range(1, n_labels + 1):
        mine = part.labels == label
        n = int(mine.sum())
        taken = accepted & mine
        rows.append(
            LabelRow(
                label=label,
                n_items=n,
                n_groups=int(np.unique(part.group_index[mine]).size),
                tolerance=row.tolerance,
                accept_alpha=row.accept_alpha,
                accept_share=float(taken.sum() / n) if n else None,
                error_among_accepted=float(bad[taken].mean()) if taken.any() else None,
                certifiable=n >= MIN_LABEL_ITEMS,
            )
        )
    return rows
