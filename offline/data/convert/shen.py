"""Shen et al. 2023's recorded replies (DAMO-NLP-SG/LLM_summeval) to the judges' and the pairwise data files.

``rts_judge``: ``eval_model_generations/<model>/eval_M<n>_generations/<criterion>_rts.txt`` (JSON Lines: ``id`` the
SummEval document, ``resp`` the raw reason-then-score reply) -> ``judges/summeval/<judge>.jsonl``: one row per
(item ``<id>/M<n>``, criterion), ``score`` and ``logprobs`` null (the reply is text only), ``response`` the reply;
criteria in the order coherence, consistency, fluency, relevance, within one the items sorted by ``item_id``.

``shen_pairwise``: ``comp_res/<model>/M<a>-M<b>_<criterion>[_toggle].result`` (``id``, ``resp``: "A", "B", "C",
sometimes with words after it) -> ``pairwise/summeval/<judge>.jsonl``: ``first`` = M<a>, ``second`` = M<b> (the
``_toggle`` file swaps them: the same pair shown the other way round), ``response`` the reply; rows sorted by
(criterion in the order above, doc_id, first, second).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from offline.data.convert.files import Inputs, dump_jsonl, json_lines
from offline.data.convert.summeval import CRITERIA

__all__ = ["pairwise", "rts_judge"]

RTS = re.compile(r".*/eval_M(\d+)_generations/([a-z]+)_rts\.txt")
COMPARISON = re.compile(r".*/(M\d+)-(M\d+)_([a-z]+)(_toggle)?\.result")


def _replies(key: str, raw: bytes) -> list[tuple[str, str]]:
    out = []
    for number, row in json_lines(key, raw):
        if not isinstance(row, dict) or not isinstance(row.get("id"), str) or not isinstance(row.get("resp"), str):
            raise ValueError(f"{key}:{number}: a row needs id and resp strings")
        out.append((row["id"], row["resp"]))
    return out


def _criterion(key: str, name: str) -> int:
    if name not in CRITERIA:
        raise ValueError(f"{key}: unknown criterion {name!r}")
    return CRITERIA.index(name)


def rts_judge(inputs: Inputs, options: Mapping[str, Any]) -> bytes:
    """One reason-then-score judge's replies to every (item, criterion).

    Raises:
        ValueError: a file name or row is not understood, or an (item, criterion) occurs twice.
    """
    rows: dict[tuple[int, str], dict[str, Any]] = {}
    for key, raw in inputs.each("*_rts.txt"):
        match = RTS.fullmatch(key)
        if match is None:
            raise ValueError(f"{key}: not an eval_M<n>_generations/<criterion>_rts.txt file")
        system, criterion = f"M{match.group(1)}", match.group(2)
        rank = _criterion(key, criterion)
        for doc_id, reply in _replies(key, raw):
            item_id = f"{doc_id}/{system}"
            if (rank, item_id) in rows:
                raise ValueError(f"{key}: {item_id} {criterion} occurs twice")
            rows[(rank, item_id)] = {
                "item_id": item_id,
                "criterion": criterion,
                "score": None,
                "logprobs": None,
                "response": reply,
            }
    return dump_jsonl([rows[k] for k in sorted(rows)])


def pairwise(inputs: Inputs, options: Mapping[str, Any]) -> bytes:
    """One pairwise judge's verdicts in both presentation orders.

    Raises:
        ValueError: a file name or row is not understood.
    """
    rows = []
    for key, raw in inputs.each("*.result"):
        match = COMPARISON.fullmatch(key)
        if match is None:
            raise ValueError(f"{key}: not a M<a>-M<b>_<criterion>[_toggle].result file")
        a, b, criterion, toggle = match.groups()
        first, second = (b, a) if toggle else (a, b)
        rank = _criterion(key, criterion)
        for doc_id, reply in _replies(key, raw):
            rows.append(
                (
                    (rank, doc_id, first, second),
                    {"doc_id": doc_id, "criterion": criterion, "first": first, "second": second, "response": reply},
                )
            )
    rows.sort(key=lambda r: r[0])
    return dump_jsonl([r for _, r in rows])
