"""Certified decisions on documents the rule never saw: accept share and error among accepted, per cell.

``python -m offline decisions [--data-dir D] [--out reports] [--splits 20] [--seed 0]`` fits a
:class:`calibration.decision_rule.DecisionRule` (:func:`calibration.decision_fit.fit_decision_rule`) on the
calibration documents of each split and serves the held-out documents' verdicts with
:func:`calibration.decision_rule.decide`, the look-up the service applies, on the feature computed by
:func:`calibration.decision_rule.feature_of` from what a caller sends (the integer score; the log-probs as
renormalised probabilities).

Rules, stated once:

* **Human label** y* = the expert mean rounded to the nearest integer, halves up
  (:func:`offline.data.summeval.human_target`, the rule of the conformal studies).
* **Cells and kinds.** Every (judge, prompt family, criterion): kind ``score`` (feature: the integer score) for
  every judge, ``probabilities`` (feature: the expected score) where every item has log-probs, ``mean`` for a
  mean-of-samples judge. The cell's *headline* kind is ``probabilities`` where it exists (the log-prob cells),
  else ``mean``, else ``score``.
* **Splits.** ``n_splits`` splits by document (:func:`calibration.heldout.group_splits`, seed ``seed``):
  ``cal_fraction`` of the documents calibrate (FIT + CERTIFY inside them), the rest are served. The main study
  uses 0.5 (the issue's "calibrate on half"); ``cal_fraction`` 0.8 is reported beside it to show how the
  document-level bound's power grows with the number of calibration documents.
* **Figures per (cell, kind, bound, tolerance, accept_alpha)**: mean accept share over splits; error among
  accepted = (|y* - point| >= tolerance) among the split's accepted items, averaged over the splits that accept
  something (``mean_error``) and pooled over all splits (``pooled_error``); ``share_ok`` = share of the splits
  whose error among accepted is <= accept_alpha + 0.02 (0.12 at 0.10, the issue's check), a split that accepts
  nothing counting as ok (it accepts no wrong verdict); the rule's certified error averaged over the splits that
  accept; failed-rule splits and reasons.
* **Bounds.** ``betting`` (document-level, :mod:`calibration.risk_control`, the one offered and exported) and
  ``clopper_pearson_items`` (item-level exact binomial: NOT valid when items share a document; shown to say what
  ignoring documents would claim).
* **Per-label tables**: every human label with its mean count per served half, its accept share and the error
  among its accepted items (pooled over splits); ``certifiable`` iff the label has >= 20 items per served half on
  average. Labels are never pooled.
* **Quality gate** tau = 3: share of served items accepted as a pass, false passes (y* < 3) among them, the
  certified bound and the failed-rule reasons.
* **Document resampling** (every headline cell): ``resampling_draws`` draws of 50 documents with replacement from
  the cell's documents, the rule fitted on each; a draw fails when its accepted bins' error on all of the cell's
  items exceeds accept_alpha. Both bounds, accept_alpha 0.10 and 0.20, tolerance 2.
* **Signals** (log-prob cells): the bins' order by FIT error rate (``fit_error``, the default), by the mean spread
  of the judge's distribution (``spread``) and by the mean log-prob margin (``margin``).

Writes (:mod:`offline.studies.decisions_report`) ``decisions/decisions.json``, ``decisions/decisions.md``,
``decisions/operating_curve.png`` and ``decisions/score_vs_label.png``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from calibration.cell_rules import ARTIFACT_GRID, DecisionKind, RuleGrid, decision_kinds, fit_cell_rules, fit_kind_rule
from calibration.decision_fit import MIN_LABEL_ITEMS, DecisionData
from calibration.decision_rule import DecisionRule, decide, decide_gate
from calibration.heldout import group_splits
from offline.studies.cell_data import JudgeCriterionData
from offline.studies.decisions_results import DecisionStudy, GateRow, Headline, LabelTableRow, ResamplingRow, Row

__all__ = [
    "CURVE_ALPHAS",
    "EXPORT_ALPHAS",
    "EXPORT_GATES",
    "EXPORT_TOLERANCES",
    "CellKind",
    "cell_kinds",
    "export_rules",
    "resampling_check",
    "run_decision_study",
]

CURVE_ALPHAS: tuple[float, ...] = (0.05, 0.10, 0.15, 0.20, 0.25, 0.30)
TABLE_ALPHAS: tuple[float, ...] = (0.05, 0.10, 0.20)
HEADLINE_ALPHA, HEADLINE_TOLERANCE = 0.10, 2
TOLERANCES: tuple[int, ...] = (1, 2)
GATE = 3
OK_SLACK = 0.02  # a split is "ok" when its error among accepted is <= accept_alpha + 0.02 (0.12 at 0.10)
BOUNDS: tuple[str, ...] = ("betting", "clopper_pearson_items")
SIGNAL_ALTERNATIVES: tuple[str, ...] = ("spread", "margin")
EXPORT_TOLERANCES: tuple[int, ...] = ARTIFACT_GRID.tolerances  # the artifact's grid: calibration.cell_rules
EXPORT_ALPHAS: tuple[float, ...] = ARTIFACT_GRID.alphas
EXPORT_GATES: tuple[int, ...] = ARTIFACT_GRID.gates
DELTA = ARTIFACT_GRID.delta
DIRECTORY = "decisions"

RULES = {
    "label": "y* = expert mean rounded to the nearest integer, halves up (offline.data.summeval.human_target)",
    "splits": "by document (calibration.heldout.group_splits): cal_fraction of the documents calibrate, the rest "
    "are served with calibration.decision_rule.decide on calibration.decision_rule.feature_of",
    "fit": "calibration.decision_fit: FIT = 20% of the calibration documents (bins, mode points, order, start), "
    "CERTIFY = the rest (fixed-sequence test at delta = 0.05)",
    "error": "error = |y* - point| >= tolerance; mean_error over splits that accept, pooled_error over all "
    "splits; share_ok = share of splits with error among accepted <= accept_alpha + 0.02 (no acceptance counts as ok)",
    "bounds": "betting: document-level (valid when items share a document; exported); clopper_pearson_items: "
    "item-level exact binomial, NOT valid with documents (comparison only)",
    "labels": "every human label with its mean count per served part; certifiable iff >= 20 items per part",
    "resampling": "per headline cell: draws of 50 documents with replacement from its 100 (a repeat is a new "
    "document), the rule fitted on each draw; failure = the accepted bins' error on all of the cell's items > "
    "accept_alpha; the check is failure rate <= delta + 2 sqrt(delta (1 - delta) / draws)",
}


@dataclass(frozen=True)
class CellKind:
    """One (cell, input kind) as decision inputs: the verdicts' features and what a caller would send."""

    judge: str
    prompt_family: str
    criterion: str
    kind: str
    feature: str
    data: DecisionData
    judge_scores: np.ndarray
    headline: bool


