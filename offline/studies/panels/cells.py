"""A judge panel's cell: its members' expected scores on the items every member answered for a criterion, the
human labels and the documents, and each member's verdicts on those same items as study input kinds.

The item and verdict rules are stated in :mod:`offline.studies.panels.study`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from calibration.kinds.fit import KindData
from calibration.kinds.mean_panel import expected_scores, is_panel_family, panel_family, panel_name
from offline.studies.conformal.cell_data import JudgeCriterionData
from offline.studies.conformal.validity import kind_data

__all__ = [
    "PanelCell",
    "member_kind_data",
    "panel_cells",
]


@dataclass(frozen=True)
class PanelCell:
    """One panel's items for one criterion: members' expected scores (items x members), labels, documents."""

    members: tuple[str, ...]
    criterion: str
    item_ids: tuple[str, ...]
    expected: np.ndarray
    labels: np.ndarray
    groups: np.ndarray
    inputs: tuple[str, ...] = ()  # each member's input (calibration.kinds.mean_panel.member_input), member order
    n_labels: int = 5

    @property
    def name(self) -> str:
        return panel_name(self.members)

    @property
    def family(self) -> str:
        """The cell's prompt family: the members' inputs (calibration.kinds.mean_panel.panel_family)."""
        return panel_family(self.inputs)


def _by_judge(datasets: Sequence[JudgeCriterionData], criterion: str) -> dict[str, JudgeCriterionData]:
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
    cells = _by_judge(datasets, criterion)
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


def member_kind_data(datasets: Sequence[JudgeCriterionData], cell: PanelCell) -> list[tuple[str, list[KindData]]]:
    """Each member's verdicts on the panel's common items (same order, same documents), as every input kind it
    supports (:func:`offline.studies.conformal.validity.kind_data`)."""
    cells = _by_judge(datasets, cell.criterion)
    result = []
    for member in cell.members:
        data = cells[member]
        position = {item: k for k, item in enumerate(data.item_ids)}
        index = np.array([position[i] for i in cell.item_ids], dtype=np.int64)
        subset = replace(
            data,
            item_ids=cell.item_ids,
            labels=data.labels[index],
            judge_scores=data.judge_scores[index],
            probabilities=None if data.probabilities is None else data.probabilities[index],
            means=None if data.means is None else data.means[index],
            groups=tuple(cell.groups.tolist()),
            n_answered=len(index),
            n_excluded=0,
        )
        result.append((member, kind_data(subset, list(cell.groups))))
    return result
