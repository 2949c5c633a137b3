"""POST /v1/feedback and GET /v1/monitor: human labels of served verdicts, and the monitors they feed."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta

from service.config.settings import HARD_MAX_BATCH_ITEMS
from service.wire.common import (
    REQUEST_STRUCT,
    RESPONSE_STRUCT,
    Alpha,
    Confidence,
    Criterion,
    GuaranteeMode,
    ItemIdText,
    JudgeScore,
    Name,
    Problem,
    Tolerance,
)
from service.wire.score import JudgeLogprobs

__all__ = [
    "FeedbackItem",
    "FeedbackRefusal",
    "FeedbackRequest",
    "FeedbackResponse",
    "MonitorAlarm",
    "MonitorCell",
    "MonitorEProcessPoint",
    "MonitorGuarantee",
    "MonitorRecalibrateRequest",
    "MonitorRecalibration",
    "MonitorReset",
    "MonitorResetRequest",
    "MonitorResponse",
]

Human = Annotated[
    float, Meta(ge=1, le=10, description="the human label on the cell's scale 1..K: one rating or a mean (rounded)")
]
GroupText = Annotated[
    str, Meta(min_length=1, max_length=200, description="the document the item belongs to (default: its item_id)")
]


class FeedbackItem(msgspec.Struct, **REQUEST_STRUCT):
    """A verdict as it was sent to /v1/score (the caller's own: ``judge_score`` and/or ``judge_logprobs``) with the
    human label, the item's stable id and its document. ``done: true`` closes the document after this item: its
    labels are then counted by the monitor, and a later label for it is refused. A document whose item brings no
    ``group`` is the item alone and closes with it."""

    criterion: Criterion
    item_id: ItemIdText
    human: Human
    judge: Name | None = None
    prompt_family: Name | None = None
    judge_score: JudgeScore | None = None
    judge_logprobs: JudgeLogprobs | None = None
    alpha: Alpha | None = None
    method: Name | None = None
    tolerance: Tolerance = 2
    accept_alpha: Alpha | None = None
    guarantee: GuaranteeMode = "expected"
    confidence: Confidence | None = None
    group: GroupText | None = None
    done: bool = False
    # the document's number of labelled items, when known: it closes once that many are recorded (as with done)
    group_size: Annotated[int, Meta(ge=1, le=1000)] | None = None


_FEEDBACK_ITEM = (
    "the verdict as sent to /v1/score (criterion, judge, prompt_family, judge_score and/or judge_logprobs, alpha, "
    "method, tolerance, accept_alpha, guarantee, confidence) plus human (the label), item_id (required; the same id "
    "again is a duplicate), group (the document; default the item) and done (true closes the document); anything "
    "else is refused alone, with its problem"
)


class FeedbackRequest(msgspec.Struct, **REQUEST_STRUCT):
    """Up to MAX_BATCH_ITEMS feedback items; each is checked on its own, so one bad item is refused alone."""

    # any JSON value is an item: a refused item is refused alone
    items: Annotated[list[Annotated[Any, Meta(description=_FEEDBACK_ITEM)]], Meta(max_length=HARD_MAX_BATCH_ITEMS)]


class FeedbackRefusal(msgspec.Struct, **RESPONSE_STRUCT):
    """One refused item: its index, its item_id when it had one, and why (a problem object)."""

    index: int
    item_id: str | None
    error: Problem


class FeedbackResponse(msgspec.Struct, **RESPONSE_STRUCT):
    """What the feedback did: labels recorded, duplicates dropped, items refused, documents closed, alarms raised."""

    accepted: int
    duplicates: int
    refused: int
    documents_closed: int
    alarms_raised: int
    refusals: list[FeedbackRefusal]
    open_documents: int = 0  # documents still open in the monitors this request fed (their labels not yet counted)
    warnings: list[str] = []


class MonitorGuarantee(msgspec.Struct, **RESPONSE_STRUCT):
    """One watched guarantee (of every item, or of the items of one human label): its level, its detector's value
    and its running failure rate, with a confidence sequence once that says something."""

    guarantee: str  # coverage | accept_error
    human_label: int | None  # None: every item; y: the items whose human label is y
    level: float  # the level of the monitor's first served answer (items count at their own levels)
    allowed: float | None  # the counted items' mean served level: the failure rate their guarantees allow
    tolerance: int | None
    e_value: float
    rate: float | None  # failures / counted so far (None before any counted item)
    # the confidence sequence at 1 - delta, valid at every time at once; null while it is wider than 0.5
    low: float | None
    high: float | None
    counted: int
    failures: int


class MonitorAlarm(msgspec.Struct, **RESPONSE_STRUCT):
    """The alarm: the guarantee (and human label) it names and how far its failures went, in words too; the label
    and document it rose at, and the detector values."""

    guarantee: str
    human_label: int | None
    level: float
    tolerance: int | None
    label: int
    document: int
    e_value: float
    guarantee_e_value: float
    failures: int
    counted: int
    explanation: str


class MonitorEProcessPoint(msgspec.Struct, **RESPONSE_STRUCT):
    """The cell's statistic after ``documents`` documents (``labels`` labels): one point of its e-process."""

    documents: int
    labels: int
    e_value: float  # the largest float when past float range


class MonitorCell(msgspec.Struct, **RESPONSE_STRUCT):
    """One monitor: a served cell (judge, prompt family, criterion, input kind) of one calibration at its levels."""

    monitor_id: str
    calibration_id: str
    judge: str
    prompt_family: str
    criterion: str
    input_kind: str
    status: str  # ok | alarm
    labels: int
    groups: int  # documents closed and counted
    open_groups: int
    e_value: float
    threshold: float
    # the cell's e-value over time: at most 64 points, every e_process_step documents from the first and the latest
    e_process: list[MonitorEProcessPoint]
    e_process_step: int
    delta: float  # this monitor's share of MONITOR_DELTA
    horizon: int  # documents over which delta bounds a false alarm (threshold = horizon / delta)
    max_items: int
    guarantees: list[MonitorGuarantee]
    alarm: MonitorAlarm | None
    active: bool  # False: its calibration no longer serves the cell (kept for the record)


class MonitorResponse(msgspec.Struct, **RESPONSE_STRUCT):
    """One page of the monitors the caller may read, in monitor id order; ``next_after``: pass it as ``after`` for
    the next page (null: this is the last)."""

    cells: list[MonitorCell]
    next_after: str | None = None


class MonitorResetRequest(msgspec.Struct, **REQUEST_STRUCT):
    """Which monitor to reset (its ``monitor_id`` from GET /v1/monitor), and why (kept in the audit log)."""

    monitor_id: Annotated[str, Meta(min_length=1, max_length=64, pattern=r"^[0-9a-f]{1,64}$")]
    reason: Annotated[str, Meta(max_length=500)] = ""


class MonitorReset(msgspec.Struct, **RESPONSE_STRUCT):
    """The reset monitor: its state is gone, and so is its alarm."""

    monitor_id: str
    reset: bool
    had_alarm: bool


class MonitorRecalibrateRequest(msgspec.Struct, **REQUEST_STRUCT):
    """Which monitor's feedback to calibrate on (its ``monitor_id`` from GET /v1/monitor); ``for_every_tenant``:
    fit on a tenant's labels although the activated calibration serves every tenant (the admin's choice)."""

    monitor_id: Annotated[str, Meta(min_length=1, max_length=64, pattern=r"^[0-9a-f]{1,64}$")]
    for_every_tenant: bool = False


class MonitorRecalibration(msgspec.Struct, **RESPONSE_STRUCT):
    """The calibration job started from a monitor's feedback: poll ``status_url`` for what the new rule accepts
    (its cells' ``decision_summary``), then activate it."""

    monitor_id: str
    job_id: str
    status: str
    artifact_name: str
    rows: int
    documents: int
    rows_kept: int  # the monitor's kept rows before subsampling to MAX_CALIBRATION_CELL_ROWS (== rows: none)
    whose_rows: str  # admin | single tenant | tenant <digest prefix>
    rows_after_alarm: int  # labels in documents closed after the alarm
    status_url: str
    note: str
