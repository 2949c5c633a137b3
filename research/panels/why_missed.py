"""Why the four-judge panel misses its target (finished research; ``python -m research.panels why-missed``).

On the exported panel's common items (:data:`offline.studies.panels.study.EXPORTED_PANEL`), per criterion with at
least four documents, three looks at the gap between the panel's served set size and its best member's:

* ``gap``: the ratio walked from the study's first quick check to the full validity rules, one rule at a time
  (:func:`research.panels.gap.gap_rows`);
* ``candidate``: a screened learned combination, balanced LAC on a multinomial model with Mondrian thresholds per
  pooled score bin (:func:`research.panels.gap.candidate_rows`);
* ``learned``: the multinomial model of the human label under two fixed methods
  (:func:`research.panels.learned.learned_rows`), against the best member's served set size from the members' own
  validity fits (:func:`offline.studies.panels.study.best_members`).

None of them is served: the result (``docs/panels.md``) is that the mean verdict is what a panel serves. Writes
``conformal/panels_why_missed.json`` and ``.md`` (:mod:`research.panels.why_missed_report`).
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import numpy as np

from calibration.input_kinds.mean_panel import panel_kind_data
from offline.build.cell_data import JudgeCriterionData
from offline.build.panels import EXPORTED_PANEL, panel_cells
from offline.studies.conformal.validity import DEFAULT_DELTA, HEADLINE_ALPHA, run_validity_study
from offline.studies.panels.cells import member_kind_data
from offline.studies.panels.study import STUDY_ALPHAS, best_members
from research.panels.gap import CandidateRow, GapRow, candidate_rows, gap_rows
from research.panels.learned import LearnedRow, learned_rows

__all__ = ["MIN_DOCUMENTS", "WhyMissed", "run_why_missed"]

MIN_DOCUMENTS = 4  # a criterion's panel cell needs this many documents for the outer splits


class WhyMissed(msgspec.Struct, frozen=True, kw_only=True):
    """The three looks at the exported panel's gap, with the settings they ran at."""

    alpha: float
    delta: float | None
    n_splits: int
    seed: int
    members: list[str]
    gap: list[GapRow]
    candidate: list[CandidateRow]
    learned: list[LearnedRow]


def run_why_missed(
    datasets: Sequence[JudgeCriterionData],
    *,
    alpha: float = HEADLINE_ALPHA,
    n_splits: int = 20,
    seed: int = 0,
    delta: float | None = DEFAULT_DELTA,
    members: Sequence[str] = EXPORTED_PANEL,
) -> WhyMissed:
    """The gap decomposition, the screened candidate and the learned model of ``members``' panel, per criterion
    (module rules; the same splits and seed as ``python -m offline panels``)."""
    alphas = sorted({*STUDY_ALPHAS, alpha})
    _summary, member_fits = run_validity_study(datasets, n_splits=n_splits, seed=seed, delta=delta, alphas=alphas)
    members_best = best_members(member_fits, alpha)
    gap: list[GapRow] = []
    candidate: list[CandidateRow] = []
    learned: list[LearnedRow] = []
    for criterion in sorted({d.criterion for d in datasets}):
        cell = panel_cells(datasets, members, criterion)
        if cell is None or np.unique(cell.groups).size < MIN_DOCUMENTS:
            continue
        gap.extend(
            gap_rows(
                panel_kind_data(cell.expected, cell.labels, cell.groups, cell.n_labels),
                member_kind_data(datasets, cell),
                criterion,
                alpha=alpha,
                n_splits=n_splits,
                seed=seed,
            )
        )
        candidate.extend(
            candidate_rows(
                cell.expected,
                cell.members,
                cell.labels,
                cell.groups,
                criterion,
                alpha=alpha,
                delta=delta,
                n_splits=n_splits,
                seed=seed,
                n_labels=cell.n_labels,
            )
        )
        best = min(members_best[(m, criterion)][1] for m in members)
        learned.extend(
            learned_rows(cell, alpha=alpha, delta=delta, n_splits=n_splits, seed=seed, best_member_set_size=best)
        )
    return WhyMissed(
        alpha=float(alpha),
        delta=delta,
        n_splits=n_splits,
        seed=seed,
        members=list(members),
        gap=gap,
        candidate=candidate,
        learned=learned,
    )
