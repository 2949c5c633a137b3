"""The longest test modules, handed out first by tests/conftest.py, are real files of the suite."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import LONG_MODULES

ROOT = Path(__file__).resolve().parent.parent


def test_every_long_module_listed_exists_once():
    assert len(set(LONG_MODULES)) == len(LONG_MODULES)
    missing = [module for module in LONG_MODULES if not (ROOT / module).is_file()]
    assert not missing, f"tests/conftest.py LONG_MODULES names files that do not exist: {missing}"
