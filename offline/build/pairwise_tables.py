"""The pairwise-decisions study's pair tables: each dataset's pairs with their groups, human labels and every
source's vote-share signal (each judge alone and the ``panel``).

The verdict, human-label and group rules are stated in :mod:`offline.studies.pairwise_decisions.study`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from calibration.decisions.pairwise import GROUP_STARTS, Bound, PairSignal, distinct_starts, human_majority, vote_signal
from offline.build.inputs.arena_ppr import ArenaPPR, load_arena_ppr
from offline.build.inputs.pairwise import pair_item_id, presented
from offline.build.inputs.vicuna80 import Vicuna80, load_vicuna80

__all__ = [
    "PANEL",
    "PairTable",
    "arena_pairs",
    "bound_starts",
    "load_tables",
    "sources",
    "vicuna80_pairs",
]

PANEL = "panel"


@dataclass(frozen=True)
class PairTable:
    """One dataset's pairs: group code per pair, human label, and each source's signal (aligned arrays)."""

    dataset: str
    groups: np.ndarray  # int codes, one per pair
    human: np.ndarray  # +1 / -1 / 0 per pair, canonical order
    signals: dict[str, PairSignal]
    group_size_bound: int
    verdicts_per_pair: dict[str, int]  # per source: verdicts behind a pair's signal (median; panel: the sum)


def _outcome_sign(outcome: str | None, shown_first_is_a: bool) -> float:
    if outcome == "tie":
        return 0.0
    return 1.0 if (outcome == "first") == shown_first_is_a else -1.0


def _votes_matrix(per_pair: list[list[float]]) -> np.ndarray:
    width = max((len(v) for v in per_pair), default=1) or 1
    out = np.full((len(per_pair), width), np.nan)
    for i, votes in enumerate(per_pair):
        out[i, : len(votes)] = votes
    return out


def _panel(matrices: Sequence[np.ndarray]) -> PairSignal:
    """Members pooled, each member's present verdicts weighted 1 / (its verdict count on the pair)."""
    votes = np.concatenate(matrices, axis=1)
    weights = np.concatenate(
        [np.broadcast_to(1.0 / np.maximum((~np.isnan(m)).sum(axis=1, keepdims=True), 1), m.shape) for m in matrices],
        axis=1,
    )
    return vote_signal(votes, weights)


def vicuna80_pairs(data: Vicuna80, parse_choice: Callable[[str | None], Any] | None = None) -> PairTable:
    """Vicuna80's question pairs with human plurality labels and every judge's and the panel's signal."""
    from offline.build.answers.ingest import vicuna80_records

    if parse_choice is None:
        from judges.parsing.choice import parse_choice as default_parse_choice

        parse_choice = default_parse_choice
    pair_ids = sorted(
        {
            pair_item_id(q, a, b)
            for q, item in data.items.items()
            for i, a in enumerate(sorted(item.answers))
            for b in sorted(item.answers)[i + 1 :]
        }
    )
    position = {p: i for i, p in enumerate(pair_ids)}
    counts = np.zeros((len(pair_ids), 3), dtype=int)  # a, b, tie
    for vote in data.human:
        row = position[pair_item_id(vote.item_id, vote.first, vote.second)]
        sign = _outcome_sign(vote.vote, vote.first < vote.second)
        counts[row, 0 if sign > 0 else 1 if sign < 0 else 2] += 1
    matrices = {}
    for judge, verdicts in data.judges.items():
        records, _ = vicuna80_records(judge, verdicts, parse_choice)
        per_pair: list[list[float]] = [[] for _ in pair_ids]
        for record in records:
            _, first, second = presented(record.item_id, record.order)
            per_pair[position[record.item_id]].append(_outcome_sign(record.outcome, first < second))
        matrices[judge] = _votes_matrix(per_pair)
    signals = {judge: vote_signal(m) for judge, m in matrices.items()}
    signals[PANEL] = _panel(list(matrices.values()))
    per_pair_counts = {judge: int(np.median((~np.isnan(m)).sum(axis=1))) for judge, m in matrices.items()}
    per_pair_counts[PANEL] = sum(per_pair_counts.values())
    _, groups = np.unique([p.rpartition("/")[0] for p in pair_ids], return_inverse=True)
    has_votes = counts.sum(axis=1) > 0
    human = np.where(has_votes, human_majority(counts[:, 0], counts[:, 1], counts[:, 2]), 0).astype(np.int8)
    return PairTable(
        dataset="vicuna80",
        groups=groups,
        human=human,
        signals=signals,
        group_size_bound=int(np.bincount(groups).max()),
        verdicts_per_pair=per_pair_counts,
    )


def arena_pairs(data: ArenaPPR) -> PairTable:
    """Arena battles (battle order = canonical order) with each judge's and the panel's signal."""
    matrices = {judge: outcome.astype(float)[:, None] for judge, outcome in data.judges.items()}
    signals = {judge: vote_signal(m) for judge, m in matrices.items()}
    signals[PANEL] = _panel(list(matrices.values()))
    _, groups = np.unique(data.question_ids, return_inverse=True)
    return PairTable(
        dataset="arena_ppr",
        groups=groups,
        human=data.human.copy(),
        signals=signals,
        group_size_bound=int(np.bincount(groups).max()),
        verdicts_per_pair={**dict.fromkeys(data.judges, 1), PANEL: len(data.judges)},
    )


def bound_starts(bound: Bound, table: PairTable, source: str) -> tuple[float, ...]:
    """The group bound runs the multi-start fixed sequence (starts that the source's verdict count makes equal
    collapse into one chain); the pair binomial Trust-or-Escalate's single chain."""
    if bound != "group_betting":
        return ()
    return distinct_starts(GROUP_STARTS, table.verdicts_per_pair[source])


def sources(table: PairTable) -> list[str]:
    """The table's sources: the judges in name order, then the panel."""
    return [*sorted(s for s in table.signals if s != PANEL), PANEL]


def load_tables(data_dir: Path) -> list[PairTable]:
    """Both datasets' pair tables from the data directory (DataError when a folder or file is missing or bad)."""
    return [vicuna80_pairs(load_vicuna80(data_dir)), arena_pairs(load_arena_ppr(data_dir))]
