"""The report files the results page reads, the command that writes each, and their loading.

Every figure on ``docs/results.md`` comes from one of the JSON files in :data:`SOURCES` under the report folder
(``reports/`` by default). A missing file stops the generator with :class:`ReportMissing`, naming the file and the
command that writes it; a file lacking a field the page needs stops it with the file and the field named.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

from offline.build.inputs.errors import DataError

__all__ = ["SOURCES", "ReportMissing", "Reports", "Source"]


class Source(NamedTuple):
    """A report file (relative to the report folder) and the command that writes it."""

    path: str
    command: str


CALIBRATE = "python -m offline calibrate"
SOURCES: dict[str, Source] = {
    "ingest": Source("ingest/summary.json", CALIBRATE),
    "validity": Source("conformal/validity.json", CALIBRATE),
    "halves": Source("conformal/halves.json", "python -m offline halves"),
    "conformal": Source("conformal/summary.json", CALIBRATE),
    "position_bias": Source("position_bias/summary.json", CALIBRATE),
    "transitivity": Source("transitivity/summary.json", CALIBRATE),
    "baselines": Source("factuality/baselines.json", CALIBRATE),
    "vicuna80": Source("transitivity/vicuna80.json", CALIBRATE),
    "sentences": Source("factuality/llm_sentences.json", CALIBRATE),
    "sentences_validity": Source("factuality/llm_sentences_validity.json", CALIBRATE),
    "faithfulness": Source("factuality/faithfulness.json", CALIBRATE),
}


class ReportMissing(DataError):
    """A report file the page needs does not exist."""

    def __init__(self, path: Path, command: str) -> None:
        super().__init__(path, None, f"report missing: run `{command}` first (it writes this file)")


class Reports:
    """The report folder's JSON files, each read once."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._loaded: dict[str, Any] = {}

    @property
    def loaded(self) -> list[str]:
        """The keys read so far, in order."""
        return list(self._loaded)

    def path(self, key: str) -> Path:
        """Where the report ``key`` of :data:`SOURCES` lives."""
        return self.root / SOURCES[key].path

    def __getitem__(self, key: str) -> Any:
        if key not in self._loaded:
            path = self.path(key)
            if not path.is_file():
                raise ReportMissing(path, SOURCES[key].command)
            try:
                self._loaded[key] = json.loads(path.read_text(encoding="utf-8"))
            except ValueError as error:
                raise DataError(path, None, f"not a JSON report: {error}") from None
        return self._loaded[key]
