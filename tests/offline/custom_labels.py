"""A user's own labelled set (a test-side reference format: no product code reads it; the product's own labelled
files are read by offline/labelled.py), for calibrating a judge on their data.

Format: a UTF-8 JSON Lines file, one JSON object per line (blank lines are ignored), one line per
(item, criterion). Fields:

==================  ========  ====================================================================
field               required  meaning
==================  ========  ====================================================================
``item_id``         yes       non-empty string naming the item; unique together with ``criterion``
``document``        yes       non-empty string: the source text the summary is judged against
``summary``         yes       non-empty string: the text being judged
``criterion``       yes       lower-case name (letters, digits, ``_``), e.g. ``coherence``,
                              ``consistency``, ``fluency``, ``relevance``, ``faithfulness``
``human``           yes       number on the 1-5 scale: one rating or the mean of several; the
                              calibration label is ``human_target(human)`` (nearest integer,
                              halves rounded up, so 3.5 -> 4)
``judge_score``     no        integer 1-5: a score a judge already gave (null or absent = none)
``judge_logprobs``  no        object with keys among "1".."5" -> log-probability (<= 0) of that score
                              token (null or absent = none); need not be normalised
==================  ========  ====================================================================

Rules checked (each failure raises :class:`DataError` naming the file and line): every line is a JSON object
with exactly these fields (an unknown field is refused, so a misspelt one is caught), types as above,
``human`` within 1..5, ``judge_score`` within 1..5, no repeated (``item_id``, ``criterion``), and lines sharing
an ``item_id`` carry the same ``document`` and ``summary``. The file must hold at least one row.

Example line::

    {"item_id": "doc7/sysB", "document": "The council voted ...", "summary": "Council approves ...",
     "criterion": "relevance", "human": 3.667, "judge_score": 4, "judge_logprobs": {"3": -1.2, "4": -0.4}}
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import msgspec

from offline.build.inputs.errors import DataError, decode_jsonl
from offline.build.inputs.judges import validate_logprobs
from offline.build.inputs.summeval import N_LABELS, human_target

__all__ = ["CustomDataset", "CustomItem", "load_custom"]

_CRITERION = re.compile(r"^[a-z][a-z0-9_]*$")


class CustomItem(msgspec.Struct, frozen=True, kw_only=True):
    """One labelled (item, criterion) row; ``human_target`` is the integer label y*; ``line`` is 1-based."""

    item_id: str
    document: str
    summary: str
    criterion: str
    human: float
    human_target: int
    judge_score: int | None
    judge_logprobs: dict[str, float] | None
    line: int


class CustomDataset(msgspec.Struct, frozen=True, kw_only=True):
    """A loaded custom set: rows in file order and the file they came from."""

    path: str
    items: tuple[CustomItem, ...]

    def criteria(self) -> list[str]:
        """Criteria present, in order of first appearance."""
        return list(dict.fromkeys(item.criterion for item in self.items))

    def for_criterion(self, criterion: str) -> list[CustomItem]:
        """The rows of one criterion, in file order."""
        return [item for item in self.items if item.criterion == criterion]


class _Row(msgspec.Struct, forbid_unknown_fields=True):
    item_id: str
    document: str
    summary: str
    criterion: str
    human: float
    judge_score: int | None = None
    judge_logprobs: dict[str, float] | None = None


def load_custom(path: Path | str) -> CustomDataset:
    """Read and validate a custom labelled set (format in this module's docstring).

    Raises:
        DataError: missing file, malformed line, unknown field, bad type or value, duplicate row,
            inconsistent texts for one item, or an empty file; the file and line are named.
    """
    path = Path(path)
    items: list[CustomItem] = []
    seen: set[tuple[str, str]] = set()
    texts: dict[str, tuple[str, str, int]] = {}
    for line, row in decode_jsonl(path, msgspec.json.Decoder(_Row)):
        for name in ("item_id", "document", "summary"):
            if not getattr(row, name).strip():
                raise DataError(path, line, f"{name} is empty")
        if not _CRITERION.match(row.criterion):
            raise DataError(path, line, f"criterion {row.criterion!r} is not a lower-case name like 'coherence'")
        if not (math.isfinite(row.human) and 1 <= row.human <= N_LABELS):
            raise DataError(path, line, f"human = {row.human!r} is outside the scale 1..{N_LABELS}")
        if row.judge_score is not None and not 1 <= row.judge_score <= N_LABELS:
            raise DataError(path, line, f"judge_score = {row.judge_score!r} is outside 1..{N_LABELS}")
        if row.judge_logprobs is not None:
            validate_logprobs(row.judge_logprobs, path, line)
        key = (row.item_id, row.criterion)
        if key in seen:
            raise DataError(path, line, f"item {row.item_id!r} is repeated for criterion {row.criterion!r}")
        seen.add(key)
        first = texts.setdefault(row.item_id, (row.document, row.summary, line))
        if first[:2] != (row.document, row.summary):
            raise DataError(
                path, line, f"item {row.item_id!r} has a different document or summary than on line {first[2]}"
            )
        items.append(
            CustomItem(
                item_id=row.item_id,
                document=row.document,
                summary=row.summary,
                criterion=row.criterion,
                human=float(row.human),
                human_target=human_target(row.human),
                judge_score=row.judge_score,
                judge_logprobs=row.judge_logprobs,
                line=line,
            )
        )
    if not items:
        raise DataError(path, None, "the file holds no rows")
    return CustomDataset(path=str(path), items=tuple(items))
