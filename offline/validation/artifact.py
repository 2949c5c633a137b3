"""Validate a fixed artifact on labelled data: every item scored exactly as the service scores it.

``python -m offline validate --thresholds FILE [--labels FILE ...] [--data-dir D] [--out reports/validate]``
scores every labelled item (the user's own held-out labelled files with ``--labels``, format
:mod:`artifact.labels`; else the recorded SummEval judges, which are in-sample for the shipped artifact) of
every judge the artifact calibrates, three ways per item (what a caller can send): the integer
score alone (``score``), the log-probs alone (``logprobs``) and both (``score+logprobs``). Each verdict is served
by the service's own rule (:func:`artifact.serving.choose_entry`: input kind, next smaller calibrated level,
the default method of the kind with the smaller held-out sets) and the set by
:func:`calibration.conformal.prediction_set` on the kind's inputs
(:func:`calibration.input_kinds.verdicts.verdict_inputs`),
the same pure functions ``service.scoring.score`` calls; the decision is the service's default rule (empty set or
size >= min(5, K) -> escalate; size <= 2 -> accept; else review; :func:`calibration.input_kinds.fit.decision_shares`).

Per (judge, prompt family, criterion, input, alpha): n, marginal coverage with its 95% Clopper-Pearson interval
(:func:`calibration.estimates.intervals.clopper_pearson`, scipy's beta quantiles), coverage per human label and per
judge score, mean set size, empty sets, the shares of accept / review / escalate and the accuracy of accepted verdicts
(human label in the set); uncalibrated items are counted apart. Beside each cell, from the same serving pass
(:func:`serve_cells`, not written to the report): the served set sizes summed per document (the items' groups, sorted)
with the document's served items, what an interval over documents needs (:mod:`offline.validation.halves`).

**Certified decisions** (the artifact's ``decision_rules``): per (judge, prompt family, criterion, input kind) with a
rule whose kind the items carry, every item is served by :func:`calibration.decisions.rule.decide` on
:func:`calibration.decisions.rule.feature_of` of its verdict, at every (tolerance, accept_alpha) row of the rule:
n, accept share, errors among accepted (|y - point| >= tolerance) with their exact 95% Clopper-Pearson interval
(item-level: an honest interval only when the file's items are independent; several items per group widen the
truth), the rule's certified bound and whether the observed error exceeds it; the same per human label (never
pooled) and per quality gate (:func:`calibration.decisions.rule.decide_gate`; false passes among accepted
passes; :mod:`offline.validation.decisions`). Writes (:mod:`offline.validation.report`) ``validate.json``,
``validate.md`` and ``coverage.png``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from artifact.serving import ServedEntry, choose_entry, interval_hull
from artifact.thresholds import ThresholdIndex, ThresholdsArtifact
from calibration.conformal import prediction_set
from calibration.estimates.intervals import clopper_pearson
from calibration.input_kinds.fit import decision_shares
from calibration.input_kinds.verdicts import verdict_inputs
from offline.build.cell_data import JudgeCriterionData
from offline.validation.decisions import DecisionCheck, check_decisions

__all__ = [
    "INPUTS",
    "DocumentSizes",
    "ServedCell",
    "ValidationCell",
    "ValidationReport",
    "recorded_datasets",
    "serve_cells",
    "serve_item",
    "validate_artifact_on",
]

# What a caller sends -> the kinds its verdict carries (the service's rule in service.scoring.score).
INPUTS: dict[str, tuple[str, ...]] = {
    "score": ("score",),
    "logprobs": ("probabilities",),
    "score+logprobs": ("probabilities", "score"),
}
VALIDATE_ALPHAS: tuple[float, ...] = (0.05, 0.10, 0.20)


class GroupRow(msgspec.Struct, frozen=True, kw_only=True):
    """Coverage within one group (a human label or a judge score)."""

    group: int
    n: int
    coverage: float


class ValidationCell(msgspec.Struct, frozen=True, kw_only=True):
    """One (judge, prompt family, criterion, input, alpha) of the validation."""

    judge: str
    prompt_family: str
    criterion: str
    input: str
    alpha: float
    alpha_served: float | None
    kind: str | None
    method: str | None
    n: int
    n_uncalibrated: int
    coverage: float | None
    ci_low: float | None
    ci_high: float | None
    mean_set_size: float | None
    empty_sets: int
    accept_share: float | None
    review_share: float | None
    escalate_share: float | None
    accept_accuracy: float | None
    by_label: list[GroupRow]
    by_judge_score: list[GroupRow]


class DocumentSizes(msgspec.Struct, frozen=True, kw_only=True):
    """A validated cell's served sets per document: the documents (sorted) with at least one served item, the sum
    of their items' set sizes and how many items were served."""

    documents: list[str]
    set_sizes: list[int]
    items: list[int]


