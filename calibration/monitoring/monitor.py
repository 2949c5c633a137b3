"""A cell's monitor: its watched guarantees, one alarm for the cell, the running estimates.

Rule. A cell (judge x prompt family x criterion x input kind, per calibration) watches k guarantees at served
levels (:class:`calibration.monitoring.eprocess.GuaranteeSpec`), fixed when its calibration is activated, with
fixed weights w_1..w_k summing to 1 (equal by default). Each finished document updates every guarantee's e-process
E_j and its rate sequence (:mod:`calibration.monitoring.rate_sequence`). The cell's e-process is the weighted mean
E = sum_j w_j E_j, and the cell alarms at the first document where E >= 1/delta.

Validity. Under the cell's null (every watched guarantee holds on the stream's document population) each E_j is a
nonnegative supermartingale on the same documents, so is their weighted mean, and the cell's false-alarm
probability over the whole stream is <= delta (Ville). Coverage and accept-error evidence are combined only this
way: multiplying the two e-processes would not be valid (they bet on the same documents). At an alarm the cell
names the guarantee with the largest E_j: since the mean is >= 1/delta, that E_j >= 1/delta too, so that
guarantee's own null is rejected at level delta even when the other guarantee still holds. The alarm is kept
(the test has rejected); clearing it is a decision outside this module (a new calibration starts a new monitor).
The rate sequences are each at 1 - delta, simultaneously over time.

State: k e-processes and k rate sequences (O(k * grid_size) floats), updated in O(k * grid_size) per document;
every value a msgspec Struct, so a store can persist it as JSON.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from calibration.monitoring.eprocess import EProcess, GuaranteeSpec, e_value, start_eprocess, update_eprocess
from calibration.monitoring.rate_sequence import RateEstimate, RateSequence, rate_estimate, update_rate
from calibration.monitoring.tally import DocumentTally

__all__ = [
    "Alarm",
    "CellMonitor",
    "CellReport",
    "CellSpec",
    "GuaranteeReport",
    "GuaranteeState",
    "cell_e_value",
    "cell_report",
    "observe_document",
    "start_cell",
]


class CellSpec(msgspec.Struct, frozen=True, kw_only=True):
    """What a cell watches: its guarantees, their weights (None: equal) and the false-alarm level delta."""

    guarantees: list[GuaranteeSpec]
    weights: list[float] | None = None
    delta: float = 0.05

    def __post_init__(self) -> None:
        if not self.guarantees:
            raise ValueError("a cell watches at least one guarantee")
        if not 0.0 < self.delta < 1.0:
            raise ValueError(f"delta {self.delta} must lie in (0, 1)")
        if self.weights is not None and (
            len(self.weights) != len(self.guarantees)
            or any(w <= 0 for w in self.weights)
            or abs(sum(self.weights) - 1.0) > 1e-9
        ):
            raise ValueError("weights: one positive weight per guarantee, summing to 1")

    def weight(self, index: int) -> float:
        """The weight of guarantee ``index`` in the cell's e-process."""
        return 1.0 / len(self.guarantees) if self.weights is None else self.weights[index]


class GuaranteeState(msgspec.Struct, frozen=True, kw_only=True):
    """One guarantee's test and rate sequence."""

    test: EProcess
    rate: RateSequence


class Alarm(msgspec.Struct, frozen=True, kw_only=True):
    """The first document at which the cell's e-process reached 1/delta, and the guarantee it names."""

    guarantee: str
    level: float
    tolerance: int | None
    label: int  # labels seen when the alarm rose (the alarm document's included)
    document: int  # documents seen when the alarm rose
    e_value: float  # the cell's e-process at the alarm
    guarantee_e_value: float  # the named guarantee's own e-process (>= 1/delta)


class CellMonitor(msgspec.Struct, frozen=True, kw_only=True):
    """A cell's state: every guarantee's state, the documents and labels seen, the alarm once raised."""

    guarantees: list[GuaranteeState]
    documents: int = 0
    labels: int = 0
    alarm: Alarm | None = None


