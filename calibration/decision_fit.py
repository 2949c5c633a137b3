"""Fit a certified decision rule (:class:`calibration.decision_rule.DecisionRule`) on one cell's labelled items.

Rules, stated once (the parts by document, the bins, their points, the order of the bins and the betting walk's
start are fitted on FIT: :mod:`calibration.decision_bins` states their rules):

* **Parts.** FIT fits bins, points, the order and the start; CERTIFY gives the bounds. The CERTIFY documents are
  processed by the betting bound in the order of ``numpy.random.default_rng([seed, 2]).permutation``.
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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

import numpy as np

from calibration.decision_bins import DEFAULT_WIDTH, bin_edges, bin_order, fit_parts, points_of, walk_start
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
    "MIN_CERTIFY_ITEMS",
    "MIN_FAILING_ITEMS",
    "MIN_LABEL_ITEMS",
    "SIGNALS",
    "DecisionData",
    "fit_decision_rule",
]

DEFAULT_TOLERANCES: tuple[int, ...] = (1, 2)
DEFAULT_ALPHAS: tuple[float, ...] = (0.05, 0.10, 0.20)
DEFAULT_GATES: tuple[int, ...] = (3, 4)
DEFAULT_FIT_FRACTION = 0.2  # FIT fits points, order and start; the rest certifies (the bound needs documents)
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


@dataclass(frozen=True)
class _Certify:
    """The CERTIFY part as arrays: bins, labels, group index, group count, largest group size, processing order."""

    bins: np.ndarray
    labels: np.ndarray
    group_index: np.ndarray
    n_groups: int
    max_group_size: int
    order: np.ndarray


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
        sequence = bin_order(fit_bins, fit_distance >= tolerance, range(n_bins), signal, fit_signal)
        bad = distance >= tolerance
        for alpha in alphas:
            start = walk_start(sequence, fit_bins, fit_distance >= tolerance, float(alpha)) if bound == "betting" else 0
            row = _certification(
                part, sequence, start, bad, tolerance=tolerance, alpha=float(alpha), delta=delta, bound=bound
            )
            certifications.append(row)
            per_label += _label_rows(part, bad, row, data.n_labels)
    gate_rows = []
    for tau in gates:
        candidates = [b for b in range(n_bins) if points[b] >= tau]
        sequence = bin_order(fit_bins, fit_labels < tau, candidates, signal, fit_signal)
        for alpha in alphas:
            start = walk_start(sequence, fit_bins, fit_labels < tau, float(alpha)) if bound == "betting" else 0
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
