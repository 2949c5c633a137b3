"""Structured JSON logs (structlog) for one app, with the request id bound per request.

The logger is built per app (``make_logger``) instead of configuring structlog globally, so two apps in one
process (tests) do not fight over the configuration. Each line is one JSON object with ``timestamp``,
``level``, ``event`` and the request's context (``request_id``, ``method``, ``route``).

What is never logged: API keys, the Authorization header, documents, summaries, candidate texts and the
judge's prompts. Request logs carry sizes and names only.
"""

from __future__ import annotations

import os
import re
import sys
from typing import IO, Any

import msgspec
import structlog

__all__ = ["REQUEST_ID_HEADER", "make_logger", "request_id_from"]

REQUEST_ID_HEADER = "x-request-id"
_LEVELS = {"DEBUG": 10, "INFO": 20, "WARNING": 30, "ERROR": 40}
# An incoming id is echoed only when it is short and plain, so a header cannot inject into logs.
_SAFE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def request_id_from(header_value: str | None) -> str:
    """The caller's X-Request-ID when it is 1-128 of [A-Za-z0-9._:-], else 32 fresh random hex digits."""
    if header_value and _SAFE_ID.match(header_value):
        return header_value
    return os.urandom(16).hex()


def make_logger(level: str = "INFO", stream: IO[str] | None = None) -> Any:
    """A structlog logger writing one JSON object per line to ``stream`` (default stderr) at ``level``+."""
    threshold = _LEVELS.get(level.upper(), 20)

    def drop_below(_: Any, method_name: str, event_dict: dict[str, Any]) -> dict[str, Any]:
        if _LEVELS.get(method_name.upper(), 20) < threshold:
            raise structlog.DropEvent
        return event_dict

    encoder = msgspec.json.Encoder(enc_hook=repr, order="sorted")

    def render(_: Any, __: str, event_dict: dict[str, Any]) -> str:
        return encoder.encode(event_dict).decode()

    return structlog.wrap_logger(
        structlog.PrintLogger(file=stream if stream is not None else sys.stderr),
        processors=[
            drop_below,
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            render,
        ],
        context_class=dict,
    )
