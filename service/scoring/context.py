"""What one scoring request (or one job chunk) carries through the scoring steps: a leaf every step imports."""

from __future__ import annotations

import msgspec

from service.artifacts.snapshot import CalibrationSnapshot
from service.config.settings import Settings
from service.judging.pool import JudgePool
from service.observability.metrics import ServiceMetrics
from service.scoring.monitor_alarm import AlarmedCell, AlarmNote
from service.scoring.policy import DecisionPolicy
from service.screening.injection import FindingsMemo

__all__ = ["ScoringContext"]


class ScoringContext(msgspec.Struct, frozen=True, kw_only=True):
    """What scoring needs: settings, the calibration snapshot taken at the request's start, judges, policy.

    A Struct rather than a frozen dataclass: it is made per request, and a frozen dataclass's ``__init__``
    costs ten times as much.
    """

    settings: Settings
    snapshot: CalibrationSnapshot | None
    calibration_error: str | None
    judges: JudgePool
    policy: DecisionPolicy
    metrics: ServiceMetrics
    # Injection findings per judged text (service.screening.injection.screen_texts): the process's memo
    # (JudgePool.screened, an LRU) in the API and the worker, so a repeated text is screened once; else the
    # context's own dict (one request, or one job chunk).
    screened: dict[str, list[str]] | FindingsMemo = msgspec.field(default_factory=dict)
    # The feedback monitors' alarms that apply to this caller (service.scoring.monitor_alarm); empty without Redis.
    alarms: dict[AlarmedCell, AlarmNote] = msgspec.field(default_factory=dict)
