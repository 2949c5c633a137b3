"""Serving ``create_app`` with uvicorn: read deadlines on headers and bodies, a send deadline, keep-alive limit,
WORKERS processes.

uvicorn (h11) has a keep-alive timeout but no deadline for a request that is being received, nor for a response
that the client does not read: a client that sends half its headers, or a body one byte at a time, holds the
connection (and, for a body, a task) forever, and one that never reads a long response holds its buffered
chunks. ``TimedH11Protocol`` adds deadlines per request (a pipelined request gets its own when it becomes the
current one) and one per stalled write:

=================== ======================================================================================
``HEADER_TIMEOUT_S`` the request line and headers must be complete this long after the request's first byte
                     (for a fresh connection: after it opened; for a pipelined request: after the previous
                     response); past it the connection is closed
``BODY_TIMEOUT_S``   the body's grace period after the headers; with ``MIN_BODY_RATE`` the body must be
                     complete by ``BODY_TIMEOUT_S + bytes received / MIN_BODY_RATE`` after the headers, so a
                     large upload at a fair rate is never cut and a stalled one is cut after the grace period.
                     Time in which the server itself stopped reading (the app not consuming) is not counted.
                     A cut body is answered ``408`` problem+json (then the connection closes); the app sees
                     ``http.disconnect`` and the edge counts the request as 408
``SEND_TIMEOUT_S``   a response that cannot be written because the client does not read (the transport's
                     buffer above its high-water mark) drops the connection after this long
=================== ======================================================================================

A request that arrives whole in one read, the usual case, arms no timer after the connection's first one.
``KEEPALIVE_TIMEOUT_S`` is uvicorn's own idle keep-alive limit. With ``WORKERS`` > 1 uvicorn runs that many
processes on one socket, each building its app with ``create_app()`` from the same environment.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

import h11
import msgspec
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.supervisors import Multiprocess

from service.config.settings import Settings

__all__ = ["ServerConfig", "TimedH11Protocol", "serve"]

# After answering 408 the connection keeps reading (and discarding) this long before it closes: closing a
# socket with unread input resets it, and the reset can destroy the 408 before the client has read it.
_LINGER_S = 2.0


def _body_timeout_problem(path: str) -> tuple[bytes, str]:
    """The 408 problem+json body for a cut upload of ``path`` and the scope extension that marks the cut."""
    # Imported here, not at the top: a WORKERS child unpickles its config, importing this module, before it
    # answers uvicorn's 5 s health pings; the app's modules would make a loaded machine miss them.
    from service.http.body import BODY_TIMEOUT_DETAIL, CUT_STATUS_EXTENSION, BodyTimeoutError
    from service.http.problems import problem_from_exception

    problem, _ = problem_from_exception(BodyTimeoutError(BODY_TIMEOUT_DETAIL), instance=path)
    return msgspec.json.encode(problem), CUT_STATUS_EXTENSION


# What a request h11 cannot parse is told (400 problem+json); uvicorn's own answer is text/plain
_UNPARSABLE_DETAIL = (
    "the request is not valid HTTP/1.1 (request line, headers or framing, e.g. conflicting Content-Length "
    "headers), so it was not read"
)


def _unparsable_problem() -> bytes:
    from service.errors import BadRequestError  # imported here for the reason given in _body_timeout_problem
    from service.http.problems import problem_from_exception

    problem, _ = problem_from_exception(BadRequestError(_UNPARSABLE_DETAIL), instance=None)
    return msgspec.json.encode(problem)


class ServerConfig(uvicorn.Config):
    """uvicorn's Config plus the deadlines the protocol reads (it is pickled to worker processes)."""

    def __init__(
        self,
        app: Any,
        *,
        header_timeout_s: float,
        body_timeout_s: float,
        min_body_rate: float = 50_000,
        send_timeout_s: float = 30.0,
        **options: Any,
    ) -> None:
        super().__init__(app, **options)
        self.header_timeout_s = header_timeout_s
        self.body_timeout_s = body_timeout_s
        self.min_body_rate = min_body_rate
        self.send_timeout_s = send_timeout_s


