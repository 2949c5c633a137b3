"""Watching the judge's skill: a cell calibrated with label-conditional sets on one recorded judge, then fed another
recorded judge's verdicts (or its own, on other documents) with the true human labels.

Rules. The calibrated judge's documents are split at random (``numpy.random.default_rng(seed)``): ``calibration``
documents fit the label-conditional conformal sets (method ``label_conditional``, PAC per label at ``pac_delta``,
documents as the unit: for every human label y, P(y in set | label y) >= 1 - alpha); the other documents are the
stream population, judged by the calibrated judge itself (the own stream) or by another judge under its name (a
silent swap). Each label is read as the service reads it: it fails coverage when the human label is outside the
served set. The monitor is the service's for a label-conditional cell (``service.monitoring.cells``): coverage of
every item (weight 1/2) and coverage of each human label y = 1..K (weight 1/(2K)), a Shiryaev-Roberts e-detector
each (:mod:`calibration.monitoring`), at ``delta`` (the tenant's half of MONITOR_DELTA) over ``horizon_documents``.
Streams are passes of random orders of the stream's documents (:func:`offline.studies.monitoring.streams.
stream_orders`) up to ``horizon_labels``; a stream's delay is the labels seen when the alarm rises.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibration.conformal.fit import fit_conformal
from calibration.conformal.sets import predict_sets
from calibration.monitoring import CellSpec, GuaranteeSpec, cell_alarm_index, excess_path
from offline.studies.conformal.cell_data import JudgeCriterionData
from offline.studies.monitoring.scenarios import swapped
from offline.studies.monitoring.streams import stream_orders

__all__ = ["SkillRow", "SkillSettings", "skill_markdown", "skill_row", "skill_table"]


@dataclass(frozen=True)
class SkillSettings:
    """The study's fixed choices (module rules)."""

    alpha: float = 0.10
    pac_delta: float | None = None
    calibration: int = 50  # documents
    delta: float = 0.025
    horizon_documents: int = 1000
    horizon_labels: int = 1600
    streams: int = 200
    seed: int = 0


@dataclass(frozen=True)
class SkillRow:
    """One (calibrated judge, verdicts of) pair on one criterion: alarm share and labels to alarm over orders."""

    criterion: str
    calibrated: str
    verdicts_of: str
    coverage: float  # of every label, on the stream population
    worst_label: int  # the label with the lowest coverage
    worst_label_coverage: float
    alarm_rate: float  # share of streams alarmed within horizon_labels
    median_labels: float  # over all streams, the ceil(n/2)-th smallest (inf when half or more never alarm)
    p90_labels: float  # the ceil(0.9 n)-th smallest


def _split(data: JudgeCriterionData, settings: SkillSettings) -> tuple[np.ndarray, np.ndarray]:
    groups = np.asarray(data.groups if data.groups is not None else data.item_ids)
    documents = np.unique(groups)
    rng = np.random.default_rng(settings.seed)
    chosen = rng.choice(documents, size=min(settings.calibration, documents.size - 1), replace=False)
    calibration = np.isin(groups, chosen)
    return calibration, ~calibration


