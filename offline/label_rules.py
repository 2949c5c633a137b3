"""The per-label rules of the recorded SummEval cells: what the artifact's ``label_rules`` carry
(:mod:`calibration.per_label.fit`, fitted on all items of each cell and input kind; no split, no seed)."""

from __future__ import annotations

from collections.abc import Sequence

from calibration.per_label.fit import fit_cell_label_rules
from calibration.per_label.rule import LabelRule
from offline.studies.conformal.cell_data import JudgeCriterionData

__all__ = ["export_label_rules"]


def export_label_rules(datasets: Sequence[JudgeCriterionData]) -> list[LabelRule]:
    """The per-label rules of every (cell, kind), fitted on all its items (calibration.per_label.fit): what the
    artifact's ``label_rules`` carry. Cells without groups use the item id's prefix before ``/``."""
    rules: list[LabelRule] = []
    for data in datasets:
        rules += fit_cell_label_rules(
            judge=data.judge,
            prompt_family=data.prompt_family,
            criterion=data.criterion,
            labels=data.labels,
            judge_scores=data.judge_scores,
            probabilities=data.probabilities,
            means=data.means,
            groups=data.documents,
            n_labels=data.n_labels,
        )
    return rules
