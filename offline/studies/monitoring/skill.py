"""Watching the judge's skill, as served: a cell's per-label rule fitted on one recorded judge, then fed another
recorded judge's verdicts (or its own, on other documents) with the true human labels.

Rules. The calibrated judge's documents are split at random (``numpy.random.default_rng(seed)``): ``calibration``
documents fit the cell's per-label rule for the ``score`` input kind exactly as the artifact's export does
(:func:`calibration.per_label.fit.fit_label_rule` on the kind's features from
:func:`calibration.decisions.cell_rules.decision_input_kinds`; the held-out summary, which no answer reads, is not
computed); the other documents are the stream population, judged by the calibrated judge itself (the own stream)
or by another judge under its name (a silent swap). Every verdict is answered by
:func:`calibration.per_label.rule.answer_per_label` (set, point, decision) at the service's defaults (alpha 0.10,
tolerance 2, accept_alpha 0.10); accept error is served, and watched, when the rule passed the skill test. The
monitor is the one a served ``per_label`` answer starts (:func:`calibration.monitoring.watched_cell_spec`, the
function ``service.monitoring.cells.watched_spec`` calls), at ``delta`` (the tenant's half of MONITOR_DELTA) over
``horizon_documents`` (MONITOR_HORIZON) with ``max_items`` (MONITOR_MAX_ITEMS); each label's outcome per watched
guarantee is :func:`calibration.monitoring.watched_outcome` (the per-label guarantees watched per document: each
document's share of its label-y items). Streams are passes of random orders of the stream's documents
(:func:`offline.studies.monitoring.streams.stream_orders`) up to ``horizon_labels``; a stream's delay is the labels
seen when the alarm rises.

Pairs (:func:`skill_table`): on each criterion the weakest judge is the one with the lowest Kendall tau-b between
its scores and the human labels over all its items (ties: the first by name); every other judge whose calibrated
rule passes the skill test is fed the weakest one's verdicts; every judge is fed its own stream.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibration.decisions.cell_rules import decision_input_kinds
from calibration.monitoring import CellSpec, cell_alarm_index, excess_path, watched_cell_spec, watched_outcome
from calibration.per_label.fit import fit_label_rule
from calibration.per_label.rule import LabelAnswer, LabelAsk, LabelRule, answer_per_label
from calibration.stats import kendall_tau_b_statistic
from offline.build.cell_data import JudgeCriterionData
from offline.studies.monitoring.scenarios import swapped
from offline.studies.monitoring.streams import stream_orders

__all__ = [
    "SkillRow",
    "SkillSettings",
    "calibration_items",
    "served_rule",
    "skill_markdown",
    "skill_row",
    "skill_spec",
    "skill_table",
    "weakest_judge",
]


@dataclass(frozen=True)
class SkillSettings:
    """The study's fixed choices (module rules)."""

    alpha: float = 0.10
    tolerance: int = 2
    accept_alpha: float = 0.10
    calibration: int = 50  # documents
    delta: float = 0.025
    horizon_documents: int = 1000
    max_items: int = 16
    horizon_labels: int = 1600
    streams: int = 200
    seed: int = 0


@dataclass(frozen=True)
class SkillRow:
    """One (calibrated judge, verdicts of) pair on one criterion: alarm share and labels to alarm over orders."""

    criterion: str
    calibrated: str
    verdicts_of: str
    skilled: bool  # the calibrated rule passed the skill test (accept error served and watched)
    coverage: float  # of every label, on the stream population
    worst_label: int  # the label with the lowest coverage
    worst_label_coverage: float
    accept_share: float
    accepted_wrong: float  # share of all items accepted with a point tolerance or more away
    alarm_rate: float  # share of streams alarmed within horizon_labels
    median_labels: float  # over all streams, the ceil(n/2)-th smallest (inf when half or more never alarm)
    p90_labels: float  # the ceil(0.9 n)-th smallest


