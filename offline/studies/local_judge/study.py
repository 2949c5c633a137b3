"""What the service says about the local judge, from its recorded answers.

Rules:

* **Skill** (per criterion, answers with a score): Spearman's rho (average ranks for ties) and Kendall's tau-b of
  the judge's score against the experts' mean rating (``scipy.stats.spearmanr`` / ``kendalltau``; None when either
  side is constant), exact agreement with the human label (the mean's nearest integer, halves up) and the mean
  absolute error, beside the same two for the no-information point: the most frequent label of the other half.
* **Served on unseen documents**: SummEval's documents (sorted ids) are permuted with
  ``numpy.random.default_rng(seed)`` and cut in two halves (``offline.validation.halves.split_documents``). Each
  half is calibrated exactly as ``make calibrate`` calibrates (``run_validity_study`` then ``build_artifact``: the
  service's default methods and guarantees) and every item of the *other* half is served by the service's own
  functions (``offline.validation.artifact.serve_item``) with what a live call sends: the score alone, the log-probs
  alone, and both, under the marginal pac guarantee's sets; their sizes are counted in three classes
  (``calibration.input_kinds.fit.decision_shares``: at most 2 labels, 3 or 4, the full scale or an empty set). Both
  ways,
  pooled, so every item is served once. Per criterion, input and alpha: coverage, mean set size and the three
  set-size shares; and per human label the same.
* **The default guarantee** (per criterion and input kind): the per-label rule fitted on every recorded item
  (:func:`calibration.per_label.fit.fit_cell_label_rules`, as ``make calibrate`` and a calibration job fit it), with
  its skill test against the label distribution and its held-out figures on the recording
  (:mod:`calibration.per_label.summary`): the same figures a calibration job shows.
* **No-information baseline** (per half): the human-label distribution of the fitting half alone: the labels in
  order of frequency (ties: the lower label first) until their share reaches 1 - alpha, one set for every item of
  the other half. A judge adds information where its sets are smaller than this one at the same coverage.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import numpy as np
from scipy import stats

from artifact.thresholds import ThresholdIndex
from calibration.input_kinds.fit import decision_shares
from calibration.per_label.fit import fit_cell_label_rules
from calibration.per_label.rule import LabelRule
from offline.build.cell_data import JudgeCriterionData
from offline.build.export import build_artifact
from offline.studies.conformal.validity import DEFAULT_DELTA, run_validity_study
from offline.validation.artifact import INPUTS, serve_item
from offline.validation.halves import split_documents, subset

__all__ = ["REPORT_ALPHAS", "LabelServed", "LocalJudgeStudy", "Served", "Skill", "baseline_set", "run_study"]

REPORT_ALPHAS: tuple[float, ...] = (0.1, 0.2)
ACCEPT_MAX = 2  # the service's default decision rule (offline.validation.artifact.validate_artifact_on's defaults)
ESCALATE_MIN = 5


class Skill(msgspec.Struct, frozen=True, kw_only=True):
    """The judge's scores against the human labels on one criterion (module rules)."""

    criterion: str
    n: int
    spearman: float | None
    kendall: float | None
    exact: float
    mae: float
    baseline_exact: float
    baseline_mae: float


class Served(msgspec.Struct, frozen=True, kw_only=True):
    """The service's answers on unseen documents for one (criterion, input, alpha), pooled over both halves."""

    criterion: str
    input: str
    alpha: float
    n: int
    n_uncalibrated: int
    coverage: float | None
    mean_set_size: float | None
    accept_share: float | None
    review_share: float | None
    escalate_share: float | None
    baseline_coverage: float
    baseline_set_size: float


class LabelServed(msgspec.Struct, frozen=True, kw_only=True):
    """The same, for the items of one human label."""

    criterion: str
    input: str
    alpha: float
    label: int
    n: int
    coverage: float | None
    mean_set_size: float | None
    accept_share: float | None
    baseline_coverage: float


