"""What a converter reads and writes: its verified raw inputs by key, JSON Lines in and out (shared by every
``convert_*`` module and the registry in :mod:`offline.data.convert.registry`)."""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

__all__ = ["Converter", "Inputs", "dump_jsonl", "json_lines"]


class Inputs:
    """The raw files a converter may read: key -> local path of the verified copy."""

    def __init__(self, files: Mapping[str, Path]) -> None:
        self._files = dict(files)

    def keys(self, pattern: str) -> list[str]:
        """The keys matching the shell pattern (``*`` crosses ``/``), sorted.

        Raises:
            ValueError: nothing matches.
        """
        found = sorted(k for k in self._files if fnmatch.fnmatchcase(k, pattern))
        if not found:
            raise ValueError(f"no input matches {pattern!r}")
        return found

    def read(self, key: str) -> bytes:
        """The bytes of one input."""
        return self._files[key].read_bytes()

    def one(self, pattern: str) -> tuple[str, bytes]:
        """The single input matching ``pattern`` and its bytes.

        Raises:
            ValueError: none or several match.
        """
        keys = self.keys(pattern)
        if len(keys) != 1:
            raise ValueError(f"{len(keys)} inputs match {pattern!r}, expected one")
        return keys[0], self.read(keys[0])

    def each(self, pattern: str) -> Iterator[tuple[str, bytes]]:
        """Every input matching ``pattern``, sorted by key, with its bytes."""
        for key in self.keys(pattern):
            yield key, self.read(key)


Converter = Callable[[Inputs, Mapping[str, Any]], bytes]


def json_lines(key: str, raw: bytes) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for each non-blank line of a raw JSON Lines file.

    Raises:
        ValueError: a line is not JSON (the file and line named).
    """
    for number, line in enumerate(raw.decode("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except ValueError as exc:
            raise ValueError(f"{key}:{number}: not JSON: {exc}") from None


def dump_jsonl(rows: list[dict[str, Any]]) -> bytes:
    """The data directory's JSON Lines form: ``json.dumps`` defaults, UTF-8 kept as is, one row a line."""
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")
