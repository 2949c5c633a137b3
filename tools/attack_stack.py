"""The processes and the raw HTTP client of the attack pass (``tools/attack_pass.py``).

:class:`Stack` runs the real deployment on 127.0.0.1: the judge stand-in (``python -m tests.fakes.judge_standin``),
the API (``python -m service``) and SAQ workers (``python -m service.worker``), with two tenants' keys and the admin
key, on a Redis database and a queue of their own (the queue's keys are deleted at the end). Every process is
started here, recorded by PID and stopped here.

:func:`send` writes one HTTP/1.1 request byte for byte (``Connection: close``) and reads the whole answer, so that
path spellings (``//``, ``..``, ``%2F``) reach the server as written: an HTTP library would normalise them.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
TENANT_A = "attack-tenant-a-0001"
TENANT_B = "attack-tenant-b-0002"
ADMIN = "attack-admin-0003"
JUDGE = "gpt-4o-mini-2024-07-18"  # a calibrated judge of the shipped artifact, served by the stand-in


@dataclass(frozen=True)
class Reply:
    """One HTTP answer: status (0 when the connection failed), lower-cased headers, body."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def send(
    port: int,
    method: str,
    target: str,
    *,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
    timeout: float = 120.0,
) -> Reply:
    """One request exactly as written (target unnormalised); the connection is closed after the answer."""
    lines = [f"{method} {target} HTTP/1.1", f"Host: {HOST}:{port}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    if body or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body)}")
    raw = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
    chunks: list[bytes] = []
    try:
        with socket.create_connection((HOST, port), timeout=timeout) as sock:
            _send_until_answered(sock, raw)
            while chunk := sock.recv(1 << 16):
                chunks.append(chunk)
    except OSError:
        if not chunks:
            return Reply(0, {}, b"")
    return _parse(b"".join(chunks), head_only=method == "HEAD")


def _send_until_answered(sock: socket.socket, raw: bytes) -> None:
    """Send ``raw`` in pieces, stopping early when the server has answered (a 413 before the body's end): writing
    on would only meet the reset of a connection the server has closed."""
    for start in range(0, len(raw), 1 << 18):
        if select.select([sock], [], [], 0)[0]:
            return
        try:
            sock.sendall(raw[start : start + (1 << 18)])
        except OSError:
            return


def _parse(data: bytes, *, head_only: bool) -> Reply:
    head, _, rest = data.partition(b"\r\n\r\n")
    while head.startswith(b"HTTP/1.1 1"):  # an interim answer (100 Continue): the final one follows
        head, _, rest = rest.partition(b"\r\n\r\n")
    if not head:
        return Reply(0, {}, b"")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if head_only:
        rest = b""
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        rest = _unchunk(rest)
    return Reply(int(status_line.split(" ")[1]), headers, rest)


def _unchunk(data: bytes) -> bytes:
    out = bytearray()
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out += data[:size]
        data = data[size + 2 :]
    return bytes(out)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _wait_for(port: int, path: str, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}")
        if send(port, "GET", path, timeout=2).status:
            return
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not answer on port {port}")


@dataclass
class Stack:
    """The stand-in, one API process and ``workers`` workers, started by :meth:`start`, stopped by :meth:`stop`."""

    redis_url: str
    workers: int = 2
    judge_latency_s: float = 0.02
    queue: str = field(default_factory=lambda: f"attack-{os.getpid()}-{int(time.time())}")
    port: int = 0
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    folder: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="attack-")))

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.isupper() or k in ("PATH", "HOME", "LANG", "DATA_DIR")}
        env.update(
            PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "client")]),
            OPENBLAS_NUM_THREADS="1",
            REDIS_URL=self.redis_url,
            JOB_QUEUE=self.queue,
            ARTIFACTS_REDIS_KEY=f"{self.queue}-artifacts",
            API_KEYS=f"{TENANT_A},{TENANT_B}",
            ADMIN_API_KEY=ADMIN,
            JUDGES_FILE=str(self.folder / "judges.json"),
            DEFAULT_JUDGE=JUDGE,
            RELOAD_DIR=str(self.folder),
            JOB_HEARTBEAT_S="3",
            JOB_SWEEP_S="1",
            BODY_TIMEOUT_S="3",
            CACHE_TTL_S="600",  # the judge answers it caches (keys not named by the queue) expire soon after
            HOST=HOST,
            PORT=str(self.port),
        )
        env.update(extra)
        return env

    def _spawn(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        log = open(self.folder / f"{name}.log", "ab")  # noqa: SIM115 (kept open for the process's life)
        process = subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env, stdout=log, stderr=log)
        self.processes[name] = process
        return process

    def start(self) -> None:
        judge_port = free_port()
        self.port = free_port()
        judges = [
            {
                "name": JUDGE,
                "model": JUDGE,
                "base_url": f"http://{HOST}:{judge_port}/v1",
                "api_key_env": None,
                "prompt_family": "geval",
                "temperature": 0.0,
                "logprobs": True,
                "max_concurrency": 16,
                "timeout_s": 10.0,
                "max_retries": 0,
            }
        ]
        (self.folder / "judges.json").write_text(json.dumps(judges))
        args = ["-m", "tests.fakes.judge_standin", "--port", str(judge_port), "--latency", str(self.judge_latency_s)]
        standin = self._spawn("standin", args, self.env())
        _wait_for(judge_port, "/v1/models", standin, "the judge stand-in")
        api = self._spawn("api", ["-m", "service"], self.env())
        _wait_for(self.port, "/healthz", api, "the API")
        for i in range(self.workers):
            self.start_worker(f"worker{i}")

    def start_worker(self, name: str) -> None:
        self._spawn(name, ["-m", "service.worker"], self.env())

    def kill(self, name: str) -> None:
        """SIGKILL one process (a worker dying mid-chunk), no clean-up allowed."""
        process = self.processes.pop(name)
        process.send_signal(signal.SIGKILL)
        process.wait()

    def api_on(self, name: str, **extra: str) -> int:
        """A second API process with other settings (e.g. a dead Redis); returns its port."""
        port = free_port()
        process = self._spawn(name, ["-m", "service"], self.env(PORT=str(port), **extra))
        _wait_for(port, "/healthz", process, name)
        return port

    def stop(self) -> None:
        for process in self.processes.values():
            process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes.clear()

    def rss_mb(self, name: str, field: str = "VmRSS") -> float:
        """The resident set of one process (``VmHWM``: its peak so far), from /proc (0 where unavailable)."""
        try:
            status = Path(f"/proc/{self.processes[name].pid}/status").read_text()
        except (OSError, KeyError):
            return 0.0
        return next((int(line.split()[1]) / 1024 for line in status.splitlines() if line.startswith(field)), 0.0)
