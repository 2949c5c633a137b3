"""The offline data layer's own exception: bad data, named by file and line.

Every loader in ``offline.data`` raises :class:`DataError` for a file it cannot read or a row it refuses, so
that the message always answers "which file, which line, what is wrong".
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import msgspec

__all__ = ["DataError", "decode_jsonl", "iter_jsonl"]

T = TypeVar("T")


class DataError(ValueError):
    """A data file (or the data directory) that the loaders refuse.

    Attributes: ``path`` (the file or directory, or None), ``line`` (1-based line number, or None when the
    problem concerns the whole file) and ``problem`` (what is wrong, in words). ``str(error)`` reads
    ``"<path>:<line>: <problem>"``.
    """

    def __init__(self, path: Path | str | None, line: int | None, problem: str) -> None:
        self.path = Path(path) if path is not None else None
        self.line = line
        self.problem = problem
        where = "" if self.path is None else str(self.path)
        if line is not None:
            where = f"{where}:{line}"
        super().__init__(f"{where}: {problem}" if where else problem)


def iter_jsonl(path: Path) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_number, raw_line)`` for each non-blank line of a JSON Lines file (1-based numbers).

    Raises:
        DataError: the file is missing or unreadable.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DataError(path, None, "file not found") from None
    except OSError as exc:
        raise DataError(path, None, f"cannot read the file: {exc}") from None
    for number, raw in enumerate(data.splitlines(), start=1):
        if raw.strip():
            yield number, raw


def decode_jsonl(path: Path, decoder: msgspec.json.Decoder[T]) -> Iterator[tuple[int, T]]:
    """Decode each non-blank line of ``path`` with ``decoder``; yield ``(line_number, value)``.

    Raises:
        DataError: a line is not valid JSON or does not match the decoder's type (file and line named).
    """
    for number, raw in iter_jsonl(path):
        try:
            yield number, decoder.decode(raw)
        except msgspec.ValidationError as exc:
            raise DataError(path, number, f"invalid row: {exc}") from None
        except msgspec.DecodeError as exc:
            raise DataError(path, number, f"malformed JSON: {exc}") from None
