"""The HTTP servers the service benchmark starts: uvicorn or granian, serving our app or the echo floor.

=========== ==========================================================================================
server      command line (one worker process, 127.0.0.1, a free port)
=========== ==========================================================================================
uvicorn     ``python -m service`` for ours and ``python -m bench.echo_app`` for the echo: both serve through
            ``service.http.server.serve``, the uvicorn protocol with the deadlines of docs/http-edge.md,
            so the bench measures the service as it is deployed
granian     ``python -m granian --interface asgi --factory --workers 1 APP``, its header read deadline set
            from HEADER_TIMEOUT_S (the only deadline it has); a supervisor process and one worker process
=========== ==========================================================================================

Granian is optional (the ``bench`` extra): without it the benchmark runs uvicorn alone and says so.
Every server is stopped at the end of its block, its whole process tree included.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.load import HOST
from bench.process_tree import pin_tree, tree_cpu_seconds, tree_pids

__all__ = ["APPS", "SERVERS", "RunningServer", "granian_installed", "running_server", "server_env"]

SERVERS = ("uvicorn", "granian")
# The ASGI factories granian is given (uvicorn runs the modules that serve them: see server_command)
APPS = {"ours": "service.http.app:create_app", "echo": "bench.echo_app:baseline_app"}
STARTUP_S = 120.0  # a loaded 2-core machine can take a minute to import and start a server
_HEADER_TIMEOUT_S = 10.0  # service.config.limits' default for HEADER_TIMEOUT_S


def granian_installed() -> bool:
    """True when granian can be imported (``pip install -e '.[bench]'``)."""
    return importlib.util.find_spec("granian") is not None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def server_command(server: str, app: str, port: int) -> list[str]:
    """The command line serving ``app`` ("ours" or "echo") with ``server`` ("uvicorn" or "granian") on ``port``."""
    if server == "uvicorn":  # HOST and PORT come from the environment (server_env)
        return [sys.executable, "-m", "service" if app == "ours" else "bench.echo_app"]
    if server == "granian":
        return [
            sys.executable,
            "-m",
            "granian",
            "--interface",
            "asgi",
            "--factory",
            "--host",
            HOST,
            "--port",
            str(port),
            "--workers",
            "1",
            "--http",
            "1",
            "--no-ws",
            "--http1-header-read-timeout",
            str(round(_HEADER_TIMEOUT_S * 1000)),
            "--log-level",
            "warning",
            APPS[app],
        ]
    raise ValueError(f"unknown server {server!r}: one of {', '.join(SERVERS)}")


@dataclass(frozen=True)
class RunningServer:
    """A server process (and its children) serving on 127.0.0.1:port."""

    name: str
    port: int
    pid: int

    def cpu_seconds(self) -> float | None:
        """User + system CPU seconds the whole process tree has used so far (Linux /proc), None elsewhere."""
        return tree_cpu_seconds(self.pid)

    def pin(self, cpus: set[int]) -> dict[int, set[int]]:
        """Pin every thread of every process of the tree to ``cpus``; the affinities before, by thread."""
        return pin_tree(self.pid, cpus)


_SERVICE_VARS = {
    "THRESHOLDS_PATH", "JUDGES_FILE", "DEFAULT_JUDGE", "DEFAULT_ALPHA", "API_KEYS", "ADMIN_API_KEY", "REDIS_URL",
    "CACHE_TTL_S", "CACHE_MAX_ENTRIES", "LOG_LEVEL", "ACCESS_LOG", "LOG_FLUSH_MS", "HOST", "PORT", "WORKERS",
    "MAX_BATCH_ITEMS", "OTEL_EXPORTER_OTLP_ENDPOINT",
}  # fmt: skip


def server_env(extra: dict[str, str]) -> dict[str, str]:
    """The bench's environment without any service setting inherited from the shell, plus ``extra``."""
    env = {
        key: value for key, value in os.environ.items() if key not in _SERVICE_VARS and not key.startswith("GRANIAN_")
    }
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra)
    return env


def _wait_until_answering(process: subprocess.Popen[bytes], log: tempfile._TemporaryFileWrapper[bytes], name: str,
                          url: str) -> None:  # fmt: skip
    deadline = time.monotonic() + STARTUP_S
    while True:
        if process.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"{name} exited with {process.returncode}: {log.read()[-2000:]!r}")
        try:
            httpx.get(url, timeout=1.0)
            return
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not answer within {STARTUP_S:.0f} s") from None
            time.sleep(0.1)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server, then whatever of its tree is still there once it has exited (or SIGKILL after 10 s)."""
    children = tree_pids(process.pid)[1:]
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    for pid in children:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue


@contextmanager
def running_server(
    server: str, app: str, env: dict[str, str], *, probe_path: str, name: str = ""
) -> Iterator[RunningServer]:
    """Serve ``app`` with ``server`` on a free port until the block ends (``env`` from ``server_env``)."""
    port = _free_port()
    name = name or f"{server}/{app}"
    log = tempfile.NamedTemporaryFile()  # the server's stderr, shown when it fails to start
    process = subprocess.Popen(
        server_command(server, app, port),
        env={**env, "HOST": HOST, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    try:
        _wait_until_answering(process, log, name, f"http://{HOST}:{port}{probe_path}")
        yield RunningServer(name=name, port=port, pid=process.pid)
    finally:
        _stop(process)
        log.close()
