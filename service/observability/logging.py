"""Structured JSON logs for one app: a structlog logger and the per-request access log, on one stream.

Both are built per app (``make_logs``) instead of configuring structlog globally, so two apps in one process
(tests) do not fight over the configuration. Each line is one JSON object with sorted keys: ``timestamp``
(ISO 8601, UTC, microseconds, ``Z``), ``level``, ``event``, and the request's ``request_id`` and ``route``
when the line is written while a request is being answered.

=================== =========================================================================================
part                role
=================== =========================================================================================
``AppLogs.logger``  structlog logger for events (``calibration.loaded``, ``request.problem``, judge retries)
``AppLogs.sink``    ``JsonLineSink``: the stream both write to. DEBUG and INFO lines wait up to LOG_FLUSH_MS
                    (default 100 ms) and leave in one write; a WARNING or ERROR line leaves at once with
                    every line before it, so order is kept and problems are never held back (a write and a
                    flush per line would be two system calls a request).
``AppLogs.access``  ``AccessLog``: an ``event: "request"`` line per answered request that ACCESS_LOG selects
                    (``errors``, the default: status >= 400; ``all``; ``off``); written without structlog's
                    processor chain, which costs about 14 us a line against 2 us for the same line written
                    directly (measured); the line's keys, their order and the encoding are the logger's
``RequestContext``  the request id and route of the request being answered, held in a ``ContextVar`` that
                    the outermost ASGI layer sets; every logger line written inside the request carries them
``library_logs``    the libraries' stdlib ``logging`` records (SAQ, uvicorn, redis, asyncio) at WARNING and
                    above as lines of the same logger (``event: "library.log"``, ``logger``, ``message``, a
                    traceback as one ``exception`` string), so the process writes JSON lines only; installed on
                    the root logger by the API's lifespan and by the worker while they run
=================== =========================================================================================

What is never logged: API keys, the Authorization header, documents, summaries, candidate texts and the
judge's prompts. Request logs carry sizes and names only.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import IO, Any, Protocol

import msgspec
import structlog
from structlog.typing import EventDict

__all__ = [
    "ACCESS_LOG_MODES",
    "REQUEST_ID_HEADER",
    "AccessLog",
    "AppLogs",
    "JsonLineSink",
    "RequestContext",
    "RequestIds",
    "current_request",
    "library_logs",
    "make_logs",
    "request_id_from",
]

REQUEST_ID_HEADER = "x-request-id"
ACCESS_LOG_MODES = ("all", "errors", "off")
_LEVELS = {"DEBUG": 10, "INFO": 20, "WARNING": 30, "ERROR": 40}
# An incoming id is echoed only when it is short and plain, so a header cannot inject into logs.
_SAFE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")  # matched with fullmatch: "$" would let a final newline in


class RequestIds:
    """Fresh request ids: 32 hex digits, a random 64-bit prefix per source and a counter.

    Unique within a source and, with a random prefix, across processes; cheaper than 16 random bytes a request
    (a system call each). An id names a request; it is not a secret.
    """

    def __init__(self) -> None:
        self._prefix = os.urandom(8).hex()
        self._count = itertools.count(1)

    def next(self) -> str:
        """The next id."""
        return f"{self._prefix}{next(self._count):016x}"


def request_id_from(header_value: str | None, ids: RequestIds | None = None) -> str:
    """The caller's X-Request-ID when it is 1-128 of [A-Za-z0-9._:-], else a fresh id (from ``ids``, or random)."""
    if header_value and _SAFE_ID.fullmatch(header_value):
        return header_value
    return ids.next() if ids is not None else os.urandom(16).hex()


class RequestContext(msgspec.Struct, kw_only=True):
    """The request being answered: its id, start (``time.perf_counter``), ASGI scope and final status."""

    request_id: str
    started: float
    scope: Any
    status: int | None = None
    client_gone: bool = False  # the app was told ``http.disconnect`` (a client that left, or a cut upload)

    @property
    def route(self) -> str:
        """The matched path template (``/v1/score``), or ``<unmatched>`` before routing or for a 404."""
        return self.scope.get("path_template") or "<unmatched>"


# A ContextVar is per task, not shared state: each request's task sees the context its ASGI call set.
current_request: ContextVar[RequestContext | None] = ContextVar("conformal_judge_request", default=None)


