"""Conformal study (Gupta & Kumar, sections 3.2 and 5.2, appendices B and D) on recorded judge answers.

For every (judge, prompt family, criterion) the study aligns the judge's answers with the human target
y* (the expert mean rounded to the nearest integer, :func:`offline.data.summeval.human_target`) and runs
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

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations

import msgspec
import numpy as np

from calibration.conformal import (
    METHODS,
    PROBABILITY_METHODS,
    SplitStudy,
    fit_conformal,
    predict_sets,
    probabilities_from_logprobs,
    repeated_splits,
)
from calibration.errors import CalibrationError
from calibration.stats import spearman
from calibration.verdicts import round_half_up
from offline.data.summeval import CRITERIA, SummEvalItem, human_target
from offline.store import AnswerStore, aligned_direct

__all__ = [
    "ALPHAS",
    "BIN_SLACK",
    "COVERAGE_SLACK",
    "HEADLINE_ALPHA",
    "MIN_BIN_ITEMS",
    "PAPER_METHOD",
    "BinCoverage",
    "CellResult",
    "ConformalSummary",
    "CorrelationResult",
    "DefaultChoice",
    "DirectAnswer",
    "Exclusion",
    "HeadlineRow",
    "InterJudgeAgreement",
    "JudgeCriterionData",
    "MethodBinValidity",
    "ReliabilityBin",
    "VarianceDecomposition",
    "build_cell_data",
    "cell_data_from_store",
    "cell_result",
    "choose_default",
    "methods_for",
    "probability_row",
    "run_conformal_study",
]

ALPHAS: tuple[float, ...] = (0.05, 0.10, 0.15, 0.20)
PAPER_METHOD = "residual"
HEADLINE_ALPHA = 0.10
COVERAGE_SLACK = 0.01
BIN_SLACK = 0.05
MIN_BIN_ITEMS = 20
N_LABELS = 5
SCORE_ONLY_METHODS: tuple[str, ...] = tuple(m for m in METHODS if m not in PROBABILITY_METHODS)

RULES = {
    "items": "every item the judge answered; items with a missing or unreadable judge score excluded and counted",
    "target": "y* = expert mean rounded to the nearest integer (halves up)",
    "splits": "n_splits seeded 50/50 splits; split i permutes with numpy.random.default_rng([seed, i])",
    "width_error": "Spearman(width, |judge_score - y*|) with one observation per item: its set size averaged "
    "over the splits whose test half holds it (so n counts distinct items and the p-value is not inflated by "
    "repeats); reliability diagrams (mean error per set size) use the test half of split 0",
    "valid_coverage": f"mean coverage >= 1 - alpha - {COVERAGE_SLACK}",
    "within_bins": f"per judge-score bin and per human label: coverage on the test halves averaged over splits; "
    f"bins with >= {MIN_BIN_ITEMS} test items on average count; keeps coverage when the min over counted "
    f"judge-score bins and the min over counted human labels are both >= 1 - alpha - {BIN_SLACK}",
    "default_method": f"at alpha={HEADLINE_ALPHA}: smallest mean set size among methods with valid coverage that "
    "keep coverage within bins (ties: METHODS order); else residual",
    "inter_judge": f"items both judges answered, common seeded splits, {PAPER_METHOD} at alpha={HEADLINE_ALPHA} "
    "per judge; Spearman of the two judges' per-item mean widths (one observation per item tested)",
    "variance": f"two-way decomposition (no interaction) of cell mean set sizes at alpha={HEADLINE_ALPHA}",
}


# ------------------------------------------------------------------------------------------------ inputs


class DirectAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """One judge answer on one item: its integer score (None = unreadable/missing) and log-probs over 1..K."""

    judge: str
    prompt_family: str
    criterion: str
    item_id: str
    judge_score: int | None
    logprobs: dict[str, float] | None = None
    mean_of_samples: float | None = None


@dataclass(frozen=True)
class JudgeCriterionData:
    """Aligned arrays for one (judge, prompt family, criterion); arrays are per used item."""

    judge: str
    prompt_family: str
    criterion: str
    item_ids: tuple[str, ...]
    labels: np.ndarray
    judge_scores: np.ndarray
    probabilities: np.ndarray | None
    n_answered: int
    n_excluded: int
    groups: tuple[str, ...] | None = None  # split group (document / source id) per item; None: each item alone
    # A judge whose verdict is a mean of sampled scores (every item): its means; judge_scores then hold
    # round_half_up(mean), used only by the item-level study (the served artifact fits the ``mean`` kind).
    means: np.ndarray | None = None
    n_labels: int = N_LABELS  # K of the cell's scale 1..K

    @property
    def errors(self) -> np.ndarray:
        """Absolute judge error |judge_score - y*| per item."""
        return np.abs(self.judge_scores - self.labels)


def probability_row(logprobs: dict[str, float]) -> np.ndarray | None:
    """Probabilities over 1..K from stored log-probs (a missing label counts -inf); None when none is usable."""
    values = [logprobs.get(str(k), -math.inf) for k in range(1, N_LABELS + 1)]
    if all(math.isinf(v) for v in values):
        return None
    return probabilities_from_logprobs(np.asarray(values, dtype=float))


def build_cell_data(answers: Iterable[DirectAnswer], items: Sequence[SummEvalItem]) -> list[JudgeCriterionData]:
    """Group answers by (judge, prompt family, criterion), join y* from ``items``; sorted by those keys.

    Answers whose item has no human label are ignored; answers without a judge score are counted as excluded.
    """
    by_id = {item.item_id: item for item in items}
    groups: dict[tuple[str, str, str], list[DirectAnswer]] = {}
    for answer in answers:
        if answer.item_id in by_id and answer.criterion in by_id[answer.item_id].expert_mean:
            groups.setdefault((answer.judge, answer.prompt_family, answer.criterion), []).append(answer)
    result = []
    for (judge, family, criterion), group in sorted(groups.items()):
        group.sort(key=lambda a: a.item_id)
        used = [a for a in group if a.judge_score is not None or a.mean_of_samples is not None]
        if not used:
            continue
        mean_judge = all(a.mean_of_samples is not None for a in used)
        rows = [None if a.logprobs is None else probability_row(a.logprobs) for a in used]
        present = [r for r in rows if r is not None]
        probabilities = np.vstack(present) if len(present) == len(rows) else None
        result.append(
            JudgeCriterionData(
                judge=judge,
                prompt_family=family,
                criterion=criterion,
                item_ids=tuple(a.item_id for a in used),
                labels=np.array([human_target(by_id[a.item_id].expert_mean[criterion]) for a in used]),
                # used: every answer has a judge score or a mean of samples
                judge_scores=np.array([round_half_up(a.mean_of_samples) if a.judge_score is None else a.judge_score  # type: ignore[arg-type]
                                       for a in used], dtype=np.int64),
                means=np.array([a.mean_of_samples for a in used], dtype=float) if mean_judge else None,
                probabilities=probabilities,
                n_answered=len(group),
                n_excluded=len(group) - len(used),
                groups=tuple(by_id[a.item_id].doc_id for a in used),
            )
        )
    return result


def cell_data_from_store(
    store: AnswerStore, items: Sequence[SummEvalItem], *, task: str = "direct"
) -> list[JudgeCriterionData]:
    """Read every judge's direct answers (repetition 0) from the answer store; see build_cell_data."""
    answers: list[DirectAnswer] = []
    for count in store.counts():
        if count.task != task:
            continue
        for row in aligned_direct(store, count.judge, count.criterion, prompt_family=count.prompt_family, task=task):
            answers.append(
                DirectAnswer(
                    judge=count.judge, prompt_family=count.prompt_family, criterion=count.criterion,
                    item_id=row.item_id, judge_score=row.judge_score, logprobs=row.logprobs,
                    mean_of_samples=row.mean_of_samples,
                )
            )
    return build_cell_data(answers, items)


