"""A cell's monitor: its watched guarantees, one change detector for the cell, the alarm and its explanation.

Rule. A cell (judge x prompt family x criterion x input kind, per calibration and tenant) watches k guarantees
(:class:`calibration.monitoring.detector.GuaranteeSpec`: coverage and accept error over every item, and the same
two over the items of each human label), fixed when its first label arrives, with fixed weights w_1..w_k summing to
1 (equal by default). Each finished document updates every guarantee's detector R_j and its rate sequence
(:mod:`calibration.monitoring.rate_sequence`). The cell's statistic is the weighted mean R = sum_j w_j R_j, and the
cell alarms at the first document where R >= c = ``horizon`` / ``delta``.

Validity. Under the cell's null (every watched guarantee holds on the stream's document population) each R_j - t
is a supermartingale on the same documents, so is R - t (the weights sum to 1), and the detector module's two
guarantees hold for the cell as a whole: a false alarm within the first ``horizon`` documents has probability
<= delta, and the mean time to a false alarm is >= c documents. Evidence is combined only by the weighted mean
(a product of detectors betting on the same documents would not be valid). At an alarm the cell names the
guarantee with the largest R_j: since the mean is >= c, that R_j >= c too, so that guarantee's own null is
rejected with the same false-alarm guarantee. The alarm is kept (the test has rejected); clearing it is a decision
outside this module (a new calibration starts a new monitor). The rate sequences are each at 1 - delta,
simultaneously over time.

The e-process over time: after each document the cell's statistic joins a bounded trail
(:mod:`calibration.monitoring.trail`, at most ``TRAIL_POINTS`` evenly spaced points over the whole stream plus the
latest), stored as log(1 + R) = log sum_j sum_g w_j pi_g (1 + R_jg) (the weights and each prior sum to 1), computed
from the detectors' logs without leaving float range.

State: k detectors and k rate sequences (O(k * grid_size) floats) and the trail (at most ``TRAIL_POINTS`` points),
updated in O(k * grid_size) per document; every value a msgspec Struct, so a store can persist it as JSON (a state
stored before the trail decodes with an empty one).
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import numpy as np

from calibration.monitoring.detector import (
    DetectorState,
    GuaranteeSpec,
    e_value,
    prior,
    start_detector,
    update_detector,
)
from calibration.monitoring.rate_sequence import RateEstimate, RateSequence, rate_estimate, update_rate
from calibration.monitoring.tally import DocumentTally
from calibration.monitoring.trail import Trail, TrailPoint, extend_trail, trail_points

__all__ = [
    "Alarm",
    "CellMonitor",
    "CellReport",
    "CellSpec",
    "GuaranteeReport",
    "GuaranteeState",
    "cell_e_value",
    "cell_log_e_value",
    "cell_report",
    "explain_alarm",
    "observe_document",
    "start_cell",
]


class CellSpec(msgspec.Struct, frozen=True, kw_only=True):
    """What a cell watches: its guarantees, their weights (None: equal), the false-alarm level delta over a horizon
    of ``horizon`` documents (the alarm threshold is horizon / delta)."""

    guarantees: list[GuaranteeSpec]
    weights: list[float] | None = None
    delta: float = 0.05
    horizon: int = 1000

    def __post_init__(self) -> None:
        if not self.guarantees:
            raise ValueError("a cell watches at least one guarantee")
        if not 0.0 < self.delta < 1.0:
            raise ValueError(f"delta {self.delta} must lie in (0, 1)")
        if self.horizon < 1:
            raise ValueError(f"horizon {self.horizon} must be at least 1 document")
        if self.weights is not None and (
            len(self.weights) != len(self.guarantees)
            or any(w <= 0 for w in self.weights)
            or abs(sum(self.weights) - 1.0) > 1e-9
        ):
            raise ValueError("weights: one positive weight per guarantee, summing to 1")

    @property
    def threshold(self) -> float:
        """c = horizon / delta: the statistic's alarm level."""
        return self.horizon / self.delta

    def weight(self, index: int) -> float:
        """The weight of guarantee ``index`` in the cell's statistic."""
        return 1.0 / len(self.guarantees) if self.weights is None else self.weights[index]


