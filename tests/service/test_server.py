"""``python -m service`` (issue 13, defect 8): header and body read deadlines close stalled connections, the
keep-alive limit applies, and WORKERS starts several server processes on one socket."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.service.conftest import STAND_IN

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _start(artifact_path: Path, **env: str) -> tuple[subprocess.Popen[bytes], int]:
    port = _free_port()
    environment = {
        **os.environ,
        "THRESHOLDS_PATH": str(artifact_path),
        "PORT": str(port),
        "HOST": "127.0.0.1",
        **env,
    }
    for name in ("API_KEYS", "JUDGES_FILE", "REDIS_URL"):
        environment.pop(name, None)
    process = subprocess.Popen(
        [sys.executable, "-m", "service"],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return process, port
        except httpx.HTTPError:
            time.sleep(0.2)
    _stop(process)
    raise AssertionError("server did not start within 60 s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture
def server(artifact_path: Path) -> Iterator[int]:
    """A server with 0.5 s header and body deadlines and a 1 s keep-alive limit; yields its port."""
    process, port = _start(artifact_path, HEADER_TIMEOUT_S="0.5", BODY_TIMEOUT_S="0.5", KEEPALIVE_TIMEOUT_S="1")
    yield port
    _stop(process)


def _closed_within(connection: socket.socket, seconds: float) -> bool:
    """True when the server closes the connection (EOF or reset) within ``seconds``."""
    connection.settimeout(seconds)
    try:
        while True:
            data = connection.recv(65536)
            if not data:
                return True
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def test_partial_headers_are_cut_off(server: int):
    connections = []
    for _ in range(20):
        connection = socket.create_connection(("127.0.0.1", server))
        connection.sendall(b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: appl")
        connections.append(connection)
    try:
        assert all(_closed_within(connection, 3.0) for connection in connections)
    finally:
        for connection in connections:
            connection.close()


def test_a_connection_that_sends_nothing_is_cut_off(server: int):
    with socket.create_connection(("127.0.0.1", server)) as connection:
        assert _closed_within(connection, 3.0)


def test_a_slow_body_is_cut_off(server: int):
    with socket.create_connection(("127.0.0.1", server)) as connection:
        connection.sendall(
            b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{"
        )
        started = time.monotonic()
        closed = False
        while time.monotonic() - started < 3.0:  # one byte every 0.2 s: each byte alone is not late
            try:
                connection.sendall(b" ")
            except OSError:
                closed = True
                break
            if _closed_within(connection, 0.2):
                closed = True
                break
        assert closed


def test_whole_requests_and_keep_alive_still_work(server: int):
    body = {"criterion": "relevance", "judge": STAND_IN, "judge_score": 3}
    with httpx.Client(base_url=f"http://127.0.0.1:{server}") as client:
        for _ in range(3):
            assert client.post("/v1/score", json=body).status_code == 200
            time.sleep(0.3)  # idle less than the keep-alive limit, more than the read deadlines allow per byte
    with socket.create_connection(("127.0.0.1", server)) as connection:  # idle keep-alive closes after ~1 s
        connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        connection.settimeout(2)
        assert b"200 OK" in connection.recv(65536)
        assert _closed_within(connection, 3.0)


def test_workers_start_several_processes(artifact_path: Path):
    process, port = _start(artifact_path, WORKERS="2")
    try:
        children = subprocess.run(
            ["ps", "-o", "pid=", "--ppid", str(process.pid)], capture_output=True, text=True, check=False
        ).stdout.split()
        commands = [Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ") for pid in children]
        workers = [command for command in commands if b"spawn_main" in command]  # not the resource tracker
        assert len(workers) == 2, commands
        assert httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=5).status_code == 200
    finally:
        _stop(process)


def test_the_runtime_needs_neither_the_offline_module_nor_its_extras():
    """The image installs the runtime only: the service must import and build its app without them."""
    blocked = "import sys\nfor name in ('offline', 'matplotlib', 'tqdm'):\n    sys.modules[name] = None\n"
    code = blocked + "from service.app import create_app\nfrom service.__main__ import main\ncreate_app()\n"
    environment = {k: v for k, v in os.environ.items() if k not in ("JUDGES_FILE", "REDIS_URL", "API_KEYS")}
    completed = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environment, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr[-2000:]
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.startswith(("matplotlib", "tqdm"))]
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "COPY offline" not in dockerfile and "WORKERS=" in dockerfile


def test_schema_is_the_json_document_with_no_cdn_page(app):
    for path in ("/schema", "/schema/openapi.json"):
        reply = app.client.get(path)
        assert reply.status_code == 200 and "json" in reply.headers["content-type"], path
        assert reply.json()["info"]["title"] == "Conformal Judge"
    assert "cdn" not in app.client.get("/schema").text.lower()