def calibration_items(data: JudgeCriterionData, settings: SkillSettings) -> np.ndarray:
    """Which items are the calibration documents' (module rules: ``settings.calibration`` documents at random)."""
    groups = _documents(data)
    documents = np.unique(groups)
    rng = np.random.default_rng(settings.seed)
    chosen = rng.choice(documents, size=min(settings.calibration, documents.size - 1), replace=False)
    return np.isin(groups, chosen)


def _documents(data: JudgeCriterionData) -> np.ndarray:
    return np.asarray(data.documents)


def served_rule(data: JudgeCriterionData, calibration: np.ndarray) -> LabelRule:
    """The per-label rule of the ``score`` kind fitted on the ``calibration`` items, as the export fits it."""
    kind = next(
        k
        for k in decision_input_kinds(
            data.labels[calibration], data.judge_scores[calibration], None, None, _documents(data)[calibration],
            data.n_labels,
        )
        if k.kind == "score"
    )  # fmt: skip
    return fit_label_rule(
        kind.data.features, kind.data.labels, kind.data.groups, n_labels=data.n_labels, judge=data.judge,
        prompt_family=data.prompt_family, criterion=data.criterion, input_kind=kind.kind, feature=kind.feature,
        summarised=False,
    )  # fmt: skip


def skill_spec(rule: LabelRule, answer: LabelAnswer, settings: SkillSettings) -> CellSpec:
    """The spec a served per-label answer of ``rule`` starts (``service.monitoring.cells.watched_spec``'s rule)."""
    assert answer.alpha is not None
    return watched_cell_spec(
        alpha=answer.alpha,
        accept_alpha=answer.accept_alpha if answer.skilled else None,
        tolerance=settings.tolerance,
        per_label=True,
        n_labels=rule.n_labels,
        max_items=settings.max_items,
        delta=settings.delta,
        horizon=settings.horizon_documents,
    )


def skill_row(
    calibrated: JudgeCriterionData, other: JudgeCriterionData | None, settings: SkillSettings | None = None
) -> SkillRow:
    """Calibrate on ``calibrated``, stream ``other``'s verdicts (None: its own) on the other documents (module
    rules)."""
    settings = settings if settings is not None else SkillSettings()
    cal = calibration_items(calibrated, settings)
    rule = served_rule(calibrated, cal)
    held_ids = {calibrated.item_ids[i] for i in np.flatnonzero(~cal)}
    stream = swapped(calibrated, other) if other is not None else calibrated
    keep = np.asarray([item in held_ids for item in stream.item_ids])
    labels = stream.labels[keep].astype(int)
    ask = LabelAsk(alpha=settings.alpha, tolerance=settings.tolerance, accept_alpha=settings.accept_alpha)
    by_score = {int(s): answer_per_label(rule, float(s), ask) for s in np.unique(stream.judge_scores[keep])}
    answers = [by_score[int(s)] for s in stream.judge_scores[keep]]
    covered = np.asarray([y in a.prediction_set for y, a in zip(labels, answers, strict=True)])
    accepted = np.asarray([a.accepted for a in answers])
    wrong = accepted & (np.abs(labels - np.asarray([a.point for a in answers])) >= settings.tolerance)
    spec = skill_spec(rule, answers[0], settings)
    accept_served = answers[0].skilled and answers[0].accept_alpha is not None
    documents, index = np.unique(_documents(stream)[keep], return_inverse=True)
    sizes = np.bincount(index, minlength=documents.size)
    path = np.zeros(0)
    orders = stream_orders(sizes, streams=settings.streams, horizon=settings.horizon_labels, seed=settings.seed)
    for j, watched in enumerate(spec.guarantees):
        counted, failed = watched_outcome(
            watched, label=labels, covered=covered, accepted=accepted, wrong=wrong, per_label=True,
            accept_served=accept_served,
        )  # fmt: skip
        excess = np.bincount(index, weights=failed / watched.level - counted, minlength=documents.size)
        tally = np.bincount(index, weights=counted.astype(float), minlength=documents.size)
        term = spec.weight(j) * excess_path(watched, excess[orders], counted=tally[orders])
        path = term if path.size == 0 else path + term
    first = cell_alarm_index(spec, path)
    seen = np.cumsum(sizes[orders], axis=1)
    at = np.where(first >= 0, seen[np.arange(orders.shape[0]), np.maximum(first, 0)], np.inf).astype(float)
    delays = np.where(at <= settings.horizon_labels, at, np.inf)
    per_label = [(y, float(covered[labels == y].mean())) for y in range(1, rule.n_labels + 1) if np.any(labels == y)]
    worst = min(per_label, key=lambda pair: pair[1])
    return SkillRow(
        criterion=calibrated.criterion,
        calibrated=calibrated.judge,
        verdicts_of=calibrated.judge if other is None else other.judge,
        skilled=rule.skill.skilled,
        coverage=float(covered.mean()),
        worst_label=worst[0],
        worst_label_coverage=worst[1],
        accept_share=float(accepted.mean()),
        accepted_wrong=float(wrong.mean()),
        alarm_rate=float(np.mean(np.isfinite(delays))),
        median_labels=_quantile(delays, 0.5),
        p90_labels=_quantile(delays, 0.9),
    )