class TimedH11Protocol(H11Protocol):
    """H11Protocol with per-request header and body deadlines and a send deadline (module docstring)."""

    def __init__(self, config: uvicorn.Config, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self._header_timeout_s = float(getattr(config, "header_timeout_s", 10.0))
        self._body_timeout_s = float(getattr(config, "body_timeout_s", 30.0))
        self._min_body_rate = float(getattr(config, "min_body_rate", 50_000))
        self._send_timeout_s = float(getattr(config, "send_timeout_s", 30.0))
        self._read_timer: asyncio.TimerHandle | None = None
        self._reading: str | None = None  # "headers" / "body" while a read deadline is armed
        self._armed_at = 0.0  # loop time the read timer was armed
        self._body_started = 0.0  # loop time the current body's grace period started
        self._body_bytes = 0  # bytes received for the current body (after the read that ended its headers)
        self._write_timer: asyncio.TimerHandle | None = None
        self._linger_timer: asyncio.TimerHandle | None = None
        self._answered_408 = False  # then what the client still sends is discarded until the close

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm("headers", self._header_timeout_s)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        for timer in (self._write_timer, self._linger_timer):
            if timer is not None:
                timer.cancel()
        self._write_timer = self._linger_timer = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._answered_408:
            return
        super().data_received(data)
        if self._reading == "body":
            self._body_bytes += len(data)
        self._follow_request(response_done=False)

    def on_response_complete(self) -> None:
        super().on_response_complete()  # may start the next pipelined request, whose bytes are already here
        self._follow_request(response_done=True)

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._write_timer is None:
            self._write_timer = self.loop.call_later(self._send_timeout_s, self._send_expired)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._write_timer is not None:
            self._write_timer.cancel()
            self._write_timer = None

    def _follow_request(self, *, response_done: bool) -> None:
        """Arm the deadline of the phase the current request is in (the next one's, for a pipelined request)."""
        if self.transport.is_closing():
            self._disarm()
            return
        state = self.conn.their_state
        if state is h11.IDLE:
            if response_done and not self.conn.trailing_data[0]:
                self._disarm()  # idle between requests: uvicorn's keep-alive timer runs until the next byte
            elif self._reading != "headers":
                self._arm("headers", self._header_timeout_s)
        elif state is h11.SEND_BODY:
            if self._reading != "body":
                self._body_started = self.loop.time()
                self._body_bytes = 0
                self._arm("body", self._body_timeout_s)
        elif self._reading is not None:
            self._disarm()  # the request is whole: answering it takes what it takes

    def _arm(self, phase: str, seconds: float) -> None:
        self._disarm()
        self._reading = phase
        self._armed_at = self.loop.time()
        self._read_timer = self.loop.call_later(seconds, self._expire, phase)

    def _disarm(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None
        self._reading = None

    def _expire(self, phase: str) -> None:
        self._read_timer = None
        if self._reading != phase or self.transport.is_closing():
            return
        if phase == "body":
            now = self.loop.time()
            if self.flow.read_paused:  # the server held the body back (the app not reading): not the client's time
                self._body_started += now - self._armed_at
            deadline = self._body_started + self._body_timeout_s + self._body_bytes / self._min_body_rate
            if now < deadline:
                self._arm("body", deadline - now)
                return
            self._reading = None
            self._cut_body()
            return
        self._reading = None
        self.logger.info("closing a connection whose request %s did not arrive in time", phase)
        self.transport.close()

    def _cut_body(self) -> None:
        """Answer 408 problem+json for a late body (unless an answer has started), tell the app, then close."""
        cycle = self.cycle
        if cycle is None or cycle.response_started or cycle.disconnected:
            self.logger.info("closing a connection whose request body did not arrive in time")
            self.transport.close()
            return
        self.logger.info("answering 408 to a request whose body did not arrive in time")
        body, extension = _body_timeout_problem(cycle.scope["path"])
        headers = [
            (b"content-type", b"application/problem+json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        try:
            output = self.conn.send(h11.Response(status_code=408, headers=headers, reason=b"Request Timeout"))
            output = (output or b"") + (self.conn.send(h11.Data(data=body)) or b"")
            output += self.conn.send(h11.EndOfMessage()) or b""
        except h11.LocalProtocolError:
            self.transport.close()
            return
        # our own extension key holds the status (service.http.body reads it); uvicorn types values as dicts
        extensions = cast(dict[str, object], cycle.scope.setdefault("extensions", {}))
        extensions[extension] = 408
        cycle.disconnected = True  # the app's receive answers http.disconnect; what it sends is dropped
        cycle.message_event.set()
        self._answered_408 = True
        self.transport.write(output)
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self._linger_timer = self.loop.call_later(_LINGER_S, self.transport.close)

    def send_400_response(self, msg: str) -> None:
        """A request h11 refused: 400 problem+json (uvicorn's text/plain otherwise), then close. ``msg`` is
        uvicorn's fixed "Invalid HTTP request received."; the parser's reason is not echoed to the client."""
        body = _unparsable_problem()
        headers = [
            (b"content-type", b"application/problem+json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        try:
            output = self.conn.send(h11.Response(status_code=400, headers=headers, reason=b"Bad Request"))
            output = (output or b"") + (self.conn.send(h11.Data(data=body)) or b"")
            output += self.conn.send(h11.EndOfMessage()) or b""
        except h11.LocalProtocolError:  # h11 cannot answer in this state: uvicorn's own way
            super().send_400_response(msg)
            return
        self.transport.write(output)
        self.transport.close()

    def _send_expired(self) -> None:
        self._write_timer = None
        self.logger.info(
            "dropping a connection whose client did not read its response for %.1f s", self._send_timeout_s
        )
        self.transport.abort()  # close() would wait for the buffer to drain, which is the wait being ended


def server_config(settings: Settings, app: Any) -> ServerConfig:
    """The uvicorn config for ``settings``: WORKERS processes build the app from the environment themselves."""
    limits = settings.limits
    workers = limits.workers
    return ServerConfig(
        "service.http.app:create_app" if workers > 1 else app,
        factory=workers > 1,
        host=settings.host,
        port=settings.port,
        workers=workers,
        http=TimedH11Protocol,
        timeout_keep_alive=max(1, round(limits.keepalive_timeout_s)),
        header_timeout_s=limits.header_timeout_s,
        body_timeout_s=limits.body_timeout_s,
        min_body_rate=limits.min_body_rate,
        send_timeout_s=limits.send_timeout_s,
        log_config=None,  # uvicorn's own text logs stay off; the app writes JSON lines
        access_log=False,
    )


def serve(settings: Settings, app: Any) -> None:
    """Run until interrupted: one process, or WORKERS processes sharing the listening socket."""
    config = server_config(settings, app)
    if config.workers > 1:
        Multiprocess(config, sockets=[config.bind_socket()]).run()
    else:
        uvicorn.Server(config).run()
