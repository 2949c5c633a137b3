"""``python -m service`` (issue 13, defect 8): header and body read deadlines close stalled connections, the
keep-alive limit applies, and WORKERS starts several server processes on one socket. Issue 22: deadlines per
request (pipelining), a body deadline that grows with the bytes received and answers 408, a send deadline for
clients that do not read, and disconnects counted as 499."""

from __future__ import annotations

import io
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.config.limits import LimitSettings
from tests.service.conftest import STAND_IN
from tests.service.servers import STARTUP_BOUND_S, free_port, serve_in_thread, wait_until_ready

ROOT = Path(__file__).resolve().parents[3]


def _start(artifact_path: Path, **env: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
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
    if wait_until_ready(f"http://127.0.0.1:{port}", process=process):  # a generous bound: loaded machines are slow
        return process, port
    _stop(process)
    raise AssertionError(f"server did not start within {STARTUP_BOUND_S:.0f} s (exit code {process.poll()})")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def server(artifact_path: Path) -> Iterator[int]:
    """A server with 0.5 s header and body deadlines and a 1 s keep-alive limit; yields its port. One process for
    the module's four connection tests (starting one costs seconds): each test opens its own connections and
    waits for the server to close them, so none leaves state another reads."""
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
    code = blocked + "from service.http.app import create_app\nfrom service.__main__ import main\ncreate_app()\n"
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


# --- deadlines per request, a send deadline, rate-scaled bodies, disconnects (issue 22: D8, D9, D12, D17) ---

SCORE_JSON = b'{"criterion": "relevance", "judge": "stand-in", "judge_score": 3}'


def _served(make_settings, **limits: float) -> Any:
    """``serve_in_thread`` with these LimitSettings fields (the rest default)."""
    return serve_in_thread(make_settings(limits=LimitSettings(**limits)))


def _read_all(connection: socket.socket, seconds: float) -> tuple[bytes, bool]:
    """Everything the server sends within ``seconds``, and whether it closed the connection meanwhile."""
    connection.settimeout(seconds)
    chunks = []
    try:
        while True:
            data = connection.recv(65536)
            if not data:
                return b"".join(chunks), True
            chunks.append(data)
    except TimeoutError:
        return b"".join(chunks), False
    except ConnectionResetError:
        return b"".join(chunks), True


def _statuses(reply: bytes) -> list[int]:
    return [int(match) for match in re.findall(rb"HTTP/1\.1 (\d{3}) ", reply)]


def _metric_statuses(url: str, route: str) -> dict[int, float]:
    """{status: count} of cj_http_requests_total for ``route`` (any method)."""
    text = httpx.get(f"{url}/metrics", timeout=30).text
    pattern = rf'cj_http_requests_total{{method="[A-Z]+",route="{re.escape(route)}",status="(\d+)"}} ([0-9.]+)'
    counts: dict[int, float] = {}
    for status, count in re.findall(pattern, text):
        counts[int(status)] = counts.get(int(status), 0.0) + float(count)
    return counts


def _wait_for(condition: Callable[[], bool], seconds: float = 60.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


@pytest.mark.parametrize("sent", [b"", b"{"], ids=["no-body-byte", "one-body-byte"])
def test_a_pipelined_request_whose_body_never_arrives_is_timed_out(make_settings, sent: bytes):
    """D8: the body deadline belongs to each request, also the second one of a pipelined pair."""
    with _served(make_settings, body_timeout_s=0.5, header_timeout_s=0.5) as served:
        with socket.create_connection(("127.0.0.1", served.port)) as connection:
            connection.sendall(
                b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
                + sent
            )
            reply, closed = _read_all(connection, 30.0)
    assert closed, reply  # before: open for good (the second request's deadline was never armed)
    assert _statuses(reply) == [200, 408], reply


def test_a_stalled_body_is_answered_408_problem_json(make_settings):
    """D12: a cut upload is told why (408 problem+json), and counted as 408, not 500."""
    with _served(make_settings, body_timeout_s=0.5) as served:
        with socket.create_connection(("127.0.0.1", served.port)) as connection:
            connection.sendall(
                b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{"
            )
            reply, closed = _read_all(connection, 30.0)
        assert closed
        head, _, body = reply.partition(b"\r\n\r\n")
        assert _statuses(reply) == [408], reply
        assert b"content-type: application/problem+json" in head.lower()
        problem = json.loads(body)
        assert problem["status"] == 408 and problem["type"].endswith(":body-timeout"), problem
        assert "BODY_TIMEOUT_S" in problem["detail"] and problem["instance"] == "/v1/score"
        assert _wait_for(lambda: 408 in _metric_statuses(served.url, "/v1/score"))
        assert 500 not in _metric_statuses(served.url, "/v1/score")


def test_a_large_body_sent_at_a_fair_rate_outlives_the_grace_period(make_settings):
    """D12: the body deadline grows with the bytes received (BODY_TIMEOUT_S + bytes / MIN_BODY_RATE)."""
    chunk, chunks = 10_000, 20  # 200 KB at about 40 KB/s: some 5 s, ten times BODY_TIMEOUT_S
    body = SCORE_JSON[:-1] + b" " * (chunk * chunks - len(SCORE_JSON)) + b"}"
    with _served(make_settings, body_timeout_s=0.5, min_body_rate=5_000) as served:
        with socket.create_connection(("127.0.0.1", served.port)) as connection:
            connection.sendall(
                b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            )
            for start in range(0, len(body), chunk):
                connection.sendall(body[start : start + chunk])  # before: reset once 0.5 s had passed
                time.sleep(0.25)
            reply, _ = _read_all(connection, 60.0)
    assert _statuses(reply) == [200], reply[:600]
    assert json.loads(reply.partition(b"\r\n\r\n")[2])["prediction_set"]


def test_a_client_that_does_not_read_is_dropped_after_the_send_timeout(make_settings):
    """D9: a response stuck behind a client that never reads is dropped after SEND_TIMEOUT_S."""
    with _served(make_settings, send_timeout_s=0.5) as served:
        connection = socket.socket()
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # so the server's buffer fills soon
        connection.connect(("127.0.0.1", served.port))
        try:
            # 300 pipelined requests for the spec (~60 KB each): ~18 MB of answers the client never reads
            connection.sendall(b"GET /schema/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n" * 300)
            assert _wait_for(lambda: served.open_connections() == 1, 30.0)
            # before: the connection (and the buffered answers) stayed for good
            assert _wait_for(lambda: served.open_connections() == 0, 60.0)
        finally:
            connection.close()


def test_a_client_that_leaves_mid_body_is_counted_499_not_500(make_settings):
    """D17: a disconnect is "client closed request" in /metrics and the log, never a 500."""
    logs = io.StringIO()
    with serve_in_thread(make_settings(access_log="all"), logs=logs) as served:
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", served.port)) as connection:
                connection.sendall(
                    b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 500\r\n\r\n" + SCORE_JSON[:20]
                )
                time.sleep(0.2)  # the app is reading the body when the client goes
        assert _wait_for(lambda: _metric_statuses(served.url, "/v1/score").get(499) == 3.0), _metric_statuses(
            served.url, "/v1/score"
        )
        assert 500 not in _metric_statuses(served.url, "/v1/score")
        served.app.services.logs.flush()
    lines = [json.loads(line) for line in logs.getvalue().splitlines() if line.startswith("{")]
    assert not [line for line in lines if line.get("level") == "error"], lines
    requests = [line for line in lines if line.get("event") == "request" and line.get("route") == "/v1/score"]
    assert [line["status"] for line in requests] == [499, 499, 499]
