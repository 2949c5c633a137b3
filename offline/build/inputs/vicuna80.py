"""Vicuna80 round-robin tournaments (PRD, Li et al. 2023): questions, five assistants, five LLM judges, human votes.

Files under ``<data_dir>/pairwise/vicuna80/``:

* ``items.jsonl``: ``item_id`` (q1..q80), ``category``, ``question``, ``answers`` {assistant: answer text}.
* ``judges/<judge>.jsonl`` (judge = file name without ``.jsonl``): ``item_id``, ``first`` (shown as
  "Assistant 1"), ``second``, ``repetition``, ``response`` (raw reply), ``label`` (first | second | tie: the
  dataset authors' reading of the reply).
* ``human.jsonl``: ``item_id``, ``first``, ``second``, ``vote`` (first | second | tie), one row per vote.
* ``prompts.json``: the judge prompt templates (kept as read).

Rules: a judge row naming an assistant its item lacks, a self-pair, an unknown label, an unknown item or a
duplicate (item, first, second, repetition) stops the load with ``file:line: problem`` (:class:`DataError`). A
human vote on an assistant that the item lacks (the file also holds partial votes on four guanaco models that no
judge saw) is not part of any tournament: it is left out and counted per assistant in
``Vicuna80.human_outside``, never silently; a human self-pair or an unknown vote stops the load.

==========================================  =======================================================
call                                        result
==========================================  =======================================================
``load_vicuna80(data_dir)``                 ``Vicuna80``: items, judges (sorted by name), human votes
``vicuna80_dir(data_dir)``                  ``<data_dir>/pairwise/vicuna80``
==========================================  =======================================================
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Literal

import msgspec

from offline.build.inputs.errors import DataError, decode_jsonl

__all__ = ["LABELS", "HumanVote", "JudgeVerdict", "Vicuna80", "Vicuna80Item", "load_vicuna80", "vicuna80_dir"]

Label = Literal["first", "second", "tie"]
LABELS: tuple[str, ...] = ("first", "second", "tie")
_FORBIDDEN = ("/", "|")


class Vicuna80Item(msgspec.Struct, frozen=True, kw_only=True):
    """One question and its assistants' answers."""

    item_id: str
    category: str
    question: str
    answers: dict[str, str]


class JudgeVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """One recorded judge verdict as shown; ``line`` is its 1-based line in ``judges/<judge>.jsonl``."""

    judge: str
    item_id: str
    first: str
    second: str
    repetition: int
    response: str | None
    label: Label
    line: int


class HumanVote(msgspec.Struct, frozen=True, kw_only=True):
    """One human vote on a pair (``first`` shown first); ``line`` is its 1-based line in ``human.jsonl``."""

    item_id: str
    first: str
    second: str
    vote: Label
    line: int


class Vicuna80(msgspec.Struct, frozen=True, kw_only=True):
    """Everything in ``pairwise/vicuna80``: items by id, judges' verdicts by judge name, human votes."""

    items: dict[str, Vicuna80Item]
    judges: dict[str, tuple[JudgeVerdict, ...]]
    judge_paths: dict[str, str]
    human: tuple[HumanVote, ...]
    human_outside: dict[str, int]  # assistant the item lacks -> votes naming it left out
    n_human_left_out: int  # votes left out (a vote naming two such assistants counts once)
    prompts: list[dict[str, object]]
    path: str

    @property
    def assistants(self) -> tuple[str, ...]:
        """Every assistant answering some item, sorted."""
        return tuple(sorted({name for item in self.items.values() for name in item.answers}))


class _ItemRow(msgspec.Struct):
    item_id: str
    category: str
    question: str
    answers: dict[str, str]


class _JudgeRow(msgspec.Struct):
    item_id: str
    first: str
    second: str
    repetition: int
    label: str
    response: str | None = None


class _HumanRow(msgspec.Struct):
    item_id: str
    first: str
    second: str
    vote: str


def vicuna80_dir(data_dir: Path | str) -> Path:
    """The Vicuna80 folder under the data directory."""
    return Path(data_dir) / "pairwise" / "vicuna80"


def _read_items(path: Path) -> dict[str, Vicuna80Item]:
    items: dict[str, Vicuna80Item] = {}
    for line, row in decode_jsonl(path, msgspec.json.Decoder(_ItemRow)):
        if row.item_id in items:
            raise DataError(path, line, f"duplicate item_id {row.item_id!r}")
        if "/" in row.item_id:
            raise DataError(path, line, f"item_id {row.item_id!r} must not contain '/'")
        if len(row.answers) < 2:
            raise DataError(path, line, f"item {row.item_id!r} has {len(row.answers)} answers; a pair needs 2")
        for name in row.answers:
            if not name or any(mark in name for mark in _FORBIDDEN):
                raise DataError(path, line, f"assistant name {name!r} is empty or contains '/' or '|'")
        items[row.item_id] = Vicuna80Item(
            item_id=row.item_id, category=row.category, question=row.question, answers=dict(row.answers)
        )
    if not items:
        raise DataError(path, None, "no item")
    return items


