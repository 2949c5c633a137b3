"""The guarantees study's report files (:mod:`offline.studies.guarantees.study`): ``guarantees/guarantees_<N>docs.json``
and its Markdown, the headline tables per tolerance and level, the sets, the per-label figures and every row."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from artifact.thresholds import GUARANTEE_MODES
from offline.jsonfile import write_json
from offline.studies.guarantees.study import (
    DECISION_ALPHAS,
    EMPTY_SET_ALPHA,
    HEADLINE,
    SET_ALPHAS,
    TOLERANCES,
    GuaranteeRow,
    GuaranteesStudy,
)
from offline.studies.guarantees.summary import group_rows

__all__ = ["markdown", "report_name", "write_guarantees"]


def _summary_line(rows: Sequence[GuaranteeRow], what: str) -> str:
    if not rows:
        return f"| {what} | n/a | n/a | n/a |"
    share = float(np.mean([r.mean_accept_share for r in rows]))
    worst = max(rows, key=lambda r: r.mean_error)
    worst_doc = max(r.mean_document_error for r in rows)
    return (
        f"| {what} | {share:.3f} | {worst.mean_error:.3f} ({worst.judge} {worst.criterion} {worst.kind}) | "
        f"{worst_doc:.3f} |"
    )


def markdown(study: GuaranteesStudy) -> str:
    """The headline tables, then every row."""
    rules = study.rules.get("study", "").replace("\n", " ")
    lines = [
        "# Guarantees on documents the rules never saw: expected and pac modes",
        "",
        f"{study.n_splits} splits by document ({study.calibration_documents} calibrate, {study.served_documents} "
        f"served), seed {study.seed}; rules fitted on the calibration documents by the service's own path (method "
        f"choice with {study.inner_splits} inner splits), the others served through the artifact they make. "
        f"Rules: {rules}",
        "",
    ]
    for tolerance in TOLERANCES:
        for alpha in DECISION_ALPHAS:
            lines += [
                f"## Accept decisions at tolerance {tolerance}, accept_alpha {alpha:g}",
                "",
                "| mode, cells | mean accept share | worst cell's mean error among accepted (items) | worst cell's "
                "mean error (documents) |",
                "|---|---|---|---|",
            ]
            for mode in GUARANTEE_MODES:
                rows = [
                    r
                    for r in study.decisions
                    if r.mode == mode and r.tolerance == tolerance and abs(r.accept_alpha - alpha) < 1e-9
                ]
                lines.append(_summary_line([r for r in rows if r.kind == "probabilities"], f"{mode}, log-prob cells"))
                lines.append(
                    _summary_line(group_rows(rows, "all"), f"{mode}, all cells (one kind per judge x criterion)")
                )
            lines.append("")
    lines += [
        "## Sets",
        "",
        "| mode | alpha | mean set size, log-prob cells | lowest mean coverage (cell) |",
        "|---|---|---|---|",
    ]
    for mode in GUARANTEE_MODES:
        for alpha in SET_ALPHAS:
            set_rows = [r for r in study.sets if r.mode == mode and abs(r.alpha - alpha) < 1e-9]
            if not set_rows:
                continue
            logprob = [r.mean_set_size for r in set_rows if r.kind == "probabilities"]
            low = min(set_rows, key=lambda r: r.mean_coverage)
            size = f"{float(np.mean(logprob)):.2f}" if logprob else "n/a"
            lines.append(
                f"| {mode} | {alpha:g} | {size} | {low.mean_coverage:.3f} ({low.judge} {low.criterion} {low.kind}) |"
            )
    lines += [
        "",
        f"## Per human label (pooled over cells and splits; sets at alpha {EMPTY_SET_ALPHA:g}, decisions at "
        f"tolerance {HEADLINE[0]}, accept_alpha {HEADLINE[1]:g})",
        "",
        "| mode | kind | label | items | coverage | accept share | error among accepted |",
        "|---|---|---|---|---|---|---|",
    ]
    for f in study.per_label:
        error = "n/a" if f.error_among_accepted is None else f"{f.error_among_accepted:.3f}"
        lines.append(
            f"| {f.mode} | {f.kind} | {f.label} | {f.n_items} | {f.coverage:.3f} | {f.accept_share:.3f} | {error} |"
        )
    lines += [
        "",
        "## Every decision row",
        "",
        "| mode | judge | criterion | kind | tolerance | accept_alpha | accept share | error among accepted | "
        "document-weighted error | share of splits accepting nothing |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(study.decisions, key=lambda r: (r.mode, r.tolerance, r.accept_alpha, r.judge, r.criterion, r.kind)):
        lines.append(
            f"| {r.mode} | {r.judge} | {r.criterion} | {r.kind} | {r.tolerance} | {r.accept_alpha:g} | "
            f"{r.mean_accept_share:.3f} | {r.mean_error:.3f} | {r.mean_document_error:.3f} | "
            f"{r.none_accepted_share:.2f} |"
        )
    return "\n".join(lines) + "\n"


def report_name(calibration_documents: int) -> str:
    """The report file stem of a study fitted on ``calibration_documents`` documents."""
    return f"guarantees_{calibration_documents}docs"


def write_guarantees(study: GuaranteesStudy, out: Path) -> tuple[Path, Path]:
    """Write ``guarantees/guarantees_<N>docs.json`` and ``.md`` under ``out``."""
    folder = Path(out) / "guarantees"
    folder.mkdir(parents=True, exist_ok=True)
    name = report_name(study.calibration_documents)
    json_path = write_json(study, folder / f"{name}.json")
    md_path = folder / f"{name}.md"
    md_path.write_text(markdown(study), encoding="utf-8")
    return json_path, md_path