class LocalJudgeStudy(msgspec.Struct, frozen=True, kw_only=True):
    """The whole study."""

    judge: str
    prompt_family: str
    seed: int
    n_splits: int
    n_documents: list[int]
    skill: list[Skill]
    served: list[Served]
    by_label: list[LabelServed]
    per_label: list[LabelRule] = []  # the default guarantee's rules, with their skill tests and held-out figures


def baseline_set(labels: np.ndarray, alpha: float, n_labels: int) -> tuple[int, ...]:
    """The no-information set: labels by frequency (ties: lower first) until their share reaches 1 - alpha."""
    counts = np.bincount(labels.astype(int), minlength=n_labels + 1)[1:]
    order = sorted(range(1, n_labels + 1), key=lambda k: (-counts[k - 1], k))
    chosen: list[int] = []
    for label in order:
        chosen.append(label)
        if counts[[k - 1 for k in chosen]].sum() >= (1 - alpha) * labels.size - 1e-9:
            break
    return tuple(sorted(chosen))


def _correlation(value: float) -> float | None:
    return None if not np.isfinite(value) else float(value)


def _skill(data: JudgeCriterionData, means: dict[tuple[str, str], float], halves: tuple[set[str], set[str]]) -> Skill:
    """Skill of one cell (module rules); ``means`` maps (criterion, item id) to the experts' mean rating."""
    assert data.groups is not None
    groups = np.asarray(data.groups)
    human = np.array([means[(data.criterion, item)] for item in data.item_ids])
    baseline_points = np.empty(data.labels.size)
    for fit_docs in halves:  # each item's no-information point: the most frequent label of the other half
        fit = np.isin(groups, sorted(fit_docs))
        counts = np.bincount(data.labels[fit].astype(int), minlength=data.n_labels + 1)[1:]
        baseline_points[~fit] = int(np.argmax(counts)) + 1  # argmax: the first maximum, the lower label
    constant = np.unique(data.judge_scores).size < 2
    return Skill(
        criterion=data.criterion,
        n=int(data.labels.size),
        spearman=None if constant else _correlation(stats.spearmanr(data.judge_scores, human).statistic),
        kendall=None if constant else _correlation(stats.kendalltau(data.judge_scores, human).statistic),
        exact=float(np.mean(data.judge_scores == data.labels)),
        mae=float(np.mean(np.abs(data.judge_scores - data.labels))),
        baseline_exact=float(np.mean(baseline_points == data.labels)),
        baseline_mae=float(np.mean(np.abs(baseline_points - data.labels))),
    )


class _Pool:
    """Served items of one (criterion, input, alpha) or one label of it, pooled over the halves."""

    def __init__(self) -> None:
        self.covered: list[bool] = []
        self.sizes: list[int] = []
        self.baseline_covered: list[bool] = []
        self.baseline_sizes: list[int] = []
        self.uncalibrated = 0

    def shares(self, n_labels: int) -> tuple[float, float, float] | None:
        if not self.sizes:
            return None
        accept, review, escalate = decision_shares(
            np.asarray(self.sizes), n_labels, accept_max=ACCEPT_MAX, escalate_min=ESCALATE_MIN
        )
        return float(accept.mean()), float(review.mean()), float(escalate.mean())


def _mean(values: Sequence[float | int | bool]) -> float | None:
    return float(np.mean(values)) if values else None


