"""Request bodies: JSON only, decoded once, strictly, into the route's wire type.

Litestar's own path decodes a body into Python objects and then converts them with ``strict=False`` (so
``"alpha": "0.1"`` was accepted by /v1/score while the same item in a batch was refused), parses any
Content-Type as JSON, and lets a deeply nested value reach a ``RecursionError`` (a 500). ``JSONRequest``
replaces the one step Litestar delegates to the request class (``Request.json``):

* the Content-Type must be ``application/json`` or ``application/<anything>+json`` (parameters such as
  ``charset`` allowed), else 415 problem+json: a cross-site ``text/plain`` form post never reaches a handler;
* the body is decoded by the strict ``msgspec.json.Decoder`` the route holds in ``opt["body_decoder"]`` (a
  ``BodyDecoder``, built once), so every endpoint has the same types: a string where a number belongs is a 422;
* nesting is bounded by the wire types (at most four levels); a value nested where the type expects a scalar
  fails at its first token (422), and a value nested too deep inside a span the decoder skips (a batch item)
  is answered 400 ``bad-request`` by the decoder's recursion guard, never a 500;
* duplicate object keys: the last occurrence wins, in every endpoint (msgspec's rule; documented in the README).
* a number with a zero fraction is that integer: ``"judge_score": 4.0`` is 4, as JSON (and JSON Schema's
  ``integer``) reads it; ``4.5`` where an integer belongs stays a 422 (``service.wire.decoding``, in every endpoint and
  in batch and job items alike).
* an empty body where the route needs one is a 400 that says so (Litestar would report the missing
  ``data`` argument as "data: 'data'");
* a client that leaves while its body is read is ``ClientClosedRequestError`` (499 "client closed request",
  logged and counted as such, never a 500; nobody is there to read the answer).

The decoded Struct goes back to Litestar, whose ``msgspec.convert`` passes an instance of the target type
through unchanged. Routes without ``opt["body_decoder"]`` keep Litestar's default behaviour.
"""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request
from litestar.exceptions import InternalServerException
from litestar.types import Empty

from service.errors import BadRequestError, ServiceProblem, UnsupportedMediaTypeError
from service.observability.logging import current_request
from service.wire.decoding import decode_wire_json

__all__ = [
    "BODY_DECODER",
    "BODY_TIMEOUT_DETAIL",
    "CUT_STATUS_EXTENSION",
    "EMPTY_BODY_DETAIL",
    "BodyDecoder",
    "BodyTimeoutError",
    "ClientClosedRequestError",
    "JSONRequest",
    "decode_json_body",
    "is_json_media_type",
]

BODY_DECODER = "body_decoder"  # the key in a route's ``opt`` holding its BodyDecoder
# The ASGI scope extension in which the server protocol (service.http.server) records that it answered a request
# itself (408 for a body cut for lateness): the app only sees ``http.disconnect``, the edge counts this status.
CUT_STATUS_EXTENSION = "conformal_judge.cut_status"
BODY_TIMEOUT_DETAIL = (
    "the request body did not arrive in time: it must start within BODY_TIMEOUT_S of the headers and then "
    "keep up at least MIN_BODY_RATE bytes a second on average"
)
EMPTY_BODY_DETAIL = (
    "the request body is empty: send a JSON object (Content-Type: application/json) with the fields this "
    "operation takes (see /schema/openapi.json)"
)


class ClientClosedRequestError(ServiceProblem):
    """The client disconnected before its request body arrived whole (499, nginx's "client closed request")."""

    status = 499
    slug = "client-closed-request"
    title = "Client closed request"


class BodyTimeoutError(ServiceProblem):
    """The request body did not arrive in time (408); written by the server protocol (``service.http.server``)."""

    status = 408
    slug = "body-timeout"
    title = "Request body timeout"


class BodyDecoder:
    """A strict ``msgspec.json.Decoder`` for one wire type, built once; shared, never copied.

    Litestar deep-copies route options when it registers a router; a Decoder cannot be copied (nor needs to be).
    """

    def __init__(self, type_: Any) -> None:
        self.decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(type_)
        self.body_optional = _accepts_null(self.decoder)  # ``ReloadRequest | None``: an empty body is allowed

    def __deepcopy__(self, memo: dict[int, Any]) -> BodyDecoder:
        return self

    def decode(self, body: bytes) -> Any:
        """``decode_json_body`` with this decoder."""
        return decode_json_body(self.decoder, body)


