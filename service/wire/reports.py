"""GET /v1/judges/{judge}/report and GET /v1/calibrations/{job_id}/report: a judge's report cards (JSON; the same
figures as the page at ``.../report.html``)."""

from __future__ import annotations

import msgspec

from calibration.report_card.card import ReportCard
from service.wire.common import RESPONSE_STRUCT
from service.wire.monitoring import MonitorCell

__all__ = ["JudgeReport"]


class JudgeReport(msgspec.Struct, **RESPONSE_STRUCT):
    """The report cards of one judge (one per prompt family x criterion, or the asked criterion's), computed where
    the labelled data was (``make calibrate``, or the calibration job), with the cells' feedback monitors when the
    service keeps them."""

    judge: str
    source: str  # where the cards come from: the shipped report cards file, or a calibration job
    created_at: str | None
    cards: list[ReportCard]
    page: str  # the same report as an HTML page
    monitors: list[MonitorCell] | None  # None: no monitor store (REDIS_URL unset) or it did not answer
    monitors_note: str
