"""Recorded pairwise verdicts on SummEval, and the canonical order of a pair.

Every ``<data_dir>/pairwise/summeval/*.jsonl`` is one judge (name = file name without ``.jsonl``); one row per
(document, criterion, presentation): ``doc_id``, ``criterion``, ``first`` (system shown as "Summary #1" / A),
``second`` (shown as #2 / B), ``response`` (raw reply: "A", "B", "C" = tie, maybe with words after it).
Judge settings come from ``pairwise/summeval/judges.json`` when present; otherwise ``prompt_family`` is
"unknown" (the direct-scoring list describes direct prompts, not pairwise ones) and ``model`` is taken from
``judges/summeval/judges.json`` when that lists the same name.

Canonical pair order (used by the answer store): a pair {x, y} of systems is stored under the item id
``"<doc_id>/<a>|<b>"`` where ``a < b`` in plain Python string order (code points: "M10" < "M9"); a verdict
whose ``first`` is ``a`` has order ``"ab"``, one whose ``first`` is ``b`` has order ``"ba"``.

==========================================  =======================================================
call                                        result
==========================================  =======================================================
``load_pairwise(data_dir, summeval)``       ``list[RecordedPairwise]`` sorted by judge name
``canonical_pair(x, y)``                    ``(a, b)`` with ``a < b``
``presentation_order(first, second)``       ``"ab"`` when ``first < second`` else ``"ba"``
``pair_item_id(doc_id, x, y)``              ``"<doc_id>/<a>|<b>"`` (order of x, y irrelevant)
``split_pair_item_id(item_id)``             ``(doc_id, a, b)``
``presented(item_id, order)``               ``(doc_id, first, second)`` as shown to the judge
==========================================  =======================================================
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import msgspec

from offline.build.inputs.errors import DataError, decode_jsonl
from offline.build.inputs.judges import JudgeInfo, load_judge_infos
from offline.build.inputs.summeval import CRITERIA, SummEval

__all__ = [
    "PairOrder",
    "PairwiseRow",
    "RecordedPairwise",
    "canonical_pair",
    "load_pairwise",
    "pair_item_id",
    "presentation_order",
    "presented",
    "split_pair_item_id",
]

PairOrder = Literal["ab", "ba"]
_PAIR_SEPARATOR = "|"
_FORBIDDEN_IN_SYSTEM_ID = ("/", _PAIR_SEPARATOR)


class PairwiseRow(msgspec.Struct, frozen=True, kw_only=True):
    """One recorded verdict as shown to the judge; ``line`` is its 1-based line in the file."""

    doc_id: str
    criterion: str
    first: str
    second: str
    response: str | None
    line: int

    @property
    def order(self) -> PairOrder:
        """``"ab"`` when the canonically first system was shown first, else ``"ba"``."""
        return presentation_order(self.first, self.second)

    @property
    def item_id(self) -> str:
        """The pair's canonical item id ``"<doc_id>/<a>|<b>"``."""
        return pair_item_id(self.doc_id, self.first, self.second)


class RecordedPairwise(msgspec.Struct, frozen=True, kw_only=True):
    """One pairwise judge file: info, rows in file order, source path."""

    info: JudgeInfo
    rows: tuple[PairwiseRow, ...]
    path: str

    @property
    def name(self) -> str:
        """The judge's name (file name without ``.jsonl``)."""
        return self.info.name


class _Row(msgspec.Struct):
    doc_id: str
    criterion: str
    first: str
    second: str
    response: str | None = None


def canonical_pair(x: str, y: str) -> tuple[str, str]:
    """The pair in canonical order: ``(min, max)`` by plain string comparison.

    Raises:
        ValueError: ``x == y`` (a system is never compared with itself).
    """
    if x == y:
        raise ValueError(f"a pair needs two different systems, got {x!r} twice")
    return (x, y) if x < y else (y, x)


def presentation_order(first: str, second: str) -> PairOrder:
    """``"ab"`` when ``first`` (shown first) sorts before ``second``, else ``"ba"``."""
    return "ab" if canonical_pair(first, second)[0] == first else "ba"