def methods_for(data: JudgeCriterionData) -> tuple[str, ...]:
    """All METHODS when the judge gave probabilities, else the score-only ones (residual, mondrian, learned)."""
    return METHODS if data.probabilities is not None else SCORE_ONLY_METHODS


# ---------------------------------------------------------------------------------------------- results


class CorrelationResult(msgspec.Struct, frozen=True, kw_only=True):
    """A correlation with p-value and n; statistic None (with ``note``) when undefined (constant input)."""

    statistic: float | None
    p_value: float | None
    n: int
    method: str = "spearman"
    note: str = ""


class BinCoverage(msgspec.Struct, frozen=True, kw_only=True):
    """Coverage within one bin (judge score or human label), averaged over the splits where it has items."""

    group: int
    n_mean: float
    coverage: float
    set_size: float
    counted: bool


class ReliabilityBin(msgspec.Struct, frozen=True, kw_only=True):
    """Mean absolute error of the items whose prediction set has this width (95% normal CI half-width)."""

    width: int
    n: int
    mae: float
    ci95: float


class CellResult(msgspec.Struct, frozen=True, kw_only=True):
    """One judge x criterion x alpha x method cell of the study."""

    judge: str
    prompt_family: str
    criterion: str
    alpha: float
    method: str
    coverage: float
    coverage_std: float
    set_size: float
    set_size_std: float
    n_cal: int
    n_test: int
    n_items: int
    n_excluded: int
    n_splits: int
    seed: int
    spearman_width_error: float | None
    spearman_p_value: float | None
    spearman_n: int
    spearman_note: str
    valid_coverage: bool
    min_bin_coverage: float | None
    min_label_coverage: float | None
    keeps_bin_coverage: bool  # judge-score bins AND human-label bins (see the module rules)
    judge_score_bins: list[BinCoverage]
    human_label_bins: list[BinCoverage]
    reliability: list[ReliabilityBin]


