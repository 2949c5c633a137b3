"""The HTTP layer's shared parts: the per-app services, guards, the problem handler and request context.

Route modules (``score``, ``compare``, ``calibration``, ``judges``, ``health``) hold the handlers; this
module holds what every route shares:

================================ ==========================================================================
name                             role
================================ ==========================================================================
``Services``                     everything a handler needs, built per app and kept on ``app.state``
``provide_services``             the Litestar dependency that hands ``Services`` to a handler
``check_api_key``                on /v1 (run by the middleware): ``Authorization: Bearer <key>``, key in
                                 API_KEYS (or the admin key); a no-op when API_KEYS is unset; 401 otherwise
``require_admin_key``            guard on reload: 401 without a bearer key, 403 with a wrong one or when
                                 ADMIN_API_KEY is unset
``handle_exception``             every exception -> problem+json (``service.problems``), logged, counted
``RequestContextMiddleware``     request id (X-Request-ID in, or a fresh one), start time, API key, log
                                 context
``before_send``                  X-Request-ID on every response (404s included), request metrics, access log
                                 (every request, only status >= 400, or none: ACCESS_LOG)
``problem_responses``            OpenAPI ``responses`` entries for problem+json statuses
================================ ==========================================================================
"""

from __future__ import annotations

import hmac
import time
from dataclasses import dataclass
from typing import Any

import structlog
from litestar import Request, Response
from litestar.connection import ASGIConnection
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.handlers import BaseRouteHandler
from litestar.middleware import ASGIMiddleware
from litestar.openapi.datastructures import ResponseSpec
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from service.judging import JudgePool
from service.logging import REQUEST_ID_HEADER, request_id_from
from service.metrics import ServiceMetrics
from service.policy import DecisionPolicy
from service.problems import PROBLEM_MEDIA_TYPE, ForbiddenError, UnauthorizedError, problem_from_exception
from service.schemas import Problem
from service.settings import Settings
from service.state import CalibrationHolder

__all__ = [
    "RequestContextMiddleware",
    "Services",
    "ServicesDep",
    "before_send",
    "handle_exception",
    "problem_responses",
    "provide_services",
    "check_api_key",
    "require_admin_key",
]

_STATE_KEY = "cj"  # our per-request values inside scope["state"]
_REQUEST_ID_BYTES = REQUEST_ID_HEADER.encode()
_PROBLEM_DESCRIPTIONS = {
    400: "Malformed JSON",
    401: "Missing or unknown bearer key (when API_KEYS is set)",
    403: "The key may not do this",
    413: "Request body larger than MAX_BODY_BYTES",
    422: "Validation failed, or a name/level/limit the service does not accept (see `allowed`)",
    502: "The judge call failed or its reply could not be read",
    503: "No judge configured, or no calibration loaded",
}


@dataclass(frozen=True, kw_only=True)
class Services:
    """Per-app services; the lifespan fills ``judges`` and closes it, the rest lives as long as the app."""

    settings: Settings
    metrics: ServiceMetrics
    logger: Any
    policy: DecisionPolicy
    calibration: CalibrationHolder
    judges: JudgePool


ServicesDep = NamedDependency[Services]  # how a handler asks for the app's Services


def provide_services(state: State) -> Services:
    """The app's Services (a Litestar dependency)."""
    return state.services


def problem_responses(*statuses: int) -> dict[int, ResponseSpec]:
    """OpenAPI response entries (problem+json bodies) for the given statuses."""
    return {
        status: ResponseSpec(
            data_container=Problem,
            description=_PROBLEM_DESCRIPTIONS.get(status, "Problem"),
            media_type=PROBLEM_MEDIA_TYPE,
            generate_examples=False,
        )
        for status in statuses
    }


