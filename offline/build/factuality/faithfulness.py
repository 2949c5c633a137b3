"""Faithfulness calibration on FRANK: conformal sets for LLM judges' collected faithfulness verdicts.

=========================================================  ================================================
call                                                       result
=========================================================  ================================================
``faithfulness_data(frank.items, answers)``                ``[FaithfulnessData]``, one per (judge, family)
``run_faithfulness_study(datasets, seed=0, label=...)``    ``FaithfulnessStudy`` (summary + fitted sets)
``write_faithfulness_study(summary, report_dir)``          (:mod:`offline.studies.factuality.faithfulness_report`)
=========================================================  ================================================

Rules, stated once (also written into ``faithfulness.json`` under ``rules``):

* **Cells.** One per (judge, prompt family ``factuality_direct`` | ``factuality_qa`` | ``factuality_sentences``)
  with answers in the store (:func:`offline.studies.factuality.llm.factuality_answers_from_store`,
  :func:`offline.build.factuality.sentences.sentence_answers_from_store`), criterion ``faithfulness``.
* **Verdict.** The stored 1-5 ``judge_score``: direct, the judge's digit; qa, ``1 + round_half_up(4 x QA
  score)`` (``judges.factuality.methods.judge_score_from_qa``, the mapping the service applies to live QA
  verdicts); sentences, ``1 + round_half_up(4 x share of sentences judged error-free)``. Items without a
  judge score (failed or unreadable) are excluded and counted.
* **Target.** ``faithfulness_target(Factuality)`` = ``round_half_up(1 + 4 x Factuality)`` on 1..5.
* **Split.** FRANK's own (``calibration_split``): fit on its ``valid`` items, evaluate on its ``test`` items.
  One split, so ``n_splits = 1`` and there is no spread: ``coverage_std`` is 0 in the summary and null in the
  thresholds artifact. The exported predictor is exactly the one evaluated here (fitted on ``valid``).
* **Methods and levels.** Every method of ``calibration.conformal.METHODS`` when every used item (both parts)
  has stored log-probs, else the score-only ones; every alpha of ``offline.build.modes.TABLE_ALPHAS``. Fit and
  prediction draw from ``numpy.random.default_rng(seed)`` (``learned_lac``'s model half, ``aps_randomized``'s
  uniforms), one generator per (cell, method, alpha).
* **Figures.** The conformal study's (``offline.build.cell_figures.cell_result``): test coverage, mean set size,
  coverage within judge-score bins and within human labels (bins with >= 20 test items count), width-error
  Spearman; valid coverage = test coverage >= 1 - alpha - 0.01.
* **Default method.** The SummEval study's rule (``offline.build.cell_figures.choose_default``) at alpha = 0.10.
* **Too little data.** A cell needs >= 2 fit items (learned methods split them) and >= 1 test item; otherwise
  it is skipped with the reason in ``skipped`` and nothing is exported for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import msgspec
import numpy as np

from calibration.conformal import (
    FittedConformal,
    SplitResult,
    SplitStudy,
    evaluate_sets,
    fit_conformal,
    predict_sets,
)
from offline.build.cell_data import N_LABELS, JudgeCriterionData, methods_for, probability_row
from offline.build.cell_figures import COVERAGE_SLACK, HEADLINE_ALPHA, cell_result, choose_default
from offline.build.cell_results import CellResult, DefaultChoice
from offline.build.factuality.answers import CRITERION, FactualityAnswer, calibration_split, faithfulness_target
from offline.build.inputs.frank import FrankItem
from offline.build.modes import TABLE_ALPHAS

__all__ = [
    "MIN_FIT_ITEMS",
    "RULES",
    "FaithfulnessData",
    "FaithfulnessStudy",
    "FaithfulnessSummary",
    "FittedKey",
    "PartSizes",
    "faithfulness_data",
    "run_faithfulness_study",
]

MIN_FIT_ITEMS = 2
RULES = {
    "verdict": "stored judge_score 1-5 (qa: 1 + round_half_up(4 x QA score); sentences: 1 + round_half_up(4 x share "
    "of sentences judged error-free)); items without one excluded, counted",
    "target": "faithfulness_target(Factuality) = round_half_up(1 + 4 x Factuality)",
    "split": "FRANK's own: fit on valid, evaluate on test; n_splits = 1 (no spread: std 0 here, null in the "
    "artifact); the exported predictor is the one fitted on valid",
    "methods": "all METHODS when every used item has log-probs, else score-only; every alpha of TABLE_ALPHAS; fit and "
    "prediction draw from numpy.random.default_rng(seed)",
    "figures": f"the conformal study's cell figures on the test split; valid coverage = test coverage >= "
    f"1 - alpha - {COVERAGE_SLACK}",
    "default_method": f"the conformal study's choose_default at alpha={HEADLINE_ALPHA}",
    "minimum": f"a cell needs >= {MIN_FIT_ITEMS} fit items and >= 1 test item, else it is skipped",
}

FittedKey = tuple[str, str, str, float]  # (judge, prompt_family, method, alpha)


@dataclass(frozen=True)
class FaithfulnessData:
    """One (judge, prompt family)'s aligned arrays: the ``n_fit`` valid items first, then the test items."""

    data: JudgeCriterionData
    n_fit: int

    @property
    def n_test(self) -> int:
        """Test items (the arrays' length minus the fit part)."""
        return int(self.data.labels.size) - self.n_fit


class PartSizes(msgspec.Struct, frozen=True, kw_only=True):
    """Items of one (judge, prompt family): answered, excluded (no score), fit (valid), test; log-probs or not."""

    judge: str
    prompt_family: str
    n_answered: int
    n_excluded: int
    n_fit: int
    n_test: int
    has_probabilities: bool