class Exclusion(msgspec.Struct, frozen=True, kw_only=True):
    """Items of one (judge, criterion): answered, used, and excluded for a missing/unreadable score."""

    judge: str
    prompt_family: str
    criterion: str
    n_answered: int
    n_used: int
    n_excluded: int
    has_probabilities: bool


class PooledWidthError(msgspec.Struct, frozen=True, kw_only=True):
    """Width-error Spearman pooled over judges (criterion "all" = also over criteria), paper's method."""

    criterion: str
    correlation: CorrelationResult
    reliability: list[ReliabilityBin]


class InterJudgeAgreement(msgspec.Struct, frozen=True, kw_only=True):
    """Spearman between two judges' widths on the same test items (pooled over splits)."""

    criterion: str
    judge_a: str
    judge_b: str
    n_items: int
    correlation: CorrelationResult
    mean_split_statistic: float | None


class VarianceDecomposition(msgspec.Struct, frozen=True, kw_only=True):
    """How much of the variance of cell mean set sizes the criterion and the judge explain (eta^2)."""

    method: str
    alpha: float
    judges: list[str]
    criteria: list[str]
    eta2_criterion: float
    eta2_judge: float
    eta2_residual: float
    criterion_means: dict[str, float]
    judge_means: dict[str, float]


class DefaultChoice(msgspec.Struct, frozen=True, kw_only=True):
    """The default method of one (judge, prompt family, criterion) and the evidence for it (alpha = 0.10).

    ``marginal_best_*``: the smallest-set method when only marginal coverage is required (for contrast).
    """

    judge: str
    prompt_family: str
    criterion: str
    method: str
    reason: str
    set_size: float
    coverage: float
    min_bin_coverage: float | None
    min_label_coverage: float | None
    paper_set_size: float
    qualifying_methods: list[str]
    marginal_best_method: str
    marginal_best_set_size: float
    marginal_best_min_label_coverage: float | None


class HeadlineRow(msgspec.Struct, frozen=True, kw_only=True):
    """Per criterion at alpha=0.10, means over judges: the paper's method, the default method (valid coverage and
    within-bin coverage) and the smallest-set method with valid marginal coverage only; ratios to the paper's."""

    criterion: str
    alpha: float
    paper_set_size: float
    best_set_size: float
    ratio: float
    marginal_best_set_size: float
    marginal_ratio: float
    n_judges: int
    per_judge: list[DefaultChoice]


