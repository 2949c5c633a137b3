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
    summary="Readiness: calibration loaded and Redis reachable (when configured); 503 otherwise",
    responses=problem_responses(503),
    tags=["health"],
)
async def readyz(request: Request) -> Response[HealthStatus]:
    """Ready when an artifact is loaded and, with REDIS_URL set, Redis answers a PING; else 503 problem+json."""
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
    cache = services.judges.cache
    if services.settings.redis_url:
        status = await cache.check() if cache is not None else None
        reachable = status is not None and status.redis_reachable
        checks.append(
            ReadinessCheck(
                name="redis",
                ok=reachable,
                detail="reachable" if reachable else f"unreachable: {status.last_error if status else 'not started'}",
            )
        )
    names = services.judges.names()
    checks.append(
        ReadinessCheck(
            name="judges",
            ok=True,
            detail=f"{len(names)} configured" + (f": {', '.join(names)}" if names else " (caller verdicts only)"),
        )
    )
    if all(check.ok for check in checks):
        return Response(HealthStatus(status="ready", checks=checks))
    failing = ", ".join(check.name for check in checks if not check.ok)
    problem = Problem(
        type="urn:conformal-judge:problem:not-ready",
        title="Service not ready",
        status=503,
        detail=f"failing checks: {failing}",
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