class FaithfulnessSummary(msgspec.Struct, frozen=True, kw_only=True):
    """``factuality/faithfulness.json``: every cell's test-split figures and the default per (judge, family)."""

    label: str
    seed: int
    n_splits: int
    alphas: list[float]
    rules: dict[str, str]
    parts: list[PartSizes]
    cells: list[CellResult]
    default_methods: list[DefaultChoice]
    skipped: list[str]


@dataclass(frozen=True)
class FaithfulnessStudy:
    """The summary and, per (judge, family, method, alpha), the predictor fitted on FRANK's valid split."""

    summary: FaithfulnessSummary
    fitted: dict[FittedKey, FittedConformal]


def faithfulness_data(
    items: Sequence[FrankItem], answers: Mapping[tuple[str, str], Sequence[FactualityAnswer]]
) -> list[FaithfulnessData]:
    """Align each (judge, method)'s answers with the faithfulness target, valid items first (file order)."""
    split = calibration_split(items)
    ordered = [*split.fit, *split.evaluate]
    result = []
    for (judge, _method), group in sorted(answers.items()):
        if not group:
            continue
        by_id = {answer.item_id: answer for answer in group}
        used = [item for item in ordered if item.item_id in by_id and by_id[item.item_id].judge_score is not None]
        rows = [None if (lp := by_id[i.item_id].logprobs) is None else probability_row(lp) for i in used]
        present = [r for r in rows if r is not None]
        probabilities = np.vstack(present) if used and len(present) == len(rows) else None
        data = JudgeCriterionData(
            judge=judge,
            prompt_family=group[0].prompt_family,
            criterion=CRITERION,
            item_ids=tuple(item.item_id for item in used),
            labels=np.array([faithfulness_target(item.factuality) for item in used], dtype=np.int64),
            judge_scores=np.array([by_id[item.item_id].judge_score for item in used], dtype=np.int64),
            probabilities=probabilities,
            n_answered=len(group),
            n_excluded=len(group) - len(used),
        )
        result.append(FaithfulnessData(data=data, n_fit=sum(item.split == "valid" for item in used)))
    return result


def _one_split(part: FaithfulnessData, method: str, alpha: float, seed: int) -> tuple[SplitStudy, FittedConformal]:
    """Fit on the valid part and evaluate on the test part, as a one-split SplitStudy over the cell's arrays."""
    data, n_fit = part.data, part.n_fit
    fit, test = np.arange(n_fit), np.arange(n_fit, data.labels.size)
    probabilities = data.probabilities
    generator = np.random.default_rng(seed)
    fitted = fit_conformal(
        method,
        alpha,
        data.labels[fit],
        judge_scores=data.judge_scores[fit],
        probabilities=None if probabilities is None else probabilities[fit],
        n_labels=N_LABELS,
        rng=generator,
    )
    sets = predict_sets(
        fitted,
        judge_scores=data.judge_scores[test],
        probabilities=None if probabilities is None else probabilities[test],
        rng=generator,
    )
    evaluation = evaluate_sets(sets, data.labels[test])
    split = SplitResult(
        coverage=evaluation.coverage,
        set_size=evaluation.mean_set_size,
        test_index=test,
        set_sizes=evaluation.set_sizes,
        covered=evaluation.covered,
        threshold=fitted.threshold,
    )
    study = SplitStudy(
        method=method,
        alpha=float(alpha),
        coverage=evaluation.coverage,
        coverage_std=0.0,
        set_size=evaluation.mean_set_size,
        set_size_std=0.0,
        n_cal=n_fit,
        n_test=int(test.size),
        splits=(split,),
    )
    return study, fitted


def run_faithfulness_study(
    datasets: Sequence[FaithfulnessData], *, alphas: Sequence[float] = TABLE_ALPHAS, seed: int = 0, label: str = ""
) -> FaithfulnessStudy:
    """Fit on valid, evaluate on test, for every cell x method x alpha; defaults by the SummEval rule."""
    cells: list[CellResult] = []
    fitted: dict[FittedKey, FittedConformal] = {}
    skipped = []
    for part in datasets:
        data = part.data
        if part.n_fit < MIN_FIT_ITEMS or part.n_test < 1:
            skipped.append(
                f"{data.judge}/{data.prompt_family}: {part.n_fit} scored valid (fit) and {part.n_test} "
                f"scored test items; needs >= {MIN_FIT_ITEMS} and >= 1"
            )
            continue
        for alpha in alphas:
            for method in methods_for(data):
                study, predictor = _one_split(part, method, alpha, seed)
                cells.append(cell_result(data, study, seed=seed)[0])
                fitted[(data.judge, data.prompt_family, method, float(alpha))] = predictor
    headline: dict[tuple[str, str], list[CellResult]] = {}
    for cell in cells:
        if abs(cell.alpha - HEADLINE_ALPHA) < 1e-9:
            headline.setdefault((cell.judge, cell.prompt_family), []).append(cell)
    defaults = [choose_default(group) for _, group in sorted(headline.items())]
    parts = [
        PartSizes(
            judge=p.data.judge,
            prompt_family=p.data.prompt_family,
            n_answered=p.data.n_answered,
            n_excluded=p.data.n_excluded,
            n_fit=p.n_fit,
            n_test=p.n_test,
            has_probabilities=p.data.probabilities is not None,
        )
        for p in datasets
    ]
    summary = FaithfulnessSummary(
        label=label,
        seed=seed,
        n_splits=1,
        alphas=[float(a) for a in alphas],
        rules=dict(RULES),
        parts=parts,
        cells=cells,
        default_methods=defaults,
        skipped=skipped,
    )
    return FaithfulnessStudy(summary=summary, fitted=fitted)
