"""The local judge's recorded answers: ``recorded.json`` beside this module, committed.

Why here: the answers are this study's own measurement (a judge run on this project's machines), not upstream
data, so they live with the code that reads them, small (ids, scores, log-probs, token counts: about 0.3 MB) and
without any upstream text (no article, summary, or reply that could quote them). The human labels they are joined
with stay in the data directory (``DATA_DIR``), which is never committed.

File: one JSON object, ``judge`` / ``model`` / ``prompt_family`` / ``task`` of every answer, and
``seconds_per_call`` (the mean gap between consecutive answers' store times, pauses left out: each call's
latency when collected with ``--concurrency 1``), then ``answers``, one per line: ``item_id`` (SummEval's
``<doc_id>/<system_id>``), ``criterion``, ``judge_score`` (1..5, or null when the reply gave none), ``logprobs``
(label -> log-prob of the score token, labels outside the reply's top-20 absent; null without a distribution),
``parse_rule``, ``error`` (a failed call's error class and message), ``prompt_tokens``, ``completion_tokens``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from offline.build.answers.records import AnswerRecord
from offline.build.answers.store import AnswerStore
from offline.build.inputs.errors import DataError
from offline.build.inputs.summeval import SummEvalItem

__all__ = ["RECORDED", "Recorded", "RecordedAnswer", "export_recorded", "labelled_rows", "read_recorded"]

RECORDED = Path(__file__).with_name("recorded.json")


class RecordedAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """One recorded answer (module docstring)."""

    item_id: str
    criterion: str
    judge_score: int | None
    logprobs: dict[str, float] | None
    parse_rule: str | None
    error: str | None
    prompt_tokens: int | None
    completion_tokens: int | None


class Recorded(msgspec.Struct, frozen=True, kw_only=True):
    """The committed file: who answered, how fast, and every answer."""

    judge: str
    model: str | None
    prompt_family: str
    task: str
    seconds_per_call: float | None
    answers: list[RecordedAnswer]


def _seconds_per_call(records: Sequence[AnswerRecord]) -> float | None:
    """Mean seconds between consecutive answers within each run of the collection (a gap over 10 minutes starts a
    new run: a pause, not a call); the store keeps whole seconds, so a span over many calls is what is precise."""
    times = sorted(datetime.fromisoformat(r.created_at) for r in records if r.created_at)
    span, calls = 0.0, 0
    for a, b in zip(times, times[1:], strict=False):
        gap = (b - a).total_seconds()
        if gap < 600:
            span, calls = span + gap, calls + 1
    return round(span / calls, 3) if calls else None


def export_recorded(store: AnswerStore, *, judge: str, out: Path = RECORDED) -> Recorded:
    """Write the store's direct answers of ``judge`` to ``out`` (module format, sorted by criterion and item)."""
    records = [r for r in store.iter_answers(judge=judge, task="direct") if r.repetition == 0]
    if not records:
        raise DataError(None, None, f"the answer store has no direct answers of judge {judge!r}")
    families = sorted({r.prompt_family for r in records})
    if len(families) != 1:
        raise DataError(None, None, f"judge {judge!r} was asked with several prompt families: {families}")
    records.sort(key=lambda r: (r.criterion, r.item_id))
    recorded = Recorded(
        judge=judge,
        model=next((r.model for r in records if r.model), None),
        prompt_family=families[0],
        task="direct",
        seconds_per_call=_seconds_per_call(records),
        answers=[
            RecordedAnswer(
                item_id=r.item_id,
                criterion=r.criterion,
                judge_score=r.judge_score,
                logprobs=r.logprobs,
                parse_rule=r.parse_rule,
                error=r.error,
                prompt_tokens=r.prompt_tokens,
                completion_tokens=r.completion_tokens,
            )
            for r in records
        ],
    )
    head = msgspec.to_builtins(recorded)
    rows = head.pop("answers")
    lines = ",\n".join(json.dumps(row, sort_keys=False) for row in rows)
    body = json.dumps(head, indent=2)[:-2]  # the object without its closing brace, to append the answers
    out.write_text(f'{body},\n  "answers": [\n{lines}\n  ]\n}}\n')
    return recorded


def read_recorded(path: Path = RECORDED) -> Recorded:
    """The committed answers; DataError naming the file when it is unreadable."""
    try:
        return msgspec.json.decode(path.read_bytes(), type=Recorded)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError) as error:
        raise DataError(path, None, f"cannot read the recorded answers: {error}") from None


def labelled_rows(recorded: Recorded, items: Iterable[SummEvalItem]) -> list[dict[str, Any]]:
    """The answers with a score, joined with SummEval's expert means, as labelled rows (``artifact.labels``): the
    judge's score and log-probs, the human mean (its nearest integer, halves up, is the label), the document as
    the group. Answers without a score (no readable reply, failed call) are left out: the service answers them
    with a per-item error, not a set."""
    by_id = {item.item_id: item for item in items}
    rows = []
    for answer in recorded.answers:
        if answer.judge_score is None:
            continue
        item = by_id.get(answer.item_id)
        if item is None:
            raise DataError(None, None, f"recorded item {answer.item_id!r} is not in SummEval")
        row: dict[str, Any] = {
            "item_id": answer.item_id,
            "criterion": answer.criterion,
            "human": item.expert_mean[answer.criterion],
            "judge": recorded.judge,
            "prompt_family": recorded.prompt_family,
            "judge_score": answer.judge_score,
            "group": item.doc_id,
        }
        if answer.logprobs:
            row["judge_logprobs"] = answer.logprobs
        rows.append(row)
    return rows