def cell_kinds(data: JudgeCriterionData) -> list[CellKind]:
    """The cell's kinds as decision inputs (:func:`calibration.cell_rules.decision_kinds`: features computed with
    ``feature_of`` exactly as the service does); the headline kind is the last."""
    groups = np.asarray(data.groups if data.groups is not None else [i.split("/", 1)[0] for i in data.item_ids])
    kinds = decision_kinds(data.labels, data.judge_scores, data.probabilities, data.means, groups, data.n_labels)
    return [
        CellKind(
            judge=data.judge,
            prompt_family=data.prompt_family,
            criterion=data.criterion,
            kind=k.kind,
            feature=k.feature,
            data=k.data,
            judge_scores=np.asarray(data.judge_scores),
            headline=k is kinds[-1],
        )
        for k in kinds
    ]


def _subset(data: DecisionData, index: np.ndarray) -> DecisionData:
    signals = None if data.signals is None else {k: v[index] for k, v in data.signals.items()}
    return DecisionData(
        labels=data.labels[index],
        features=data.features[index],
        groups=data.groups[index],
        n_labels=data.n_labels,
        signals=signals,
    )


def _fit(
    cell: CellKind,
    data: DecisionData,
    *,
    bound: str,
    signal: str,
    seed: int,
    alphas: Sequence[float],
    tolerances: Sequence[int],
    gates: Sequence[int],
) -> DecisionRule:
    grid = RuleGrid(
        tolerances=tuple(tolerances),
        alphas=tuple(alphas),
        gates=tuple(gates),
        delta=DELTA,
        fit_fraction=ARTIFACT_GRID.fit_fraction,
        signal=signal,
        bound=bound,
    )
    return fit_kind_rule(
        DecisionKind(kind=cell.kind, feature=cell.feature, data=cell.data),
        data,
        judge=cell.judge,
        prompt_family=cell.prompt_family,
        criterion=cell.criterion,
        grid=grid,
        seed=seed,
    )


