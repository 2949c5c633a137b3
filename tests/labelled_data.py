"""Labelled JSON Lines files built from the shared data, for the bring-your-own-judge tests.

A recorded judge is renamed (so the shipped artifact lacks it), one SummEval criterion is renamed, and human
labels and judge scores are rescaled from 1..5 to 1..K by x -> 1 + (x - 1)(K - 1)/4 (the judge's score rounded
half up to an integer). Every row carries its document id as ``group`` and ``scale_max`` = K.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

__all__ = ["rescale", "write_labelled_file"]


def rescale(value: float, k: int) -> float:
    """Map a 1..5 value linearly onto 1..k."""
    return 1 + (value - 1) * (k - 1) / 4


def write_labelled_file(
    data_dir: Path,
    path: Path,
    *,
    source_judge: str = "gpt-4o-mini-2024-07-18",
    source_criterion: str = "relevance",
    judge: str = "acme-judge-v1",
    criterion: str = "helpfulness",
    k: int = 7,
    limit: int | None = None,
) -> int:
    """Write the labelled file; return the number of rows (items with a readable recorded score)."""
    items = {}
    for line in (data_dir / "summeval" / "items.jsonl").read_text().splitlines():
        item = json.loads(line)
        items[item["item_id"]] = item
    rows = []
    for line in (data_dir / "judges" / "summeval" / f"{source_judge}.jsonl").read_text().splitlines():
        answer = json.loads(line)
        if answer["criterion"] != source_criterion or answer["score"] is None or answer["item_id"] not in items:
            continue
        item = items[answer["item_id"]]
        rows.append(
            {
                "item_id": answer["item_id"],
                "criterion": criterion,
                "judge": judge,
                "human": round(rescale(item["expert_mean"][source_criterion], k), 6),
                "judge_score": math.floor(rescale(answer["score"], k) + 0.5),
                "group": item["doc_id"],
                "scale_max": k,
            }
        )
    rows = rows[:limit] if limit is not None else rows
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return len(rows)
