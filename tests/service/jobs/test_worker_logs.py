"""The worker writes JSON lines only: SAQ's records (a failed poll's traceback) included, while Redis is away."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from service.config.settings import default_thresholds_path

REPO = Path(__file__).resolve().parents[3]


def _dead_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_worker_without_redis_writes_saqs_tracebacks_as_json_lines(tmp_path: Path) -> None:
    environ = {key: value for key, value in os.environ.items() if not key.startswith(("JOB", "WORKER", "JUDGES"))}
    environ.update(
        REDIS_URL=f"redis://127.0.0.1:{_dead_port()}/0",
        THRESHOLDS_PATH=str(default_thresholds_path()),
        LOG_FLUSH_MS="0",
        JOB_SWEEP_S="1",
        PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "client")]),
    )
    log = tmp_path / "worker.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "service.worker"], cwd=REPO, env=environ, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and '"logger":"saq' not in log.read_text():
            time.sleep(0.2)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    raw = log.read_text().splitlines()
    lines = [json.loads(line) for line in raw]  # every line is one JSON object (a plain traceback would fail here)
    saq = [line for line in lines if line["event"] == "library.log" and line["logger"].startswith("saq")]
    assert saq, raw[:5]
    assert any("Traceback" in line.get("exception", "") for line in saq)
    assert {line["level"] for line in saq} <= {"warning", "error", "critical"}
