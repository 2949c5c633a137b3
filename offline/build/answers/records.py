"""What the answer store holds: the key of one judge answer (task, order, repetition checked), the stored record,
and the store's count, put and alignment results.
"""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = [
    "AlignedScore",
    "AnswerCount",
    "AnswerKey",
    "AnswerRecord",
    "ORDERS",
    "OUTCOMES",
    "Order",
    "Outcome",
    "PutStats",
    "StoreError",
    "TASKS",
    "Task",
]


Task = Literal["direct", "pairwise", "factuality_direct", "factuality_qa", "factuality_sentences"]


Order = Literal["ab", "ba", ""]


Outcome = Literal["first", "second", "tie"]


TASKS: tuple[str, ...] = ("direct", "pairwise", "factuality_direct", "factuality_qa", "factuality_sentences")


ORDERS: tuple[str, ...] = ("ab", "ba", "")


OUTCOMES: tuple[str, ...] = ("first", "second", "tie")


class StoreError(ValueError):
    """An answer key or record that the store refuses (bad task/order combination, bad repetition)."""


class AnswerKey(msgspec.Struct, frozen=True, kw_only=True):
    """The identity of one judge answer (see :mod:`offline.build.answers.store`'s docstring)."""

    judge: str
    prompt_family: str
    task: Task
    criterion: str
    item_id: str
    repetition: int = 0
    order: Order = ""

    def __post_init__(self) -> None:
        _check_key(self.judge, self.prompt_family, self.task, self.criterion, self.item_id, self.repetition, self.order)


class AnswerRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One stored answer: the key fields plus the verdict, its evidence and its cost."""

    judge: str
    prompt_family: str
    task: Task
    criterion: str
    item_id: str
    repetition: int = 0
    order: Order = ""
    judge_score: int | None = None
    outcome: Outcome | None = None
    logprobs: dict[str, float] | None = None
    raw_reply: str | None = None
    parse_rule: str | None = None
    error: str | None = None
    model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    created_at: str | None = None
    mean_of_samples: float | None = None  # a G-Eval style mean of sampled scores (direct task), when recorded

    def __post_init__(self) -> None:
        _check_key(self.judge, self.prompt_family, self.task, self.criterion, self.item_id, self.repetition, self.order)
        if self.outcome is not None and self.outcome not in OUTCOMES:
            raise StoreError(f"outcome must be one of {OUTCOMES} or None, got {self.outcome!r}")

    @property
    def key(self) -> AnswerKey:
        """This record's key."""
        return AnswerKey(
            judge=self.judge,
            prompt_family=self.prompt_family,
            task=self.task,
            criterion=self.criterion,
            item_id=self.item_id,
            repetition=self.repetition,
            order=self.order,
        )

    @property
    def ok(self) -> bool:
        """True when the judge answered (``error`` is None), whether or not a score could be read."""
        return self.error is None

    @classmethod
    def for_key(cls, key: AnswerKey, **values: object) -> AnswerRecord:
        """A record for ``key`` with the given value fields."""
        fields = {name: getattr(key, name) for name in key.__struct_fields__}
        return cls(**fields, **values)  # type: ignore[arg-type]


class PutStats(msgspec.Struct, frozen=True, kw_only=True):
    """What a batch upsert did: rows newly inserted, rows whose value changed, rows already identical."""

    inserted: int
    updated: int
    unchanged: int


class AnswerCount(msgspec.Struct, frozen=True, kw_only=True):
    """Counts for one (judge, prompt_family, task, criterion): answers, with a score/outcome, failed calls."""

    judge: str
    prompt_family: str
    task: str
    criterion: str
    n: int
    n_verdict: int
    n_failed: int


class AlignedScore(msgspec.Struct, frozen=True, kw_only=True):
    """One item of a judge's direct scores: its score (None when unreadable/missing/failed) and log-probs."""

    item_id: str
    judge_score: int | None
    logprobs: dict[str, float] | None
    mean_of_samples: float | None = None


def _check_key(
    judge: str, prompt_family: str, task: str, criterion: str, item_id: str, repetition: int, order: str
) -> None:
    if task not in TASKS:
        raise StoreError(f"task must be one of {TASKS}, got {task!r}")
    if order not in ORDERS:
        raise StoreError(f"order must be one of {ORDERS}, got {order!r}")
    if (task == "pairwise") != (order != ""):
        raise StoreError(f"order {order!r} does not fit task {task!r}: pairwise needs 'ab'/'ba', others ''")
    if not isinstance(repetition, int) or isinstance(repetition, bool) or repetition < 0:
        raise StoreError(f"repetition must be an integer >= 0, got {repetition!r}")
    for name, value in (
        ("judge", judge),
        ("prompt_family", prompt_family),
        ("criterion", criterion),
        ("item_id", item_id),
    ):
        if not value:
            raise StoreError(f"{name} must be a non-empty string")