def served(rule: DecisionRule, features: np.ndarray, *, tolerance: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(accepted, point) per item from ``decide`` (memoised per distinct feature value: the same call)."""
    memo: dict[float, tuple[bool, int]] = {}
    accepted = np.zeros(features.size, dtype=bool)
    points = np.zeros(features.size, dtype=np.int64)
    for position, value in enumerate(features.tolist()):
        if value not in memo:
            outcome = decide(rule, value, tolerance=tolerance, accept_alpha=alpha)
            memo[value] = (outcome.accepted, outcome.point)
        accepted[position], points[position] = memo[value]
    return accepted, points


@dataclass
class _Tally:
    """Per (row key): per-split figures, and per-label pooled counts."""

    shares: list[float]
    errors: list[float | None]
    errors_n: list[tuple[int, int]]
    certified: list[float]
    failed: int
    reasons: dict[str, int]
    label_counts: np.ndarray  # (K, 3): items, accepted, errors among accepted


def _tally(n_labels: int) -> _Tally:
    return _Tally([], [], [], [], 0, {}, np.zeros((n_labels, 3), dtype=np.int64))


def _record(
    tally: _Tally, rule: DecisionRule, test: DecisionData, *, tolerance: int, alpha: float, gate: int | None = None
) -> None:
    if gate is None:
        accepted, points = served(rule, test.features, tolerance=tolerance, alpha=alpha)
        row = next(
            (c for c in rule.certifications if c.tolerance == tolerance and abs(c.accept_alpha - alpha) < 1e-9), None
        )
        bad = np.abs(test.labels - points) >= tolerance
        failed, reason, certified = (row.rule_failed, row.reason, row.certified_error) if row else (True, "", None)
    else:
        gate_row = next(
            g for g in rule.quality_gates if g.pass_threshold == gate and abs(g.accept_alpha - alpha) < 1e-9
        )
        accepted = np.array(
            [decide_gate(rule, x, pass_threshold=gate, accept_alpha=alpha).passed for x in test.features.tolist()],
            dtype=bool,
        )
        bad = test.labels < gate
        failed, reason, certified = gate_row.rule_failed, gate_row.reason, gate_row.certified_false_pass
    tally.shares.append(float(accepted.mean()))
    tally.errors_n.append((int(bad[accepted].sum()), int(accepted.sum())))
    tally.errors.append(float(bad[accepted].mean()) if accepted.any() else None)
    if certified is not None and accepted.any():
        tally.certified.append(float(certified))
    if failed:
        tally.failed += 1
    if failed or not accepted.any():
        # grouped by their words: the bound's value (a decimal) differs from split to split
        key = re.sub(r"\d+\.\d+", "#", reason.split(":")[0] if failed else reason)
        tally.reasons[key] = tally.reasons.get(key, 0) + 1
    for label in range(1, test.n_labels + 1):
        mine = test.labels == label
        tally.label_counts[label - 1] += [
            int(mine.sum()),
            int((accepted & mine).sum()),
            int((accepted & mine & bad).sum()),
        ]


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


def _reasons(tally: _Tally) -> list[str]:
    return [f"{count} split(s): {reason}" for reason, count in sorted(tally.reasons.items(), key=lambda kv: -kv[1])][:3]


def _row(
    cell: CellKind, tally: _Tally, *, bound: str, signal: str, cal_fraction: float, tolerance: int, alpha: float
) -> Row:
    errors = [e for e in tally.errors if e is not None]
    bad, accepted = (sum(x) for x in zip(*tally.errors_n, strict=True))
    return Row(
        judge=cell.judge,
        prompt_family=cell.prompt_family,
        criterion=cell.criterion,
        kind=cell.kind,
        headline=cell.headline,
        bound=bound,
        signal=signal,
        cal_fraction=cal_fraction,
        tolerance=tolerance,
        accept_alpha=alpha,
        mean_accept_share=float(np.mean(tally.shares)),
        mean_error=_mean(errors),
        pooled_error=bad / accepted if accepted else None,
        share_ok=float(np.mean([e is None or e <= alpha + OK_SLACK + 1e-12 for e in tally.errors])),
        splits_accepting=len(errors),
        mean_certified_error=_mean(tally.certified),
        failed_splits=tally.failed,
        reasons=_reasons(tally),
    )


@dataclass(frozen=True)
class _Plan:
    """What one (cell, kind) is run with."""

    bound: str
    signal: str
    cal_fraction: float
    alphas: tuple[float, ...]
    gates: tuple[int, ...]


def _plans(cell: CellKind) -> list[_Plan]:
    plans = [
        _Plan("betting", "fit_error", 0.5, CURVE_ALPHAS, (GATE,)),
        _Plan("clopper_pearson_items", "fit_error", 0.5, CURVE_ALPHAS, (GATE,)),
        _Plan("betting", "fit_error", 0.8, TABLE_ALPHAS, ()),
    ]
    if cell.data.signals is not None:
        plans += [_Plan("betting", s, 0.5, TABLE_ALPHAS, ()) for s in SIGNAL_ALTERNATIVES]
    return plans


def run_decision_study(
    datasets: Sequence[JudgeCriterionData],
    *,
    n_splits: int = 20,
    seed: int = 0,
    resampling_draws: int = 100,
    progress: Callable[[Iterable], Iterable] | None = None,
) -> DecisionStudy:
    """Every (cell, kind) x plan (module rules) over ``n_splits`` splits by document, then the resampling check
    of every headline cell (``resampling_draws`` draws; 0 skips it)."""
    tasks = [(cell, plan) for data in datasets for cell in cell_kinds(data) for plan in _plans(cell)]
    rows, label_rows, gate_rows = [], [], []
    for cell, plan in progress(tasks) if progress is not None else tasks:
        tallies: dict[tuple[int, float, int | None], _Tally] = {}
        splits = group_splits(cell.data.groups, n_splits=n_splits, seed=seed, cal_fraction=plan.cal_fraction)
        for split in splits:
            rule = _fit(
                cell,
                _subset(cell.data, split.calibration),
                bound=plan.bound,
                signal=plan.signal,
                seed=seed * 1000 + split.split,
                alphas=plan.alphas,
                tolerances=TOLERANCES,
                gates=plan.gates,
            )
            test = _subset(cell.data, split.test)
            for tolerance in TOLERANCES:
                for alpha in plan.alphas:
                    key = (tolerance, alpha, None)
                    _record(
                        tallies.setdefault(key, _tally(cell.data.n_labels)),
                        rule,
                        test,
                        tolerance=tolerance,
                        alpha=alpha,
                    )
            for gate in plan.gates:
                for alpha in TABLE_ALPHAS:
                    _record(
                        tallies.setdefault((0, alpha, gate), _tally(cell.data.n_labels)),
                        rule,
                        test,
                        tolerance=0,
                        alpha=alpha,
                        gate=gate,
                    )
        for (tolerance, alpha, gate), tally in tallies.items():
            if gate is not None:
                bad, accepted = (sum(x) for x in zip(*tally.errors_n, strict=True))
                gate_rows.append(
                    GateRow(
                        judge=cell.judge,
                        criterion=cell.criterion,
                        kind=cell.kind,
                        bound=plan.bound,
                        pass_threshold=gate,
                        accept_alpha=alpha,
                        mean_pass_share=float(np.mean(tally.shares)),
                        pooled_false_pass=bad / accepted if accepted else None,
                        mean_certified_false_pass=_mean(tally.certified),
                        failed_splits=tally.failed,
                        reasons=_reasons(tally),
                    )
                )
                continue
            rows.append(
                _row(
                    cell,
                    tally,
                    bound=plan.bound,
                    signal=plan.signal,
                    cal_fraction=plan.cal_fraction,
                    tolerance=tolerance,
                    alpha=alpha,
                )
            )
            if plan.signal == "fit_error" and plan.cal_fraction == 0.5 and alpha in TABLE_ALPHAS:
                label_rows += _label_table(
                    cell, tally, bound=plan.bound, tolerance=tolerance, alpha=alpha, n_splits=len(splits)
                )
    headline_cells = [cell for data in datasets for cell in cell_kinds(data) if cell.headline]
    resampling = (
        resampling_check(headline_cells, draws=resampling_draws, seed=seed, progress=progress)
        if resampling_draws
        else []
    )
    return DecisionStudy(
        seed=seed,
        n_splits=n_splits,
        delta=DELTA,
        rules=dict(RULES),
        rows=rows,
        labels=label_rows,
        gates=gate_rows,
        headlines=_headlines(rows),
        resampling=resampling,
    )


def resampling_check(
    cells: Sequence[CellKind],
    *,
    n_docs: int = 50,
    draws: int = 100,
    seed: int = 0,
    alphas: Sequence[float] = (0.10, 0.20),
    tolerance: int = HEADLINE_TOLERANCE,
    bounds: Sequence[str] = BOUNDS,
    progress: Callable[[Iterable], Iterable] | None = None,
) -> list[ResamplingRow]:
    """Document-resampling failure rate of each bound on each cell (module rules; draws seeded by ``seed``)."""
    out = []
    tasks = [(cell, bound) for cell in cells for bound in bounds]
    for cell, bound in progress(tasks) if progress is not None else tasks:
        population = cell.data
        doc_ids = np.unique(population.groups)
        members = [np.flatnonzero(population.groups == d) for d in doc_ids]
        rng = np.random.default_rng([seed, 17])
        failures = dict.fromkeys(alphas, 0)
        shares: dict[float, list[float]] = {a: [] for a in alphas}
        for draw in range(draws):
            chosen = rng.integers(0, doc_ids.size, size=n_docs)
            index = np.concatenate([members[c] for c in chosen])
            sample = DecisionData(
                labels=population.labels[index],
                features=population.features[index],
                groups=np.repeat(np.arange(n_docs), [members[c].size for c in chosen]),
                n_labels=population.n_labels,
            )
            rule = _fit(
                cell,
                sample,
                bound=bound,
                signal="fit_error",
                seed=draw,
                alphas=alphas,
                tolerances=(tolerance,),
                gates=(),
            )
            bins_all = np.searchsorted(rule.bin_edges, population.features, side="right")
            wrong = np.abs(population.labels - np.asarray(rule.points)[bins_all]) >= tolerance
            for row in rule.certifications:
                accepted = np.isin(bins_all, row.accepted_bins)
                shares[row.accept_alpha].append(float(accepted.mean()))
                if accepted.any() and float(wrong[accepted].mean()) > row.accept_alpha + 1e-12:
                    failures[row.accept_alpha] += 1
        for alpha in alphas:
            out.append(
                ResamplingRow(
                    judge=cell.judge,
                    criterion=cell.criterion,
                    kind=cell.kind,
                    bound=bound,
                    n_docs=n_docs,
                    tolerance=tolerance,
                    accept_alpha=alpha,
                    draws=draws,
                    failure_rate=failures[alpha] / draws,
                    mc_limit=DELTA + 2 * math.sqrt(DELTA * (1 - DELTA) / draws),
                    mean_accept_share=float(np.mean(shares[alpha])),
                )
            )
    return out


def _label_table(
    cell: CellKind, tally: _Tally, *, bound: str, tolerance: int, alpha: float, n_splits: int
) -> list[LabelTableRow]:
    out = []
    for label, (items, accepted, bad) in enumerate(tally.label_counts.tolist(), start=1):
        out.append(
            LabelTableRow(
                judge=cell.judge,
                criterion=cell.criterion,
                kind=cell.kind,
                bound=bound,
                tolerance=tolerance,
                accept_alpha=alpha,
                label=label,
                items_per_split=items / n_splits,
                accept_share=accepted / items if items else None,
                error_among_accepted=bad / accepted if accepted else None,
                certifiable=items / n_splits >= MIN_LABEL_ITEMS,
            )
        )
    return out


def _headlines(rows: Sequence[Row]) -> list[Headline]:
    out = []
    keys = sorted({(r.bound, r.cal_fraction, r.tolerance, r.accept_alpha) for r in rows if r.signal == "fit_error"})
    for bound, fraction, tolerance, alpha in keys:
        chosen = [
            r
            for r in rows
            if r.headline
            and r.signal == "fit_error"
            and r.bound == bound
            and r.cal_fraction == fraction
            and r.tolerance == tolerance
            and r.accept_alpha == alpha
        ]
        logprob = [r.mean_accept_share for r in chosen if r.kind == "probabilities"]
        out.append(
            Headline(
                bound=bound,
                cal_fraction=fraction,
                tolerance=tolerance,
                accept_alpha=alpha,
                logprob_mean_accept_share=float(np.mean(logprob)) if logprob else math.nan,
                all_mean_accept_share=float(np.mean([r.mean_accept_share for r in chosen])),
                cells_mean_error_ok=sum(r.mean_error is None or r.mean_error <= alpha + 1e-12 for r in chosen),
                cells_share_ok=sum(r.share_ok >= 0.95 for r in chosen),
                n_cells=len(chosen),
            )
        )
    return out


def export_rules(
    datasets: Sequence[JudgeCriterionData], *, seed: int = 0, progress: Callable[[Iterable], Iterable] | None = None
) -> list[DecisionRule]:
    """Rules fitted on ALL items of every (cell, kind) over the artifact's grid (tolerances x alphas, gates) with
    the document-level bound (:func:`calibration.cell_rules.fit_cell_rules`, as the service's calibration jobs):
    what the artifact's ``decision_rules`` carry. Cells without groups use the item id's prefix before ``/``."""
    rules: list[DecisionRule] = []
    for data in progress(datasets) if progress is not None else datasets:
        groups = data.groups if data.groups is not None else [i.split("/", 1)[0] for i in data.item_ids]
        rules += fit_cell_rules(
            judge=data.judge,
            prompt_family=data.prompt_family,
            criterion=data.criterion,
            labels=data.labels,
            judge_scores=data.judge_scores,
            probabilities=data.probabilities,
            means=data.means,
            groups=groups,
            n_labels=data.n_labels,
            grid=ARTIFACT_GRID,
            seed=seed,
        )
    return rules
