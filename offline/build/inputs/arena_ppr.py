"""Chatbot Arena battles with human and LLM-judge verdicts (Prediction-Powered Ranking data, Chatzi et al. 2024).

Files under ``<data_dir>/pairwise/arena_ppr/``: ``human.jsonl`` and one ``<judge>.jsonl`` per LLM judge, one row per
battle aligned by ``num``: ``num``, ``question_id``, ``model_a``, ``model_b``, ``winner`` (``model_a`` |
``model_b`` | ``tie`` | ``tie (bothbad)``).

Rules: every file must hold the same battles in the same order (same ``num``, ``question_id``, ``model_a``,
``model_b`` on each line); a different battle, an unknown winner, a self-battle or a duplicate ``num`` stops the
load with ``file:line: problem`` (:class:`DataError`). Outcomes are coded in the battle's own order: ``+1`` =
model_a wins, ``-1`` = model_b wins, ``0`` = either tie (both ties are "no preference").

==========================================  =======================================================
call                                        result
==========================================  =======================================================
``load_arena_ppr(data_dir)``                ``ArenaPPR``: battles, human outcomes, judges' outcomes
``arena_ppr_dir(data_dir)``                 ``<data_dir>/pairwise/arena_ppr``
==========================================  =======================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import msgspec
import numpy as np

from offline.build.inputs.errors import DataError, decode_jsonl

__all__ = ["HUMAN_FILE", "WINNERS", "ArenaPPR", "arena_ppr_dir", "load_arena_ppr"]

HUMAN_FILE = "human.jsonl"
WINNERS = {"model_a": 1, "model_b": -1, "tie": 0, "tie (bothbad)": 0}


class _Row(msgspec.Struct):
    num: int
    question_id: str
    model_a: str
    model_b: str
    winner: str


@dataclass(frozen=True, kw_only=True)
class ArenaPPR:
    """Battles in file order: ``question_id``, models, human outcome and each judge's outcome (+1 / -1 / 0)."""

    question_ids: list[str]
    model_a: list[str]
    model_b: list[str]
    human: np.ndarray
    human_winners: list[str]
    judges: dict[str, np.ndarray]
    path: str


def arena_ppr_dir(data_dir: Path | str) -> Path:
    """The Arena PPR folder under the data directory."""
    return Path(data_dir) / "pairwise" / "arena_ppr"


def _read(path: Path) -> list[_Row]:
    rows, seen = [], set()
    for line, row in decode_jsonl(path, msgspec.json.Decoder(_Row)):
        if row.winner not in WINNERS:
            raise DataError(path, line, f"unknown winner {row.winner!r} (known: {', '.join(WINNERS)})")
        if row.model_a == row.model_b:
            raise DataError(path, line, f"model {row.model_a!r} battles itself")
        if row.num in seen:
            raise DataError(path, line, f"duplicate num {row.num}")
        seen.add(row.num)
        rows.append(row)
    if not rows:
        raise DataError(path, None, "no battle")
    return rows


def load_arena_ppr(data_dir: Path | str) -> ArenaPPR:
    """Load and check ``pairwise/arena_ppr`` (module rules); judges sorted by name.

    Raises:
        DataError: a missing folder or file, malformed JSON, a refused or misaligned row (file and line named).
    """
    folder = arena_ppr_dir(data_dir)
    if not folder.is_dir():
        raise DataError(folder, None, "the Arena PPR folder does not exist")
    human = _read(folder / HUMAN_FILE)
    keys = [(r.num, r.question_id, r.model_a, r.model_b) for r in human]
    judges: dict[str, np.ndarray] = {}
    for path in sorted(p for p in folder.glob("*.jsonl") if p.name != HUMAN_FILE):
        rows = _read(path)
        if len(rows) != len(human):
            raise DataError(path, None, f"{len(rows)} battles, {HUMAN_FILE} has {len(human)}")
        for line, (row, key) in enumerate(zip(rows, keys, strict=True), start=1):
            if (row.num, row.question_id, row.model_a, row.model_b) != key:
                raise DataError(path, line, f"battle num {row.num} differs from line {line} of {HUMAN_FILE}")
        judges[path.name.removesuffix(".jsonl")] = np.array([WINNERS[r.winner] for r in rows], dtype=np.int8)
    if not judges:
        raise DataError(folder, None, "no judge file beside human.jsonl")
    return ArenaPPR(
        question_ids=[r.question_id for r in human],
        model_a=[r.model_a for r in human],
        model_b=[r.model_b for r in human],
        human=np.array([WINNERS[r.winner] for r in human], np.int8),
        human_winners=[r.winner for r in human],
        judges=judges,
        path=str(folder),
    )
