"""The ``per_label`` guarantee measured as served: rules fitted on N documents by the service's own fit, the other
documents answered by the service's own function, with the negative controls beside the judges.

``python -m offline guarantees --per-label [--splits 20] [--seed 0] [--calibration-documents 50]``. Rules, stated once:

* **Splits.** Split s permutes the sorted SummEval documents with ``default_rng(seed + s)``; the first N calibrate
  (:func:`calibration.per_label.fit.fit_cell_label_rules`), the others are served, every item of a cell as a verdict
  of one input kind (``score``, or ``probabilities`` for a log-prob judge) through
  :func:`calibration.per_label.rule.answer_per_label` at alpha = accept_alpha = 0.10, tolerance 2, and the quality
  gate at pass threshold 3 (the service's defaults).
* **Controls.** The same cells with the judge replaced by a constant (every verdict 5) and by its own verdicts
  shuffled across all items (``default_rng([seed + s, 7])``), calibrated and served the same way.
* **Figures per (judge, cell, kind)**: over the splits, the mean and standard deviation of the accept share, the set
  size, and per human label: the coverage, the share of its items wrongly accepted (|human - point| >= 2), the gate's
  pass share, and the mean calibration items of that label; the 10th percentile over splits of the accept share.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import msgspec
import numpy as np

from calibration.decisions.rule import feature_of
from calibration.per_label.fit import fit_cell_label_rules
from calibration.per_label.rule import LabelAsk, LabelRule, answer_per_label
from offline.build.cell_data import JudgeCriterionData

__all__ = ["LabelFigures", "PerLabelRow", "PerLabelStudy", "run_per_label_study"]

JUDGES = ("judge", "constant", "shuffled")
ASK = LabelAsk(alpha=0.10, tolerance=2, accept_alpha=0.10)
GATE = LabelAsk(alpha=0.10, tolerance=2, accept_alpha=0.10, pass_threshold=3)


class LabelFigures(msgspec.Struct, frozen=True, kw_only=True):
    """One human label of one row, over the splits (None where a split had no item of it)."""

    label: int
    calibration_items: float
    coverage: float | None
    coverage_se: float | None
    wrongly_accepted: float | None
    wrongly_accepted_se: float | None
    gate_pass: float | None
    gate_pass_se: float | None


class PerLabelRow(msgspec.Struct, frozen=True, kw_only=True):
    """One (judge kind, cell, input kind) over the splits."""

    judge_kind: str  # judge | constant | shuffled
    judge: str
    criterion: str
    kind: str
    accept_share: float
    accept_share_p10: float
    set_size: float
    skilled_share: float
    labels: list[LabelFigures]


class PerLabelStudy(msgspec.Struct, frozen=True, kw_only=True):
    """The study's rows and settings."""

    seed: int
    n_splits: int
    calibration_documents: int
    rules: str
    rows: list[PerLabelRow]


def _features(rule: LabelRule, scores: np.ndarray, probabilities: np.ndarray | None) -> np.ndarray:
    if rule.input_kind == "probabilities" and probabilities is not None:
        return np.array(
            [feature_of("expected_score", score=None, probabilities=list(p), mean=None) for p in probabilities]
        )
    return scores.astype(float)


