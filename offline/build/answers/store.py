"""The SQLite answer store: every judge answer the offline flow has, recorded or collected, under one key.

Key: (``judge``, ``prompt_family``, ``task``, ``criterion``, ``item_id``, ``repetition``, ``order``).
``task`` is one of :data:`offline.build.answers.records.TASKS`; ``order`` is ``"ab"``/``"ba"`` for pairwise answers
(relative to the canonical pair order of :mod:`offline.build.inputs.pairwise`, whose ``pair_item_id`` gives their
``item_id``) and ``""`` otherwise.

Value: ``judge_score`` (int 1..K or None), ``outcome`` (pairwise: ``"first"``/``"second"``/``"tie"`` relative to
the order shown, or None), ``logprobs`` (label -> log-probability, stored as JSON), ``raw_reply``, ``parse_rule``,
``error`` (None for an answer; the error text when the call failed), ``model``, ``prompt_tokens``,
``completion_tokens``, ``created_at`` (ISO-8601 UTC, set by the store on first insert).

=====================================================  ======================================================
call                                                   result
=====================================================  ======================================================
``with AnswerStore(path) as store:``                   opens (creating) the database; WAL; closes on exit
``store.put(record)``                                  upsert one answer; re-putting the same answer is a no-op
``store.put_many(records)``                            upsert many in one transaction -> ``PutStats``
``store.get(key)`` / ``store.has(key)``                the stored answer or None / whether one is stored
``store.iter_answers(judge=, task=, criterion=)``      matching answers ordered by key
``store.keys(judge=, task=, ok_only=)``                ``set[AnswerKey]`` (for skipping work already done)
``store.count(...)`` / ``store.counts()``              one count / per (judge, family, task, criterion) counts
``aligned_direct(store, judge, criterion)``            ``list[AlignedScore]`` ordered by item_id
=====================================================  ======================================================

The key, record and result types live in :mod:`offline.build.answers.records`. One connection per store object, used
from the thread that opened it (asyncio code calls it from the loop).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Self

import msgspec

from offline.build.answers.records import (
    TASKS,
    AlignedScore,
    AnswerCount,
    AnswerKey,
    AnswerRecord,
    PutStats,
    StoreError,
)

__all__ = [
    "AnswerStore",
    "aligned_direct",
]

SCHEMA_VERSION = 1

_KEY_COLUMNS = ("judge", "prompt_family", "task", "criterion", "item_id", "repetition", '"order"')
_VALUE_COLUMNS = (
    "judge_score", "outcome", "logprobs", "raw_reply", "parse_rule", "error", "model", "prompt_tokens",
    "completion_tokens", "mean_of_samples",
)  # fmt: skip
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS answers (
    judge TEXT NOT NULL,
    prompt_family TEXT NOT NULL,
    task TEXT NOT NULL CHECK (task IN ({", ".join(repr(t) for t in TASKS)})),
    criterion TEXT NOT NULL,
    item_id TEXT NOT NULL,
    repetition INTEGER NOT NULL CHECK (repetition >= 0),
    "order" TEXT NOT NULL CHECK ("order" IN ('ab', 'ba', '')),
    judge_score INTEGER,
    outcome TEXT CHECK (outcome IS NULL OR outcome IN ('first', 'second', 'tie')),
    logprobs TEXT,
    raw_reply TEXT,
    parse_rule TEXT,
    error TEXT,
    model TEXT,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    created_at TEXT NOT NULL,
    mean_of_samples REAL,
    PRIMARY KEY ({", ".join(_KEY_COLUMNS)})
) WITHOUT ROWID
"""
_ALL_COLUMNS = (*_KEY_COLUMNS, *_VALUE_COLUMNS, "created_at")
# Upsert that touches a row only when its value differs, so re-putting the same answer changes nothing
# (created_at included) and the change count tells inserts/updates from no-ops.
_UPSERT = (
    f"INSERT INTO answers ({', '.join(_ALL_COLUMNS)}) VALUES ({', '.join('?' * len(_ALL_COLUMNS))}) "
    f"ON CONFLICT ({', '.join(_KEY_COLUMNS)}) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in (*_VALUE_COLUMNS, "created_at"))
    + " WHERE "
    + " OR ".join(f"{c} IS NOT excluded.{c}" for c in _VALUE_COLUMNS)
)
_LOGPROBS = msgspec.json.Encoder(order="sorted")
_LOGPROBS_DECODER = msgspec.json.Decoder(dict[str, float])


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _row_of(record: AnswerRecord, created_at: str) -> tuple[object, ...]:
    logprobs = None if record.logprobs is None else _LOGPROBS.encode(record.logprobs).decode()
    return (
        record.judge,
        record.prompt_family,
        record.task,
        record.criterion,
        record.item_id,
        record.repetition,
        record.order,
        record.judge_score,
        record.outcome,
        logprobs,
        record.raw_reply,
        record.parse_rule,
        record.error,
        record.model,
        record.prompt_tokens,
        record.completion_tokens,
        record.mean_of_samples,
        record.created_at or created_at,
    )


