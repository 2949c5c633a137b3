"""docs/architecture.md matches the code: it names every package and module of the five layers, and every module
file it names exists (so a move or a new module without its line in the map fails here)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("calibration", "artifact", "judges", "service", "offline")
DOC = ROOT / "docs" / "architecture.md"


def _modules() -> list[Path]:
    return sorted(
        path.relative_to(ROOT)
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if path.name != "__init__.py" and "__pycache__" not in path.parts
    )


def _folders() -> list[Path]:
    return sorted(
        path.parent.relative_to(ROOT)
        for package in PACKAGES
        for path in (ROOT / package).rglob("__init__.py")
        if "__pycache__" not in path.parts
    )


def test_the_map_names_every_module_and_package() -> None:
    text = DOC.read_text()
    named = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*\.py", text))
    missing = [str(module) for module in _modules() if module.name not in named]
    assert not missing, f"docs/architecture.md does not name: {', '.join(missing)}"
    folders = [str(folder) for folder in _folders() if f"{folder.name}/" not in text]
    assert not folders, f"docs/architecture.md does not name the packages: {', '.join(folders)}"


def test_every_module_the_map_names_exists() -> None:
    text = DOC.read_text()
    folders = ("tests", "bench", "tools", "client")
    elsewhere = {path.name for folder in folders for path in (ROOT / folder).rglob("*.py")}
    existing = {module.name for module in _modules()} | elsewhere
    stale = sorted(
        name
        for name in set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*\.py", text))
        if name not in existing and not (ROOT / name).exists()
    )
    assert not stale, f"docs/architecture.md names modules that do not exist: {', '.join(stale)}"
