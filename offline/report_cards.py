"""``python -m offline report-cards``: the shipped artifact's report cards from the recorded SummEval judges.

One card per recorded judge x criterion that the artifact serves (:func:`artifact.report_evidence.build_report_card`,
the function calibration jobs call for a bring-your-own file), with SummEval's three experts as the human-human
ceiling where their individual ratings survive (the 12 abstractive systems), written to ``report_cards.json`` beside
the artifact (:mod:`artifact.report_cards`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from artifact.labels import LabelledCell
from artifact.report_cards import ReportCards, cards_beside, save_report_cards
from artifact.report_evidence import (
    SHIPPED_REPORT_OPTIONS,
    ReportOptions,
    build_report_card,
    planner_point_at,
    served_choice,
)
from artifact.thresholds import ThresholdIndex, ThresholdsArtifact, load_artifact
from calibration.report_card.card import ReportCard
from offline.build.cell_data import JudgeCriterionData
from offline.build.inputs.summeval import SummEvalItem, load_summeval

__all__ = [
    "PlannerCheck",
    "expert_annotations",
    "labelled_cell",
    "planner_check",
    "print_planner_checks",
    "recorded_report_cards",
    "write_report_cards",
]


def labelled_cell(data: JudgeCriterionData) -> LabelledCell:
    """A study cell as the labelled-file cell the report cards take (groups: SummEval documents)."""
    return LabelledCell(
        judge=data.judge,
        prompt_family=data.prompt_family,
        criterion=data.criterion,
        n_labels=data.n_labels,
        item_ids=data.item_ids,
        labels=np.asarray(data.labels, dtype=np.int64),
        judge_scores=np.asarray(data.judge_scores, dtype=np.int64),
        probabilities=data.probabilities,
        groups=tuple(data.groups) if data.groups is not None else data.item_ids,
        means=data.means,
    )


def expert_annotations(items: Sequence[SummEvalItem], item_ids: Sequence[str], criterion: str) -> np.ndarray | None:
    """(items, experts) ratings of ``criterion`` in ``item_ids`` order, 0 where an item has none; None when no item
    has individual ratings."""
    by_id = {item.item_id: item for item in items}
    rows = []
    for item_id in item_ids:
        scores = by_id[item_id].expert_scores
        rows.append([0, 0, 0] if scores is None else [int(s[criterion]) for s in scores])
    marks = np.asarray(rows, dtype=np.int64)
    return marks if (marks > 0).any() else None


def recorded_report_cards(
    cells: Sequence[JudgeCriterionData],
    items: Sequence[SummEvalItem],
    artifact: ThresholdsArtifact,
    options: ReportOptions = SHIPPED_REPORT_OPTIONS,
    progress: Callable[[str], object] | None = None,
) -> list[ReportCard]:
    """A card per cell the artifact serves (sorted by judge, prompt family, criterion)."""
    index = ThresholdIndex(artifact, options.entry_mode)
    cards = []
    for data in sorted(cells, key=lambda c: (c.judge, c.prompt_family, c.criterion)):
        if not index.kinds(data.judge, data.prompt_family, data.criterion):
            continue
        if progress is not None:
            progress(f"{data.judge} / {data.prompt_family} / {data.criterion}")
        cell = labelled_cell(data)
        cards.append(
            build_report_card(
                cell, artifact, options, annotations=expert_annotations(items, cell.item_ids, cell.criterion)
            )
        )
    return cards


def write_report_cards(data_dir: Path, thresholds: Path, progress: Callable[[str], object] | None = None) -> Path:
    """Compute the shipped cells' cards from ``data_dir`` and write them beside ``thresholds``; returns the path."""
    from offline.validation.artifact import recorded_datasets

    artifact = load_artifact(thresholds)
    summeval = load_summeval(data_dir)
    options = SHIPPED_REPORT_OPTIONS
    cards = recorded_report_cards(recorded_datasets(data_dir), summeval.items, artifact, options, progress)
    path = cards_beside(thresholds)
    save_report_cards(
        ReportCards(
            created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            source=f"python -m offline report-cards: the recorded SummEval judges against the rounded expert mean "
            f"(y*), the artifact {thresholds.name} created {artifact.created_at}; {options.folds} folds by document, "
            f"seed {options.seed}, {options.n_resamples} document resamples, planner {options.planner_draws} draws "
            f"per size",
            cards=cards,
        ),
        path,
    )
    return path