def _check_pair(path: Path, line: int, items: dict[str, Vicuna80Item], item_id: str, first: str, second: str) -> None:
    if item_id not in items:
        raise DataError(path, line, f"item_id {item_id!r} is not in items.jsonl")
    if first == second:
        raise DataError(path, line, f"assistant {first!r} is compared with itself")


def _check_label(path: Path, line: int, field: str, value: str) -> None:
    if value not in LABELS:
        raise DataError(path, line, f"unknown {field} {value!r} (known: {', '.join(LABELS)})")


def _read_judge(path: Path, items: dict[str, Vicuna80Item]) -> tuple[JudgeVerdict, ...]:
    judge = path.name.removesuffix(".jsonl")
    rows: list[JudgeVerdict] = []
    seen: set[tuple[str, str, str, int]] = set()
    for line, row in decode_jsonl(path, msgspec.json.Decoder(_JudgeRow)):
        _check_pair(path, line, items, row.item_id, row.first, row.second)
        for name in (row.first, row.second):
            if name not in items[row.item_id].answers:
                raise DataError(
                    path,
                    line,
                    f"assistant {name!r} has no answer in item {row.item_id!r} "
                    f"(answers: {', '.join(sorted(items[row.item_id].answers))})",
                )
        _check_label(path, line, "label", row.label)
        if row.repetition < 0:
            raise DataError(path, line, f"repetition must be >= 0, got {row.repetition}")
        key = (row.item_id, row.first, row.second, row.repetition)
        if key in seen:
            raise DataError(
                path,
                line,
                f"duplicate verdict for {row.first} vs {row.second} in {row.item_id} (repetition {row.repetition})",
            )
        seen.add(key)
        rows.append(
            JudgeVerdict(
                judge=judge,
                item_id=row.item_id,
                first=row.first,
                second=row.second,
                repetition=row.repetition,
                response=row.response,
                label=row.label,  # type: ignore[arg-type]
                line=line,
            )
        )
    if not rows:
        raise DataError(path, None, "no verdict")
    return tuple(rows)


def _read_human(path: Path, items: dict[str, Vicuna80Item]) -> tuple[tuple[HumanVote, ...], dict[str, int], int]:
    votes: list[HumanVote] = []
    outside: Counter[str] = Counter()
    left_out = 0
    for line, row in decode_jsonl(path, msgspec.json.Decoder(_HumanRow)):
        _check_pair(path, line, items, row.item_id, row.first, row.second)
        _check_label(path, line, "vote", row.vote)
        lacking = [name for name in (row.first, row.second) if name not in items[row.item_id].answers]
        if lacking:
            outside.update(lacking)
            left_out += 1
            continue
        votes.append(
            HumanVote(
                item_id=row.item_id,
                first=row.first,
                second=row.second,
                vote=row.vote,  # type: ignore[arg-type]
                line=line,
            )
        )
    return tuple(votes), dict(sorted(outside.items())), left_out


def load_vicuna80(data_dir: Path | str) -> Vicuna80:
    """Load and check ``pairwise/vicuna80`` (module rules); judges sorted by name.

    Raises:
        DataError: a missing folder or file, malformed JSON, or a refused row (file and line named).
    """
    folder = vicuna80_dir(data_dir)
    if not folder.is_dir():
        raise DataError(folder, None, "the Vicuna80 folder does not exist")
    items = _read_items(folder / "items.jsonl")
    paths = sorted((folder / "judges").glob("*.jsonl"))
    if not paths:
        raise DataError(folder / "judges", None, "no judge file (judges/<judge>.jsonl)")
    judges = {path.name.removesuffix(".jsonl"): _read_judge(path, items) for path in paths}
    human, outside, left_out = _read_human(folder / "human.jsonl", items)
    prompts_path = folder / "prompts.json"
    try:
        prompts = msgspec.json.decode(prompts_path.read_bytes(), type=list[dict[str, object]])
    except FileNotFoundError:
        raise DataError(prompts_path, None, "file not found") from None
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise DataError(prompts_path, None, f"not a JSON list of prompt objects: {exc}") from None
    return Vicuna80(
        items=items,
        judges=judges,
        judge_paths={p.name.removesuffix(".jsonl"): str(p) for p in paths},
        human=human,
        human_outside=outside,
        n_human_left_out=left_out,
        prompts=prompts,
        path=str(folder),
    )
