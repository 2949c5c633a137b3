"""The outermost HTTP layer: what every request gets, whatever route it reaches (404s included).

``Edge`` is a plain ASGI application composed around the Litestar app (``Edge(inner=litestar_app, ...)``).
Lifespan and websocket calls go straight to ``inner``; each HTTP call gets, in this order:

1. a ``RequestContext``: the caller's ``X-Request-ID`` (when plain, else a fresh id) and the start time, set
   in ``service.observability.logging.current_request`` so every log line of the request carries the id;
2. when API_KEYS is set, the API key (``check_api_key``) on every path except the few public ones
   (``PUBLIC_PATHS``: health, metrics, the spec), and those only on their canonical spelling; a missing or
   unknown key is answered here with a 401 problem+json, before routing, so an unauthenticated caller learns
   nothing about the routes;
3. the inner app; its response start gets the ``X-Request-ID`` header, and an automatic OPTIONS answer gets the
   ``Allow`` list of its route from the route table (``allow_table``: HEAD wherever GET is); a HEAD request is
   routed as GET and answered with GET's status and headers (``Content-Length`` included) and no body (RFC 9110
   9.3.2), so HEAD works on every GET route and is a 405 with the route's ``Allow`` elsewhere;
4. afterwards: request count and latency (``cj_http_*`` metrics) and the access log line. A request whose client
   left before any answer is counted with status 499 ("client closed request"), not 500; one whose body the
   server cut for lateness (``service.http.server``, which answered 408 itself) with 408.

With tracing on (``service.observability.tracing``) the whole of it runs inside OpenTelemetry's ASGI middleware,
so every request, refused and unrouted ones included, gets one server span, named by its route afterwards.

One wrapper instead of a Litestar middleware plus a ``before_send`` hook: the pair cost about 19 us a request,
two thirds of a bare Litestar echo endpoint (measured in-process, see ``bench/bench_service.py``).

Deny by default, not "check /v1": the router collapses repeated slashes and drops a trailing one, and uvicorn
decodes ``%2F``, so ``//v1/score`` or ``/%2Fv1/score`` reach ``/v1/score`` while not starting with ``/v1/``.
A short allow-list matched exactly against both the decoded and the raw path cannot be spelled around: any
other spelling of a public path merely needs a key too.

OPTIONS: Litestar answers OPTIONS on every route with 204 and an ``Allow`` header, but where two handlers share a
path (``GET`` and ``DELETE /v1/jobs/{job_id}``) the answering handler is the one built with the path's first
handler, and its ``Allow`` names only that handler's methods. The router has matched the request by then (every
spelling of the path included) and left the route's template in the scope (``path_template``), so the edge sets
``Allow`` from the final route table (``Litestar.routes``, each route's ``methods``) on the way out. The
asterisk-form target is answered by the edge itself, after the key check: ``OPTIONS *`` with 204 and the methods of
every route (``server_allow``), any other method on ``*`` with a 400 problem.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import msgspec
from litestar import Litestar
from litestar.routes import HTTPRoute
from litestar.types import HTTPScope, Message, ReceiveMessage, Scope, Send

from service.errors import BadRequestError, ServiceProblem, UnauthorizedError
from service.http.auth import check_api_key
from service.http.body import CUT_STATUS_EXTENSION, ClientClosedRequestError
from service.http.problems import PROBLEM_MEDIA_TYPE, problem_from_exception
from service.http.services import Services, record_problem
from service.observability.logging import (
    REQUEST_ID_HEADER,
    RequestContext,
    RequestIds,
    current_request,
    request_id_from,
)

__all__ = ["PUBLIC_PATHS", "Edge", "allow_table", "is_public_path", "origin_form"]

# The paths answered without a key when API_KEYS is set (service/http/routes/health.py, the spec's JSON document,
# and its offline HTML page with the page's script: service/http/docs_page.py).
PUBLIC_PATHS = frozenset(
    {
        "/healthz",
        "/readyz",
        "/metrics",
        "/schema",
        "/schema/openapi.json",
        "/schema/redoc",
        "/schema/redoc.standalone.js",
    }
)

_REQUEST_ID_BYTES = REQUEST_ID_HEADER.encode()
_METHODS_WITHOUT_BODY = frozenset({"HEAD"})


def _unanswered_status(context: RequestContext) -> int:
    """The status counted for a request the app never answered: 500, unless its client had left (499) or the
    server cut its body and answered itself (the status it recorded in the scope, 408)."""
    if not context.client_gone:
        return 500
    return int(context.scope.get("extensions", {}).get(CUT_STATUS_EXTENSION, ClientClosedRequestError.status))


def _request_headers(scope: Scope) -> tuple[str | None, str | None]:
    """(X-Request-ID, Authorization) header values, decoded as latin-1; None when absent."""
    request_id = authorization = None
    for name, value in scope["headers"]:
        if name == _REQUEST_ID_BYTES:
            request_id = value.decode("latin-1")
        elif name == b"authorization":
            authorization = value.decode("latin-1")
    return request_id, authorization


def origin_form(scope: Any) -> None:
    """An absolute-form target (``GET http://host/path``, RFC 9112 section 3.2.2: a server MUST accept it) routed as
    its origin form, the path after the authority (``/`` when none); any other target is left as it is. ``raw_path``
    keeps the spelling sent, so a public path written so is not public (``is_public_path``) and needs a key."""
    scheme, separator, rest = scope["path"].partition("://")
    if separator and scheme.lower() in ("http", "https"):
        scope["path"] = rest[rest.find("/") :] if "/" in rest else "/"


def is_public_path(scope: Scope) -> bool:
    """True when the request names a public path exactly as written in ``PUBLIC_PATHS`` (raw and decoded)."""
    path = scope["path"]
    if path not in PUBLIC_PATHS:
        return False
    raw_path = scope.get("raw_path")
    if raw_path is None:
        return True
    return bytes(raw_path).partition(b"?")[0] == path.encode("ascii")  # no %-escapes, no root_path prefix


def _allowed(methods: set[str]) -> set[str]:
    """A route's methods with HEAD wherever GET is (the edge answers HEAD as GET without the body)."""
    return methods | {"HEAD"} if "GET" in methods else methods


def allow_table(app: Litestar) -> dict[str, bytes]:
    """Each HTTP route's path template (as the router writes it in ``scope["path_template"]``) -> its Allow value."""
    return {
        route.path_format: ", ".join(sorted(_allowed(set(route.methods)))).encode("latin-1")
        for route in app.routes
        if isinstance(route, HTTPRoute)
    }


def server_allow(app: Litestar) -> bytes:
    """The Allow value of ``OPTIONS *``: every method some HTTP route answers (HEAD wherever GET is)."""
    methods: set[str] = set()
    for route in app.routes:
        if isinstance(route, HTTPRoute):
            methods |= _allowed(set(route.methods))
    return ", ".join(sorted(methods)).encode("latin-1")


def _with_head_allowed(headers: Any) -> list[tuple[bytes, bytes]]:
    """A 405's ``headers`` with its ``allow`` list sorted, HEAD included wherever GET is."""
    listed = {m.strip() for name, value in headers if name.lower() == b"allow" for m in value.decode().split(",")}
    return _with_allow(headers, ", ".join(sorted(_allowed(listed - {""}))).encode("latin-1"))


def _with_allow(headers: Any, allow: bytes) -> list[tuple[bytes, bytes]]:
    """``headers`` (ASGI pairs) with their ``allow`` header replaced by ``allow``."""
    return [*((name, value) for name, value in headers if name.lower() != b"allow"), (b"allow", allow)]


class Edge:
    """The ASGI application served: request id, API key, metrics and access log around the Litestar app ``inner``.

    ``services`` is the app's ``Services`` (the inner app keeps them on ``inner.state.services`` for the handlers).
    """

    def __init__(self, *, inner: Litestar, services: Services) -> None:
        self.inner = inner
        self.services = services
        self._request_ids = RequestIds()
        self._allow: Mapping[str, bytes] = allow_table(inner)
        self._server_allow = server_allow(inner)
        self._tracing = services.tracing
        self._traced = services.tracing.wrap(self._serve) if services.tracing.enabled else None
        self._keys_required = bool(services.settings.api_keys)  # settings are frozen

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """ASGI entry point: lifespan and websockets go straight to the inner app; HTTP calls are wrapped."""
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        if scope["path"][:1] != "/":
            origin_form(scope)
        if self._traced is not None:
            await self._traced(scope, receive, send)
            return
        await self._serve(scope, receive, send)

    async def _answered_at_edge(self, scope: Any, authorization: str | None, send: Send) -> bool:
        """True when the edge answered the request itself: a missing or wrong API key (401), or the asterisk-form
        target ``*`` (never routed)."""
        services = self.services
        if services.settings.api_keys and not is_public_path(scope):
            try:
                check_api_key(services.settings, authorization)
            except UnauthorizedError as error:
                await _refuse(services, scope, error, send)
                return True
        if scope["path"] == "*":
            await _asterisk(services, scope, self._server_allow, send)
            return True
        return False

    async def _serve(self, scope: Any, receive: Any, send: Any) -> None:
        """One HTTP call: request id, API key, the inner app, then metrics and the access log."""
        raw_id, authorization = _request_headers(scope)
        request_id = request_id_from(raw_id, self._request_ids)
        context = RequestContext(request_id=request_id, started=time.perf_counter(), scope=scope)
        token = current_request.set(context)
        services = self.services
        request_id_header = (b"x-request-id", context.request_id.encode("latin-1"))
        method = scope["method"]
        allow = self._allow
        traced = self._traced is not None
        head = method == "HEAD"

        async def receive_watching() -> ReceiveMessage:
            message = await receive()
            if message["type"] == "http.disconnect":
                context.client_gone = True
            return message

        async def send_with_request_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                context.status = message["status"]
                headers = message.get("headers", ())
                if context.status == 204 and method == "OPTIONS" and scope.get("path_template") in allow:
                    headers = _with_allow(headers, allow[scope["path_template"]])
                elif context.status == 405:  # refused while routing: the router's Allow, HEAD added beside GET
                    headers = _with_head_allowed(headers)
                message["headers"] = [*headers, request_id_header]
                if traced:  # named now: the server span ends with the response body
                    self._tracing.name_request(method, context.route)
            elif head and message["type"] == "http.response.body":
                message = {"type": "http.response.body", "body": b"", "more_body": message.get("more_body", False)}
            await send(message)

        try:
            at_edge = (self._keys_required and not is_public_path(scope)) or scope["path"] == "*"
            if at_edge and await self._answered_at_edge(scope, authorization, send_with_request_id):
                return
            if head:
                scope["method"] = "GET"  # routed as GET; the body is dropped in send_with_request_id
            await self.inner(scope, receive_watching, send_with_request_id)
        finally:
            status = context.status if context.status is not None else _unanswered_status(context)
            elapsed = time.perf_counter() - context.started
            services.metrics.observe_request(method, context.route, status, elapsed)
            services.logs.access.record(context, method, status, elapsed)
            current_request.reset(token)


async def _asterisk(services: Services, scope: HTTPScope, allow: bytes, send: Send) -> None:
    """``OPTIONS *`` (RFC 9110 section 9.3.7: the server as a whole) is 204 with the methods of every route; the
    asterisk-form with any other method is a 400 problem (RFC 9112 section 3.2.4: it is only for OPTIONS)."""
    if scope["method"] == "OPTIONS":
        await send({"type": "http.response.start", "status": 204, "headers": [(b"allow", allow)]})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        return
    error = BadRequestError(f"the target * (asterisk-form) is only for OPTIONS, not {scope['method']}")
    await _refuse(services, scope, error, send)


async def _refuse(services: Services, scope: HTTPScope, error: ServiceProblem, send: Send) -> None:
    """Answer a problem+json without routing (the request never reaches a handler): 401, or a 400 for ``*``."""
    problem, headers = problem_from_exception(error, instance=scope["path"])
    body = msgspec.json.encode(problem)
    record_problem(services, problem, error)
    start: Message = {
        "type": "http.response.start",
        "status": problem.status,
        "headers": [
            (b"content-type", PROBLEM_MEDIA_TYPE.encode()),
            (b"content-length", str(len(body)).encode()),
            *((name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()),
        ],
    }
    await send(start)
    no_body = scope["method"] in _METHODS_WITHOUT_BODY
    await send({"type": "http.response.body", "body": b"" if no_body else body, "more_body": False})
