"""The guarantees study's runs summarised for the docs (:mod:`offline.studies.guarantees.docs`): what the page and
its figure show, small enough to commit as ``docs/figures/guarantees.json``.

Rules, stated once. Cells are the study's (judge x criterion x input kind) rows in two groups: ``logprob`` (the kind
``probabilities`` of the judges with log-probs) and ``all`` (one row per judge x criterion: the log-probs where the
judge gives them, as the service serves such a verdict, else the integer score). Per (mode, N calibration documents,
group, tolerance, accept_alpha): ``accept_share`` = mean over the cells of the cell's mean accept share over splits;
``error_mean`` / ``error_worst`` = mean / largest over the cells of the cell's mean error among accepted over splits
(a split that accepts nothing counts 0, the promise's convention); ``none_accepted`` = mean over the cells of the
share of splits accepting nothing. Sets per (mode, N, group, alpha): mean set size over the cells, the mean and the
lowest cell mean coverage. *Documents needed* for a share s in a mode: the smallest studied N whose ``accept_share``
at tolerance 2, accept_alpha 0.10 reaches s (None: more than the largest studied). Per-label rows are the N = 50
study's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

import msgspec
import numpy as np

from offline.build.inputs.errors import DataError
from offline.studies.guarantees.study import GuaranteeRow, GuaranteesStudy, LabelFigures, SetRow

__all__ = [
    "GROUPS",
    "HEADLINE",
    "HEADLINE_DOCUMENTS",
    "MODES",
    "SET_HEADLINE",
    "DecisionPoint",
    "GuaranteesSummary",
    "SetPoint",
    "StudyRun",
    "decision_point",
    "group_rows",
    "documents_needed",
    "load_summary",
    "read_studies",
    "set_point",
    "summarise",
]

GROUPS: tuple[str, ...] = ("logprob", "all")
MODES: tuple[str, ...] = ("expected", "pac")
HEADLINE_DOCUMENTS = 50
HEADLINE = (2, 0.10)  # tolerance, accept_alpha
SET_HEADLINE = 0.10
_REPORT = re.compile(r"guarantees_(\d+)docs\.json$")


class DecisionPoint(msgspec.Struct, frozen=True, kw_only=True):
    """One (mode, calibration documents, group, tolerance, accept_alpha) of the curve (module rules)."""

    mode: str
    calibration_documents: int
    group: str
    tolerance: int
    accept_alpha: float
    n_cells: int
    accept_share: float
    error_mean: float
    error_worst: float
    worst_cell: str
    none_accepted: float


class SetPoint(msgspec.Struct, frozen=True, kw_only=True):
    """Sets of one (mode, calibration documents, group, alpha)."""

    mode: str
    calibration_documents: int
    group: str
    alpha: float
    n_cells: int
    set_size: float
    coverage_mean: float
    coverage_lowest: float
    lowest_cell: str


class StudyRun(msgspec.Struct, frozen=True, kw_only=True):
    """Settings of one study run the summary reads."""

    calibration_documents: int
    served_documents: int
    n_splits: int
    seed: int
    delta: float


class GuaranteesSummary(msgspec.Struct, frozen=True, kw_only=True):
    """What the page shows, from every study run found."""

    runs: list[StudyRun]
    decisions: list[DecisionPoint]
    sets: list[SetPoint]
    per_label: list[LabelFigures]


Row = TypeVar("Row", GuaranteeRow, SetRow)


def group_rows(rows: Sequence[Row], group: str) -> list[Row]:
    """``logprob``: the rows of kind probabilities; ``all``: one kind per judge x criterion, the log-probs where the
    judge gives them (what the service serves a verdict carrying both on), else the integer score."""
    if group == "logprob":
        return [r for r in rows if r.kind == "probabilities"]
    with_logprobs = {(r.judge, r.criterion) for r in rows if r.kind == "probabilities"}
    return [r for r in rows if r.kind == "probabilities" or (r.judge, r.criterion) not in with_logprobs]


def _cell_name(row: GuaranteeRow | SetRow) -> str:
    return f"{row.judge} {row.criterion} {row.kind}"


def summarise(studies: Sequence[GuaranteesStudy]) -> GuaranteesSummary:
    """The summary of the study runs (module rules), sorted by calibration documents."""
    decisions: list[DecisionPoint] = []
    sets: list[SetPoint] = []
    ordered = sorted(studies, key=lambda s: s.calibration_documents)
    for study in ordered:
        n = study.calibration_documents
        for mode in MODES:
            for group in GROUPS:
                rows = group_rows([r for r in study.decisions if r.mode == mode], group)
                for tolerance, alpha in sorted({(r.tolerance, r.accept_alpha) for r in rows}):
                    cells = [r for r in rows if r.tolerance == tolerance and r.accept_alpha == alpha]
                    worst = max(cells, key=lambda r: r.mean_error)
                    decisions.append(
                        DecisionPoint(
                            mode=mode,
                            calibration_documents=n,
                            group=group,
                            tolerance=tolerance,
                            accept_alpha=alpha,
                            n_cells=len(cells),
                            accept_share=float(np.mean([r.mean_accept_share for r in cells])),
                            error_mean=float(np.mean([r.mean_error for r in cells])),
                            error_worst=worst.mean_error,
                            worst_cell=_cell_name(worst),
                            none_accepted=float(np.mean([r.none_accepted_share for r in cells])),
                        )
                    )
                set_rows = group_rows([r for r in study.sets if r.mode == mode], group)
                for alpha in sorted({r.alpha for r in set_rows}):
                    set_cells = [r for r in set_rows if r.alpha == alpha]
                    lowest = min(set_cells, key=lambda r: r.mean_coverage)
                    sets.append(
                        SetPoint(
                            mode=mode,
                            calibration_documents=n,
                            group=group,
                            alpha=alpha,
                            n_cells=len(set_cells),
                            set_size=float(np.mean([r.mean_set_size for r in set_cells])),
                            coverage_mean=float(np.mean([r.mean_coverage for r in set_cells])),
                            coverage_lowest=lowest.mean_coverage,
                            lowest_cell=_cell_name(lowest),
                        )
                    )
    headline = next((s for s in ordered if s.calibration_documents == HEADLINE_DOCUMENTS), None)
    return GuaranteesSummary(
        runs=[
            StudyRun(
                calibration_documents=s.calibration_documents,
                served_documents=s.served_documents,
                n_splits=s.n_splits,
                seed=s.seed,
                delta=s.delta,
            )
            for s in ordered
        ],
        decisions=decisions,
        sets=sets,
        per_label=list(headline.per_label) if headline is not None else [],
    )


def decision_point(
    summary: GuaranteesSummary, mode: str, n: int, group: str, tolerance: int, alpha: float
) -> DecisionPoint | None:
    """The curve point of (mode, n documents, group, tolerance, accept_alpha), if studied."""
    return next(
        (
            p
            for p in summary.decisions
            if (p.mode, p.calibration_documents, p.group, p.tolerance) == (mode, n, group, tolerance)
            and abs(p.accept_alpha - alpha) < 1e-9
        ),
        None,
    )


def set_point(summary: GuaranteesSummary, mode: str, n: int, group: str, alpha: float) -> SetPoint | None:
    """The sets of (mode, n documents, group, alpha), if studied."""
    return next(
        (
            p
            for p in summary.sets
            if (p.mode, p.calibration_documents, p.group) == (mode, n, group) and abs(p.alpha - alpha) < 1e-9
        ),
        None,
    )


def documents_needed(summary: GuaranteesSummary, mode: str, group: str, share: float) -> int | None:
    """The smallest studied number of calibration documents whose headline accept share reaches ``share``."""
    for run in summary.runs:
        point = decision_point(summary, mode, run.calibration_documents, group, *HEADLINE)
        if point is not None and point.accept_share >= share:
            return run.calibration_documents
    return None


def load_summary(path: Path) -> GuaranteesSummary:
    """A summary written by :func:`write_docs` (``figures/guarantees.json``)."""
    return msgspec.json.decode(Path(path).read_bytes(), type=GuaranteesSummary)


def read_studies(out: Path) -> list[GuaranteesStudy]:
    """Every ``guarantees_<N>docs.json`` under ``out/guarantees``; DataError when there is none."""
    folder = Path(out) / "guarantees"
    paths = sorted(p for p in folder.glob("guarantees_*docs.json") if _REPORT.search(p.name))
    if not paths:
        raise DataError(None, None, f"no guarantees_<N>docs.json under {folder}: run `python -m offline guarantees`")
    studies = []
    for path in paths:
        try:
            studies.append(msgspec.json.decode(path.read_bytes(), type=GuaranteesStudy))
        except msgspec.DecodeError as error:
            raise DataError(None, None, f"{path} is not a guarantees study's JSON: {error}") from error
    return studies
