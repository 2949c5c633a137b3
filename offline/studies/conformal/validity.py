"""Validity of what is served: the held-out evidence of every (judge, prompt family, criterion) x input kind fit.

The paper's item-level study (:mod:`offline.studies.conformal.study`) stays as the reproduction of its tables. This
study reports what the artifact is built from (:func:`offline.build.input_kinds.fit_input_kinds`, whose module
states the
input kinds, groups, thresholds and levels) and what its figures promise: :func:`validity_summary` reads the
build's fits; :func:`run_validity_study` fits and summarises (for the studies that fit on part of the data).

Writes ``conformal/validity.json`` (:class:`ValiditySummary`) and ``conformal/validity.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import msgspec

from artifact.input_kinds import FitKey
from calibration.input_kinds.fit import HeldoutFigures, InputKindFit, ProcedureFigures
from calibration.input_kinds.selection import SELECTION_RULE, MethodEvidence
from offline.build.cell_data import JudgeCriterionData
from offline.build.input_kinds import fit_input_kinds, kind_data
from offline.build.modes import ALPHA_GRID, DEFAULT_DELTA, HEADLINE_ALPHA, REPORT_ALPHAS, TABLE_ALPHAS
from offline.jsonfile import write_json

__all__ = [
    "ALPHA_GRID",
    "DEFAULT_DELTA",
    "HEADLINE_ALPHA",
    "JSON_FILE",
    "MARKDOWN_FILE",
    "REPORT_ALPHAS",
    "KindCell",
    "ValiditySummary",
    "kind_data",
    "run_validity_study",
    "validity_summary",
    "write_validity",
]

JSON_FILE = "conformal/validity.json"
MARKDOWN_FILE = "conformal/validity.md"


class KindCell(msgspec.Struct, frozen=True, kw_only=True):
    """One (judge, prompt family, criterion, input kind): the default, its evidence, and held-out figures."""

    judge: str
    prompt_family: str
    criterion: str
    kind: str
    n_items: int
    n_groups: int
    default_method: str
    default_qualified: bool
    default_reason: str
    qualifying_methods: list[str]
    selection_evidence: list[MethodEvidence]
    heldout: list[HeldoutFigures]  # every method at TABLE_ALPHAS
    procedure: list[ProcedureFigures]  # the served recipe (selection + fit) on unseen documents

    def figures(self, method: str, alpha: float) -> HeldoutFigures | None:
        """The held-out figures of one method at one level, or None."""
        for row in self.heldout:
            if row.method == method and abs(row.alpha - alpha) < 1e-9:
                return row
        return None


class ValiditySummary(msgspec.Struct, frozen=True, kw_only=True):
    """The validity study: rules, settings and one :class:`KindCell` per calibrated (cell, kind)."""

    seed: int
    n_splits: int
    delta: float | None
    alphas: list[float]
    report_alphas: list[float]
    headline_alpha: float
    rules: dict[str, str]
    cells: list[KindCell]


RULES = {
    "groups": "splits by document: all items of a document on one side (calibration.input_kinds.heldout.group_splits)",
    "thresholds": "PAC order statistic (calibration.order_statistics): coverage >= 1-alpha with probability "
    ">= 1-delta over the calibration data; marginal rank ceil((1-alpha)(n+1)) when delta is null",
    "input_kinds": "score: integer score alone; probabilities: renormalised log-probs, score = most probable label; "
    "each kind fitted and evaluated on its own inputs (calibration.input_kinds.verdicts)",
    "selection": SELECTION_RULE + "; evidence from 5 x 2-fold cross-fitting by document on the data being fitted",
    "procedure": "per outer split: the default chosen by the same rule from 2 x 2-fold cross-fitting inside the "
    "calibration documents only, fitted on them, evaluated on the unseen test documents",
    "set_size_interval": "mean_set_size_ci: 95% percentile bootstrap over documents (each draw reweights every "
    "split's test documents; the mean over splits of the test side's mean set size), 2000 draws, "
    "default_rng(seed) (calibration.unit_bootstrap.split_mean_interval)",
}


def validity_summary(
    fits: Mapping[FitKey, InputKindFit],
    *,
    n_splits: int,
    seed: int,
    delta: float | None,
    alphas: Sequence[float] = ALPHA_GRID,
) -> ValiditySummary:
    """The summary of fits made in one mode by :func:`offline.build.input_kinds.fit_input_kinds` (one
    :class:`KindCell` per
    fit, in the fits' order)."""
    cells = [
        KindCell(
            judge=judge,
            prompt_family=family,
            criterion=criterion,
            kind=kind,
            n_items=fit.n_items,
            n_groups=fit.n_groups,
            default_method=fit.default.method,
            default_qualified=fit.default.qualified,
            default_reason=fit.default.reason,
            qualifying_methods=fit.default.qualifying,
            selection_evidence=fit.selection_evidence,
            heldout=[h for h in fit.heldout if any(abs(h.alpha - a) < 1e-9 for a in TABLE_ALPHAS)],
            procedure=fit.procedure,
        )
        for (judge, family, criterion, kind), fit in fits.items()
    ]
    return ValiditySummary(
        seed=seed,
        n_splits=n_splits,
        delta=delta,
        alphas=[float(a) for a in alphas],
        report_alphas=list(REPORT_ALPHAS),
        headline_alpha=HEADLINE_ALPHA,
        rules=dict(RULES),
        cells=cells,
    )


def run_validity_study(
    datasets: Sequence[JudgeCriterionData],
    *,
    n_splits: int = 20,
    seed: int = 0,
    delta: float | None = DEFAULT_DELTA,
    alphas: Sequence[float] = ALPHA_GRID,
    progress: Callable[[Iterable], Iterable] | None = None,
) -> tuple[ValiditySummary, dict[FitKey, InputKindFit]]:
    """Fit every (cell, kind) (:func:`offline.build.input_kinds.fit_input_kinds`); return the summary and the fits."""
    fits = fit_input_kinds(datasets, n_splits=n_splits, seed=seed, delta=delta, alphas=alphas, progress=progress)
    return validity_summary(fits, n_splits=n_splits, seed=seed, delta=delta, alphas=alphas), fits


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def markdown(summary: ValiditySummary) -> str:
    """The validity tables: the served default per (cell, kind) and its unseen-document coverage."""
    lines = [
        "# Validity of the served artifact (documents it was not fitted on)",
        "",
        f"Thresholds: {'PAC, delta = ' + str(summary.delta) if summary.delta is not None else 'marginal'}; "
        f"{summary.n_splits} splits by document (seed {summary.seed}). Rules:",
        "",
        *[f"- **{k}**: {v}" for k, v in summary.rules.items()],
        "",
        "## The served recipe on unseen documents (selection + fit inside the calibration documents)",
        "",
        "| judge | criterion | kind | default (full data) | "
        + " | ".join(f"alpha {a:.2f}: mean cov / 5th pct / size [95% CI]" for a in summary.report_alphas)
        + " |",
        "|---|---|---|---|" + "---|" * len(summary.report_alphas),
    ]
    for cell in summary.cells:
        parts = []
        for alpha in summary.report_alphas:
            row = next(p for p in cell.procedure if abs(p.alpha - alpha) < 1e-9)
            size_ci = f" [{row.mean_set_size_ci[0]:.2f}, {row.mean_set_size_ci[1]:.2f}]" if row.mean_set_size_ci else ""
            parts.append(f"{row.mean_coverage:.3f} / {row.p5_coverage:.3f} / {row.mean_set_size:.2f}{size_ci}")
        lines.append(
            f"| {cell.judge} | {cell.criterion} | {cell.kind} | {cell.default_method} | " + " | ".join(parts) + " |"
        )
    lines += [
        "",
        f"## Every method at alpha = {summary.headline_alpha} (held out by document)",
        "",
        "| judge | criterion | kind | method | coverage | 5th pct | set size | min label | min score bin | "
        "empty | non-interval | accept / review / escalate | accept accuracy |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cell in summary.cells:
        for held in cell.heldout:
            if abs(held.alpha - summary.headline_alpha) > 1e-9:
                continue
            mark = " **(default)**" if held.method == cell.default_method else ""
            lines.append(
                f"| {cell.judge} | {cell.criterion} | {cell.kind} | {held.method}{mark} | {held.coverage:.3f} | "
                f"{held.coverage_p5:.3f} | {held.set_size:.2f} | {held.min_label_coverage:.2f} | "
                f"{held.min_bin_coverage:.2f} | {held.empty_share:.1%} | {held.non_interval_share:.1%} | "
                f"{held.accept_share:.0%} / {held.review_share:.0%} / {held.escalate_share:.0%} | "
                f"{_pct(held.accept_accuracy)} |"
            )
    lines += ["", "## Why each default", ""]
    lines += [
        f"- {c.judge} / {c.criterion} / {c.kind}: **{c.default_method}** — {c.default_reason}" for c in summary.cells
    ]
    return "\n".join(lines) + "\n"


def write_validity(summary: ValiditySummary, out: Path) -> tuple[Path, Path]:
    """Write ``conformal/validity.json`` and ``conformal/validity.md`` under ``out``."""
    json_path, md_path = out / JSON_FILE, out / MARKDOWN_FILE
    write_json(summary, json_path)
    md_path.write_text(markdown(summary))
    return json_path, md_path