class GuaranteeState(msgspec.Struct, frozen=True, kw_only=True):
    """One guarantee's detector and rate sequence."""

    test: DetectorState
    rate: RateSequence


class Alarm(msgspec.Struct, frozen=True, kw_only=True):
    """The first document at which the cell's statistic reached its threshold, and the guarantee it names with
    that guarantee's failures so far."""

    guarantee: str
    human_label: int | None = None  # the label whose items the named guarantee watches (None: every item)
    level: float  # the named guarantee's reference level
    tolerance: int | None
    label: int  # labels seen when the alarm rose (the alarm document's included)
    document: int  # documents seen when the alarm rose
    e_value: float  # the cell's statistic at the alarm
    guarantee_e_value: float  # the named guarantee's own statistic (>= the threshold)
    failures: int = 0  # the named guarantee's failures and counted items so far
    counted: int = 0
    allowed: float | None = None  # the mean level its counted items were served at


class CellMonitor(msgspec.Struct, frozen=True, kw_only=True):
    """A cell's state: every guarantee's state, the documents and labels seen, the alarm once raised, the trail of
    its statistic (empty for a state stored before trails were kept)."""

    guarantees: list[GuaranteeState]
    documents: int = 0
    labels: int = 0
    alarm: Alarm | None = None
    trail: Trail = msgspec.field(default_factory=Trail)


class GuaranteeReport(msgspec.Struct, frozen=True, kw_only=True):
    """One guarantee as reported: its level, statistic and failure rate with its confidence sequence."""

    guarantee: str
    human_label: int | None
    level: float
    tolerance: int | None
    e_value: float
    estimate: RateEstimate


class CellReport(msgspec.Struct, frozen=True, kw_only=True):
    """A cell as reported: ok or alarm, labels and documents, the cell's statistic, its trail over time (the
    e-process) and each guarantee."""

    status: str  # "ok" | "alarm"
    labels: int
    documents: int
    e_value: float
    threshold: float  # horizon / delta
    guarantees: list[GuaranteeReport]
    alarm: Alarm | None
    e_process: list[TrailPoint]  # ascending by document, at most TRAIL_POINTS
    e_process_step: int  # documents between two kept points of the trail


def start_cell(spec: CellSpec) -> CellMonitor:
    """A fresh monitor: every detector at 0, no document."""
    return CellMonitor(
        guarantees=[GuaranteeState(test=start_detector(g), rate=RateSequence()) for g in spec.guarantees]
    )


def cell_e_value(spec: CellSpec, state: CellMonitor) -> float:
    """The cell's statistic: the weighted mean of its guarantees' detectors."""
    return sum(
        spec.weight(j) * e_value(g, s.test)
        for j, (g, s) in enumerate(zip(spec.guarantees, state.guarantees, strict=True))
    )


def cell_log_e_value(spec: CellSpec, state: CellMonitor) -> float:
    """log(1 + R) of the cell's statistic R, finite however large R is (module docstring)."""
    terms = np.concatenate(
        [
            np.asarray(s.test.log_statistic, dtype=float) + np.log(spec.weight(j) * prior(g))
            for j, (g, s) in enumerate(zip(spec.guarantees, state.guarantees, strict=True))
        ]
    )
    top = float(terms.max())
    return max(0.0, top + float(np.log(np.sum(np.exp(terms - top)))))


