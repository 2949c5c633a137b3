"""Judge panels on SummEval: does a calibrated set over several judges beat the best single judge's?

Every panel of 2..6 shipped judges (``python -m offline panels``), per criterion. A panel's verdict on an item
is the mean of its members' expected scores (:mod:`calibration.input_kinds.mean_panel`), calibrated as the ``mean``
input
kind by :func:`calibration.input_kinds.fit.fit_input_kind` with the validity study's settings (splits by document,
PAC thresholds at
delta 0.05, default by cross-fitting, the served recipe checked on unseen documents). Rules:

* **Items.** A panel cell holds the items every member answered with a usable verdict (the intersection of the
  members' items for the criterion); groups are SummEval documents. Human label: the validity study's y*.
  Each member's expected score comes from its richest recorded input (mean_of_samples for a mean judge, else
  log-probs when every item has them, else the integer score), recorded in the cell's prompt family
  (:func:`calibration.input_kinds.mean_panel.panel_family`), which the service matches.
* **Members' figures.** The best single member is taken from the members' own validity fits
  (:func:`offline.studies.conformal.validity.run_validity_study`, each judge on all of its items, every input kind it
  supports): a member's figure is the smaller of its kinds' served-recipe mean set sizes at the level (the
  service serves the kind with the smaller held-out sets), and ``best_member`` is the member with the smallest.
* **Figures.** Per (panel, criterion, method) at ``alpha``: held-out coverage, set size and decision shares of
  the method (fitted on calibration documents, evaluated on unseen ones); the default method's row also
  carries ``served_coverage`` / ``served_set_size``: the served recipe (default chosen inside the calibration
  documents, fitted there, evaluated on unseen ones). Ratios compare served figures: panel / best member.
* **Leave-one-out.** For a panel of >= 3 members and each member: the served set size of the panel without it
  (itself a panel of the study) minus the panel's: > 0 means the member adds information.
* **Why the target is missed** (the exported panel only): :mod:`research.panels.gap` walks from the
  study's first quick check to the full validity rules one rule at a time (``gap``) and screens a learned
  candidate (``candidate``; not served).
* **Export.** ``make artifact`` exports the four-judge panel and all its sub-panels of >= 2 members into the
  artifact (:mod:`offline.build.panels`, the artifact's alpha grid); the full study is this module's command only
  (57 panels x 4 criteria cost about a minute of CPU).

The panel's cell (items, verdicts, members' input kinds) and its fit are the build's (:mod:`offline.build.panels`);
the members on the panel's items live in :mod:`offline.studies.panels.cells`. Writes
(:mod:`offline.studies.panels.report`) ``conformal/panels.json`` (:class:`offline.studies.panels.results.PanelStudy`),
``conformal/panels.md`` and ``conformal/panels_set_size.png``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from calibration.input_kinds.fit import InputKindFit, fit_input_kind
from calibration.input_kinds.mean_panel import is_panel_family, panel_name
from offline.build.cell_data import JudgeCriterionData
from offline.build.panels import EXPORTED_PANEL, PanelCell, fit_panel, panel_cells
from offline.studies.conformal.validity import (
    DEFAULT_DELTA,
    HEADLINE_ALPHA,
    REPORT_ALPHAS,
    run_validity_study,
)
from offline.studies.panels.cells import member_kind_data
from offline.studies.panels.results import LeaveOneOut, MemberOnItems, PanelRow, PanelStudy

__all__ = [
    "FIGURE_FILE",
    "JSON_FILE",
    "MARKDOWN_FILE",
    "STUDY_ALPHAS",
    "best_members",
    "members_on_items",
    "run_panel_study",
]

JSON_FILE = "conformal/panels.json"
MARKDOWN_FILE = "conformal/panels.md"
FIGURE_FILE = "conformal/panels_set_size.png"
STUDY_ALPHAS: tuple[float, ...] = (0.05, 0.10, 0.15, 0.20)

RULES = {
    "verdict": "mean of members' expected scores (mean_of_samples; else sum k p_k of renormalised log-probs; else "
    "the integer score), clipped to [1, K], calibrated as the mean input kind (calibration.input_kinds.mean_panel)",
    "items": "the items every member answered for the criterion; splits by SummEval document",
    "thresholds": "PAC at delta (calibration.input_kinds.fit.fit_input_kind, the validity study's settings)",
    "best_member": "smallest served-recipe mean set size among the members' own validity fits (each judge on all "
    "its items, best input kind)",
    "ratio": "panel served_set_size / best member's served set size, both the recipe as served on unseen documents",
}


def members_on_items(
    datasets: Sequence[JudgeCriterionData],
    cell: PanelCell,
    *,
    alpha: float,
    delta: float | None,
    n_splits: int,
    seed: int,
) -> list[MemberOnItems]:
    """Each member's validity fit redone on the panel's common items (every kind it supports; the kind with the
    smaller served set size kept), so the panel and its members are compared on the same items."""
    alphas = sorted({*STUDY_ALPHAS, alpha})
    result = []
    for member, kinds in member_kind_data(datasets, cell):
        best: MemberOnItems | None = None
        for kd in kinds:
            fit = fit_input_kind(
                kd,
                alphas=alphas,
                delta=delta,
                headline_alpha=HEADLINE_ALPHA,
                report_alphas=REPORT_ALPHAS,
                n_splits=n_splits,
                seed=seed,
            )
            coverage, size = _procedure(fit, alpha)
            if best is None or size < best.served_set_size:
                best = MemberOnItems(
                    panel=cell.name,
                    criterion=cell.criterion,
                    member=member,
                    kind=kd.kind,
                    n_items=fit.n_items,
                    served_coverage=coverage,
                    served_set_size=size,
                )
        assert best is not None
        result.append(best)
    return result


def _procedure(fit: InputKindFit, alpha: float) -> tuple[float, float]:
    row = next(p for p in fit.procedure if abs(p.alpha - alpha) < 1e-9)
    return row.mean_coverage, row.mean_set_size


def best_members(
    member_fits: dict[tuple[str, str, str, str], InputKindFit], alpha: float
) -> dict[tuple[str, str], tuple[float, float]]:
    """(judge, criterion) -> (served coverage, served set size) of the kind with the smaller served set size."""
    best: dict[tuple[str, str], tuple[float, float]] = {}
    for (judge, _family, criterion, _kind), fit in member_fits.items():
        coverage, size = _procedure(fit, alpha)
        if (judge, criterion) not in best or size < best[(judge, criterion)][1]:
            best[(judge, criterion)] = (coverage, size)
    return best


def run_panel_study(
    datasets: Sequence[JudgeCriterionData],
    *,
    alpha: float = HEADLINE_ALPHA,
    n_splits: int = 20,
    seed: int = 0,
    delta: float | None = DEFAULT_DELTA,
    max_size: int = 6,
    progress: Callable[[Iterable], Iterable] | None = None,
) -> PanelStudy:
    """Every panel of 2..``max_size`` judges x criterion (module rules)."""
    alphas = sorted({*STUDY_ALPHAS, alpha})
    _summary, member_fits = run_validity_study(datasets, n_splits=n_splits, seed=seed, delta=delta, alphas=alphas)
    members_best = best_members(member_fits, alpha)
    judges = sorted({d.judge for d in datasets if not is_panel_family(d.prompt_family)})
    criteria = sorted({d.criterion for d in datasets})
    tasks = [
        (subset, criterion)
        for size in range(2, min(max_size, len(judges)) + 1)
        for subset in itertools.combinations(judges, size)
        for criterion in criteria
    ]
    rows: list[PanelRow] = []
    served: dict[tuple[tuple[str, ...], str], float] = {}
    for subset, criterion in progress(tasks) if progress is not None else tasks:
        cell = panel_cells(datasets, subset, criterion)
        if cell is None or np.unique(cell.groups).size < 2:
            continue
        fit = fit_panel(cell, alphas=alphas, n_splits=n_splits, seed=seed, delta=delta)
        best = min(subset, key=lambda m: (members_best[(m, criterion)][1], m))
        best_coverage, best_size = members_best[(best, criterion)]
        served_coverage, served_size = _procedure(fit, alpha)
        served[(subset, criterion)] = served_size
        for h in fit.heldout:
            if abs(h.alpha - alpha) > 1e-9:
                continue
            default = h.method == fit.default.method
            rows.append(
                PanelRow(
                    members=list(subset),
                    panel=cell.name,
                    prompt_family=cell.family,
                    criterion=criterion,
                    alpha=float(alpha),
                    method=h.method,
                    is_default=default,
                    n_items=fit.n_items,
                    coverage=h.coverage,
                    set_size=h.set_size,
                    min_label_coverage=h.min_label_coverage,
                    accept_share=h.accept_share,
                    review_share=h.review_share,
                    escalate_share=h.escalate_share,
                    best_member=best,
                    best_member_set_size=best_size,
                    best_member_coverage=best_coverage,
                    served_coverage=served_coverage if default else None,
                    served_set_size=served_size if default else None,
                    ratio_to_best_member=served_size / best_size if default else None,
                )
            )
    leave_one_out = [
        LeaveOneOut(
            members=list(subset),
            criterion=criterion,
            dropped=member,
            set_size=size,
            set_size_without=served[(tuple(m for m in subset if m != member), criterion)],
            gain=served[(tuple(m for m in subset if m != member), criterion)] - size,
        )
        for (subset, criterion), size in served.items()
        if len(subset) >= 3
        for member in subset
        if (tuple(m for m in subset if m != member), criterion) in served
    ]
    on_items = []
    for criterion in criteria:
        cell = panel_cells(datasets, EXPORTED_PANEL, criterion)
        if cell is not None and np.unique(cell.groups).size >= 4:
            on_items.extend(members_on_items(datasets, cell, alpha=alpha, delta=delta, n_splits=n_splits, seed=seed))
    return PanelStudy(
        alpha=float(alpha),
        delta=delta,
        n_splits=n_splits,
        seed=seed,
        judges=judges,
        rules=dict(RULES),
        rows=rows,
        leave_one_out=leave_one_out,
        members_on_panel_items=on_items,
    )


def defaults(study: PanelStudy) -> list[PanelRow]:
    """The default method's row of every (panel, criterion)."""
    return [row for row in study.rows if row.is_default]


def headline(study: PanelStudy, members: Sequence[str] = EXPORTED_PANEL) -> list[PanelRow]:
    """The default rows of one panel, one per criterion."""
    name = panel_name(members)
    return [row for row in defaults(study) if row.panel == name]