def _accepts_null(decoder: msgspec.json.Decoder[Any]) -> bool:
    try:
        decoder.decode(b"null")
    except msgspec.ValidationError:
        return False
    return True


def is_json_media_type(content_type: str | None) -> bool:
    """True for ``application/json`` and ``application/*+json``, parameters ignored, case-insensitive."""
    if content_type == "application/json":  # what nearly every client sends: no parsing
        return True
    if not content_type:
        return False
    media = content_type.partition(";")[0].strip().lower()
    kind, _, subtype = media.partition("/")
    return kind == "application" and (subtype == "json" or subtype.endswith("+json"))


def decode_json_body(decoder: msgspec.json.Decoder[Any], body: bytes) -> Any:
    """Decode ``body`` with ``decoder``: ValidationError (422) passes through; malformed or too deep -> 400."""
    try:
        return decode_wire_json(decoder, body)
    except msgspec.ValidationError:
        raise
    except msgspec.DecodeError as error:
        raise BadRequestError(f"malformed JSON: {error}") from None
    except RecursionError:
        raise BadRequestError("the JSON is nested too deeply; request bodies nest at most a few levels") from None


def _content_type(scope: Any) -> str | None:
    for name, value in scope["headers"]:
        if name == b"content-type":
            return value.decode("latin-1")
    return None


class JSONRequest(Request):
    """Litestar's Request whose ``json()`` enforces a JSON Content-Type and decodes strictly (module docstring)."""

    async def stream(self) -> Any:
        """Litestar's body stream; a client that disconnects meanwhile is ``ClientClosedRequestError`` (499)."""
        try:
            async for chunk in super().stream():
                yield chunk
        except InternalServerException:
            self._raise_if_client_left()
            raise

    def _raise_if_client_left(self) -> None:
        """Called on Litestar's "client disconnected" error: 408 for a body the server cut (it has answered
        already), 499 for a client that left; returns when the client is still there (a real error)."""
        context = current_request.get()
        if context is None or not context.client_gone:  # set by service.http.edge on ``http.disconnect``
            return
        if (self.scope.get("extensions") or {}).get(CUT_STATUS_EXTENSION) == BodyTimeoutError.status:
            raise BodyTimeoutError(BODY_TIMEOUT_DETAIL) from None
        raise ClientClosedRequestError("the client disconnected before its request body arrived") from None

    async def body(self) -> bytes:
        """The whole body; 400 with a clear detail when it is empty on a route that needs a JSON body.

        Litestar's ``body()`` with the disconnect mapping of ``stream()``, read from Litestar's own stream: not
        through the ``stream()`` override, whose extra async-generator layer costs every request a few
        microseconds (each chunk passes two generators, and asyncio registers each generator it starts)."""
        body = self._body
        if body is Empty:
            body = self._connection_state.body
            if body is Empty:
                try:
                    body = b"".join([chunk async for chunk in Request.stream(self)])
                except InternalServerException:
                    self._raise_if_client_left()
                    raise
                self._connection_state.body = body
            self._body = body
        if not body:
            handler = self.scope.get("route_handler")
            decoder = handler.opt.get(BODY_DECODER) if handler is not None else None
            if decoder is not None and not decoder.body_optional:
                raise BadRequestError(EMPTY_BODY_DETAIL)
        return body

    async def json(self) -> Any:
        """The body decoded by the route's decoder; 415 for a non-JSON Content-Type, 400/422 for a bad body."""
        decoder = self.route_handler.opt.get(BODY_DECODER)
        if decoder is None:
            return await super().json()
        content_type = _content_type(self.scope)
        if not is_json_media_type(content_type):
            raise UnsupportedMediaTypeError(
                f"the request body must be JSON: send 'Content-Type: application/json' (got {content_type!r})"
            )
        return decoder.decode(await self.body())