def observe_document(
    spec: CellSpec, state: CellMonitor, tallies: Sequence[DocumentTally], *, labels: int | None = None
) -> CellMonitor:
    """The monitor after one finished document: one tally per guarantee, in ``spec`` order (an empty tally for a
    guarantee none of its items counts for); ``labels``: the document's labelled items (default: the largest
    tally's). ValueError for a tally count that does not match or a tally outside a guarantee's max_items."""
    if len(tallies) != len(spec.guarantees):
        raise ValueError(f"{len(tallies)} tallies for {len(spec.guarantees)} guarantees")
    guarantees = [
        GuaranteeState(
            test=update_detector(g, s.test, t), rate=update_rate(s.rate, t, max_items=g.max_items, delta=spec.delta)
        )
        for g, s, t in zip(spec.guarantees, state.guarantees, tallies, strict=True)
    ]
    seen = state.labels + (max(t.labels for t in tallies) if labels is None else labels)
    updated = CellMonitor(guarantees=guarantees, documents=state.documents + 1, labels=seen, alarm=state.alarm)
    point = TrailPoint(documents=updated.documents, labels=seen, log_e_value=cell_log_e_value(spec, updated))
    trail = extend_trail(state.trail, point)
    updated = msgspec.structs.replace(updated, trail=trail)
    if state.alarm is not None:
        return updated
    total = cell_e_value(spec, updated)
    if total < spec.threshold:
        return updated
    values = [e_value(g, s.test) for g, s in zip(spec.guarantees, guarantees, strict=True)]
    named = max(range(len(values)), key=values.__getitem__)
    watched, rate = spec.guarantees[named], guarantees[named].rate
    alarm = Alarm(
        guarantee=watched.guarantee,
        human_label=watched.human_label,
        level=watched.level,
        tolerance=watched.tolerance,
        label=seen,
        document=updated.documents,
        e_value=total,
        guarantee_e_value=values[named],
        failures=rate.failures,
        counted=rate.counted,
        allowed=rate.allowed / rate.counted if rate.counted else None,
    )
    return CellMonitor(guarantees=guarantees, documents=updated.documents, labels=seen, alarm=alarm, trail=trail)


def explain_alarm(alarm: Alarm) -> str:
    """The alarm in words: which guarantee (of which human label), the failure rate seen against the level allowed."""
    if alarm.guarantee == "coverage":
        what = "set coverage" if alarm.human_label is None else f"set coverage of human label {alarm.human_label}"
        failing = "fell outside the served set"
    else:
        what = (
            "error among accepted"
            if alarm.human_label is None
            else f"accepted error on human label {alarm.human_label}"
        )
        failing = f"were accepted with a point {alarm.tolerance} or more away"
    share = alarm.failures / alarm.counted if alarm.counted else 0.0
    allowed = alarm.level if alarm.allowed is None else alarm.allowed
    items = "items" if alarm.human_label is None else f"items labelled {alarm.human_label}"
    ratio = share / allowed if allowed else 0.0
    return (
        f"{what}: {alarm.failures} of {alarm.counted} {items} ({share:.0%}) {failing}, where the served level allows "
        f"{allowed:.0%}, {ratio:.1f} times as many (detector {alarm.guarantee_e_value:.3g} after {alarm.document} "
        f"documents, {alarm.label} labels)"
    )


def cell_report(spec: CellSpec, state: CellMonitor) -> CellReport:
    """The cell's status, counts, statistics and running estimates (each rate sequence at 1 - delta)."""
    return CellReport(
        status="ok" if state.alarm is None else "alarm",
        labels=state.labels,
        documents=state.documents,
        e_value=cell_e_value(spec, state),
        threshold=spec.threshold,
        guarantees=[
            GuaranteeReport(
                guarantee=g.guarantee,
                human_label=g.human_label,
                level=g.level,
                tolerance=g.tolerance,
                e_value=e_value(g, s.test),
                estimate=rate_estimate(s.rate, delta=spec.delta),
            )
            for g, s in zip(spec.guarantees, state.guarantees, strict=True)
        ],
        alarm=state.alarm,
        e_process=trail_points(state.trail),
        e_process_step=state.trail.step,
    )