def _mean_se(values: list[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    return float(np.mean(values)), float(np.std(values, ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0


def _verdicts(data: JudgeCriterionData, judge_kind: str, seed: int) -> tuple[np.ndarray, np.ndarray | None]:
    if judge_kind == "constant":
        return np.full(data.labels.size, data.n_labels), None
    if judge_kind == "shuffled":
        order = np.random.default_rng([seed, 7]).permutation(data.labels.size)
        return data.judge_scores[order], None if data.probabilities is None else data.probabilities[order]
    return data.judge_scores, data.probabilities


def run_per_label_study(
    datasets: Sequence[JudgeCriterionData],
    *,
    n_splits: int = 20,
    seed: int = 0,
    calibration_documents: int = 50,
    progress: Callable[[Iterable], Iterable] | None = None,
) -> PerLabelStudy:
    """Fit on N documents, serve the others, ``n_splits`` times, for the judges and the controls (module rules)."""
    tallies: dict[tuple[str, str, str, str], dict[str, list]] = {}
    splits = range(n_splits)
    for split in progress(splits) if progress is not None else splits:
        for data in datasets:
            documents = np.asarray(data.groups)
            order = np.random.default_rng(seed + split).permutation(np.unique(documents))
            calibrate = np.isin(documents, order[:calibration_documents])
            served = ~calibrate
            for judge_kind in JUDGES:
                scores, probabilities = _verdicts(data, judge_kind, seed + split)
                rules = fit_cell_label_rules(
                    judge=data.judge,
                    prompt_family=data.prompt_family,
                    criterion=data.criterion,
                    labels=data.labels[calibrate],
                    judge_scores=scores[calibrate],
                    probabilities=None if probabilities is None else probabilities[calibrate],
                    means=None,
                    groups=documents[calibrate],
                    n_labels=data.n_labels,
                )
                for rule in rules:
                    _tally(tallies, judge_kind, data, rule, scores, probabilities, served, calibrate)
    rows = [_row(key, tally, n_labels=5) for key, tally in tallies.items()]
    return PerLabelStudy(
        seed=seed,
        n_splits=n_splits,
        calibration_documents=calibration_documents,
        rules=(__doc__ or "").split("Rules, stated once:")[-1].strip(),
        rows=rows,
    )


def _tally(
    tallies: dict[tuple[str, str, str, str], dict[str, list]],
    judge_kind: str,
    data: JudgeCriterionData,
    rule: LabelRule,
    scores: np.ndarray,
    probabilities: np.ndarray | None,
    served: np.ndarray,
    calibrate: np.ndarray,
) -> None:
    features = _features(rule, scores[served], None if probabilities is None else probabilities[served])
    labels = data.labels[served]
    answers = [answer_per_label(rule, float(f), ASK) for f in features]
    gates = np.array([answer_per_label(rule, float(f), GATE).accepted for f in features])
    accepted = np.array([a.accepted for a in answers])
    points = np.array([a.point for a in answers])
    covered = np.array([int(y) in a.prediction_set for a, y in zip(answers, labels, strict=True)])
    tally = tallies.setdefault((judge_kind, data.judge, data.criterion, rule.input_kind), {"split": []})
    per_label = {}
    for label in range(1, data.n_labels + 1):
        mine = labels == label
        per_label[label] = (
            int((data.labels[calibrate] == label).sum()),
            float(covered[mine].mean()) if mine.any() else None,
            float((accepted & (np.abs(points - labels) >= 2))[mine].mean()) if mine.any() else None,
            float(gates[mine].mean()) if mine.any() else None,
        )
    tally["split"].append(
        (
            float(accepted.mean()),
            float(np.mean([len(a.prediction_set) for a in answers])),
            rule.skill.skilled,
            per_label,
        )
    )


def _row(key: tuple[str, str, str, str], tally: dict[str, list], *, n_labels: int) -> PerLabelRow:
    splits = tally["split"]
    labels = []
    for label in range(1, n_labels + 1):
        figures = [s[3][label] for s in splits]
        coverage = _mean_se([f[1] for f in figures if f[1] is not None])
        wrong = _mean_se([f[2] for f in figures if f[2] is not None])
        gate = _mean_se([f[3] for f in figures if f[3] is not None])
        labels.append(
            LabelFigures(
                label=label,
                calibration_items=float(np.mean([f[0] for f in figures])),
                coverage=coverage[0],
                coverage_se=coverage[1],
                wrongly_accepted=wrong[0],
                wrongly_accepted_se=wrong[1],
                gate_pass=gate[0],
                gate_pass_se=gate[1],
            )
        )
    shares = [s[0] for s in splits]
    return PerLabelRow(
        judge_kind=key[0],
        judge=key[1],
        criterion=key[2],
        kind=key[3],
        accept_share=float(np.mean(shares)),
        accept_share_p10=float(np.percentile(shares, 10)),
        set_size=float(np.mean([s[1] for s in splits])),
        skilled_share=float(np.mean([s[2] for s in splits])),
        labels=labels,
    )
