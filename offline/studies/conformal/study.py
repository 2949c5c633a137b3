"""Conformal study (Gupta & Kumar, sections 3.2 and 5.2, appendices B and D) on recorded judge answers.

For every (judge, prompt family, criterion) the study aligns the judge's answers with the human target
y* (the expert mean rounded to the nearest integer, :func:`offline.build.inputs.summeval.human_target`) and runs
:func:`calibration.conformal.repeated_splits` for every method the judge's output allows (probability methods
only where log-probs exist) at every alpha.

Rules, stated once (they are also written into ``conformal/summary.json`` under ``rules``):

* **Items.** Every item the judge answered; an item whose judge score is missing or unreadable is excluded
  and counted (``exclusions``). A cell uses probabilities only when every used item has log-probs.
* **Splits.** ``n_splits`` seeded 50/50 calibration/test splits (split i permutes with
  ``numpy.random.default_rng([seed, i])``), the same for every method of a cell.
* **Width and error.** Width = prediction-set size; error = ``|judge_score - y*|`` (the judge's integer score,
  for every method). The Spearman correlation of a cell pools the test halves of all splits (an item appears
  in about half of them, so its p-value treats repeats as independent and is optimistic).
* **Valid coverage.** Mean coverage over the splits >= 1 - alpha - 0.01.
* **Coverage within bins.** Per judge-score bin and per human label (y*): the bin's coverage on the test
  halves is averaged over the splits in which it has test items; a bin counts when it has >= 20 test items on
  average. A method *keeps coverage within bins* when the lowest counted judge-score-bin coverage AND the lowest
  counted human-label coverage are both >= 1 - alpha - 0.05 (vacuously true for a kind with no counted bin).
  Both kinds are required: judge-score bins are what the service conditions on, and human-label bins reject a
  predictor that reaches marginal coverage by always naming the majority label (sets of size ~1 that never
  contain a low human score).
* **Default method** per (judge, prompt family, criterion), chosen at alpha = 0.10: the smallest mean set size
  among methods with valid coverage that keep coverage within bins (ties: METHODS order); when none qualifies,
  ``residual`` (the paper's method). Note the rule may pick a method with larger sets than ``residual`` when
  ``residual`` itself fails within-bin coverage.
* **Inter-judge width agreement.** Per criterion and judge pair: the items both judges answered, one common
  split sequence over them (same seeds), each judge calibrated with the paper's method at alpha = 0.10 on the
  common calibration half; Spearman of the two judges' widths pooled over the test halves (also the mean of the
  per-split coefficients).
* **Variance decomposition.** Two-way (judge x criterion, no interaction) decomposition of the cell mean set
  sizes at alpha = 0.10: eta^2 = SS_factor / SS_total.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import combinations

import numpy as np

from calibration.conformal import METHODS, fit_conformal, predict_sets, repeated_splits
from offline.build.cell_data import SCORE_ONLY_METHODS, JudgeCriterionData, methods_for
from offline.build.cell_figures import WidthError, cell_result, choose_default, correlate, reliability_bins
from offline.build.cell_results import CellResult, DefaultChoice
from offline.build.inputs.summeval import CRITERIA
from offline.studies.conformal.results import (
    ConformalSummary,
    Exclusion,
    HeadlineRow,
    InterJudgeAgreement,
    MethodBinValidity,
    PooledWidthError,
    VarianceDecomposition,
)
from offline.studies.conformal.rules import ALPHAS, HEADLINE_ALPHA, PAPER_METHOD, RULES

__all__ = ["run_conformal_study"]


def _inter_judge(datasets: Sequence[JudgeCriterionData], *, n_splits: int, seed: int) -> list[InterJudgeAgreement]:
    """Pairwise width agreement per criterion on common items and common splits (paper's method, alpha .10)."""
    result = []
    for criterion in CRITERIA:
        present = [d for d in datasets if d.criterion == criterion]
        for a, b in combinations(present, 2):
            common = sorted(set(a.item_ids) & set(b.item_ids))
            if len(common) < 4:
                continue
            pos_a = {item: i for i, item in enumerate(a.item_ids)}
            pos_b = {item: i for i, item in enumerate(b.item_ids)}
            ia = np.array([pos_a[item] for item in common])
            ib = np.array([pos_b[item] for item in common])
            labels = a.labels[ia]
            n_cal = len(common) // 2
            # Per common item: each judge's set size summed over the splits that tested it (and the count),
            # so the agreement has one observation per item.
            totals = np.zeros((2, len(common)))
            counts = np.zeros(len(common))
            per_split = []
            for split in range(n_splits):
                order = np.random.default_rng([seed, split]).permutation(len(common))
                cal, test = order[:n_cal], order[n_cal:]
                pair_widths = []
                for data, index in ((a, ia), (b, ib)):
                    scores = data.judge_scores[index]
                    fitted = fit_conformal(
                        PAPER_METHOD, HEADLINE_ALPHA, labels[cal], judge_scores=scores[cal], n_labels=data.n_labels
                    )
                    pair_widths.append(predict_sets(fitted, judge_scores=scores[test]).sum(axis=1))
                totals[0, test] += pair_widths[0]
                totals[1, test] += pair_widths[1]
                counts[test] += 1
                split_corr = correlate(pair_widths[0], pair_widths[1])
                if split_corr.statistic is not None:
                    per_split.append(split_corr.statistic)
            tested = counts > 0
            result.append(
                InterJudgeAgreement(
                    criterion=criterion,
                    judge_a=a.judge,
                    judge_b=b.judge,
                    n_items=len(common),
                    correlation=correlate(totals[0, tested] / counts[tested], totals[1, tested] / counts[tested]),
                    mean_split_statistic=float(np.mean(per_split)) if per_split else None,
                )
            )
    return result


def _variance(cells: Sequence[CellResult], method: str, alpha: float) -> VarianceDecomposition | None:
    """Two-way decomposition of cell mean set sizes over the judges that have every criterion."""
    table: dict[tuple[str, str], float] = {
        (c.judge, c.criterion): c.set_size for c in cells if c.method == method and abs(c.alpha - alpha) < 1e-9
    }
    criteria = [c for c in CRITERIA if any(k[1] == c for k in table)]
    judges = sorted({j for j, _ in table if all((j, c) in table for c in criteria)})
    if len(judges) < 2 or len(criteria) < 2:
        return None
    matrix = np.array([[table[j, c] for c in criteria] for j in judges])
    grand = matrix.mean()
    ss_total = float(((matrix - grand) ** 2).sum())
    ss_criterion = float(len(judges) * ((matrix.mean(axis=0) - grand) ** 2).sum())
    ss_judge = float(len(criteria) * ((matrix.mean(axis=1) - grand) ** 2).sum())
    total = ss_total if ss_total > 0 else 1.0
    return VarianceDecomposition(
        method=method,
        alpha=alpha,
        judges=judges,
        criteria=criteria,
        eta2_criterion=ss_criterion / total,
        eta2_judge=ss_judge / total,
        eta2_residual=max(0.0, ss_total - ss_criterion - ss_judge) / total,
        criterion_means={c: float(v) for c, v in zip(criteria, matrix.mean(axis=0), strict=True)},
        judge_means={j: float(v) for j, v in zip(judges, matrix.mean(axis=1), strict=True)},
    )


def _headline(defaults: Sequence[DefaultChoice]) -> list[HeadlineRow]:
    rows = []
    for criterion in CRITERIA:
        chosen = [d for d in defaults if d.criterion == criterion]
        if not chosen:
            continue
        paper = float(np.mean([d.paper_set_size for d in chosen]))
        best = float(np.mean([d.set_size for d in chosen]))
        marginal = float(np.mean([d.marginal_best_set_size for d in chosen]))
        rows.append(
            HeadlineRow(
                criterion=criterion,
                alpha=HEADLINE_ALPHA,
                paper_set_size=paper,
                best_set_size=best,
                ratio=best / paper,
                marginal_best_set_size=marginal,
                marginal_ratio=marginal / paper,
                n_judges=len(chosen),
                per_judge=list(chosen),
            )
        )
    return rows


def _method_validity(cells: Sequence[CellResult], alphas: Sequence[float]) -> list[MethodBinValidity]:
    rows = []
    for alpha in alphas:
        for method in METHODS:
            chosen = [c for c in cells if c.method == method and abs(c.alpha - alpha) < 1e-9]
            if not chosen:
                continue
            mins = [c.min_bin_coverage for c in chosen if c.min_bin_coverage is not None]
            labels = [c.min_label_coverage for c in chosen if c.min_label_coverage is not None]
            rows.append(
                MethodBinValidity(
                    method=method,
                    alpha=alpha,
                    n_cells=len(chosen),
                    n_valid_coverage=sum(c.valid_coverage for c in chosen),
                    n_keeps_bins=sum(c.keeps_bin_coverage for c in chosen),
                    n_both=sum(c.valid_coverage and c.keeps_bin_coverage for c in chosen),
                    mean_min_bin_coverage=float(np.mean(mins)) if mins else None,
                    mean_min_label_coverage=float(np.mean(labels)) if labels else None,
                )
            )
    return rows


def run_conformal_study(
    datasets: Sequence[JudgeCriterionData],
    *,
    alphas: Sequence[float] = ALPHAS,
    n_splits: int = 20,
    seed: int = 0,
    methods: Sequence[str] | None = None,
    progress: Callable[[Iterable], Iterable] | None = None,
) -> ConformalSummary:
    """Run repeated splits for every dataset x alpha x method (``methods`` restricts METHODS) and summarise.

    ``progress`` wraps the loop over (dataset, alpha, method) tasks (e.g. ``tqdm``). The paper's method must
    be among the methods run (the defaults and the headline compare against it).
    """
    tasks = [
        (data, alpha, method)
        for data in datasets
        for alpha in alphas
        for method in methods_for(data)
        if methods is None or method in methods
    ]
    cells: list[CellResult] = []
    pooled: dict[str, list[WidthError]] = {}
    for data, alpha, method in progress(tasks) if progress is not None else tasks:
        study = repeated_splits(
            method,
            alpha,
            data.labels,
            judge_scores=data.judge_scores,
            probabilities=data.probabilities,
            n_splits=n_splits,
            seed=seed,
            n_labels=data.n_labels,
        )
        cell, width_error = cell_result(data, study, seed=seed)
        cells.append(cell)
        if method == PAPER_METHOD and abs(alpha - HEADLINE_ALPHA) < 1e-9:
            pooled.setdefault(data.criterion, []).append(width_error)

    pooled_rows = []
    for criterion in [*CRITERIA, "all"]:
        parts = [p for c, ps in pooled.items() for p in ps if criterion in ("all", c)]
        if parts:
            correlation = correlate(
                np.concatenate([p.item_widths for p in parts]), np.concatenate([p.item_errors for p in parts])
            )
            reliability = reliability_bins(
                np.concatenate([p.first_widths for p in parts]), np.concatenate([p.first_errors for p in parts])
            )
            pooled_rows.append(PooledWidthError(criterion=criterion, correlation=correlation, reliability=reliability))

    defaults = []
    headline_cells: dict[tuple[str, str, str], list[CellResult]] = {}
    for c in cells:
        if abs(c.alpha - HEADLINE_ALPHA) < 1e-9:
            headline_cells.setdefault((c.judge, c.prompt_family, c.criterion), []).append(c)
    for key in sorted(headline_cells):
        if any(c.method == PAPER_METHOD for c in headline_cells[key]):
            defaults.append(choose_default(headline_cells[key]))

    variance = [v for m in SCORE_ONLY_METHODS if (v := _variance(cells, m, HEADLINE_ALPHA)) is not None]
    return ConformalSummary(
        seed=seed,
        n_splits=n_splits,
        alphas=[float(a) for a in alphas],
        cal_fraction=0.5,
        rules=dict(RULES),
        exclusions=[
            Exclusion(
                judge=d.judge,
                prompt_family=d.prompt_family,
                criterion=d.criterion,
                n_answered=d.n_answered,
                n_used=int(d.labels.size),
                n_excluded=d.n_excluded,
                has_probabilities=d.probabilities is not None,
            )
            for d in datasets
        ],
        cells=cells,
        pooled_width_error=pooled_rows,
        inter_judge=_inter_judge(datasets, n_splits=n_splits, seed=seed),
        variance=variance,
        default_methods=defaults,
        headline=_headline(defaults),
        method_bin_validity=_method_validity(cells, alphas),
    )
