"""A stand-in for Langfuse's public API, for tests only: a real HTTP server on 127.0.0.1 that records every request
the real Langfuse SDK sends and answers as Langfuse does.

======================================  ================================================================
call                                    effect
======================================  ================================================================
``with LangfuseServer() as server``     start on a free port in a thread; stop on exit
``server.base_url``                     ``http://127.0.0.1:<port>``, the SDK's ``base_url``
``server.requests``                     every ``RecordedCall`` (method, path, headers, decoded JSON body)
``server.scores()``                     every score object posted (``POST /api/public/scores`` takes a list
                                        of them; the ``score-create`` events of ``/api/public/ingestion``
                                        are read too, for SDKs that batch through it)
``server.reject_status = 500``          score and ingestion posts get this status (``None``: accepted)
======================================  ================================================================

Answers: ``POST /api/public/scores`` 202 ``{"message": "Accepted"}``; ``POST /api/public/ingestion`` 207 with a
success per event; ``POST /api/public/otel/v1/traces`` 200 (spans are recorded, not decoded); anything else 404.
"""

from __future__ import annotations

import gzip
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["LangfuseServer", "RecordedCall"]


@dataclass(frozen=True)
class RecordedCall:
    """One request the stand-in received: JSON bodies decoded, other bodies kept as bytes."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


class _Handler(BaseHTTPRequestHandler):
    owner: LangfuseServer  # set on the bound subclass
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's parameter name
        """Quiet: the tests read ``requests`` instead."""

    def _reply(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode() if payload is not None else b""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's dispatch name
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("Content-Encoding") == "gzip":
            raw = gzip.decompress(raw)
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        path = self.path.split("?", 1)[0]
        owner = self.owner
        with owner.lock:
            owner.requests.append(RecordedCall("POST", path, {k.lower(): v for k, v in self.headers.items()}, body))
            rejected = owner.reject_status
        if path.endswith("/otel/v1/traces"):
            self._reply(200, {})
        elif path in ("/api/public/scores", "/api/public/ingestion") and rejected is not None:
            self._reply(rejected, {"message": "rejected by the test"})
        elif path == "/api/public/scores":
            self._reply(202, {"message": "Accepted"})
        elif path == "/api/public/ingestion":
            events = body.get("batch", []) if isinstance(body, dict) else []
            self._reply(207, {"successes": [{"id": e.get("id"), "status": 201} for e in events], "errors": []})
        else:
            self._reply(404, {"message": f"no route {path}"})

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's dispatch name
        with self.owner.lock:
            self.owner.requests.append(RecordedCall("GET", self.path, dict(self.headers.items()), None))
        self._reply(404, {"message": f"no route {self.path}"})


class LangfuseServer:
    """The stand-in; see the module docstring. Use as a context manager."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[RecordedCall] = []
        self.reject_status: int | None = None
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        assert self._httpd is not None, "not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def scores(self) -> list[dict[str, Any]]:
        """Every score object received, in arrival order."""
        found: list[dict[str, Any]] = []
        with self.lock:
            calls = list(self.requests)
        for call in calls:
            if call.path == "/api/public/scores":
                found.extend(call.body if isinstance(call.body, list) else [call.body])
            elif call.path == "/api/public/ingestion" and isinstance(call.body, dict):
                found.extend(e["body"] for e in call.body.get("batch", []) if e.get("type") == "score-create")
        return found

    def __enter__(self) -> LangfuseServer:
        handler = type("_BoundHandler", (_Handler,), {"owner": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="langfuse-stand-in", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