@dataclass(frozen=True)
class PlannerCheck:
    """The planner's prediction from a small file against the share measured on the full data."""

    judge: str
    criterion: str
    file_documents: int
    at_documents: int
    predicted: float  # the planner's projected share at ``at_documents`` from the small file
    predicted_low: float  # the projection's band (calibration.report_card.planner)
    predicted_high: float
    measured: float  # rules fitted on ``at_documents`` of the full data's documents, served on the others (mean)

    @property
    def within(self) -> bool:
        """The spec's check: the prediction within 0.10 of the measurement."""
        return abs(self.predicted - self.measured) <= 0.10

    @property
    def in_band(self) -> bool:
        """Whether the measurement lies in the prediction's band."""
        return self.predicted_low <= self.measured <= self.predicted_high


def _cell_of(cell: LabelledCell, documents: set[str]) -> LabelledCell:
    keep = np.array([g in documents for g in cell.groups])
    return LabelledCell(
        judge=cell.judge,
        prompt_family=cell.prompt_family,
        criterion=cell.criterion,
        n_labels=cell.n_labels,
        item_ids=tuple(i for i, k in zip(cell.item_ids, keep, strict=True) if k),
        labels=cell.labels[keep],
        judge_scores=cell.judge_scores[keep],
        probabilities=None if cell.probabilities is None else cell.probabilities[keep],
        groups=tuple(g for g, k in zip(cell.groups, keep, strict=True) if k),
        means=None if cell.means is None else cell.means[keep],
    )


def planner_check(
    cell: LabelledCell,
    artifact: ThresholdsArtifact,
    *,
    file_documents: int = 30,
    at_documents: int = 50,
    options: ReportOptions = SHIPPED_REPORT_OPTIONS,
    seed: int = 7,
) -> PlannerCheck:
    """The planner run on ``file_documents`` documents of the cell (``default_rng(seed).choice`` of its sorted
    documents) projects the accept share at ``at_documents``; measured: the planner's measured point at
    ``at_documents`` on the full cell (which must hold more documents)."""
    kind, _ = served_choice(cell, artifact, options)
    documents = sorted(set(cell.groups))
    few = set(np.random.default_rng(seed).choice(documents, file_documents, replace=False).tolist())
    predicted = planner_point_at(_cell_of(cell, few), kind, at_documents, options)
    measured = planner_point_at(cell, kind, at_documents, options)
    if not predicted.projected or measured.projected:
        raise ValueError(f"need file_documents <= {at_documents} < the cell's {len(documents)} documents")
    return PlannerCheck(
        judge=cell.judge,
        criterion=cell.criterion,
        file_documents=file_documents,
        at_documents=at_documents,
        predicted=predicted.accept_share,
        predicted_low=predicted.accept_share_low,
        predicted_high=predicted.accept_share_high,
        measured=measured.accept_share,
    )


def print_planner_checks(data_dir: Path, thresholds: Path) -> None:
    """:func:`planner_check` for every recorded cell the artifact serves, as a Markdown table on stdout."""
    from offline.validation.artifact import recorded_datasets

    artifact = load_artifact(thresholds)
    index = ThresholdIndex(artifact, SHIPPED_REPORT_OPTIONS.entry_mode)
    print("| judge | criterion | projected at 50 from 30 (band) | measured at 50 | within 0.10 | in the band |")
    print("|---|---|---|---|---|---|")
    for data in sorted(recorded_datasets(data_dir), key=lambda c: (c.judge, c.prompt_family, c.criterion)):
        if not index.kinds(data.judge, data.prompt_family, data.criterion):
            continue
        check = planner_check(labelled_cell(data), artifact)
        print(
            f"| {check.judge} | {check.criterion} | {check.predicted:.2f} ({check.predicted_low:.2f}-"
            f"{check.predicted_high:.2f}) | {check.measured:.2f} | {'yes' if check.within else 'no'} | "
            f"{'yes' if check.in_band else 'no'} |",
            flush=True,
        )
