"""What one scoring request (or one job chunk) carries through the scoring steps: a leaf every step imports."""

from __future__ import annotations

import msgspec

from service.calibrations.snapshot import CalibrationSnapshot
from service.config.settings import Settings
from service.judging.pool import JudgePool
from service.observability.metrics import ServiceMetrics
from service.scoring.policy import DecisionPolicy

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
    # Injection findings per judged text, for the context's life (one request, or one job chunk): items that
    # share a document (many summaries of one article) screen it once (service.screening.injection.screen_texts).
    screened: dict[str, list[str]] = msgspec.field(default_factory=dict)
