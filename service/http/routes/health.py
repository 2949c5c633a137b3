"""GET /healthz (liveness), GET /readyz (readiness) and GET /metrics (Prometheus text)."""

from __future__ import annotations

from litestar import Request, Response, get

from service.http.auth import is_admin
from service.http.problems import PROBLEM_MEDIA_TYPE
from service.http.services import Services, problem_responses, services_of
from service.observability.metrics import CONTENT_TYPE
from service.wire.common import Problem, ReadinessCheck
from service.wire.health import HealthStatus

__all__ = ["healthz", "metrics", "readyz"]

_ADMIN_DETAIL = "paths and addresses are shown with the admin key"


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
    File paths, load errors and Redis errors (host:port) appear only for a request with the admin key.

    Redis is optional (the cache falls back to memory) and a judge serves only live calls (callers' verdicts
    need none), so neither may take a replica out of a load balancer: when a shared dependency fails, every
    replica would be dropped at once while each could still answer.
    """
    services = services_of(request)
    admin = _is_admin(request)  # where files and servers are is for the operator: unauthenticated probes see none
    checks = [_calibration_check(services, admin)]
    degraded: list[str] = []
    if services.settings.redis_url:
        checks.append(await _redis_check(services, admin, degraded))
    checks.append(_judges_check(services, degraded))
    if checks[0].ok:
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


def _calibration_check(services: Services, admin: bool) -> ReadinessCheck:
    """Ok when an artifact is loaded; its path, or the load error, only for the admin."""
    snapshot = services.calibration.current
    if snapshot is not None:
        where = f" from {snapshot.path}" if admin else ""
        detail = f"{snapshot.calibration_id}{where} ({len(snapshot.artifact.entries)} entries)"
    else:
        detail = ("not loaded: " + (services.calibration.error or "unknown error") if admin
                  else f"not loaded ({_ADMIN_DETAIL})")  # fmt: skip
    return ReadinessCheck(name="calibration", ok=snapshot is not None, detail=detail)


async def _redis_check(services: Services, admin: bool, degraded: list[str]) -> ReadinessCheck:
    """The judge cache's Redis (soft: answers are cached in memory meanwhile); its error only for the admin."""
    cache = services.judges.cache
    status = await cache.check() if cache is not None else None
    reachable = status is not None and status.redis_reachable
    if not reachable:
        degraded.append("redis")
    services.metrics.degraded.labels("redis").set(0 if reachable else 1)
    if reachable:
        return ReadinessCheck(name="redis", ok=True, detail="reachable")
    why = f": {status.last_error if status else 'not started'}" if admin else f"; {_ADMIN_DETAIL}"
    return ReadinessCheck(name="redis", ok=False, detail="unreachable (answers cached in memory meanwhile)" + why)


def _judges_check(services: Services, degraded: list[str]) -> ReadinessCheck:
    """The configured judges; one whose circuit breaker is open (calls fail fast) is degraded (soft)."""
    names = services.judges.names()
    breakers = getattr(services.judges, "breakers", None)  # per-judge circuit breakers (service/judging/breaker.py)
    states = breakers.states() if breakers is not None else {}
    open_judges = [name for name in names if states.get(name, "closed") != "closed"]
    for name in names:
        services.metrics.degraded.labels(f"judge:{name}").set(1 if name in open_judges else 0)
    degraded += [f"judge:{name}" for name in open_judges]
    detail = f"{len(names)} configured" + (f": {', '.join(names)}" if names else " (caller verdicts only)")
    if open_judges:
        detail += f"; circuit open (calls fail fast): {', '.join(open_judges)}"
    return ReadinessCheck(name="judges", ok=not open_judges, detail=detail)


def _is_admin(request: Request) -> bool:
    """True when the request carries the admin key (ADMIN_API_KEY set and sent as a bearer key)."""
    return is_admin(services_of(request).settings, request.headers.get("authorization"))


@get("/metrics", summary="Prometheus metrics of this app", media_type=CONTENT_TYPE, tags=["health"])
async def metrics(request: Request) -> Response[bytes]:
    """The app's registry in Prometheus text format."""
    services = services_of(request)
    # The header given whole: from a text/ media type alone Litestar would append a second "; charset=utf-8".
    return Response(services.metrics.render(), media_type=CONTENT_TYPE, headers={"content-type": CONTENT_TYPE})
