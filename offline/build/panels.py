"""The exported judge panel's fits: a panel's cell (its members' expected scores on the items every member answered
for a criterion, the human labels and the documents) fitted as the ``mean`` input kind.

Rules (the panel study, :mod:`offline.studies.panels.study`, compares every panel of 2-6 judges with its members):

* **Items.** A panel cell holds the items every member answered with a usable verdict; groups are SummEval
  documents; the human label is the cells' y*.
* **Verdict.** The mean of the members' expected scores (:mod:`calibration.input_kinds.mean_panel`), each from its
  richest recorded input (mean_of_samples, else log-probs when every item has them, else the integer score),
  recorded in the cell's prompt family (:func:`calibration.input_kinds.mean_panel.panel_family`).
* **Fit.** :func:`calibration.input_kinds.fit.fit_input_kind` with the SummEval cells' settings
  (:mod:`offline.build.input_kinds`).
* **Export.** The four-judge panel :data:`EXPORTED_PANEL` and all its sub-panels of >= 2 members, every
  criterion, keyed (panel name, the members' inputs as prompt family, criterion, ``mean``).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from artifact.input_kinds import FitKey
from calibration.input_kinds.fit import InputKindFit, fit_input_kind
from calibration.input_kinds.mean_panel import (
    PANEL_INPUT_KIND,
    expected_scores,
    is_panel_family,
    panel_family,
    panel_kind_data,
    panel_name,
)
from offline.build.cell_data import JudgeCriterionData
from offline.build.modes import ALPHA_GRID, DEFAULT_DELTA, HEADLINE_ALPHA, REPORT_ALPHAS

__all__ = [
    "EXPORTED_PANEL",
    "PanelCell",
    "export_panel_fits",
    "fit_panel",
    "members_by_judge",
    "panel_cells",
]

EXPORTED_PANEL: tuple[str, ...] = (
    "gpt-3.5-turbo-0301",
    "gpt-4o-mini-2024-07-18",
    "llama-2-70b-chat",
    "qwen2.5-72b-instruct",
)


@dataclass(frozen=True)
class PanelCell:
    """One panel's items for one criterion: members' expected scores (items x members), labels, documents."""

    members: tuple[str, ...]
    criterion: str
    item_ids: tuple[str, ...]
    expected: np.ndarray
    labels: np.ndarray
    groups: np.ndarray
    inputs: tuple[str, ...] = ()  # each member's input (calibration.input_kinds.mean_panel.member_input), member order
    n_labels: int = 5

    @property
    def name(self) -> str:
        return panel_name(self.members)

    @property
    def family(self) -> str:
        """The cell's prompt family: the members' inputs (calibration.input_kinds.mean_panel.panel_family)."""
        return panel_family(self.inputs)


def members_by_judge(datasets: Sequence[JudgeCriterionData], criterion: str) -> dict[str, JudgeCriterionData]:
    """Each judge's cell for ``criterion`` (one prompt family per judge: the first in name order; panels left out)."""
    cells: dict[str, JudgeCriterionData] = {}
    for data in sorted(datasets, key=lambda d: (d.judge, d.prompt_family)):
        if data.criterion == criterion and not is_panel_family(data.prompt_family):
            cells.setdefault(data.judge, data)  # one family per judge: the first in name order
    return cells


def _member_expected(data: JudgeCriterionData, item_ids: Sequence[str]) -> np.ndarray:
    position = {item: k for k, item in enumerate(data.item_ids)}
    index = np.array([position[item] for item in item_ids], dtype=np.int64)
    return expected_scores(
        data.n_labels,
        judge_scores=data.judge_scores[index],
        probabilities=None if data.probabilities is None else data.probabilities[index],
        means=None if data.means is None else data.means[index],
    )


def panel_cells(datasets: Sequence[JudgeCriterionData], members: Sequence[str], criterion: str) -> PanelCell | None:
    """The panel's cell for ``criterion`` (module rules); None when a member lacks the criterion or no item is
    common."""
    cells = members_by_judge(datasets, criterion)
    if any(m not in cells for m in members):
        return None
    ordered = tuple(sorted(members))
    common = sorted(set.intersection(*(set(cells[m].item_ids) for m in ordered)))
    if not common:
        return None
    first = cells[ordered[0]]
    position = {item: k for k, item in enumerate(first.item_ids)}
    index = np.array([position[item] for item in common], dtype=np.int64)
    groups = (
        np.asarray(first.groups)[index]
        if first.groups is not None
        else np.array([item.split("/", 1)[0] for item in common])
    )
    expected = np.column_stack([_member_expected(cells[m], common) for m in ordered])
    inputs = tuple(
        "mean" if cells[m].means is not None else "probabilities" if cells[m].probabilities is not None else "score"
        for m in ordered
    )
    return PanelCell(
        members=ordered,
        criterion=criterion,
        item_ids=tuple(common),
        expected=expected,
        labels=first.labels[index],
        groups=groups,
        inputs=inputs,
        n_labels=first.n_labels,
    )


def fit_panel(
    cell: PanelCell, *, alphas: Sequence[float], n_splits: int, seed: int, delta: float | None
) -> InputKindFit:
    """:func:`calibration.input_kinds.fit.fit_input_kind` on the panel's mean verdicts, with the SummEval cells'
    settings."""
    data = panel_kind_data(cell.expected, cell.labels, cell.groups, cell.n_labels)
    return fit_input_kind(
        data,
        alphas=alphas,
        delta=delta,
        headline_alpha=HEADLINE_ALPHA,
        report_alphas=REPORT_ALPHAS,
        n_splits=n_splits,
        seed=seed,
    )


def export_panel_fits(
    datasets: Sequence[JudgeCriterionData],
    *,
    members: Sequence[str] = EXPORTED_PANEL,
    n_splits: int = 20,
    seed: int = 0,
    delta: float | None = DEFAULT_DELTA,
    alphas: Sequence[float] = ALPHA_GRID,
) -> dict[FitKey, InputKindFit]:
    """Fits of ``members``' panel and every sub-panel of >= 2 of them, per criterion, keyed for the artifact
    (panel name, the members' inputs as prompt family, criterion, ``mean``); empty when a member is not in the
    data."""
    judges = {d.judge for d in datasets}
    if not set(members) <= judges:
        return {}
    criteria = sorted({d.criterion for d in datasets if d.judge in members})
    fits = {}
    for size in range(2, len(members) + 1):
        for subset in itertools.combinations(sorted(members), size):
            for criterion in criteria:
                cell = panel_cells(datasets, subset, criterion)
                if cell is None or np.unique(cell.groups).size < 2:
                    continue
                fit = fit_panel(cell, alphas=alphas, n_splits=n_splits, seed=seed, delta=delta)
                fits[(cell.name, cell.family, criterion, PANEL_INPUT_KIND)] = fit
    return fits
