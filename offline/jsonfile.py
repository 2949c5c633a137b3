"""Study summaries as files: one writer for every JSON the offline module leaves in ``reports/``."""

from __future__ import annotations

from pathlib import Path

import msgspec

__all__ = ["write_json"]


def write_json(value: object, path: Path) -> Path:
    """Write ``value`` (a msgspec Struct or builtins) as indented JSON with a final newline, creating the folder;
    undefined statistics must already be None (msgspec writes null). Returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(msgspec.json.format(msgspec.json.encode(value), indent=1) + b"\n")
    return path
