"""Scoring step 3, set: the artifact's entry for the verdict (rule 6) and the conformal prediction set (rule 7).

A calibrated cell serves the verdict with the entry ``artifact.serving.choose_entry`` picks (input kind, level,
method); the set is the entry's compiled set rule (``ThresholdIndex.rule``, the same set as
``calibration.conformal.prediction_set``) on the kind's inputs, served as its interval hull.
An uncalibrated cell, or one with no entry for this verdict, gets the full scale and says why (never an
invented set).
"""

from __future__ import annotations

import msgspec

from artifact.serving import LevelRefused, MethodRefused, ServedEntry, Uncalibrated, choose_entry
from artifact.thresholds import ThresholdEntry
from calibration.input_kinds.verdicts import verdict_inputs
from calibration.per_label.rule import LabelRule
from service.artifacts.snapshot import CalibrationSnapshot
from service.scoring.policy import full_scale, interval_hull, set_note
from service.scoring.resolve import Plan
from service.scoring.verdict import Verdict

__all__ = ["ServedSet", "calibrated_entry", "served_set"]


class ServedSet(msgspec.Struct, frozen=True, kw_only=True):
    """The served labels with the entry, kind, method and level behind them (``entry`` None: uncalibrated, and
    ``note`` says why); ``note`` otherwise explains the set and the level served."""

    labels: tuple[int, ...]
    entry: ThresholdEntry | None
    kind: str | None
    method: str | None
    alpha: float
    note: str
    label_rule: LabelRule | None = None  # the per-label rule that served the set (entry None then)


def calibrated_entry(
    snapshot: CalibrationSnapshot, plan: Plan, requested: str | None, verdict: Verdict
) -> ServedEntry | Uncalibrated:
    """Rule 6 for a calibrated cell (artifact.serving: input kind, level, method), memoised on the snapshot."""
    key = ("entry", plan.cell, plan.alpha, requested, verdict.kinds, plan.mode)
    found = snapshot.memo.get(key)
    if found is not None:
        return found  # type: ignore[return-value]
    try:
        served = choose_entry(snapshot.index_for(plan.mode), plan.cell, verdict.kinds, plan.alpha, requested)
    except (LevelRefused, MethodRefused) as error:  # the cell has no threshold for this: never an invented set
        served = Uncalibrated(reason=str(error))
    if isinstance(served, Uncalibrated) and not snapshot.index_for(plan.mode).kinds(*plan.cell):
        served = Uncalibrated(
            reason=f"the cell has no {plan.mode}-mode calibration (the artifact predates guarantee "
            f"modes, or was fitted in one mode only): ask the other guarantee or recalibrate"
        )
    snapshot.remember(key, served)
    return served


def served_set(
    snapshot: CalibrationSnapshot, plan: Plan, requested: str | None, verdict: Verdict, n_labels: int
) -> ServedSet:
    """Rules 6-7: the verdict's prediction set from the cell's entry, or the full 1..n_labels when none serves it."""
    judge, family, criterion = plan.judge, plan.prompt_family, plan.cell[2]
    why_uncalibrated = f"no calibration for judge={judge!r}, prompt_family={family!r}, criterion={criterion!r}"
    if plan.calibrated_cell:
        served = calibrated_entry(snapshot, plan, requested, verdict)
        if isinstance(served, ServedEntry):
            score, probabilities = verdict_inputs(
                served.kind,
                n_labels,
                judge_score=verdict.judge_score,
                probabilities=verdict.probabilities,
                mean=verdict.mean,
            )
            conformal = snapshot.prediction_set(served.entry, score, probabilities)
            labels = interval_hull(conformal)
            return ServedSet(
                labels=labels,
                entry=served.entry,
                kind=served.kind,
                method=served.method,
                alpha=served.alpha,
                note=set_note(conformal, labels, served.alpha) + served.note,
            )
        why_uncalibrated = served.reason
    return ServedSet(
        labels=full_scale(n_labels), entry=None, kind=None, method=requested, alpha=plan.alpha, note=why_uncalibrated
    )