class ServedCell(msgspec.Struct, frozen=True, kw_only=True):
    """One validated cell and, when the items carry documents, its served set sizes per document."""

    cell: ValidationCell
    sizes: DocumentSizes | None


class ValidationReport(msgspec.Struct, frozen=True, kw_only=True):
    """Every validated cell, with where the artifact and the labels came from."""

    artifact: str
    calibration_id: str
    labels: str
    cells: list[ValidationCell]
    decisions: list[DecisionCheck] = []


def recorded_datasets(data_dir: Path) -> list[JudgeCriterionData]:
    """Every recorded SummEval judge's direct answers as study arrays (ingested into a temporary answer store,
    exactly as ``make calibrate`` ingests them)."""
    import tempfile

    from offline.build.answers.ingest import ingest_recorded
    from offline.build.answers.store import AnswerStore
    from offline.build.cell_data import cell_data_from_store
    from offline.build.inputs.summeval import load_summeval

    summeval = load_summeval(data_dir)
    with tempfile.TemporaryDirectory() as folder, AnswerStore(Path(folder) / "answers.sqlite") as store:
        ingest_recorded(store, data_dir)
        return cell_data_from_store(store, summeval.items)


@dataclass(frozen=True)
class ServedItem:
    """One item's answer: the set (None when uncalibrated) and what served it."""

    labels: tuple[int, ...] | None
    served: ServedEntry | None


def serve_item(
    index: ThresholdIndex,
    cell: tuple[str, str, str],
    kinds: tuple[str, ...],
    alpha: float,
    *,
    judge_score: int,
    probabilities: list[float] | None,
    n_labels: int,
    mean: float | None = None,
) -> ServedItem:
    """The set the service gives this verdict (module rules)."""
    served = choose_entry(index, cell, kinds, alpha)
    if not isinstance(served, ServedEntry):
        return ServedItem(labels=None, served=None)
    score, probs = verdict_inputs(
        served.kind, n_labels, judge_score=judge_score, probabilities=probabilities, mean=mean
    )
    return ServedItem(
        labels=interval_hull(prediction_set(served.entry.fitted, judge_score=score, probabilities=probs)), served=served
    )


def _groups(covered: np.ndarray, keys: np.ndarray) -> list[GroupRow]:
    return [
        GroupRow(group=int(k), n=int((keys == k).sum()), coverage=float(covered[keys == k].mean()))
        for k in np.unique(keys)
    ]


def validate_artifact_on(
    artifact: ThresholdsArtifact,
    datasets: Sequence[JudgeCriterionData],
    *,
    alphas: Sequence[float] = VALIDATE_ALPHAS,
    source: str = "",
    labels: str = "",
    accept_max: int = 2,
    escalate_min: int = 5,
) -> ValidationReport:
    """Score every item of ``datasets`` with ``artifact`` as the service would (module rules)."""
    index = ThresholdIndex(artifact)
    served = serve_cells(index, datasets, alphas=alphas, accept_max=accept_max, escalate_min=escalate_min)
    return ValidationReport(
        artifact=source,
        calibration_id=index.calibration_id,
        labels=labels,
        cells=[s.cell for s in served],
        decisions=check_decisions(artifact, datasets),
    )