def pair_item_id(doc_id: str, x: str, y: str) -> str:
    """The store's item id of the pair {x, y} in document ``doc_id``: ``"<doc_id>/<a>|<b>"`` with a < b.

    Raises:
        ValueError: equal systems, or a system id containing "/" or "|".
    """
    for system in (x, y):
        if any(mark in system for mark in _FORBIDDEN_IN_SYSTEM_ID):
            raise ValueError(f"system id {system!r} must not contain '/' or '|'")
    a, b = canonical_pair(x, y)
    return f"{doc_id}/{a}{_PAIR_SEPARATOR}{b}"


def split_pair_item_id(item_id: str) -> tuple[str, str, str]:
    """Invert :func:`pair_item_id`: ``(doc_id, a, b)`` (ValueError when ``item_id`` is not a pair id)."""
    doc_id, sep, pair = item_id.rpartition("/")
    a, bar, b = pair.partition(_PAIR_SEPARATOR)
    if not sep or not bar or not a or not b:
        raise ValueError(f"{item_id!r} is not a pair item id '<doc_id>/<a>|<b>'")
    return doc_id, a, b


def presented(item_id: str, order: str) -> tuple[str, str, str]:
    """``(doc_id, first, second)``: the pair of ``item_id`` as shown in ``order`` ("ab" or "ba")."""
    doc_id, a, b = split_pair_item_id(item_id)
    if order == "ab":
        return doc_id, a, b
    if order == "ba":
        return doc_id, b, a
    raise ValueError(f"pairwise order must be 'ab' or 'ba', got {order!r}")


def _info_for(name: str, pairwise_infos: dict[str, JudgeInfo], direct_infos: dict[str, JudgeInfo]) -> JudgeInfo:
    if name in pairwise_infos:
        return pairwise_infos[name]
    direct = direct_infos.get(name)
    return JudgeInfo(name=name, model=direct.model if direct else name, provider=direct.provider if direct else None)


def _read_file(path: Path, info: JudgeInfo, summeval: SummEval | None) -> RecordedPairwise:
    systems: dict[str, set[str]] = {}
    if summeval is not None:
        for item in summeval.items:
            systems.setdefault(item.doc_id, set()).add(item.system_id)
    rows: list[PairwiseRow] = []
    seen: set[tuple[str, str, str, str]] = set()
    for line, row in decode_jsonl(path, msgspec.json.Decoder(_Row)):
        if row.criterion not in CRITERIA:
            raise DataError(path, line, f"unknown criterion {row.criterion!r} (known: {', '.join(CRITERIA)})")
        if row.first == row.second:
            raise DataError(path, line, f"system {row.first!r} is compared with itself")
        if any(mark in s for s in (row.first, row.second) for mark in _FORBIDDEN_IN_SYSTEM_ID):
            raise DataError(path, line, "a system id contains '/' or '|'")
        if summeval is not None:
            if row.doc_id not in systems:
                raise DataError(path, line, f"doc_id {row.doc_id!r} is not in the SummEval items")
            for system in (row.first, row.second):
                if system not in systems[row.doc_id]:
                    raise DataError(path, line, f"system {system!r} has no item for doc_id {row.doc_id!r}")
        key = (row.doc_id, row.criterion, row.first, row.second)
        if key in seen:
            raise DataError(path, line, f"duplicate verdict for {row.first} vs {row.second} ({row.criterion})")
        seen.add(key)
        rows.append(
            PairwiseRow(
                doc_id=row.doc_id,
                criterion=row.criterion,
                first=row.first,
                second=row.second,
                response=row.response,
                line=line,
            )
        )
    return RecordedPairwise(info=info, rows=tuple(rows), path=str(path))


def load_pairwise(data_dir: Path | str, summeval: SummEval | None = None) -> list[RecordedPairwise]:
    """Load every ``pairwise/summeval/*.jsonl`` (sorted by judge name); with ``summeval``, check docs/systems.

    Raises:
        DataError: malformed line, unknown criterion, self-comparison, duplicate verdict, or (with
            ``summeval``) an unknown document or a system without an item there; file and line named.
    """
    root = Path(data_dir)
    folder = root / "pairwise" / "summeval"
    if not folder.is_dir():
        raise DataError(folder, None, "the recorded pairwise folder does not exist")
    pairwise_infos = load_judge_infos(folder / "judges.json")
    direct_infos = load_judge_infos(root / "judges" / "summeval" / "judges.json")
    return [
        _read_file(path, _info_for(path.name.removesuffix(".jsonl"), pairwise_infos, direct_infos), summeval)
        for path in sorted(folder.glob("*.jsonl"))
    ]