def run_study(
    datasets: Sequence[JudgeCriterionData],
    means: dict[tuple[str, str], float],
    *,
    seed: int = 0,
    n_splits: int = 20,
    alphas: Sequence[float] = REPORT_ALPHAS,
) -> LocalJudgeStudy:
    """Skill, and the service's answers on unseen documents beside the baseline (module rules)."""
    if not datasets:
        raise ValueError("no labelled cells to study")
    halves = split_documents(datasets, seed)
    pools: dict[tuple[str, str, float], _Pool] = {}
    label_pools: dict[tuple[str, str, float, int], _Pool] = {}
    n_labels = {d.criterion: d.n_labels for d in datasets}
    for fit_docs, test_docs in ((halves[0], halves[1]), (halves[1], halves[0])):
        fit_data = [d for d in (subset(x, fit_docs) for x in datasets) if d is not None]
        test_data = [d for d in (subset(x, test_docs) for x in datasets) if d is not None]
        _, fits = run_validity_study(fit_data, n_splits=n_splits, seed=seed, delta=DEFAULT_DELTA)
        artifact = build_artifact(data_hash="local-judge", code_version="local-judge", created_at="", fits=fits)
        index = ThresholdIndex(artifact)
        fit_labels = {d.criterion: d.labels for d in fit_data}
        for data in test_data:
            cell = (data.judge, data.prompt_family, data.criterion)
            for name, kinds in INPUTS.items():
                if "probabilities" in kinds and data.probabilities is None:
                    continue
                for alpha in alphas:
                    baseline = baseline_set(fit_labels[data.criterion], alpha, data.n_labels)
                    pool = pools.setdefault((data.criterion, name, alpha), _Pool())
                    for position in range(data.labels.size):
                        label = int(data.labels[position])
                        probabilities = (
                            None if data.probabilities is None else [float(p) for p in data.probabilities[position]]
                        )
                        item = serve_item(
                            index,
                            cell,
                            kinds,
                            alpha,
                            judge_score=int(data.judge_scores[position]),
                            probabilities=probabilities,
                            n_labels=data.n_labels,
                        )
                        of_label = label_pools.setdefault((data.criterion, name, alpha, label), _Pool())
                        for target in (pool, of_label):
                            target.baseline_covered.append(label in baseline)
                            target.baseline_sizes.append(len(baseline))
                            if item.labels is None:
                                target.uncalibrated += 1
                                continue
                            target.covered.append(label in item.labels)
                            target.sizes.append(len(item.labels))
    served = []
    for (criterion, name, alpha), pool in sorted(pools.items()):
        shares = pool.shares(n_labels[criterion])
        served.append(
            Served(
                criterion=criterion,
                input=name,
                alpha=alpha,
                n=len(pool.sizes),
                n_uncalibrated=pool.uncalibrated,
                coverage=_mean(pool.covered),
                mean_set_size=_mean(pool.sizes),
                accept_share=None if shares is None else shares[0],
                review_share=None if shares is None else shares[1],
                escalate_share=None if shares is None else shares[2],
                baseline_coverage=float(np.mean(pool.baseline_covered)),
                baseline_set_size=float(np.mean(pool.baseline_sizes)),
            )
        )
    by_label = []
    for (criterion, name, alpha, label), pool in sorted(label_pools.items()):
        shares = pool.shares(n_labels[criterion])
        by_label.append(
            LabelServed(
                criterion=criterion,
                input=name,
                alpha=alpha,
                label=label,
                n=len(pool.sizes) + pool.uncalibrated,
                coverage=_mean(pool.covered),
                mean_set_size=_mean(pool.sizes),
                accept_share=None if shares is None else shares[0],
                baseline_coverage=float(np.mean(pool.baseline_covered)),
            )
        )
    first = datasets[0]
    return LocalJudgeStudy(
        judge=first.judge,
        prompt_family=first.prompt_family,
        seed=seed,
        n_splits=n_splits,
        n_documents=[len(halves[0]), len(halves[1])],
        skill=[_skill(d, means, halves) for d in datasets],
        served=served,
        by_label=by_label,
        per_label=[
            rule
            for d in datasets
            for rule in fit_cell_label_rules(
                judge=d.judge,
                prompt_family=d.prompt_family,
                criterion=d.criterion,
                labels=d.labels,
                judge_scores=d.judge_scores,
                probabilities=d.probabilities,
                means=None,
                groups=np.asarray(d.groups),
                n_labels=d.n_labels,
            )
        ],
    )
