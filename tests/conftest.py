"""Shared fixtures: the real data directory and the judge stand-in server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["tests.fakes.fixtures"]

REPO_ROOT = Path(__file__).resolve().parent.parent


def resolve_data_dir() -> Path:
    """The shared real-data directory: $DATA_DIR, else ../shared/data beside the checkout."""
    configured = os.environ.get("DATA_DIR")
    return Path(configured) if configured else REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real data directory; the suite needs it (CI has ../shared/data beside the checkout)."""
    path = resolve_data_dir()
    if not (path / "summeval" / "items.jsonl").exists():
        raise RuntimeError(f"real data not found at {path}: set DATA_DIR to the shared data directory")
    return path
