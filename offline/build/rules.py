"""The rules the artifact carries beside its entries, for every recorded SummEval (cell, input kind), fitted on all
its items:

* ``decision_rules``: one certified accept/escalate rule per (judge, prompt family, criterion, input kind) over the
  artifact's grid (:data:`calibration.decisions.cell_rules.ARTIFACT_GRID`: tolerances 1-2, accept_alpha 0.05 /
  0.10 / 0.20, quality gates tau 3 and 4, delta 0.05) with the document-level bound, as the service's calibration
  jobs fit them (:func:`calibration.decisions.cell_rules.fit_cell_rules`, seeded);
* ``label_rules``: the per-label rules (:mod:`calibration.per_label.fit`; no split, no seed).

Cells without groups use the item id's prefix before ``/`` as the document.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from calibration.decisions.cell_rules import ARTIFACT_GRID, fit_cell_rules
from calibration.decisions.rule import DecisionRule
from calibration.per_label.fit import fit_cell_label_rules
from calibration.per_label.rule import LabelRule
from offline.build.cell_data import JudgeCriterionData

__all__ = ["export_label_rules", "export_rules"]


def export_rules(
    datasets: Sequence[JudgeCriterionData], *, seed: int = 0, progress: Callable[[Iterable], Iterable] | None = None
) -> list[DecisionRule]:
    """The certified decision rules of every (cell, kind), fitted on all its items (module rules)."""
    rules: list[DecisionRule] = []
    for data in progress(datasets) if progress is not None else datasets:
        rules += fit_cell_rules(
            judge=data.judge,
            prompt_family=data.prompt_family,
            criterion=data.criterion,
            labels=data.labels,
            judge_scores=data.judge_scores,
            probabilities=data.probabilities,
            means=data.means,
            groups=data.documents,
            n_labels=data.n_labels,
            grid=ARTIFACT_GRID,
            seed=seed,
        )
    return rules


def export_label_rules(datasets: Sequence[JudgeCriterionData]) -> list[LabelRule]:
    """The per-label rules of every (cell, kind), fitted on all its items (module rules)."""
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
