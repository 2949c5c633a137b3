"""GET /healthz (liveness), GET /readyz (readiness) and GET /metrics (Prometheus text)."""

from __future__ import annotations

from litestar import Request, Response, get

from service.api import problem_responses, services_of
from service.metrics import CONTENT_TYPE
from service.problems import PROBLEM_MEDIA_TYPE
from service.schemas import HealthStatus, Problem, ReadinessCheck

__all__ = ["healthz", "metrics", "readyz"]


@get("/healthz", summary="Liveness: the process answers", tags=["health"])
async def healthz() -> HealthStatus:
    """Always ok while the process serves requests."""
    return HealthStatus(status="ok", checks=[])


@get(
    "/readyz",
    summary="Readiness: a calibration is loaded (503 otherwise); Redis and judges are reported, never required",
    responses=problem_responses(503),
    tags=["health"],
)
async def readyz(request: Request) -> Response[HealthStatus]:
    """Ready when an artifact is loaded; soft dependencies (Redis, judges) only fill ``degraded`` and metrics.

    Redis is optional (the cache falls back to memory) and a judge serves only live calls (callers' verdicts
    need none), so neither may take a replica out of a load balancer: when a shared dependency fails, every
    replica would be dropped at once while each could still answer.
    """
    services = services_of(request)
    snapshot = services.calibration.current
    checks = [
        ReadinessCheck(
            name="calibration",
            ok=snapshot is not None,
            detail=(
                f"{snapshot.calibration_id} from {snapshot.path} ({len(snapshot.artifact.entries)} entries)"
                if snapshot is not None
                else f"not loaded: {services.calibration.error}"
            ),
        )
    ]
    degraded: list[str] = []
    cache = services.judges.cache
    if services.settings.redis_url:
        status = await cache.check() if cache is not None else None
        reachable = status is not None and status.redis_reachable
        checks.append(
            ReadinessCheck(
                name="redis",
                ok=reachable,
                detail="reachable" if reachable else (
                    f"unreachable (answers cached in memory meanwhile): "
                    f"{status.last_error if status else 'not started'}"
                ),
            )
        )
        if not reachable:
            degraded.append("redis")
        services.metrics.degraded.labels("redis").set(0 if reachable else 1)
    names = services.judges.names()
    breakers = getattr(services.judges, "breakers", None)  # per-judge circuit breakers (service/breaker.py)
    states = breakers.states() if breakers is not None else {}
    open_judges = [name for name in names if states.get(name, "closed") != "closed"]
    for name in names:
        services.metrics.degraded.labels(f"judge:{name}").set(1 if name in open_judges else 0)
    degraded += [f"judge:{name}" for name in open_judges]
    detail = f"{len(names)} configured" + (f": {', '.join(names)}" if names else " (caller verdicts only)")
    if open_judges:
        detail += f"; circuit open (calls fail fast): {', '.join(open_judges)}"
    checks.append(ReadinessCheck(name="judges", ok=not open_judges, detail=detail))
    if snapshot is not None:
        return Response(HealthStatus(status="ready", checks=checks, degraded=degraded))
    problem = Problem(
        type="urn:conformal-judge:problem:not-ready",
        title="Service not ready",
        status=503,
        detail="failing checks: calibration",
        instance="/readyz",
        checks=checks,
    )
    services.metrics.count_problem(503, "not-ready")
    return Response(problem, status_code=503, media_type=PROBLEM_MEDIA_TYPE)  # type: ignore[arg-type]


@get("/metrics", summary="Prometheus metrics of this app", media_type=CONTENT_TYPE, tags=["health"])
async def metrics(request: Request) -> Response[bytes]:
    """The app's registry in Prometheus text format."""
    services = services_of(request)
    return Response(services.metrics.render(), media_type=CONTENT_TYPE)