def skill_row(
    calibrated: JudgeCriterionData, other: JudgeCriterionData | None, settings: SkillSettings | None = None
) -> SkillRow:
    """Calibrate on ``calibrated``, stream ``other``'s verdicts (None: its own) on the other documents (module
    rules)."""
    settings = settings if settings is not None else SkillSettings()
    k = calibrated.n_labels
    cal, held = _split(calibrated, settings)
    fitted = fit_conformal(
        "label_conditional",
        settings.alpha,
        calibrated.labels[cal],
        judge_scores=calibrated.judge_scores[cal],
        n_labels=k,
        rng=np.random.default_rng(settings.seed),
        delta=settings.pac_delta,
        groups=np.asarray(calibrated.groups)[cal] if calibrated.groups is not None else None,
    )
    held_ids = {calibrated.item_ids[i] for i in np.flatnonzero(held)}
    stream = swapped(calibrated, other) if other is not None else calibrated
    keep = np.asarray([item in held_ids for item in stream.item_ids])
    labels = stream.labels[keep].astype(int)
    scores = stream.judge_scores[keep]
    groups = np.asarray(stream.groups if stream.groups is not None else stream.item_ids)[keep]
    sets = predict_sets(fitted, judge_scores=scores)
    covered = sets[np.arange(labels.size), labels - 1]
    documents, index = np.unique(groups, return_inverse=True)
    sizes = np.bincount(index, minlength=documents.size)
    miss_excess = np.where(covered, 0.0, 1.0 / settings.alpha) - 1.0
    excess = [np.bincount(index, weights=miss_excess, minlength=documents.size)]
    excess += [
        np.bincount(index, weights=miss_excess * (labels == y), minlength=documents.size) for y in range(1, k + 1)
    ]
    max_items = int(sizes.max())
    guarantees = [GuaranteeSpec(guarantee="coverage", level=settings.alpha, max_items=max_items)] + [
        GuaranteeSpec(guarantee="coverage", level=settings.alpha, human_label=y, max_items=max_items)
        for y in range(1, k + 1)
    ]
    spec = CellSpec(
        guarantees=guarantees,
        weights=[0.5] + [0.5 / k] * k,
        delta=settings.delta,
        horizon=settings.horizon_documents,
    )
    orders = stream_orders(sizes, streams=settings.streams, horizon=settings.horizon_labels, seed=settings.seed)
    path = sum(
        spec.weight(j) * excess_path(g, e[orders]) for j, (g, e) in enumerate(zip(guarantees, excess, strict=True))
    )
    first = cell_alarm_index(spec, np.asarray(path))
    seen = np.cumsum(sizes[orders], axis=1)
    at = np.where(first >= 0, seen[np.arange(orders.shape[0]), np.maximum(first, 0)], np.inf).astype(float)
    delays = np.where(at <= settings.horizon_labels, at, np.inf)
    per_label = [(y, float(covered[labels == y].mean())) for y in range(1, k + 1) if np.any(labels == y)]
    worst = min(per_label, key=lambda pair: pair[1])
    return SkillRow(
        criterion=calibrated.criterion,
        calibrated=calibrated.judge,
        verdicts_of=calibrated.judge if other is None else other.judge,
        coverage=float(covered.mean()),
        worst_label=worst[0],
        worst_label_coverage=worst[1],
        alarm_rate=float(np.mean(np.isfinite(delays))),
        median_labels=_quantile(delays, 0.5),
        p90_labels=_quantile(delays, 0.9),
    )


def _quantile(values: np.ndarray, q: float) -> float:
    """The ceil(q n)-th smallest value (an order statistic, so +inf delays need no interpolation)."""
    ordered = np.sort(values)
    return float(ordered[max(0, int(np.ceil(q * ordered.size)) - 1)])


def skill_table(datasets: list[JudgeCriterionData], settings: SkillSettings | None = None) -> list[SkillRow]:
    """Every ordered pair of recorded judges on each criterion (own streams first), as rows (module rules)."""
    by_cell = {(d.judge, d.criterion): d for d in datasets}
    rows = []
    for criterion in sorted({c for _, c in by_cell}):
        judges = sorted(j for j, c in by_cell if c == criterion)
        for calibrated in judges:
            rows.append(skill_row(by_cell[(calibrated, criterion)], None, settings))
            rows += [
                skill_row(by_cell[(calibrated, criterion)], by_cell[(other, criterion)], settings)
                for other in judges
                if other != calibrated
            ]
    return rows


def skill_markdown(rows: list[SkillRow]) -> str:
    """The rows as a Markdown table."""

    def labels(value: float) -> str:
        return f"{value:,.0f}" if np.isfinite(value) else "> horizon"

    lines = [
        "| criterion | calibrated on | verdicts of | coverage | worst label (its coverage) | alarmed | median labels "
        "| p90 labels |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        own = " (own)" if r.verdicts_of == r.calibrated else ""
        lines.append(
            f"| {r.criterion} | {r.calibrated} | {r.verdicts_of}{own} | {r.coverage:.3f} | {r.worst_label} "
            f"({r.worst_label_coverage:.2f}) | {r.alarm_rate:.0%} | {labels(r.median_labels)} "
            f"| {labels(r.p90_labels)} |"
        )
    return "\n".join(lines) + "\n"