def _record_of(row: sqlite3.Row) -> AnswerRecord:
    logprobs = row["logprobs"]
    return AnswerRecord(
        judge=row["judge"],
        prompt_family=row["prompt_family"],
        task=row["task"],
        criterion=row["criterion"],
        item_id=row["item_id"],
        repetition=row["repetition"],
        order=row["order"],
        judge_score=row["judge_score"],
        outcome=row["outcome"],
        logprobs=None if logprobs is None else _LOGPROBS_DECODER.decode(logprobs),
        raw_reply=row["raw_reply"],
        parse_rule=row["parse_rule"],
        error=row["error"],
        model=row["model"],
        prompt_tokens=row["prompt_tokens"],
        completion_tokens=row["completion_tokens"],
        created_at=row["created_at"],
        mean_of_samples=row["mean_of_samples"],
    )


def _where(**filters: object) -> tuple[str, list[object]]:
    clauses, params = [], []
    for column, value in filters.items():
        if value is not None:
            clauses.append(f'"{column}" = ?')
            params.append(value)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


class AnswerStore:
    """An SQLite file of judge answers (one connection, WAL journal); use as a context manager."""

    def __init__(self, path: Path | str) -> None:
        """Open or create the store at ``path`` (``":memory:"`` for a throwaway one)."""
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA journal_mode=WAL")
        # WAL + NORMAL: durable across application crashes, one fsync per checkpoint rather than per commit.
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA busy_timeout=5000")
        version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, SCHEMA_VERSION):
            self._conn.close()
            raise StoreError(f"{self.path}: store schema version {version}, this code reads {SCHEMA_VERSION}")
        self._conn.execute(_SCHEMA)
        self._add_mean_column()
        self._widen_task_check()
        self._conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def _add_mean_column(self) -> None:
        """A store written before ``mean_of_samples`` existed gets the column (appended, NULL for old rows)."""
        columns = {row[1] for row in self._conn.execute("PRAGMA table_info(answers)")}
        if "mean_of_samples" not in columns:
            self._conn.execute("ALTER TABLE answers ADD COLUMN mean_of_samples REAL")

    def _widen_task_check(self) -> None:
        """Rebuild a table created before a task was added, so its CHECK accepts every task of TASKS."""
        query = "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'answers'"
        sql = self._conn.execute(query).fetchone()[0]
        if all(repr(task) in sql for task in TASKS):
            return
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("ALTER TABLE answers RENAME TO answers_before_tasks")
            conn.execute(_SCHEMA)
            conn.execute("INSERT INTO answers SELECT * FROM answers_before_tasks")
            conn.execute("DROP TABLE answers_before_tasks")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self._conn.close()

    def put(self, record: AnswerRecord) -> None:
        """Upsert one answer; a record identical to the stored one changes nothing (not even created_at)."""
        self._conn.execute(_UPSERT, _row_of(record, _now()))

    def put_many(self, records: Iterable[AnswerRecord]) -> PutStats:
        """Upsert many answers in one transaction; return how many were inserted, updated, unchanged."""
        created_at = _now()
        rows = [_row_of(record, created_at) for record in records]
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            before = conn.execute("SELECT count(*) FROM answers").fetchone()[0]
            changed = conn.executemany(_UPSERT, rows).rowcount
            after = conn.execute("SELECT count(*) FROM answers").fetchone()[0]
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        inserted = after - before
        return PutStats(inserted=inserted, updated=changed - inserted, unchanged=len(rows) - changed)

    def get(self, key: AnswerKey) -> AnswerRecord | None:
        """The stored answer for ``key``, or None."""
        row = self._conn.execute(
            f"SELECT * FROM answers WHERE {' AND '.join(f'{c} = ?' for c in _KEY_COLUMNS)}", _key_params(key)
        ).fetchone()
        return None if row is None else _record_of(row)

    def has(self, key: AnswerKey, *, ok_only: bool = False) -> bool:
        """Whether an answer is stored for ``key`` (with ``ok_only``: one without a call error)."""
        record = self.get(key)
        return record is not None and (record.error is None or not ok_only)

    def iter_answers(
        self,
        *,
        judge: str | None = None,
        prompt_family: str | None = None,
        task: str | None = None,
        criterion: str | None = None,
        item_id: str | None = None,
    ) -> Iterator[AnswerRecord]:
        """Stored answers matching the given fields (None = any), ordered by key."""
        where, params = _where(
            judge=judge, prompt_family=prompt_family, task=task, criterion=criterion, item_id=item_id
        )
        cursor = self._conn.execute(f"SELECT * FROM answers{where} ORDER BY {', '.join(_KEY_COLUMNS)}", params)
        for row in cursor:
            yield _record_of(row)

    def keys(
        self,
        *,
        judge: str | None = None,
        prompt_family: str | None = None,
        task: str | None = None,
        criterion: str | None = None,
        ok_only: bool = False,
    ) -> set[AnswerKey]:
        """The keys stored for the given fields (with ``ok_only``: only answers without a call error)."""
        where, params = _where(judge=judge, prompt_family=prompt_family, task=task, criterion=criterion)
        if ok_only:
            where = (where + " AND" if where else " WHERE") + " error IS NULL"
        cursor = self._conn.execute(f"SELECT {', '.join(_KEY_COLUMNS)} FROM answers{where}", params)
        return {
            AnswerKey(
                judge=r[0], prompt_family=r[1], task=r[2], criterion=r[3], item_id=r[4], repetition=r[5], order=r[6]
            )
            for r in cursor
        }

    def count(
        self,
        *,
        judge: str | None = None,
        prompt_family: str | None = None,
        task: str | None = None,
        criterion: str | None = None,
    ) -> int:
        """Number of stored answers matching the given fields (None = any)."""
        where, params = _where(judge=judge, prompt_family=prompt_family, task=task, criterion=criterion)
        return self._conn.execute(f"SELECT count(*) FROM answers{where}", params).fetchone()[0]

    def counts(self) -> list[AnswerCount]:
        """Per (judge, prompt_family, task, criterion): answers, answers with a verdict, failed calls."""
        cursor = self._conn.execute(
            "SELECT judge, prompt_family, task, criterion, count(*), "
            "sum(judge_score IS NOT NULL OR outcome IS NOT NULL), sum(error IS NOT NULL) FROM answers "
            "GROUP BY judge, prompt_family, task, criterion ORDER BY judge, prompt_family, task, criterion"
        )
        return [
            AnswerCount(
                judge=r[0], prompt_family=r[1], task=r[2], criterion=r[3], n=r[4], n_verdict=r[5], n_failed=r[6]
            )
            for r in cursor
        ]