def serve_cells(
    index: ThresholdIndex,
    datasets: Sequence[JudgeCriterionData],
    *,
    alphas: Sequence[float] = VALIDATE_ALPHAS,
    accept_max: int = 2,
    escalate_min: int = 5,
) -> list[ServedCell]:
    """Every (judge, prompt family, criterion, input, alpha) cell of ``datasets`` the index calibrates, each item
    served once as the service serves it, with its set sizes per document (module rules)."""
    cells = []
    for data in datasets:
        cell = (data.judge, data.prompt_family, data.criterion)
        if not index.kinds(*cell):
            continue
        inputs = {"mean": ("mean",)} if data.means is not None else INPUTS
        for name, kinds in inputs.items():
            if "probabilities" in kinds and data.probabilities is None:
                continue
            for alpha in alphas:
                cells.append(_validate_cell(index, data, cell, name, kinds, float(alpha), accept_max, escalate_min))
    return cells


def _document_sizes(groups: Sequence[str] | None, used: list[int], sets: list[tuple[int, ...]]) -> DocumentSizes | None:
    """The served sets' sizes and counts per document (None when the items carry no documents)."""
    if groups is None:
        return None
    totals: dict[str, list[int]] = {}
    for position, labels in zip(used, sets, strict=True):
        total = totals.setdefault(groups[position], [0, 0])
        total[0] += len(labels)
        total[1] += 1
    documents = sorted(totals)
    return DocumentSizes(
        documents=documents, set_sizes=[totals[d][0] for d in documents], items=[totals[d][1] for d in documents]
    )


def _validate_cell(
    index: ThresholdIndex,
    data: JudgeCriterionData,
    cell: tuple[str, str, str],
    name: str,
    kinds: tuple[str, ...],
    alpha: float,
    accept_max: int,
    escalate_min: int,
) -> ServedCell:
    sets: list[tuple[int, ...]] = []
    used: list[int] = []
    served_by: ServedEntry | None = None
    for position in range(data.labels.size):
        probabilities = None if data.probabilities is None else [float(p) for p in data.probabilities[position]]
        item = serve_item(
            index,
            cell,
            kinds,
            alpha,
            judge_score=int(data.judge_scores[position]),
            probabilities=probabilities,
            n_labels=data.n_labels,
            mean=None if data.means is None else float(data.means[position]),
        )
        if item.labels is not None:
            sets.append(item.labels)
            used.append(position)
            served_by = item.served
    n_uncalibrated = int(data.labels.size) - len(used)
    base: dict[str, Any] = dict(
        judge=data.judge,
        prompt_family=data.prompt_family,
        criterion=data.criterion,
        input=name,
        alpha=alpha,
        n=len(used),
        n_uncalibrated=n_uncalibrated,
    )
    sizes_per_document = _document_sizes(data.groups, used, sets)
    if not used:
        empty = ValidationCell(
            **base,
            alpha_served=None,
            kind=None,
            method=None,
            coverage=None,
            ci_low=None,
            ci_high=None,
            mean_set_size=None,
            empty_sets=0,
            accept_share=None,
            review_share=None,
            escalate_share=None,
            accept_accuracy=None,
            by_label=[],
            by_judge_score=[],
        )
        return ServedCell(cell=empty, sizes=sizes_per_document)
    index_used = np.asarray(used)
    labels = data.labels[index_used]
    covered = np.array([label in s for label, s in zip(labels, sets, strict=True)])
    sizes = np.array([len(s) for s in sets])
    accept, review, escalate = decision_shares(sizes, data.n_labels, accept_max=accept_max, escalate_min=escalate_min)
    low, high = clopper_pearson(int(covered.sum()), int(covered.size), 0.05)
    assert served_by is not None
    validated = ValidationCell(
        **base,
        alpha_served=served_by.alpha,
        kind=served_by.kind,
        method=served_by.method,
        coverage=float(covered.mean()),
        ci_low=low,
        ci_high=high,
        mean_set_size=float(sizes.mean()),
        empty_sets=int((sizes == 0).sum()),
        accept_share=float(accept.mean()),
        review_share=float(review.mean()),
        escalate_share=float(escalate.mean()),
        accept_accuracy=float(covered[accept].mean()) if accept.any() else None,
        by_label=_groups(covered, labels),
        by_judge_score=_groups(covered, data.judge_scores[index_used]),
    )
    return ServedCell(cell=validated, sizes=sizes_per_document)
