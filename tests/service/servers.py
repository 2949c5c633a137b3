"""Real HTTP servers for tests: uvicorn in a thread (the production protocol) and raw requests over a socket.

Start-up is awaited by polling readiness with a generous bound (``STARTUP_BOUND_S``) instead of a fixed short
deadline: on a loaded machine (2 cores, several test runs) importing and starting the service can take
longer than 30 s, and a healthy server must not fail a test for that.
"""

from __future__ import annotations

import io
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import msgspec
import uvicorn

from service.config.settings import Settings
from service.http.app import create_app
from service.http.server import server_config

__all__ = ["STARTUP_BOUND_S", "ServedApp", "free_port", "raw_request", "serve_in_thread", "wait_until_ready"]

STARTUP_BOUND_S = 180.0  # the longest a server may take to answer its readiness path before a test gives up


def free_port() -> int:
    """A TCP port on 127.0.0.1 free at the time of the call."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until_ready(
    url: str,
    *,
    path: str = "/healthz",
    process: subprocess.Popen[bytes] | None = None,
    alive: threading.Thread | None = None,
    bound_s: float = STARTUP_BOUND_S,
) -> bool:
    """Poll ``url + path`` until it answers 200 (True), the process or thread died, or ``bound_s`` passed (False)."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            return False
        if alive is not None and not alive.is_alive():
            return False
        try:
            if httpx.get(url + path, timeout=5).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    return False


@dataclass(frozen=True)
class ServedApp:
    """An app served by uvicorn in a thread: its port, the app and the ``uvicorn.Server`` (its connections)."""

    port: int
    app: Any
    server: uvicorn.Server

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def open_connections(self) -> int:
        """How many connections the server holds open."""
        return len(self.server.server_state.connections)


@contextmanager
def serve_in_thread(settings: Settings, *, logs: io.StringIO | None = None) -> Iterator[ServedApp]:
    """``create_app(settings)`` served by uvicorn with the service's own protocol and deadlines
    (``service.http.server.server_config``) on a free port in a thread."""
    port = free_port()
    settings = msgspec.structs.replace(settings, host="127.0.0.1", port=port)
    app = create_app(settings, log_stream=logs if logs is not None else io.StringIO())
    server = uvicorn.Server(server_config(settings, app))
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    try:
        if not wait_until_ready(f"http://127.0.0.1:{port}", alive=thread):
            raise AssertionError(f"uvicorn did not answer /healthz within {STARTUP_BOUND_S:.0f} s")
        yield ServedApp(port, app, server)
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def raw_request(
    port: int, method: str, target: str, headers: dict[str, str] | None = None, body: bytes = b"", timeout: float = 30
) -> tuple[int, bytes]:
    """Send one request with ``target`` written byte for byte (like ``curl --path-as-is``); (status, head+body)."""
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    if body or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body)}")
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as connection:
        connection.sendall(request)
        chunks = []
        while True:
            chunk = connection.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    reply = b"".join(chunks)
    status_line = reply.split(b"\r\n", 1)[0]
    return int(status_line.split()[1]), reply
