"""One stream of a scenario fed to the monitor one document at a time, as a feedback store would feed it: what the
figures draw (the detectors and the running error with its confidence sequence over labels).

The stream is the scenario's first seeded order (:func:`offline.studies.monitoring.streams.stream_orders`), cut at
the horizon; every document is tallied item by item (:func:`calibration.monitoring.add_item`) and observed with
:func:`calibration.monitoring.observe_document`, the service's path, so the figure also checks that path against
the vectorised one the table uses.
"""

from __future__ import annotations

import msgspec
import numpy as np

from artifact.thresholds import ThresholdsArtifact
from calibration.monitoring import CellSpec, DocumentTally, add_item, cell_report, observe_document, start_cell
from offline.build.cell_data import JudgeCriterionData
from offline.studies.monitoring.served import ServedLevels, serve_outcomes

__all__ = ["ExampleStream", "example_stream"]


class ExampleStream(msgspec.Struct, frozen=True, kw_only=True):
    """Per finished document of one stream: labels so far, the cell's and each guarantee's e-value, and the
    running rate of the last guarantee (accept error when served, else miss rate) with its confidence sequence."""

    kind: str
    judge: str
    criterion: str
    verdicts_of: str
    guarantees: list[str]
    levels: list[float]
    threshold: float
    labels: list[int]
    cell_e_value: list[float]
    e_values: list[list[float]]  # per guarantee
    rate: list[float | None]
    rate_low: list[float]
    rate_high: list[float]
    true_rate: float | None
    alarm_label: int | None


def example_stream(
    spec: CellSpec,
    artifact: ThresholdsArtifact,
    cell: tuple[str, str, str],
    data: JudgeCriterionData,
    order: np.ndarray,
    levels: ServedLevels,
    horizon: int,
    *,
    kind: str,
    verdicts_of: str,
) -> ExampleStream:
    """Feed the ordered documents one by one (module rules); ``kind`` and ``verdicts_of`` name the scenario."""
    outcomes = serve_outcomes(artifact, cell, data, levels)
    documents, index = np.unique(outcomes.groups, return_inverse=True)
    members = [np.flatnonzero(index == d) for d in range(documents.size)]
    state = start_cell(spec)
    labels: list[int] = []
    cell_e: list[float] = []
    per: list[list[float]] = [[] for _ in spec.guarantees]
    rate: list[float | None] = []
    low: list[float] = []
    high: list[float] = []
    for document in order:
        tallies = [DocumentTally() for _ in spec.guarantees]
        for item in members[document]:
            for j, g in enumerate(spec.guarantees):
                if g.guarantee == "coverage":
                    tallies[j] = add_item(tallies[j], counted=True, failed=not outcomes.covered[item], level=g.level)
                else:
                    tallies[j] = add_item(
                        tallies[j],
                        counted=bool(outcomes.accepted[item]),
                        failed=bool(outcomes.errors[item]),
                        level=g.level,
                    )
        state = observe_document(spec, state, tallies)
        if state.labels > horizon:
            break
        report = cell_report(spec, state)
        labels.append(report.labels)
        cell_e.append(report.e_value)
        for j, watched in enumerate(report.guarantees):
            per[j].append(watched.e_value)
        last = report.guarantees[-1].estimate
        rate.append(last.rate)
        low.append(last.low)
        high.append(last.high)
    if spec.guarantees[-1].guarantee == "accept_error":
        taken = int(outcomes.accepted.sum())
        true = float(outcomes.errors.sum() / taken) if taken else None
    else:
        true = float(1.0 - outcomes.covered.mean())
    return ExampleStream(
        kind=kind,
        judge=cell[0],
        criterion=cell[2],
        verdicts_of=verdicts_of,
        guarantees=[g.guarantee for g in spec.guarantees],
        levels=[g.level for g in spec.guarantees],
        threshold=spec.threshold,
        labels=labels,
        cell_e_value=cell_e,
        e_values=per,
        rate=rate,
        rate_low=low,
        rate_high=high,
        true_rate=true,
        alarm_label=None if state.alarm is None or state.alarm.label > horizon else state.alarm.label,
    )
