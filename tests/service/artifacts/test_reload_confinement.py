"""Reload reads only regular files inside RELOAD_DIR under MAX_ARTIFACT_BYTES, and its refusals reveal nothing
about the file system (issue 13, defect 5)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from artifact.thresholds import save_artifact
from service.config.limits import LimitSettings
from service.config.settings import Settings
from tests.service.conftest import AppHarness, build_artifact

ADMIN = "reload-admin"
HEADERS = {"Authorization": f"Bearer {ADMIN}"}


@pytest.fixture
def reload_dir(tmp_path: Path) -> Path:
    """RELOAD_DIR with one valid artifact, good.json."""
    directory = tmp_path / "artifacts"
    directory.mkdir()
    save_artifact(build_artifact(code_version="good"), directory / "good.json")
    return directory


@pytest.fixture
def harness(start_app: Callable[[Settings], AppHarness], make_settings, reload_dir: Path) -> AppHarness:
    """An app with an admin key and RELOAD_DIR = reload_dir, artifacts capped at 1 MB."""
    limits = LimitSettings(reload_dir=reload_dir, max_artifact_bytes=1_000_000)
    return start_app(make_settings(admin_api_key=ADMIN, limits=limits))


def _reload(harness: AppHarness, path: str):
    return harness.client.post("/v1/calibration/reload", headers=HEADERS, json={"path": path})


def test_a_file_inside_the_directory_loads_by_relative_or_absolute_path(harness: AppHarness, reload_dir: Path):
    for path in ("good.json", str(reload_dir / "good.json")):
        reply = _reload(harness, path)
        assert reply.status_code == 200, reply.text
        assert reply.json()["calibration"]["code_version"] == "good"


def test_refusals_are_identical_whatever_the_file_system_holds(harness: AppHarness, reload_dir: Path, tmp_path: Path):
    outside = tmp_path / "outside.json"
    save_artifact(build_artifact(code_version="outside"), outside)
    os.symlink(outside, reload_dir / "link.json")
    os.mkfifo(reload_dir / "pipe.json")
    (reload_dir / "big.json").write_bytes(b" " * 1_000_001)
    (reload_dir / "sub").mkdir()
    paths = [
        "/etc/shadow",  # exists, outside (and unreadable)
        "/etc/passwd",  # exists, outside, readable
        "/no/such/file.json",
        str(outside),  # a valid artifact outside the directory
        "../outside.json",
        "link.json",  # a link inside leading outside
        "absent.json",
        "sub",
        ".",
        "pipe.json",  # a FIFO would block a plain open()
        "/dev/zero",
        "big.json",
        "good\u0000.json",
    ]
    details = set()
    for path in paths:
        started = time.perf_counter()
        reply = _reload(harness, path)
        assert time.perf_counter() - started < 5, path
        assert reply.status_code == 422, (path, reply.text)
        problem = reply.json()
        assert problem["type"].endswith("reload-path-refused"), (path, problem)
        details.add(problem["detail"])
    assert len(details) == 1  # the same words for every reason: nothing to learn about which files exist
    assert "shadow" not in details.pop()
    assert harness.client.get("/v1/calibration").json()["code_version"] == "test"  # the old artifact stays


def test_a_deeply_nested_file_inside_is_an_invalid_artifact_not_a_500(harness: AppHarness, reload_dir: Path):
    (reload_dir / "nested.json").write_text('{"format_version":' + "[" * 100_000 + "]" * 100_000 + "}")
    reply = _reload(harness, "nested.json")
    assert reply.status_code == 422 and reply.json()["type"].endswith("invalid-artifact")


def test_a_fifo_does_not_block_the_reload(harness: AppHarness, reload_dir: Path):
    os.mkfifo(reload_dir / "fifo.json")
    outcome: list[int] = []
    worker = threading.Thread(target=lambda: outcome.append(_reload(harness, "fifo.json").status_code), daemon=True)
    worker.start()
    worker.join(10)
    assert outcome == [422]