class _UtcClock:
    """ISO 8601 UTC timestamps with microseconds; the date-time prefix is formatted once per second."""

    __slots__ = ("_prefix", "_second")

    def __init__(self) -> None:
        self._second = -1
        self._prefix = ""

    def now(self) -> str:
        """The current time as ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (what structlog's ISO UTC stamper writes)."""
        now_us = time.time_ns() // 1000
        second = now_us // 1_000_000
        if second != self._second:
            self._second = second
            self._prefix = time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(second))
        return f"{self._prefix}{now_us % 1_000_000:06d}Z"


class JsonLineSink:
    """JSON lines to a text stream: INFO and below buffered up to ``flush_interval_s``, WARNING and up at once.

    The buffer is flushed by a timer on the running event loop, when it holds ``max_pending`` lines, when a
    WARNING or ERROR line arrives (after the lines before it), on ``flush()`` (the app's shutdown) and at once
    when no event loop runs in the writing thread. ``flush_interval_s = 0`` writes every line at once. A lock
    guards the buffer, because ``flush()`` may come from another thread (a test client's).
    """

    def __init__(self, stream: IO[str] | None, *, flush_interval_s: float = 0.1, max_pending: int = 512) -> None:
        self._stream = stream
        self._interval = flush_interval_s
        self._max_pending = max_pending
        self._pending: list[str] = []
        self._timer_set = False
        self._lock = threading.Lock()

    def write(self, line: str) -> None:
        """Write ``line`` now, after any buffered lines."""
        with self._lock:
            self._pending.append(line)
            self._drain()

    def buffer(self, line: str) -> None:
        """Queue ``line``; it is written within ``flush_interval_s`` (or at once, see the class docstring)."""
        with self._lock:
            self._pending.append(line)
            if self._interval <= 0 or len(self._pending) >= self._max_pending:
                self._drain()
                return
            if self._timer_set:
                return
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self._drain()
                return
            self._timer_set = True
            loop.call_later(self._interval, self._on_timer)

    def flush(self) -> None:
        """Write every buffered line now (a timer still pending finds nothing to write)."""
        with self._lock:
            self._timer_set = False  # a timer on a loop that has since stopped must not block the next one
            self._drain()

    def _on_timer(self) -> None:
        with self._lock:
            self._timer_set = False
            self._drain()

    def _drain(self) -> None:
        if not self._pending:
            return
        text = "\n".join(self._pending) + "\n"
        self._pending.clear()
        stream = self._stream if self._stream is not None else sys.stderr  # stderr as it is at write time
        stream.write(text)
        stream.flush()

    # structlog calls the method named after the level on the wrapped logger.
    def msg(self, message: str) -> None:
        """structlog's entry point for DEBUG and INFO lines (buffered)."""
        self.buffer(message)

    def urgent(self, message: str) -> None:
        """structlog's entry point for WARNING and above (written at once)."""
        self.write(message)

    debug = info = log = msg
    warning = warn = error = critical = exception = fatal = urgent


class AccessLog:
    """One JSON line per answered request, as selected by ACCESS_LOG (all | errors | off) and LOG_LEVEL."""

    def __init__(self, mode: str, level: str, sink: JsonLineSink, clock: _UtcClock, encoder: msgspec.json.Encoder):
        if mode not in ACCESS_LOG_MODES:
            raise ValueError(f"access log mode must be one of {ACCESS_LOG_MODES}, not {mode!r}")
        self._min_status = {"all": 0, "errors": 400, "off": 1000}[mode]
        if _LEVELS.get(level.upper(), 20) > _LEVELS["INFO"]:  # access lines are INFO
            self._min_status = 1000
        self._sink = sink
        self._clock = clock
        self._encoder = encoder
        self._texts: dict[str, str] = {}

    def record(self, context: RequestContext, method: str, status: int, elapsed_s: float) -> None:
        """Queue the access line of one answered request (when the mode selects its status)."""
        if status < self._min_status:
            return
        # Formatted directly, keys sorted as the logger sorts them: the request id is plain by construction
        # ([A-Za-z0-9._:-], see request_id_from), the timestamp and numbers are ours, and the method and route
        # go through the JSON encoder once each (a handful of distinct values) - a third of the cost of encoding
        # a whole object per request.
        self._sink.buffer(
            f'{{"duration_ms":{int(elapsed_s * 100_000 + 0.5) / 100},"event":"request","level":"info",'
            f'"method":{self._json_text(method)},"request_id":"{context.request_id}",'
            f'"route":{self._json_text(context.route)},"status":{status},"timestamp":"{self._clock.now()}"}}'
        )

    def _json_text(self, value: str) -> str:
        """``value`` as a JSON string literal, remembered (methods and route templates are few)."""
        text = self._texts.get(value)
        if text is None:
            text = self._encoder.encode(value).decode()
            if len(self._texts) < 1024:
                self._texts[value] = text
        return text