def _quantile(values: np.ndarray, q: float) -> float:
    """The ceil(q n)-th smallest value (an order statistic, so +inf delays need no interpolation)."""
    ordered = np.sort(values)
    return float(ordered[max(0, int(np.ceil(q * ordered.size)) - 1)])


def weakest_judge(datasets: list[JudgeCriterionData], criterion: str) -> str:
    """The judge with the lowest Kendall tau-b with the human labels on ``criterion`` (ties: first by name)."""
    taus = []
    for data in sorted((d for d in datasets if d.criterion == criterion), key=lambda d: d.judge):
        tau = kendall_tau_b_statistic(data.judge_scores, data.labels)
        taus.append((np.inf if tau is None else tau, data.judge))
    return min(taus, key=lambda pair: pair[0])[1]


def skill_table(datasets: list[JudgeCriterionData], settings: SkillSettings | None = None) -> list[SkillRow]:
    """Per criterion: every skilled judge fed the weakest judge's verdicts, then every judge's own stream (module
    rules)."""
    settings = settings if settings is not None else SkillSettings()
    by_cell = {(d.judge, d.criterion): d for d in datasets}
    swaps: list[SkillRow] = []
    own: list[SkillRow] = []
    for criterion in sorted({c for _, c in by_cell}):
        weakest = weakest_judge(datasets, criterion)
        for judge in sorted(j for j, c in by_cell if c == criterion):
            row = skill_row(by_cell[(judge, criterion)], None, settings)
            own.append(row)
            if judge != weakest and row.skilled:
                swaps.append(skill_row(by_cell[(judge, criterion)], by_cell[(weakest, criterion)], settings))
    return swaps + own


def skill_markdown(rows: list[SkillRow]) -> str:
    """The rows as a Markdown table."""

    def labels(value: float) -> str:
        return f"{value:,.0f}" if np.isfinite(value) else "> horizon"

    lines = [
        "| criterion | calibrated on | verdicts of | skill | coverage | worst label (its coverage) | accepted "
        "| accepted wrong | alarmed | median labels | p90 labels |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        own = " (own)" if r.verdicts_of == r.calibrated else ""
        lines.append(
            f"| {r.criterion} | {r.calibrated} | {r.verdicts_of}{own} | {'yes' if r.skilled else 'no'} "
            f"| {r.coverage:.3f} | {r.worst_label} ({r.worst_label_coverage:.2f}) | {r.accept_share:.2f} "
            f"| {r.accepted_wrong:.3f} | {r.alarm_rate:.0%} | {labels(r.median_labels)} | {labels(r.p90_labels)} |"
        )
    return "\n".join(lines) + "\n"