class MethodBinValidity(msgspec.Struct, frozen=True, kw_only=True):
    """For one method at one alpha: in how many cells it has valid coverage and keeps coverage within bins."""

    method: str
    alpha: float
    n_cells: int
    n_valid_coverage: int
    n_keeps_bins: int
    n_both: int
    mean_min_bin_coverage: float | None
    mean_min_label_coverage: float | None


class ConformalSummary(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the conformal study reports; written as ``conformal/summary.json``."""

    seed: int
    n_splits: int
    alphas: list[float]
    cal_fraction: float
    rules: dict[str, str]
    exclusions: list[Exclusion]
    cells: list[CellResult]
    pooled_width_error: list[PooledWidthError]
    inter_judge: list[InterJudgeAgreement]
    variance: list[VarianceDecomposition]
    default_methods: list[DefaultChoice]
    headline: list[HeadlineRow]
    method_bin_validity: list[MethodBinValidity]
    simulated: bool = False

    def cell(self, judge: str, criterion: str, method: str, alpha: float) -> CellResult | None:
        """The cell for these keys, or None."""
        for c in self.cells:
            if (c.judge, c.criterion, c.method) == (judge, criterion, method) and abs(c.alpha - alpha) < 1e-9:
                return c
        return None


# ------------------------------------------------------------------------------------------- computations


def _correlate(x: np.ndarray, y: np.ndarray) -> CorrelationResult:
    """Spearman via calibration.stats; a constant input gives statistic None with the reason in ``note``."""
    try:
        result = spearman(x, y)
    except CalibrationError as error:
        return CorrelationResult(statistic=None, p_value=None, n=int(x.size), note=str(error))
    return CorrelationResult(statistic=result.statistic, p_value=result.p_value, n=result.n)


def _reliability(widths: np.ndarray, errors: np.ndarray, n_labels: int = N_LABELS) -> list[ReliabilityBin]:
    bins = []
    for width in range(1, n_labels + 1):
        chosen = errors[widths == width].astype(float)
        if chosen.size:
            sd = float(chosen.std(ddof=1)) if chosen.size > 1 else 0.0
            bins.append(
                ReliabilityBin(width=width, n=int(chosen.size), mae=float(chosen.mean()),
                               ci95=1.96 * sd / math.sqrt(chosen.size))
            )
    return bins


def _bin_coverage(study: SplitStudy, groups: np.ndarray, n_labels: int = N_LABELS) -> list[BinCoverage]:
    """Coverage and set size per group value, averaged over the splits where the group has test items."""
    size = n_labels + 1
    counts = np.zeros((len(study.splits), size))
    covered = np.zeros_like(counts)
    sizes = np.zeros_like(counts)
    for row, split in enumerate(study.splits):
        g = groups[np.asarray(split.test_index)]
        counts[row] = np.bincount(g, minlength=size)
        covered[row] = np.bincount(g, weights=np.asarray(split.covered, dtype=float), minlength=size)
        sizes[row] = np.bincount(g, weights=np.asarray(split.set_sizes, dtype=float), minlength=size)
    bins = []
    for group in range(1, size):
        present = counts[:, group] > 0
        if not present.any():
            continue
        coverage = float((covered[present, group] / counts[present, group]).mean())
        set_size = float((sizes[present, group] / counts[present, group]).mean())
        n_mean = float(counts[:, group].mean())
        bins.append(BinCoverage(group=group, n_mean=n_mean, coverage=coverage, set_size=set_size,
                                counted=n_mean >= MIN_BIN_ITEMS))
    return bins


def _min_counted(bins: list[BinCoverage]) -> float | None:
    counted = [b.coverage for b in bins if b.counted]
    return min(counted) if counted else None


@dataclass(frozen=True)
class WidthError:
    """A cell's width-error observations: per item (for correlations) and split 0's test half (for diagrams)."""

    item_widths: np.ndarray
    item_errors: np.ndarray
    first_widths: np.ndarray
    first_errors: np.ndarray


def _first_split(study: SplitStudy, errors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Set sizes and errors on the test half of split 0: each item at most once, with integer widths."""
    first = study.splits[0]
    return np.asarray(first.set_sizes), errors[np.asarray(first.test_index)]


def _per_item(study: SplitStudy, errors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each item's set size averaged over the splits that tested it, with its error (items never tested drop)."""
    totals = np.zeros(errors.size)
    counts = np.zeros(errors.size)
    for split in study.splits:
        index = np.asarray(split.test_index)
        np.add.at(totals, index, np.asarray(split.set_sizes, dtype=float))
        np.add.at(counts, index, 1.0)
    tested = counts > 0
    return totals[tested] / counts[tested], errors[tested]


def cell_result(data: JudgeCriterionData, study: SplitStudy, *, seed: int) -> tuple[CellResult, WidthError]:
    """One cell's figures (module rules: coverage, bins, width-error) from a split study on ``data``'s arrays;
    also its width-error observations. ``study.splits[i].test_index`` indexes ``data``'s arrays."""
    widths, errs = _first_split(study, data.errors)
    item_widths, item_errors = _per_item(study, data.errors)
    correlation = _correlate(item_widths, item_errors)
    score_bins = _bin_coverage(study, data.judge_scores, data.n_labels)
    label_bins = _bin_coverage(study, data.labels, data.n_labels)
    min_bin, min_label = _min_counted(score_bins), _min_counted(label_bins)
    floor = 1 - study.alpha - BIN_SLACK
    result = CellResult(
        judge=data.judge, prompt_family=data.prompt_family, criterion=data.criterion, alpha=study.alpha,
        method=study.method, coverage=study.coverage, coverage_std=study.coverage_std, set_size=study.set_size,
        set_size_std=study.set_size_std, n_cal=study.n_cal, n_test=study.n_test, n_items=int(data.labels.size),
        n_excluded=data.n_excluded, n_splits=len(study.splits), seed=seed,
        spearman_width_error=correlation.statistic, spearman_p_value=correlation.p_value,
        spearman_n=correlation.n, spearman_note=correlation.note,
        valid_coverage=study.coverage >= 1 - study.alpha - COVERAGE_SLACK,
        min_bin_coverage=min_bin, min_label_coverage=min_label,
        keeps_bin_coverage=all(m is None or m >= floor - 1e-12 for m in (min_bin, min_label)),
        judge_score_bins=score_bins, human_label_bins=label_bins, reliability=_reliability(widths, errs, data.n_labels),
    )
    return result, WidthError(item_widths, item_errors, widths, errs)


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
                    fitted = fit_conformal(PAPER_METHOD, HEADLINE_ALPHA, labels[cal], judge_scores=scores[cal],
                                           n_labels=data.n_labels)
                    pair_widths.append(predict_sets(fitted, judge_scores=scores[test]).sum(axis=1))
                totals[0, test] += pair_widths[0]
                totals[1, test] += pair_widths[1]
                counts[test] += 1
                split_corr = _correlate(pair_widths[0], pair_widths[1])
                if split_corr.statistic is not None:
                    per_split.append(split_corr.statistic)
            tested = counts > 0
            result.append(
                InterJudgeAgreement(
                    criterion=criterion, judge_a=a.judge, judge_b=b.judge, n_items=len(common),
                    correlation=_correlate(
                        totals[0, tested] / counts[tested], totals[1, tested] / counts[tested]
                    ),
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
        method=method, alpha=alpha, judges=judges, criteria=criteria,
        eta2_criterion=ss_criterion / total, eta2_judge=ss_judge / total,
        eta2_residual=max(0.0, ss_total - ss_criterion - ss_judge) / total,
        criterion_means={c: float(v) for c, v in zip(criteria, matrix.mean(axis=0), strict=True)},
        judge_means={j: float(v) for j, v in zip(judges, matrix.mean(axis=1), strict=True)},
    )


def _smallest(cells: Sequence[CellResult]) -> CellResult:
    return min(cells, key=lambda c: (round(c.set_size, 9), METHODS.index(c.method)))


def choose_default(cells: Sequence[CellResult]) -> DefaultChoice:
    """Pick the default among one (judge, family, criterion)'s cells at HEADLINE_ALPHA (module rules; the
    cells must include PAPER_METHOD)."""
    by_method = {c.method: c for c in cells}
    paper = by_method[PAPER_METHOD]
    qualifying = [m for m in METHODS if m in by_method and by_method[m].valid_coverage
                  and by_method[m].keeps_bin_coverage]
    marginal = _smallest([c for c in cells if c.valid_coverage] or [paper])
    floor_cov = 1 - HEADLINE_ALPHA - COVERAGE_SLACK
    floor_bin = 1 - HEADLINE_ALPHA - BIN_SLACK
    rule = (f"mean coverage >= {floor_cov:.2f} and min coverage >= {floor_bin:.2f} within judge-score bins and "
            f"within human labels (bins with >= {MIN_BIN_ITEMS} test items) at alpha={HEADLINE_ALPHA}")
    if qualifying:
        chosen = _smallest([by_method[m] for m in qualifying])
        reason = (f"smallest mean set size ({chosen.set_size:.2f}; {PAPER_METHOD} {paper.set_size:.2f}) among "
                  f"{len(qualifying)} of {len(by_method)} methods with {rule} over {_splits(chosen.n_splits)}")
        if marginal.method != chosen.method:
            reason += (f"; {marginal.method} has smaller sets ({marginal.set_size:.2f}) but fails within-bin "
                       f"coverage (min human-label coverage {_fmt(marginal.min_label_coverage)}, min judge-score-bin "
                       f"coverage {_fmt(marginal.min_bin_coverage)})")
    else:
        chosen = paper
        reason = f"fallback to {PAPER_METHOD}: no method had {rule}"
    return DefaultChoice(
        judge=chosen.judge, prompt_family=chosen.prompt_family, criterion=chosen.criterion, method=chosen.method,
        reason=reason, set_size=chosen.set_size, coverage=chosen.coverage, min_bin_coverage=chosen.min_bin_coverage,
        min_label_coverage=chosen.min_label_coverage, paper_set_size=paper.set_size, qualifying_methods=qualifying,
        marginal_best_method=marginal.method, marginal_best_set_size=marginal.set_size,
        marginal_best_min_label_coverage=marginal.min_label_coverage,
    )


def _splits(n: int) -> str:
    return f"{n} split" if n == 1 else f"{n} splits"


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _headline(defaults: Sequence[DefaultChoice]) -> list[HeadlineRow]:
    rows = []
    for criterion in CRITERIA:
        chosen = [d for d in defaults if d.criterion == criterion]
        if not chosen:
            continue
        paper = float(np.mean([d.paper_set_size for d in chosen]))
        best = float(np.mean([d.set_size for d in chosen]))
        marginal = float(np.mean([d.marginal_best_set_size for d in chosen]))
        rows.append(HeadlineRow(criterion=criterion, alpha=HEADLINE_ALPHA, paper_set_size=paper, best_set_size=best,
                                ratio=best / paper, marginal_best_set_size=marginal, marginal_ratio=marginal / paper,
                                n_judges=len(chosen), per_judge=list(chosen)))
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
                    method=method, alpha=alpha, n_cells=len(chosen),
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
            method, alpha, data.labels, judge_scores=data.judge_scores,
            probabilities=data.probabilities,
            n_splits=n_splits, seed=seed, n_labels=data.n_labels,
        )
        cell, width_error = cell_result(data, study, seed=seed)
        cells.append(cell)
        if method == PAPER_METHOD and abs(alpha - HEADLINE_ALPHA) < 1e-9:
            pooled.setdefault(data.criterion, []).append(width_error)

    pooled_rows = []
    for criterion in [*CRITERIA, "all"]:
        parts = [p for c, ps in pooled.items() for p in ps if criterion in ("all", c)]
        if parts:
            correlation = _correlate(
                np.concatenate([p.item_widths for p in parts]), np.concatenate([p.item_errors for p in parts])
            )
            reliability = _reliability(
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
        seed=seed, n_splits=n_splits, alphas=[float(a) for a in alphas], cal_fraction=0.5, rules=dict(RULES),
        exclusions=[
            Exclusion(judge=d.judge, prompt_family=d.prompt_family, criterion=d.criterion, n_answered=d.n_answered,
                      n_used=int(d.labels.size), n_excluded=d.n_excluded,
                      has_probabilities=d.probabilities is not None)
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
