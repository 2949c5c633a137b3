"""Certified decisions on documents the rule never saw: accept share and error among accepted, per cell.

``python -m offline decisions [--data-dir D] [--out reports] [--splits 20] [--seed 0]`` fits a
:class:`calibration.decisions.rule.DecisionRule` (:func:`calibration.decisions.fit.fit_decision_rule`) on the
calibration documents of each split and serves the held-out documents' verdicts with
:func:`calibration.decisions.rule.decide`, the look-up the service applies, on the feature computed by
:func:`calibration.decisions.rule.feature_of` from what a caller sends (the integer score; the log-probs as
renormalised probabilities).

Rules, stated once:

* **Human label** y* = the expert mean rounded to the nearest integer, halves up
  (:func:`offline.build.inputs.summeval.human_target`, the rule of the conformal studies).
* **Cells and kinds.** Every (judge, prompt family, criterion): kind ``score`` (feature: the integer score) for
  every judge, ``probabilities`` (feature: the expected score) where every item has log-probs, ``mean`` for a
  mean-of-samples judge. The cell's *headline* kind is ``probabilities`` where it exists (the log-prob cells),
  else ``mean``, else ``score``.
* **Splits.** ``n_splits`` splits by document (:func:`calibration.input_kinds.heldout.group_splits`, seed ``seed``):
  ``cal_fraction`` of the documents calibrate (FIT + CERTIFY inside them), the rest are served. The main study
  uses 0.5 ("calibrate on half"); ``cal_fraction`` 0.8 is reported beside it to show how the
  document-level bound's power grows with the number of calibration documents.
* **Figures per (cell, kind, bound, tolerance, accept_alpha)**: mean accept share over splits; error among
  accepted = (|y* - point| >= tolerance) among the split's accepted items, averaged over the splits that accept
  something (``mean_error``) and pooled over all splits (``pooled_error``); ``share_ok`` = share of the splits
  whose error among accepted is <= accept_alpha + 0.02 (0.12 at 0.10, the study's check), a split that accepts
  nothing counting as ok (it accepts no wrong verdict); the rule's certified error averaged over the splits that
  accept; failed-rule splits and reasons.
* **Bounds.** ``betting`` (document-level, :mod:`calibration.decisions.risk_control`, the one offered and exported) and
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

The cells as decision inputs, fitting and serving live in :mod:`offline.studies.decisions.cells`; the per-split
tallies and the rows made of them in :mod:`offline.studies.decisions.tally`. Writes
(:mod:`offline.studies.decisions.report`) ``decisions/decisions.json``, ``decisions/decisions.md``,
``decisions/operating_curve.png`` and ``decisions/score_vs_label.png``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from calibration.decisions.cell_rules import ARTIFACT_GRID
from calibration.decisions.fit import DecisionData
from calibration.input_kinds.heldout import group_splits
from offline.build.cell_data import JudgeCriterionData
from offline.studies.decisions.cells import DELTA, CellKind, cell_input_kinds, fit_rule, subset
from offline.studies.decisions.results import DecisionStudy, ResamplingRow
from offline.studies.decisions.tally import Tally, gate_row, headlines, label_table, new_tally, record, tally_row

__all__ = [
    "CURVE_ALPHAS",
    "EXPORT_ALPHAS",
    "EXPORT_GATES",
    "EXPORT_TOLERANCES",
    "resampling_check",
    "run_decision_study",
]

CURVE_ALPHAS: tuple[float, ...] = (0.05, 0.10, 0.15, 0.20, 0.25, 0.30)
TABLE_ALPHAS: tuple[float, ...] = (0.05, 0.10, 0.20)
HEADLINE_ALPHA, HEADLINE_TOLERANCE = 0.10, 2
TOLERANCES: tuple[int, ...] = (1, 2)
GATE = 3
BOUNDS: tuple[str, ...] = ("betting", "clopper_pearson_items")
SIGNAL_ALTERNATIVES: tuple[str, ...] = ("spread", "margin")
EXPORT_TOLERANCES: tuple[int, ...] = ARTIFACT_GRID.tolerances  # the artifact's grid: calibration.decisions.cell_rules
EXPORT_ALPHAS: tuple[float, ...] = ARTIFACT_GRID.alphas
EXPORT_GATES: tuple[int, ...] = ARTIFACT_GRID.gates
DIRECTORY = "decisions"

RULES = {
    "label": "y* = expert mean rounded to the nearest integer, halves up (offline.build.inputs.summeval.human_target)",
    "splits": "by document (calibration.input_kinds.heldout.group_splits): cal_fraction of the documents "
    "calibrate, the rest "
    "are served with calibration.decisions.rule.decide on calibration.decisions.rule.feature_of",
    "fit": "calibration.decisions.fit: FIT = 20% of the calibration documents (bins, mode points, order, start), "
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
    tasks = [(cell, plan) for data in datasets for cell in cell_input_kinds(data) for plan in _plans(cell)]
    rows, label_rows, gate_rows = [], [], []
    for cell, plan in progress(tasks) if progress is not None else tasks:
        tallies: dict[tuple[int, float, int | None], Tally] = {}
        splits = group_splits(cell.data.groups, n_splits=n_splits, seed=seed, cal_fraction=plan.cal_fraction)
        for split in splits:
            rule = fit_rule(
                cell,
                subset(cell.data, split.calibration),
                bound=plan.bound,
                signal=plan.signal,
                seed=seed * 1000 + split.split,
                alphas=plan.alphas,
                tolerances=TOLERANCES,
                gates=plan.gates,
            )
            test = subset(cell.data, split.test)
            for tolerance in TOLERANCES:
                for alpha in plan.alphas:
                    key = (tolerance, alpha, None)
                    record(
                        tallies.setdefault(key, new_tally(cell.data.n_labels)),
                        rule,
                        test,
                        tolerance=tolerance,
                        alpha=alpha,
                    )
            for gate in plan.gates:
                for alpha in TABLE_ALPHAS:
                    record(
                        tallies.setdefault((0, alpha, gate), new_tally(cell.data.n_labels)),
                        rule,
                        test,
                        tolerance=0,
                        alpha=alpha,
                        gate=gate,
                    )
        for (tolerance, alpha, gate), tally in tallies.items():
            if gate is not None:
                gate_rows.append(gate_row(cell, tally, bound=plan.bound, gate=gate, alpha=alpha))
                continue
            rows.append(
                tally_row(
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
                label_rows += label_table(
                    cell, tally, bound=plan.bound, tolerance=tolerance, alpha=alpha, n_splits=len(splits)
                )
    headline_cells = [cell for data in datasets for cell in cell_input_kinds(data) if cell.headline]
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
        headlines=headlines(rows),
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
            rule = fit_rule(
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
