"""/healthz and /readyz answers."""

from __future__ import annotations

from typing import Literal

import msgspec

from service.wire.common import RESPONSE_STRUCT, ReadinessCheck

__all__ = ["HealthStatus"]


# --------------------------------------------------------------------------------------------- /health


class HealthStatus(msgspec.Struct, **RESPONSE_STRUCT):
    """Liveness or readiness with the checks behind it."""

    status: Literal["ok", "ready"]
    checks: list[ReadinessCheck]
    # Soft dependencies that are down while the service still answers (readiness ignores them):
    # "redis" (the cache falls back to memory), "judge:<name>" (its circuit breaker is open).
    degraded: list[str] = msgspec.field(default_factory=list)