class EventLogger(Protocol):
    """What the service's code asks of a logger: an event name and its fields, at a level (the structlog logger
    ``make_logs`` builds is one; so is structlog's default)."""

    def debug(self, event: str, /, **fields: Any) -> Any: ...
    def info(self, event: str, /, **fields: Any) -> Any: ...
    def warning(self, event: str, /, **fields: Any) -> Any: ...
    def error(self, event: str, /, **fields: Any) -> Any: ...


@dataclass(frozen=True, kw_only=True)
class AppLogs:
    """The app's structlog ``logger`` and its ``access`` log, writing to the same ``sink``."""

    logger: EventLogger
    access: AccessLog
    sink: JsonLineSink

    def flush(self) -> None:
        """Write every buffered line now (the app's shutdown calls this)."""
        self.sink.flush()


def make_logs(
    level: str = "INFO", stream: IO[str] | None = None, *, access_log: str = "errors", flush_interval_s: float = 0.1
) -> AppLogs:
    """The app's logger (lines at ``level`` and above) and access log, writing JSON lines to ``stream``."""
    threshold = _LEVELS.get(level.upper(), 20)
    clock = _UtcClock()
    encoder = msgspec.json.Encoder(enc_hook=repr, order="sorted")
    sink = JsonLineSink(stream, flush_interval_s=flush_interval_s)

    def drop_below(_: Any, method_name: str, event_dict: EventDict) -> EventDict:
        if _LEVELS.get(method_name.upper(), 20) < threshold:
            raise structlog.DropEvent
        return event_dict

    def add_request(_: Any, __: str, event_dict: EventDict) -> EventDict:
        context = current_request.get()
        if context is not None:
            event_dict.setdefault("request_id", context.request_id)
            event_dict.setdefault("route", context.route)
        return event_dict

    def add_timestamp(_: Any, __: str, event_dict: EventDict) -> EventDict:
        event_dict["timestamp"] = clock.now()
        return event_dict

    def render(_: Any, __: str, event_dict: EventDict) -> str:
        return encoder.encode(event_dict).decode()

    logger = structlog.wrap_logger(
        sink,
        processors=[
            drop_below,
            add_request,
            structlog.processors.add_log_level,
            add_timestamp,
            structlog.processors.format_exc_info,
            render,
        ],
        context_class=dict,
    )
    return AppLogs(logger=logger, access=AccessLog(access_log, level, sink, clock, encoder), sink=sink)


class _LibraryRecords(logging.Handler):
    """stdlib ``logging`` records as JSON lines of a structlog ``logger`` (see the module table)."""

    def __init__(self, logger: Any, level: int) -> None:
        super().__init__(level)
        self._logger = logger

    def emit(self, record: logging.LogRecord) -> None:
        try:
            method = getattr(self._logger, record.levelname.lower(), self._logger.error)
            fields: dict[str, Any] = {"logger": record.name, "message": record.getMessage()}
            if record.exc_info:
                fields["exc_info"] = record.exc_info  # rendered by format_exc_info as one "exception" string
            method("library.log", **fields)
        except Exception:  # noqa: BLE001 - logging must not raise into the library that logged
            self.handleError(record)


@contextlib.contextmanager
def library_logs(logger: Any, level: int = logging.WARNING) -> Iterator[None]:
    """While inside: the process's stdlib log records at ``level`` and above are written by ``logger`` (JSON)
    instead of Python's last-resort handler (plain text, a traceback over many lines)."""
    root = logging.getLogger()
    handler = _LibraryRecords(logger, level)
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)
