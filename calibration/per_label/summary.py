"""What a per-label rule does on its own calibration file, held out: the figures every view shows (the calibration
job's answer, ``offline calibrate --labels``'s report, ``GET /v1/calibration``), computed once at fit time.

Rules, stated once: the file's documents, sorted, are dealt into ``SUMMARY_FOLDS`` folds by their rank (rank mod the
fold count; nothing random); each fold is answered by a rule fitted on the other folds
(:func:`calibration.per_label.fit.fit_label_rule`), through :func:`calibration.per_label.rule.answer_per_label` at
the service's defaults (alpha = accept_alpha = ``SUMMARY_ALPHA``, tolerance ``SUMMARY_TOLERANCE``). Figures: the mean
set size, the accept share, and per human label its items, coverage, accept share and wrongly accepted share
(|human - point| >= tolerance), all item-weighted over the whole file. A file of fewer documents than folds is
answered by the rule fitted on all of it (in sample), and ``held_out`` says so. Beside them, ``served_*``: the rule
fitted on the whole file answering the file's own verdicts, which is what ``/v1/score`` answers for them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from calibration.per_label.rule import LabelAsk, LabelRule, LabelSummary, RuleSummary, answer_per_label, pooled_groups
from calibration.per_label.skill import NO_SKILL_WORDS

__all__ = [
    "SUMMARY_ALPHA",
    "SUMMARY_FOLDS",
    "SUMMARY_TOLERANCE",
    "LabelSummary",
    "RuleSummary",
    "rule_words",
    "summarise",
]

SUMMARY_FOLDS = 5
SUMMARY_ALPHA = 0.10
SUMMARY_TOLERANCE = 2


def summarise(
    features: np.ndarray,
    labels: np.ndarray,
    documents: np.ndarray,
    *,
    n_labels: int,
    refit: Callable[[np.ndarray], LabelRule],
    full: LabelRule,
) -> RuleSummary:
    """Held-out figures of a rule on its file (module rules); ``refit(mask)`` fits on the items of ``mask``."""
    ask = LabelAsk(alpha=SUMMARY_ALPHA, tolerance=SUMMARY_TOLERANCE, accept_alpha=SUMMARY_ALPHA)
    distinct = np.unique(documents)
    held_out = distinct.size >= SUMMARY_FOLDS
    fold_of = dict(zip(distinct.tolist(), (np.arange(distinct.size) % SUMMARY_FOLDS).tolist(), strict=True))
    item_fold = np.array([fold_of[d] for d in documents.tolist()]) if held_out else np.zeros(labels.size, int)
    sizes = np.zeros(labels.size)
    accepted = np.zeros(labels.size, dtype=bool)
    covered = np.zeros(labels.size, dtype=bool)
    points = np.zeros(labels.size, dtype=np.int64)
    for fold in range(SUMMARY_FOLDS if held_out else 1):
        mine = item_fold == fold
        rule = refit(~mine) if held_out else full
        for index in np.flatnonzero(mine):
            answer = answer_per_label(rule, float(features[index]), ask)
            sizes[index] = len(answer.prediction_set)
            accepted[index] = answer.accepted
            covered[index] = int(labels[index]) in answer.prediction_set
            points[index] = answer.point
    wrong = accepted & (np.abs(points - labels) >= SUMMARY_TOLERANCE)
    served = [answer_per_label(full, float(value), ask) for value in features]
    rows = []
    for label in range(1, n_labels + 1):
        mine = labels == label
        n = int(mine.sum())
        rows.append(
            LabelSummary(
                label=label,
                n_items=n,
                coverage=float(covered[mine].mean()) if n else None,
                accept_share=float(accepted[mine].mean()) if n else None,
                wrongly_accepted=float(wrong[mine].mean()) if n else None,
            )
        )
    return RuleSummary(
        held_out=held_out,
        folds=SUMMARY_FOLDS if held_out else 1,
        alpha=SUMMARY_ALPHA,
        tolerance=SUMMARY_TOLERANCE,
        set_size=float(sizes.mean()) if sizes.size else 0.0,
        accept_share=float(accepted.mean()) if accepted.size else 0.0,
        labels=rows,
        served_set_size=float(np.mean([len(a.prediction_set) for a in served])) if served else 0.0,
        served_accept_share=float(np.mean([a.accepted for a in served])) if served else 0.0,
    )


def rule_words(rule: LabelRule) -> str:
    """The rule in one sentence: whether the judge beats the label distribution, and what it accepts held out."""
    pooled = pooled_groups(rule)
    tail = (
        "; labels " + ", ".join(f"{g[0]}-{g[-1]}" for g in pooled) + " pooled for want of calibration items"
        if pooled
        else ""
    )
    if not rule.skill.skilled:
        return (
            f"{NO_SKILL_WORDS}: held-out log loss {rule.skill.judge_error:.3f} against the label distribution's "
            f"{rule.skill.baseline_error:.3f} (p = {rule.skill.p_value:.3g} over {rule.skill.n_documents} documents), "
            f"so nothing is accepted or passed{tail}"
        )
    figures = rule.summary
    if figures is None:
        return f"the judge beats the label distribution (p = {rule.skill.p_value:.3g}){tail}"
    where = f"{'held out on ' + str(figures.folds) + ' folds by document' if figures.held_out else 'in sample'}"
    return (
        f"the judge beats the label distribution (p = {rule.skill.p_value:.3g}); {where}, at alpha = accept_alpha = "
        f"{figures.alpha:g} and tolerance {figures.tolerance}: {figures.accept_share:.0%} accepted, sets of "
        f"{figures.set_size:.2f} labels{tail}"
    )