def _key_params(key: AnswerKey) -> tuple[object, ...]:
    return (key.judge, key.prompt_family, key.task, key.criterion, key.item_id, key.repetition, key.order)


def aligned_direct(
    store: AnswerStore,
    judge: str,
    criterion: str,
    *,
    prompt_family: str | None = None,
    repetition: int = 0,
    task: str = "direct",
) -> list[AlignedScore]:
    """The judge's direct answers for ``criterion`` at ``repetition``, one per item, ordered by ``item_id``.

    Every stored answer is returned, flagged rows included (``judge_score`` None when the reply was unreadable,
    missing or the call failed), so the study can count them. ``prompt_family`` may be omitted when the judge
    has answers under only one.

    Raises:
        StoreError: the judge has answers for this task under several prompt families and none was chosen.
    """
    records = [
        record
        for record in store.iter_answers(judge=judge, prompt_family=prompt_family, task=task, criterion=criterion)
        if record.repetition == repetition
    ]
    families = sorted({record.prompt_family for record in records})
    if len(families) > 1:
        raise StoreError(f"judge {judge!r} has {task} answers under prompt families {families}: choose one")
    records.sort(key=lambda record: record.item_id)
    return [
        AlignedScore(
            item_id=record.item_id,
            judge_score=record.judge_score,
            logprobs=record.logprobs,
            mean_of_samples=record.mean_of_samples,
        )
        for record in records
    ]
