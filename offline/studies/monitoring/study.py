"""The monitoring study: every scenario's population served by a calibration, streamed in seeded document orders
through the cell's monitor; the harm, the alarm rate and the labels until the alarm.

Per row (scenario x cell): the true rates of the streamed population under the served levels (coverage of the
served sets, accept share, error among accepted: the harm, pooled over the population's items, which is exactly
what a stream's documents estimate), ``harmful`` when error among accepted > the served accept_alpha or coverage <
1 - the served alpha, and over ``streams`` streams (:mod:`offline.studies.monitoring.streams`): the share alarmed
within ``horizon`` labels, the median and 90th-percentile labels to the alarm, the guarantee named, and the plain
test's delays beside them. Scenarios (:mod:`offline.studies.monitoring.scenarios`): ``none``, ``harsher`` and
``lenient`` for every recorded cell; ``swap`` for the judge pairs of ``SWAPS``; ``abstractive`` and ``new_input``
for the cells of ``NEW_INPUT_JUDGES`` against a calibration fitted on the abstractive systems. A cell's monitor is
sized by the largest document of its calibration population (``max_items``) and watches the served guarantees
(:func:`offline.studies.monitoring.served.watched_guarantees`) at false-alarm level ``delta``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import msgspec
import numpy as np

from artifact.thresholds import ThresholdsArtifact
from calibration.monitoring import CellSpec
from offline.build.cell_data import JudgeCriterionData
from offline.studies.monitoring.abstractive import abstractive_artifact
from offline.studies.monitoring.example import ExampleStream, example_stream
from offline.studies.monitoring.scenarios import by_systems, shifted, swapped
from offline.studies.monitoring.served import ServedLevels, serve_outcomes, watched_guarantees
from offline.studies.monitoring.streams import (
    document_counts,
    information_labels,
    plain_delays,
    run_streams,
    stream_orders,
)

__all__ = ["HEADLINE", "NEW_INPUT_JUDGES", "SWAPS", "MonitoringStudy", "ScenarioRow", "StudySettings", "run_study"]

SWAPS: tuple[tuple[str, str], ...] = (
    ("gpt-4o-mini-2024-07-18", "qwen2.5-72b-instruct"),
    ("qwen2.5-72b-instruct", "gpt-4o-mini-2024-07-18"),
    ("gpt-3.5-turbo-0301", "llama-2-7b-chat"),
    ("llama-2-70b-chat", "llama-2-13b-chat"),
)
NEW_INPUT_JUDGES: tuple[str, ...] = ("gpt-4o-mini-2024-07-18", "qwen2.5-72b-instruct")
HEADLINE = ("gpt-4o-mini-2024-07-18", "relevance")  # the cell whose example streams are drawn


class StudySettings(msgspec.Struct, frozen=True, kw_only=True):
    """The study's knobs, recorded in its report."""

    streams: int = 200
    seed: int = 0
    horizon: int = 1600
    delta: float = 0.05
    levels: ServedLevels = ServedLevels()
    fit_splits: int = 10  # held-out splits of the abstractive calibration's fit


class ScenarioRow(msgspec.Struct, frozen=True, kw_only=True):
    """One scenario on one cell: the harm, and what the monitor made of it."""

    kind: str
    judge: str
    prompt_family: str
    criterion: str
    verdicts_of: str  # the judge whose verdicts were streamed
    calibration: str  # "shipped" | "abstractive"
    items: int
    documents: int
    max_items: int
    served_alpha: float
    served_accept_alpha: float | None
    coverage: float
    accept_share: float
    error_among_accepted: float | None
    harmful: bool
    harms: list[str]  # "coverage" and/or "accept_error"
    streams: int
    alarm_rate: float
    median_labels: float | None  # None: fewer than half the streams alarmed within the horizon
    p90_labels: float | None
    named: dict[str, int]
    information_labels: float | None  # the least expected labels of any document-level test (streams module)
    plain_alarm_rate: float | None  # the plain test on accept error (None: no accept guarantee served)
    plain_median_labels: float | None
    plain_p90_labels: float | None


class MonitoringStudy(msgspec.Struct, frozen=True, kw_only=True):
    """Every row, the example streams of the headline cell, and the settings."""

    settings: StudySettings
    rows: list[ScenarioRow]
    examples: list[ExampleStream]


def _quantile(delays: np.ndarray, q: float) -> float | None:
    value = float(np.quantile(delays, q, method="higher")) if delays.size else float("inf")
    return value if np.isfinite(value) else None


