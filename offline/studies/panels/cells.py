"""Each member of a judge panel on the panel's own items, as study input kinds (the panel's cell is the build's,
:mod:`offline.build.panels`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from calibration.input_kinds.fit import KindData
from offline.build.cell_data import JudgeCriterionData
from offline.build.input_kinds import kind_data
from offline.build.panels import PanelCell, members_by_judge

__all__ = ["member_kind_data"]


def member_kind_data(datasets: Sequence[JudgeCriterionData], cell: PanelCell) -> list[tuple[str, list[KindData]]]:
    """Each member's verdicts on the panel's common items (same order, same documents), as every input kind it
    supports (:func:`offline.build.input_kinds.kind_data`)."""
    cells = members_by_judge(datasets, cell.criterion)
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
