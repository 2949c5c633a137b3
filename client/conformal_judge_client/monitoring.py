"""Typed answers of the feedback monitors: what ``POST /v1/feedback`` recorded and what ``GET /v1/monitor`` shows."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .results import Problem, _Raw

__all__ = ["EProcessPoint", "FeedbackRefusal", "FeedbackResult", "MonitorCell", "MonitorState"]


@dataclass(frozen=True)
class FeedbackRefusal(_Raw):
    """One refused feedback item: its index, its item_id and why."""

    index: int
    item_id: str | None
    error: Problem

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FeedbackRefusal:
        """Read a refusal."""
        return cls(
            index=int(data["index"]), item_id=data.get("item_id"), error=Problem.from_json(data["error"]), raw=data
        )


@dataclass(frozen=True)
class FeedbackResult(_Raw):
    """Labels recorded, duplicates dropped, items refused, documents closed and alarms raised by one request."""

    accepted: int
    duplicates: int
    refused: int
    documents_closed: int
    alarms_raised: int
    refusals: tuple[FeedbackRefusal, ...]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FeedbackResult:
        """Read a feedback answer."""
        return cls(
            accepted=int(data["accepted"]),
            duplicates=int(data["duplicates"]),
            refused=int(data["refused"]),
            documents_closed=int(data.get("documents_closed", 0)),
            alarms_raised=int(data.get("alarms_raised", 0)),
            refusals=tuple(FeedbackRefusal.from_json(r) for r in data.get("refusals", [])),
            raw=data,
        )


@dataclass(frozen=True)
class EProcessPoint:
    """The monitor's statistic after ``documents`` finished documents and ``labels`` labels."""

    documents: int
    labels: int
    e_value: float


@dataclass(frozen=True)
class MonitorCell(_Raw):
    """One monitor: its cell, status (``ok`` | ``alarm``), labels, documents, e-value and alarm (raw JSON)."""

    monitor_id: str
    judge: str
    prompt_family: str
    criterion: str
    input_kind: str
    calibration_id: str
    status: str
    labels: int
    groups: int
    e_value: float
    alarm: Mapping[str, Any] | None
    threshold: float | None = None  # the alarm level horizon / delta (None from a service that does not send it)
    e_process: tuple[EProcessPoint, ...] = ()  # the statistic over time, at most 64 evenly spaced points and the latest

    @property
    def in_alarm(self) -> bool:
        """True while the monitor's alarm is raised (its cell's answers escalate)."""
        return self.status == "alarm"

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MonitorCell:
        """Read one monitor."""
        return cls(
            monitor_id=data["monitor_id"],
            judge=data["judge"],
            prompt_family=data["prompt_family"],
            criterion=data["criterion"],
            input_kind=data["input_kind"],
            calibration_id=data["calibration_id"],
            status=data["status"],
            labels=int(data["labels"]),
            groups=int(data["groups"]),
            e_value=float(data["e_value"]),
            alarm=data.get("alarm"),
            threshold=float(data["threshold"]) if data.get("threshold") is not None else None,
            e_process=tuple(
                EProcessPoint(documents=int(p["documents"]), labels=int(p["labels"]), e_value=float(p["e_value"]))
                for p in data.get("e_process", [])
            ),
            raw=data,
        )


@dataclass(frozen=True)
class MonitorState(_Raw):
    """Every monitor the caller may read."""

    cells: tuple[MonitorCell, ...]

    @property
    def alarms(self) -> tuple[MonitorCell, ...]:
        """The monitors in alarm."""
        return tuple(cell for cell in self.cells if cell.in_alarm)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MonitorState:
        """Read the monitor listing."""
        return cls(cells=tuple(MonitorCell.from_json(c) for c in data.get("cells", [])), raw=data)
