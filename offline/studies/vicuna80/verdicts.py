"""The Vicuna80 verdicts as the study reads them: judges' verdicts from the answer store (and human votes, by the
same type), and which verdicts each aggregation keeps (rules in :mod:`offline.studies.vicuna80.study`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import msgspec

from calibration.tournaments.tournament import PairwiseVerdict
from offline.build.answers.ingest import VICUNA80_CRITERION, VICUNA80_PROMPT_FAMILY
from offline.build.answers.store import AnswerStore
from offline.build.inputs.pairwise import presented

__all__ = ["AGGREGATIONS", "Vicuna80Verdict", "aggregate", "by_question", "verdicts_from_store"]

AGGREGATIONS: tuple[str, ...] = ("both_orders", "order_a", "order_b")


class Vicuna80Verdict(msgspec.Struct, frozen=True, kw_only=True):
    """One verdict as shown (judge or human vote): ``outcome`` relative to the order shown."""

    source: str
    item_id: str
    first: str
    second: str
    outcome: str
    repetition: int = 0


def verdicts_from_store(
    store: AnswerStore, judges: Iterable[str] | None = None
) -> tuple[list[Vicuna80Verdict], dict[str, Counter[str]]]:
    """The stored Vicuna80 verdicts as shown (store key order) and, per judge, the count of each parse rule;
    with ``judges``, only theirs (a judge whose file left the data directory keeps its rows in a persistent store)."""
    verdicts: list[Vicuna80Verdict] = []
    rules: dict[str, Counter[str]] = {}
    wanted = None if judges is None else set(judges)
    for record in store.iter_answers(
        prompt_family=VICUNA80_PROMPT_FAMILY, task="pairwise", criterion=VICUNA80_CRITERION
    ):
        if wanted is not None and record.judge not in wanted:
            continue
        if record.outcome is None or record.error is not None:
            continue  # ingest always stores a verdict; a collected failure has none and no place here
        item_id, first, second = presented(record.item_id, record.order)
        verdicts.append(
            Vicuna80Verdict(
                source=record.judge,
                item_id=item_id,
                first=first,
                second=second,
                outcome=record.outcome,
                repetition=record.repetition,
            )
        )
        rules.setdefault(record.judge, Counter())[record.parse_rule or ""] += 1
    return verdicts, rules


def aggregate(verdicts: Iterable[Vicuna80Verdict], aggregation: str) -> list[PairwiseVerdict]:
    """The verdicts an aggregation keeps, as tournament verdicts (module rules)."""
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    return [
        PairwiseVerdict(first=v.first, second=v.second, outcome=v.outcome)  # type: ignore[arg-type]
        for v in verdicts
        if aggregation == "both_orders" or (v.first < v.second) == (aggregation == "order_a")
    ]


def by_question(verdicts: Iterable[Vicuna80Verdict]) -> dict[str, list[Vicuna80Verdict]]:
    grouped: dict[str, list[Vicuna80Verdict]] = {}
    for verdict in verdicts:
        grouped.setdefault(verdict.item_id, []).append(verdict)
    return grouped
