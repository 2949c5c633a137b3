"""A cell's e-process over time, in bounded memory: a trail of the cell's statistic at evenly spaced documents that
always spans the whole stream, plus the latest document.

Rule. A point is (documents, labels, log(1 + R)): the documents and labels the monitor had counted and its
statistic R after that many documents (stored as log(1 + R) >= 0, the detector's own convention, so a statistic
past float range is still a finite number in JSON). The trail holds a ``step`` (a power of two, 1 at first), the
**kept points**, those whose document count is a multiple of ``step``, and the **latest** point. A new document's
point becomes the latest; it is also kept when its count is a multiple of ``step``; while more than ``cap - 1``
points are kept, ``step`` doubles and the kept points whose count is not a multiple of the new step are dropped
(every other one). Ties: none, a document count occurs once. The trail is deterministic: the same stream gives the
same trail.

Bound. At most ``cap - 1`` kept points and the latest: a trail shows at most ``cap`` points (``TRAIL_POINTS`` = 64
by default), whatever the stream's length. For a monitor that kept a point from its first document, after t
documents the kept points are exactly step, 2 step, ..., floor(t / step) step, with step the smallest power of two
such that floor(t / step) <= cap - 1: evenly spaced over the whole stream, and (once t >= cap) at least cap / 2 of
them. A monitor stored before it kept a trail starts one at its next document (an empty trail decodes by
default); its points are the multiples of ``step`` from there on, spaced the same way.

The alarm point is not a trail point: :class:`calibration.monitoring.monitor.Alarm` records its document, labels
and statistic exactly when it rises.
"""

from __future__ import annotations

import math
import sys

import msgspec

__all__ = ["TRAIL_POINTS", "Trail", "TrailPoint", "extend_trail", "trail_points", "trail_value"]

TRAIL_POINTS = 64


class TrailPoint(msgspec.Struct, frozen=True, kw_only=True):
    """The cell after ``documents`` documents and ``labels`` labels: log(1 + R), R its statistic then."""

    documents: int
    labels: int
    log_e_value: float


class Trail(msgspec.Struct, frozen=True, kw_only=True):
    """The kept points (document counts multiples of ``step``, ascending) and the latest point (module rule)."""

    step: int = 1
    points: list[TrailPoint] = []
    latest: TrailPoint | None = None


def extend_trail(trail: Trail, point: TrailPoint, *, cap: int = TRAIL_POINTS) -> Trail:
    """The trail after one more document (module rule); ValueError for a cap below 2 or a point that does not come
    after the latest."""
    if cap < 2:
        raise ValueError(f"a trail's cap {cap} must be at least 2 points")
    if trail.latest is not None and point.documents <= trail.latest.documents:
        raise ValueError(f"document {point.documents} does not come after the trail's {trail.latest.documents}")
    step, kept = trail.step, trail.points
    if point.documents % step == 0:
        kept = [*kept, point]
    while len(kept) > cap - 1:
        step *= 2
        kept = [p for p in kept if p.documents % step == 0]
    return Trail(step=step, points=kept, latest=point)


def trail_points(trail: Trail) -> list[TrailPoint]:
    """The points a trail shows, ascending by document: the kept ones, then the latest unless it is kept."""
    latest = trail.latest
    if latest is None or (trail.points and trail.points[-1].documents == latest.documents):
        return list(trail.points)
    return [*trail.points, latest]


def trail_value(point: TrailPoint) -> float:
    """R at the point; the largest float when R is past float range (so that it stays a number in JSON)."""
    try:
        return min(math.expm1(point.log_e_value), sys.float_info.max)
    except OverflowError:
        return sys.float_info.max