class GuaranteeReport(msgspec.Struct, frozen=True, kw_only=True):
    """One guarantee as reported: its level, e-value and failure rate with its confidence sequence."""

    guarantee: str
    level: float
    tolerance: int | None
    e_value: float
    estimate: RateEstimate


class CellReport(msgspec.Struct, frozen=True, kw_only=True):
    """A cell as reported: ok or alarm, labels and documents, the cell's e-value and each guarantee."""

    status: str  # "ok" | "alarm"
    labels: int
    documents: int
    e_value: float
    threshold: float  # 1 / delta
    guarantees: list[GuaranteeReport]
    alarm: Alarm | None


def start_cell(spec: CellSpec) -> CellMonitor:
    """A fresh monitor: every e-process at 1, no document."""
    return CellMonitor(
        guarantees=[GuaranteeState(test=start_eprocess(g), rate=RateSequence()) for g in spec.guarantees]
    )


def cell_e_value(spec: CellSpec, state: CellMonitor) -> float:
    """The cell's e-process: the weighted mean of its guarantees' e-values."""
    return sum(
        spec.weight(j) * e_value(g, s.test)
        for j, (g, s) in enumerate(zip(spec.guarantees, state.guarantees, strict=True))
    )


def observe_document(
    spec: CellSpec, state: CellMonitor, tallies: Sequence[DocumentTally], *, labels: int | None = None
) -> CellMonitor:
    """The monitor after one finished document: one tally per guarantee, in ``spec`` order (an empty tally for a
    guarantee none of its items was served at); ``labels``: the document's labelled items (default: the largest
    tally's). ValueError for a tally count that does not match or a tally outside a guarantee's max_items."""
    if len(tallies) != len(spec.guarantees):
        raise ValueError(f"{len(tallies)} tallies for {len(spec.guarantees)} guarantees")
    guarantees = [
        GuaranteeState(
            test=update_eprocess(g, s.test, t), rate=update_rate(s.rate, t, max_items=g.max_items, delta=spec.delta)
        )
        for g, s, t in zip(spec.guarantees, state.guarantees, tallies, strict=True)
    ]
    seen = state.labels + (max(t.labels for t in tallies) if labels is None else labels)
    updated = CellMonitor(guarantees=guarantees, documents=state.documents + 1, labels=seen, alarm=state.alarm)
    if state.alarm is not None:
        return updated
    total = cell_e_value(spec, updated)
    if total < 1.0 / spec.delta:
        return updated
    values = [e_value(g, s.test) for g, s in zip(spec.guarantees, guarantees, strict=True)]
    named = max(range(len(values)), key=values.__getitem__)
    watched = spec.guarantees[named]
    alarm = Alarm(
        guarantee=watched.guarantee,
        level=watched.level,
        tolerance=watched.tolerance,
        label=seen,
        document=updated.documents,
        e_value=total,
        guarantee_e_value=values[named],
    )
    return CellMonitor(guarantees=guarantees, documents=updated.documents, labels=seen, alarm=alarm)


def cell_report(spec: CellSpec, state: CellMonitor) -> CellReport:
    """The cell's status, counts, e-values and running estimates (each rate sequence at 1 - delta)."""
    return CellReport(
        status="ok" if state.alarm is None else "alarm",
        labels=state.labels,
        documents=state.documents,
        e_value=cell_e_value(spec, state),
        threshold=1.0 / spec.delta,
        guarantees=[
            GuaranteeReport(
                guarantee=g.guarantee,
                level=g.level,
                tolerance=g.tolerance,
                e_value=e_value(g, s.test),
                estimate=rate_estimate(s.rate, delta=spec.delta),
            )
            for g, s in zip(spec.guarantees, state.guarantees, strict=True)
        ],
        alarm=state.alarm,
    )
