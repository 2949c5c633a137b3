"""The SQLite answer store: round trip, idempotent upsert, filters, counts, the aligned direct view."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from offline.build.answers.records import AnswerKey, AnswerRecord, StoreError
from offline.build.answers.store import AnswerStore, aligned_direct


def _record(item_id: str = "d1/M1", **values: object) -> AnswerRecord:
    fields: dict[str, object] = {
        "judge": "j",
        "prompt_family": "paper",
        "task": "direct",
        "criterion": "coherence",
        "item_id": item_id,
    }
    fields.update(values)
    return AnswerRecord(**fields)  # type: ignore[arg-type]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[AnswerStore]:
    with AnswerStore(tmp_path / "answers.sqlite") as opened:
        yield opened


def test_round_trip(store: AnswerStore) -> None:
    record = _record(
        judge_score=4,
        logprobs={"4": -0.1, "3": -2.5, "1": -11.512925464970229},
        raw_reply="Score: 4",
        parse_rule="labelled",
        model="m",
        prompt_tokens=120,
        completion_tokens=3,
    )
    store.put(record)
    got = store.get(record.key)
    assert got is not None
    assert got.created_at is not None and got.created_at.endswith("+00:00")
    assert got == AnswerRecord(
        **{**{f: getattr(record, f) for f in record.__struct_fields__}, "created_at": got.created_at}
    )
    assert got.logprobs == {"1": -11.512925464970229, "3": -2.5, "4": -0.1}  # floats exact
    assert store.has(record.key)
    assert not store.has(_record("d1/M2").key)
    assert store.get(_record("d1/M2").key) is None


def test_pairwise_and_failure_records(store: AnswerStore) -> None:
    verdict = _record("d1/M10|M9", task="pairwise", order="ba", outcome="tie", raw_reply="C")
    failed = _record("d1/M2", error="JudgeCallError: timeout")
    store.put_many([verdict, failed])
    assert store.get(verdict.key).outcome == "tie"  # type: ignore[union-attr]
    assert store.has(failed.key) and not store.has(failed.key, ok_only=True)
    assert store.keys(ok_only=True) == {verdict.key}
    assert store.keys() == {verdict.key, failed.key}


def test_idempotent_upsert(store: AnswerStore) -> None:
    records = [_record(f"d1/M{i}", judge_score=i % 5 + 1) for i in range(10)]
    assert store.put_many(records).inserted == 10
    before = {r.key: r for r in store.iter_answers()}
    again = store.put_many(records)
    assert (again.inserted, again.updated, again.unchanged) == (0, 0, 10)
    store.put(records[0])
    assert {r.key: r for r in store.iter_answers()} == before  # created_at untouched too
    changed = store.put_many([_record("d1/M0", judge_score=5), _record("d1/M99", judge_score=1)])
    assert (changed.inserted, changed.updated, changed.unchanged) == (1, 1, 0)
    assert store.get(records[0].key).judge_score == 5  # type: ignore[union-attr]
    assert store.count() == 11


def test_key_validation() -> None:
    with pytest.raises(StoreError, match="pairwise needs"):
        _record(task="pairwise")
    with pytest.raises(StoreError, match="pairwise needs"):
        _record(order="ab")
    with pytest.raises(StoreError, match="task must be one of"):
        _record(task="ranking")
    with pytest.raises(StoreError, match="repetition"):
        _record(repetition=-1)
    with pytest.raises(StoreError, match="outcome"):
        _record("d/a|b", task="pairwise", order="ab", outcome="A")
    with pytest.raises(StoreError, match="judge must be"):
        AnswerKey(judge="", prompt_family="p", task="direct", criterion="c", item_id="i")


def test_database_constraints_hold_outside_python(store: AnswerStore, tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "answers.sqlite")
    try:
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(
                "INSERT INTO answers (judge, prompt_family, task, criterion, item_id, repetition, "
                "\"order\", created_at) VALUES ('j','p','ranking','c','i',0,'','now')"
            )
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def test_filters_order_and_counts(store: AnswerStore) -> None:
    store.put_many(
        [
            _record("d2/M1", judge_score=3),
            _record("d1/M1", judge_score=None, parse_rule="no_score_statement"),
            _record("d1/M1", criterion="fluency", judge_score=2),
            _record("d1/M1", judge="k", judge_score=5),
            _record("d1/M1", judge="k", error="boom"),  # same key as above: replaces it
            _record("d1/a|b", judge="k", task="pairwise", order="ab", outcome="first"),
        ]
    )
    assert [r.item_id for r in store.iter_answers(judge="j", criterion="coherence")] == ["d1/M1", "d2/M1"]
    assert store.count(judge="j") == 3
    assert store.count(task="pairwise") == 1
    assert [(c.judge, c.task, c.criterion, c.n, c.n_verdict, c.n_failed) for c in store.counts()] == [
        ("j", "direct", "coherence", 2, 1, 0),
        ("j", "direct", "fluency", 1, 1, 0),
        ("k", "direct", "coherence", 1, 0, 1),
        ("k", "pairwise", "coherence", 1, 1, 0),
    ]


def test_aligned_direct(store: AnswerStore) -> None:
    store.put_many(
        [
            _record("d2/M1", judge_score=3, logprobs={"3": -0.1}),
            _record("d1/M9", judge_score=None),
            _record("d1/M1", judge_score=4),
            _record("d1/M1", judge_score=1, repetition=1),
            _record("d1/M1", criterion="fluency", judge_score=2),
        ]
    )
    rows = aligned_direct(store, "j", "coherence")
    assert [(r.item_id, r.judge_score, r.logprobs) for r in rows] == [
        ("d1/M1", 4, None),
        ("d1/M9", None, None),
        ("d2/M1", 3, {"3": -0.1}),
    ]
    assert [r.judge_score for r in aligned_direct(store, "j", "coherence", repetition=1)] == [1]
    store.put(_record("d1/M1", prompt_family="geval", judge_score=2))
    with pytest.raises(StoreError, match="choose one"):
        aligned_direct(store, "j", "coherence")
    assert [r.judge_score for r in aligned_direct(store, "j", "coherence", prompt_family="geval")] == [2]


def test_persists_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "answers.sqlite"
    with AnswerStore(path) as store:
        store.put(_record(judge_score=2))
    with AnswerStore(path) as store:
        assert store.get(_record().key).judge_score == 2  # type: ignore[union-attr]


def test_refuses_other_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version=99")
    conn.close()
    with pytest.raises(StoreError, match="schema version 99"):
        AnswerStore(path)
