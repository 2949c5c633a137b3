"""A calibration job as its answer shows it (``GET /v1/calibrations/{id}``): progress, and when done each new cell
with its held-out figures, its certified decision rule in rows and in words, and its per-label rule (the default
guarantee) with the skill test and the held-out figures every view shows."""

from __future__ import annotations

from calibration.decisions.rule import MODES, Certification, DecisionRule
from calibration.per_label.rule import pooled_groups
from calibration.per_label.summary import rule_words
from service.artifacts.snapshot import coverage_target
from service.jobs.calibration_jobs.fitting import CalibrationJob
from service.wire.calibration import (
    CalibratedCell,
    CalibrationJobInfo,
    CellCertification,
    HeldoutLevel,
    PerLabelFigures,
)

__all__ = ["decision_summary", "job_info"]

FULL_SCALE_SHARE = 0.5  # the report's flag rule (offline/report/labelled.py)
SHOWN_ALPHAS = (0.05, 0.10, 0.15, 0.20)  # the levels a job shows (every level of the grid is in the artifact)
SUMMARY_TOLERANCE, SUMMARY_ACCEPT_ALPHA = 2, 0.10  # a cell's decision rule in words: /v1/score's defaults


def _certifications(rule: DecisionRule) -> list[CellCertification]:
    return [
        CellCertification(
            tolerance=c.tolerance,
            accept_alpha=c.accept_alpha,
            certified=bool(c.accepted_bins),
            accept_share=c.accept_share,
            certified_error=c.certified_error,
            rule_failed=c.rule_failed,
            reason=c.reason,
            n_groups=c.n_groups,
            mode="expected" if c.mode == "expected" else "pac",
        )
        for c in rule.certifications
    ]


def decision_summary(rule: DecisionRule | None) -> tuple[str, bool]:
    """(the rule at SUMMARY_TOLERANCE / SUMMARY_ACCEPT_ALPHA in words, each guarantee mode, whether the data cannot
    certify there in any mode)."""
    if rule is None:
        return "", False
    where = f"tolerance {SUMMARY_TOLERANCE}, accept_alpha {SUMMARY_ACCEPT_ALPHA:g}"
    parts, failed = [], []
    for mode in MODES:
        row = next(
            (
                c
                for c in rule.certifications
                if c.mode == mode
                and c.tolerance == SUMMARY_TOLERANCE
                and abs(c.accept_alpha - SUMMARY_ACCEPT_ALPHA) < 1e-9
            ),
            None,
        )
        failed.append(row is not None and row.rule_failed)
        parts.append(f"{mode}: {_row_words(row, where)}")
    return "; ".join(parts), all(failed)


def _row_words(row: Certification | None, where: str) -> str:
    if row is None:
        return f"no certification at {where}: /v1/score escalates at these defaults"
    if row.rule_failed:
        return (
            f"not certifiable at {where}: {row.reason}; /v1/score escalates every verdict of this cell there "
            "(label more documents)"
        )
    if not row.accepted_bins:
        return (
            f"nothing accepted at {where}: {row.reason}; /v1/score escalates every verdict there (see "
            "certifications for other levels)"
        )
    if row.mode == "expected":
        return (
            f"accepted at {where}: {row.accept_share:.0%} of the calibration verdicts accepted; on average over "
            f"calibrations the error among accepted verdicts is <= {row.accept_alpha:g} ({row.n_groups} documents)"
        )
    return (
        f"certified at {where}: {row.accept_share:.0%} of the calibration verdicts accepted, error among accepted "
        f"<= {row.certified_error:.3f} with confidence {1 - (row.delta or 0.0):g} over {row.n_groups} documents"
    )


def job_info(job: CalibrationJob) -> CalibrationJobInfo:
    """The job as the API shows it: progress, and per finished cell its default method's held-out figures and its
    certified decision rule (a cell that cannot certify is also named in ``warnings``)."""
    rules = {
        (r.judge, r.prompt_family, r.criterion, r.input_kind): r
        for r in (job.artifact.decision_rules if job.artifact is not None else [])
    }
    label_rules = {
        (r.judge, r.prompt_family, r.criterion, r.input_kind): r
        for r in (job.artifact.label_rules if job.artifact is not None else [])
    }
    cells, warnings = [], list(job.warnings)
    for (judge, family, criterion, kind), n_labels, fit in job.results:
        figures = sorted(
            (
                f
                for f in fit.heldout
                if f.method == fit.default.method and any(abs(f.alpha - a) < 1e-9 for a in SHOWN_ALPHAS)
            ),
            key=lambda f: f.alpha,
        )
        levels = [
            HeldoutLevel(
                alpha=f.alpha,
                coverage_target=coverage_target(f.alpha),
                coverage=f.coverage,
                coverage_p5=f.coverage_p5,
                set_size=f.set_size,
                share_accept=f.accept_share,
                share_review=f.review_share,
                share_escalate=f.escalate_share,
                accept_accuracy=f.accept_accuracy,
                share_full_scale=f.full_scale_share,
            )
            for f in figures
        ]
        headline = min(levels, key=lambda h: (abs(h.alpha - 0.10), h.alpha), default=None)
        rule = rules.get((judge, family, criterion, kind))
        label_rule = label_rules.get((judge, family, criterion, kind))
        if label_rule is not None and not label_rule.skill.skilled:
            warnings.append(f"{judge} / {family} / {criterion} ({kind} verdicts): {rule_words(label_rule)}")
        summary, uncertifiable = decision_summary(rule)
        if uncertifiable:
            warnings.append(f"{judge} / {family} / {criterion} ({kind} verdicts): decision rule {summary}")
        cells.append(
            CalibratedCell(
                judge=judge,
                prompt_family=family,
                criterion=criterion,
                input_kind=kind,
                n_labels=n_labels,
                n_items=fit.n_items,
                n_groups=fit.n_groups,
                default_method=fit.default.method,
                reason=fit.default.reason,
                heldout=levels,
                full_scale_flag=headline is not None
                and (headline.share_full_scale >= FULL_SCALE_SHARE or headline.set_size >= n_labels - 0.5),
                certifications=_certifications(rule) if rule is not None else [],
                decision_summary=summary,
                per_label=None
                if label_rule is None
                else PerLabelFigures(
                    skill=label_rule.skill,
                    pooled_labels=pooled_groups(label_rule),
                    summary=label_rule.summary,
                    words=rule_words(label_rule),
                ),
            )
        )
    return CalibrationJobInfo(
        id=job.id,
        status=job.status,  # type: ignore[arg-type]
        artifact_name=job.name,
        created_at=job.created_at,
        finished_at=job.finished_at,
        n_rows=job.n_rows,
        progress=job.done / job.total if job.total else 0.0,
        levels=list(job.levels),
        warnings=warnings,
        error=job.error,
        activated=job.activated,
        cells=cells,
        report=f"/v1/calibrations/{job.id}/report.html" if job.report_cards else None,
    )
