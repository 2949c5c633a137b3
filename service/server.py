"""Serving ``create_app`` with uvicorn: read timeouts on headers and bodies, keep-alive limit, WORKERS processes.

uvicorn (h11) has a keep-alive timeout but no deadline for a request that is being received: a client that
sends half its headers, or a body one byte at a time, holds the connection (and, for a body, a task) forever.
``TimedH11Protocol`` adds two deadlines per request, measured from the first byte of the request and from the
end of its headers:

=================== ======================================================================================
``HEADER_TIMEOUT_S`` the request line and headers must be complete this long after the request's first byte
                     (for a fresh connection: after it opened)
``BODY_TIMEOUT_S``   the body must be complete this long after the headers
=================== ======================================================================================

Past either, the connection is closed (the app sees ``http.disconnect``). A request that arrives whole in one
read, the usual case, arms no timer after the connection's first one. ``KEEPALIVE_TIMEOUT_S`` is uvicorn's own
idle keep-alive limit. With ``WORKERS`` > 1 uvicorn runs that many processes on one socket, each building its
app with ``create_app()`` from the same environment.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.supervisors import Multiprocess

from service.settings import Settings

__all__ = ["ServerConfig", "TimedH11Protocol", "serve"]


class ServerConfig(uvicorn.Config):
    """uvicorn's Config plus the two read deadlines the protocol reads (it is pickled to worker processes)."""

    def __init__(self, app: Any, *, header_timeout_s: float, body_timeout_s: float, **options: Any) -> None:
        super().__init__(app, **options)
        self.header_timeout_s = header_timeout_s
        self.body_timeout_s = body_timeout_s


class TimedH11Protocol(H11Protocol):
    """H11Protocol with header and body read deadlines (module docstring)."""

    def __init__(self, config: uvicorn.Config, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self._header_timeout_s = float(getattr(config, "header_timeout_s", 10.0))
        self._body_timeout_s = float(getattr(config, "body_timeout_s", 30.0))
        self._read_timer: asyncio.TimerHandle | None = None
        self._reading: str | None = None  # "headers" / "body" while a deadline is armed

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm("headers", self._header_timeout_s)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        state = self.conn.their_state
        if state is h11.IDLE:  # part of the next request's head (or nothing yet): the header deadline runs
            if self._reading != "headers":
                self._arm("headers", self._header_timeout_s)
        elif state is h11.SEND_BODY:
            if self._reading != "body":
                self._arm("body", self._body_timeout_s)
        elif self._reading is not None:
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._disarm()  # idle again: uvicorn's keep-alive timer takes over until the next byte

    def _arm(self, phase: str, seconds: float) -> None:
        self._disarm()
        self._reading = phase
        self._read_timer = self.loop.call_later(seconds, self._expire, phase)

    def _disarm(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None
        self._reading = None

    def _expire(self, phase: str) -> None:
        self._read_timer = None
        if self._reading == phase and not self.transport.is_closing():
            self.logger.info("closing a connection whose request %s did not arrive in time", phase)
            self.transport.close()


def server_config(settings: Settings, app: Any) -> ServerConfig:
    """The uvicorn config for ``settings``: WORKERS processes build the app from the environment themselves."""
    limits = settings.limits
    workers = limits.workers
    return ServerConfig(
        "service.app:create_app" if workers > 1 else app,
        factory=workers > 1,
        host=settings.host,
        port=settings.port,
        workers=workers,
        http=TimedH11Protocol,
        timeout_keep_alive=max(1, round(limits.keepalive_timeout_s)),
        header_timeout_s=limits.header_timeout_s,
        body_timeout_s=limits.body_timeout_s,
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
