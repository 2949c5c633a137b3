"""Fit a certified decision rule (:class:`calibration.decisions.rule.DecisionRule`) on one cell's labelled items.

Rules, stated once (the parts by document, the bins, their points, the order of the bins and the betting walk's
start are fitted on FIT: :mod:`calibration.decisions.bins` states their rules):

* **Parts.** FIT fits bins, points, the order and the start; CERTIFY gives the bounds. The CERTIFY documents are
  processed by the betting bound in the order of ``numpy.random.default_rng([seed, 2]).permutation``.
* **Order (the confidence signal).** ``fit_error`` (default): bins sorted by their Laplace-smoothed FIT error rate
  (errors + 1) / (n + 2) at the row's tolerance (or false-pass rate for a gate), ascending; ties by more FIT items,
  then lower bin index. Alternatives (only where the caller gives a per-item signal): ``spread`` (ascending mean
  standard deviation of the judge's distribution over the bin's FIT items) and ``margin`` (descending mean
  log-prob margin top-1 minus top-2).
* **Certification** per (tolerance, accept_alpha): the fixed sequence of :mod:`calibration.decisions.risk_control` over
  the nested sets "first j bins of the order", stopping at the first non-rejection or at a bin without CERTIFY items.
  With the document-level ``betting`` bound the walk starts at the prefix j* that maximises, on FIT, accept share x
  (alpha - smoothed error rate) (the capital's drift per document: a tiny first set can never gather enough capital, and
  the walk would stop there), then goes on to larger prefixes; j* is fixed from FIT alone, so the sequence is still
  fixed before CERTIFY is seen. The item-level bound starts at the first bin (classical LTT). ``rule_failed`` when the
  CERTIFY part has fewer documents than the bound can ever certify with (best case,
  :func:`calibration.decisions.risk_control.min_groups_to_certify`) or fewer than ``MIN_CERTIFY_ITEMS`` items.
* **Quality gates** per (pass_threshold tau, accept_alpha): candidate bins are those whose point is >= tau; the
  error of an accepted pass is human < tau; ``rule_failed`` also when CERTIFY holds fewer than
  ``MIN_FAILING_ITEMS`` items humans would fail (label < tau).
* **Expected rows** (mode ``"expected"``, :mod:`calibration.decisions.expected`): beside each pac row, on the
  same parts, bins, points and order, a row whose promise holds on average over the calibration documents.
* **Per-label rows**: :mod:`calibration.decisions.labels`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import msgspec
import numpy as np

from calibration.decisions.bins import DEFAULT_WIDTH, bin_edges, bin_order, fit_parts, points_of, walk_start
from calibration.decisions.expected import DrawnPart, expected_certification, expected_gate
from calibration.decisions.labels import MIN_LABEL_ITEMS, label_rows
from calibration.decisions.risk_control import (
    BOUNDS,
    StepOutcome,
    fixed_sequence,
    group_counts,
    min_groups_to_certify,
    risk_test,
)
from calibration.decisions.rule import MODES, Certification, DecisionRule, LabelRow, QualityGate

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
    modes: Sequence[str] = MODES,
    uniform_seed: int | None = None,
) -> DecisionRule:
    """The cell's DecisionRule with one certification per (tolerance, alpha, mode) and one gate per (tau, alpha,
    mode); ``modes`` names the guarantees fitted (calibration.decisions.rule.MODES); ``uniform_seed`` (default
    ``seed``) seeds the expected rows' uniforms (calibration.decisions.selective_risk.row_uniform)."""
    if any(mode not in MODES for mode in modes):
        raise ValueError(f"unknown modes {list(modes)}; known: {', '.join(MODES)}")
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
    drawn = DrawnPart.of(
        part.bins,
        part.labels,
        part.group_index,
        part.n_groups,
        seed,
        f"{judge}|{prompt_family}|{criterion}|{input_kind}",
        seed if uniform_seed is None else uniform_seed,
    )
    drawn_distance = np.abs(drawn.labels - point_of[drawn.bins])
    certifications: list[Certification] = []
    per_label: list[LabelRow] = []
    for tolerance in tolerances:
        sequence = bin_order(fit_bins, fit_distance >= tolerance, range(n_bins), signal, fit_signal)
        bad = distance >= tolerance
        for alpha in alphas:
            for mode in modes:
                if mode == "pac":
                    start = walk_start(sequence, fit_bins, fit_distance >= tolerance, float(alpha))
                    row = _certification(
                        part,
                        sequence,
                        start if bound == "betting" else 0,
                        bad,
                        tolerance=tolerance,
                        alpha=float(alpha),
                        delta=delta,
                        bound=bound,
                    )
                else:
                    row = expected_certification(
                        drawn,
                        sequence,
                        fit_bins,
                        fit_distance >= tolerance,
                        drawn_distance >= tolerance,
                        tolerance=tolerance,
                        alpha=float(alpha),
                        position=sum(c.mode == "expected" for c in certifications),
                        accept_share_of=part.bins,
                    )
                certifications.append(row)
                per_label += label_rows(part.bins, part.labels, part.group_index, bad, row, data.n_labels)
    gate_rows = _gate_rows(
        part,
        drawn,
        fit_bins,
        fit_labels,
        points,
        gates=gates,
        alphas=alphas,
        modes=modes,
        order=lambda bad, candidates: bin_order(fit_bins, bad, candidates, signal, fit_signal),
        delta=delta,
        bound=bound,
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


def _gate_rows(
    part: _Certify,
    drawn: DrawnPart,
    fit_bins: np.ndarray,
    fit_labels: np.ndarray,
    points: list[int],
    *,
    gates: Sequence[int],
    alphas: Sequence[float],
    modes: Sequence[str],
    order: Callable[[np.ndarray, list[int]], list[int]],
    delta: float,
    bound: str,
) -> list[QualityGate]:
    """One gate per (tau, alpha, mode): the pac walk or the expected test over the same FIT order."""
    rows: list[QualityGate] = []
    for tau in gates:
        sequence = order(fit_labels < tau, [b for b in range(len(points)) if points[b] >= tau])
        for alpha in alphas:
            for mode in modes:
                if mode == "pac":
                    start = walk_start(sequence, fit_bins, fit_labels < tau, float(alpha)) if bound == "betting" else 0
                    gate = _gate(
                        part, sequence, start, part.labels < tau, tau=tau, alpha=float(alpha), delta=delta, bound=bound
                    )
                else:
                    gate = expected_gate(
                        drawn,
                        sequence,
                        fit_bins,
                        fit_labels < tau,
                        drawn.labels < tau,
                        tau=tau,
                        alpha=float(alpha),
                        position=sum(g.mode == "expected" for g in rows),
                        n_failing_items=int((part.labels < tau).sum()),
                    )
                rows.append(gate)
    return rows


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
    row = Certification(
        tolerance=tolerance,
        accept_alpha=alpha,
        delta=delta,
        n_groups=part.n_groups,
        n_items=int(part.bins.size),
        bound=bound,
        accepted_bins=[],
        certified_error=None,
        accept_share=0.0,
    )
    failed = _data_check(part, alpha=alpha, delta=delta, bound=bound)
    if failed:
        return msgspec.structs.replace(row, rule_failed=True, reason=failed)
    accepted, value, first = _walk(part, sequence, start, bad, alpha=alpha, delta=delta, bound=bound)
    if not accepted:
        reason = f"no bin certified: the first tested set (the {start + 1} most confident bin(s)) has bound " + (
            f"{first:.3f} > {alpha:g}" if first is not None else "has no certification items"
        )
        return msgspec.structs.replace(row, reason=reason)
    return msgspec.structs.replace(
        row,
        accepted_bins=accepted,
        certified_error=value,
        accept_share=float(np.isin(part.bins, accepted).mean()),
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
    gate = QualityGate(
        pass_threshold=tau,
        accept_alpha=alpha,
        delta=delta,
        n_groups=part.n_groups,
        n_failing_items=int(failing.sum()),
        bound=bound,
        pass_bins=[],
        certified_false_pass=None,
    )
    failed = _data_check(part, alpha=alpha, delta=delta, bound=bound)
    if not failed and int(failing.sum()) < MIN_FAILING_ITEMS:
        failed = (
            f"only {int(failing.sum())} certification items humans would fail (label < {tau}); at least "
            f"{MIN_FAILING_ITEMS} are needed to certify a false-pass rate"
        )
    if failed:
        return msgspec.structs.replace(gate, rule_failed=True, reason=failed)
    if not sequence:
        return msgspec.structs.replace(gate, reason=f"no bin's point is >= {tau}: nothing can pass")
    accepted, value, first = _walk(part, sequence, start, failing, alpha=alpha, delta=delta, bound=bound)
    if not accepted:
        return msgspec.structs.replace(
            gate,
            reason=f"no pass bin certified: the first tested set (the {start + 1} most confident "
            "pass bin(s)) has bound "
            + (f"{first:.3f} > {alpha:g}" if first is not None else "has no certification items"),
        )
    return msgspec.structs.replace(
        gate,
        pass_bins=accepted,
        certified_false_pass=value,
        reason=f"{len(accepted)} pass bin(s) certified in the fixed sequence",
    )