def _row(
    kind: str,
    cell: tuple[str, str, str],
    verdicts_of: str,
    calibration: str,
    artifact: ThresholdsArtifact,
    data: JudgeCriterionData,
    max_items: int,
    settings: StudySettings,
) -> tuple[ScenarioRow, CellSpec, np.ndarray]:
    outcomes = serve_outcomes(artifact, cell, data, settings.levels)
    counts = document_counts(outcomes)
    spec = CellSpec(guarantees=watched_guarantees(outcomes, max_items), delta=settings.delta)
    orders = stream_orders(counts.labels, streams=settings.streams, horizon=settings.horizon, seed=settings.seed)
    run = run_streams(spec, counts, orders, settings.horizon)
    taken = int(outcomes.accepted.sum())
    error = float(outcomes.errors.sum() / taken) if taken else None
    coverage = float(outcomes.covered.mean())
    harms = []
    if coverage < 1.0 - outcomes.served_alpha - 1e-12:
        harms.append("coverage")
    if outcomes.served_accept_alpha is not None and error is not None and error > outcomes.served_accept_alpha:
        harms.append("accept_error")
    plain = None
    if outcomes.served_accept_alpha is not None:
        plain = plain_delays(
            counts,
            orders,
            level=outcomes.served_accept_alpha,
            max_items=max_items,
            delta=settings.delta,
            horizon=settings.horizon,
        )
    named = {g: int(np.sum(run.named == g)) for g in ("coverage", "accept_error")}
    bounds = [
        information_labels(
            counts.misses if g.guarantee == "coverage" else counts.errors,
            counts.labels if g.guarantee == "coverage" else counts.accepted,
            counts.labels,
            level=g.level,
            max_items=max_items,
            delta=1.0 / spec.threshold,
        )
        for g in spec.guarantees
    ]
    finite = [b for b in bounds if b is not None]
    row = ScenarioRow(
        kind=kind,
        judge=cell[0],
        prompt_family=cell[1],
        criterion=cell[2],
        verdicts_of=verdicts_of,
        calibration=calibration,
        items=int(outcomes.covered.size),
        documents=int(counts.documents.size),
        max_items=max_items,
        served_alpha=outcomes.served_alpha,
        served_accept_alpha=outcomes.served_accept_alpha,
        coverage=coverage,
        accept_share=float(outcomes.accepted.mean()),
        error_among_accepted=error,
        harmful=bool(harms),
        harms=harms,
        streams=settings.streams,
        alarm_rate=float(np.isfinite(run.delays).mean()),
        median_labels=_quantile(run.delays, 0.5),
        p90_labels=_quantile(run.delays, 0.9),
        named=named,
        information_labels=min(finite) if finite else None,
        plain_alarm_rate=None if plain is None else float(np.isfinite(plain).mean()),
        plain_median_labels=None if plain is None else _quantile(plain, 0.5),
        plain_p90_labels=None if plain is None else _quantile(plain, 0.9),
    )
    return row, spec, orders[0]


def _largest_document(data: JudgeCriterionData) -> int:
    groups = data.groups if data.groups is not None else data.item_ids
    _, sizes = np.unique(np.asarray(groups), return_counts=True)
    return int(sizes.max())


def run_study(
    datasets: Sequence[JudgeCriterionData],
    artifact: ThresholdsArtifact,
    settings: StudySettings | None = None,
    *,
    progress: Callable[[Iterable], Iterable] | None = None,
) -> MonitoringStudy:
    """Every scenario of the module on ``datasets`` (the recorded SummEval cells), ``artifact`` the shipped one."""
    settings = settings if settings is not None else StudySettings()
    by_cell = {(d.judge, d.criterion): d for d in datasets}
    served = {(e.judge, e.criterion) for e in artifact.entries}
    tasks: list[tuple[str, str, str, JudgeCriterionData | None]] = []
    for judge, criterion in sorted(by_cell):
        if (judge, criterion) not in served:
            continue
        tasks += [("none", judge, criterion, None), ("harsher", judge, criterion, None)]
        tasks += [("lenient", judge, criterion, None)]
    for swapped_judge, source_judge in SWAPS:
        tasks += [
            ("swap", swapped_judge, c, by_cell[(source_judge, c)])
            for (j, c) in sorted(by_cell)
            if j == swapped_judge and (source_judge, c) in by_cell
        ]
    rows, examples = [], []
    for kind, judge, criterion, other in progress(tasks) if progress is not None else tasks:
        data = by_cell[(judge, criterion)]
        cell = (data.judge, data.prompt_family, data.criterion)
        stream = swapped(data, other) if other is not None else shifted(data, {"none": 0, "harsher": -1}.get(kind, 1))
        source = other.judge if other is not None else judge
        row, spec, order = _row(kind, cell, source, "shipped", artifact, stream, _largest_document(data), settings)
        rows.append(row)
        if (judge, criterion) == HEADLINE:
            examples.append(
                example_stream(
                    spec,
                    artifact,
                    cell,
                    stream,
                    order,
                    settings.levels,
                    settings.horizon,
                    kind=kind,
                    verdicts_of=source,
                )
            )
    rows_new, examples_new = _new_input(by_cell, settings)
    return MonitoringStudy(settings=settings, rows=rows + rows_new, examples=examples + examples_new)


def _new_input(
    by_cell: dict[tuple[str, str], JudgeCriterionData], settings: StudySettings
) -> tuple[list[ScenarioRow], list[ExampleStream]]:
    cells = [d for (judge, _), d in sorted(by_cell.items()) if judge in NEW_INPUT_JUDGES]
    if not cells:
        return [], []
    artifact = abstractive_artifact(cells, n_splits=settings.fit_splits, seed=settings.seed)
    rows, examples = [], []
    for data in cells:
        cell = (data.judge, data.prompt_family, data.criterion)
        own = by_systems(data, extractive=False)
        for kind, stream in (("abstractive", own), ("new_input", by_systems(data, extractive=True))):
            row, spec, order = _row(
                kind, cell, data.judge, "abstractive", artifact, stream, _largest_document(own), settings
            )
            rows.append(row)
            if (data.judge, data.criterion) == HEADLINE:
                examples.append(
                    example_stream(
                        spec,
                        artifact,
                        cell,
                        stream,
                        order,
                        settings.levels,
                        settings.horizon,
                        kind=kind,
                        verdicts_of=data.judge,
                    )
                )
    return rows, examples