def _bearer_token(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def _bearer(connection: ASGIConnection) -> str | None:
    return _bearer_token(connection.headers.get("authorization"))


def _matches(token: str, keys: tuple[str, ...]) -> bool:
    # Compare against every key (no early exit) in constant time per key.
    results = [hmac.compare_digest(token.encode(), key.encode()) for key in keys]
    return any(results)


def check_api_key(settings: Settings, authorization: str | None) -> None:
    """401 unless API_KEYS is unset or the bearer key is one of API_KEYS or ADMIN_API_KEY.

    Called by RequestContextMiddleware for every /v1 request (a Litestar guard would copy the route handler
    on every call, which costs more than the whole check).
    """
    if not settings.api_keys:
        return
    token = _bearer_token(authorization)
    if token is None:
        raise UnauthorizedError("this service requires an API key: send 'Authorization: Bearer <key>'")
    keys = settings.api_keys + ((settings.admin_api_key,) if settings.admin_api_key else ())
    if not _matches(token, keys):
        raise UnauthorizedError("the bearer key is not valid")


async def require_admin_key(connection: ASGIConnection, _: BaseRouteHandler) -> None:
    """Guard of the reload route: 401 without a bearer key; 403 when ADMIN_API_KEY is unset or not the key.

    A coroutine on purpose: Litestar runs a synchronous guard in a worker thread.
    """
    settings: Settings = connection.app.state.services.settings
    token = _bearer(connection)
    if token is None:
        raise UnauthorizedError("this operation requires the admin key: send 'Authorization: Bearer <ADMIN_API_KEY>'")
    if not settings.admin_api_key:
        raise ForbiddenError("calibration reload is disabled: set ADMIN_API_KEY to enable it")
    if not _matches(token, (settings.admin_api_key,)):
        raise ForbiddenError("this key may not reload the calibration; the admin key is required")


def _context(scope: Scope) -> dict[str, Any]:
    """Our per-request values (request id, start time), created on first use."""
    state = scope.setdefault("state", {})  # type: ignore[typeddict-item]
    context = state.get(_STATE_KEY)
    if context is None:
        raw_id = authorization = None
        for name, value in scope.get("headers") or ():
            if name == _REQUEST_ID_BYTES:
                raw_id = value.decode("latin-1")
            elif name == b"authorization":
                authorization = value.decode("latin-1")
        context = {"request_id": request_id_from(raw_id), "authorization": authorization}
        state[_STATE_KEY] = context
    return context


def _route(scope: Scope) -> str:
    return scope.get("path_template") or "<unmatched>"  # type: ignore[return-value]


def handle_exception(request: Request, exc: Exception) -> Response[Problem]:
    """Map any exception to problem+json; 5xx are logged with the traceback, 4xx as one line."""
    services: Services = request.app.state.services
    problem, headers = problem_from_exception(exc, instance=request.url.path)
    context = _context(request.scope)
    log = services.logger.bind(request_id=context["request_id"], route=_route(request.scope))
    if problem.status >= 500 and problem.type.endswith("internal-error"):
        log.error("request.failed", status=problem.status, exc_info=exc, error_type=type(exc).__name__)
    else:
        log.info("request.problem", status=problem.status, problem=problem.type, detail=problem.detail[:300])
    services.metrics.count_problem(problem.status, problem.type)
    return Response(problem, status_code=problem.status, media_type=PROBLEM_MEDIA_TYPE, headers=headers)


class RequestContextMiddleware(ASGIMiddleware):
    """Stamp the request id and start time, check the API key on /v1, and bind the id into structlog's
    context for the request."""

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        """Run the route with the request id bound (and unbound afterwards); 401 on /v1 without a valid key."""
        context = _context(scope)
        context["started"] = time.perf_counter()
        if scope["path"].startswith("/v1/"):
            settings: Settings = scope["litestar_app"].state.services.settings  # type: ignore[typeddict-item]
            check_api_key(settings, context["authorization"])
        tokens = structlog.contextvars.bind_contextvars(request_id=context["request_id"], route=_route(scope))
        try:
            await next_app(scope, receive, send)
        finally:
            structlog.contextvars.reset_contextvars(**tokens)


async def before_send(message: Message, scope: Scope) -> None:
    """On response start: add X-Request-ID, count the request, observe latency, write the access log line."""
    if message["type"] != "http.response.start" or scope["type"] != "http":
        return
    context = _context(scope)
    message["headers"] = [*message.get("headers", ()), (b"x-request-id", context["request_id"].encode())]
    app_state = scope["litestar_app"].state  # type: ignore[typeddict-item]
    services: Services | None = getattr(app_state, "services", None)
    if services is None:
        return
    route, method, status = _route(scope), scope.get("method", ""), message["status"]
    started = context.get("started")
    elapsed = None if started is None else time.perf_counter() - started
    services.metrics.observe_request(method, route, status, elapsed)
    access_log = services.settings.access_log
    if access_log == "off" or (access_log == "errors" and status < 400):
        return
    services.logger.info(
        "request",
        request_id=context["request_id"],
        method=method,
        route=route,
        status=status,
        duration_ms=None if elapsed is None else round(elapsed * 1000, 2),
    )
