"""Ingest of the recorded answers: counts and parse rates on the real data, idempotency, speed, flagging."""

from __future__ import annotations

import functools
import json
import time
from collections import Counter
from pathlib import Path

import pytest

from judges.parsing import reply as parse
from offline.build.answers.ingest import IngestReport, format_report, ingest_recorded
from offline.build.answers.store import AnswerStore, aligned_direct
from offline.build.inputs.summeval import CRITERIA

TEXT_JUDGES = ("gpt-3.5-turbo-0301", "llama-2-7b-chat", "llama-2-13b-chat", "llama-2-70b-chat")
LOGPROB_JUDGES = ("gpt-4o-mini-2024-07-18", "qwen2.5-72b-instruct")


@pytest.fixture(scope="module")
def cached_parsers():  # type: ignore[no-untyped-def]
    # Cached so that the second ingest (idempotency) costs no parsing time; results are identical.
    return functools.lru_cache(maxsize=None)(parse.parse_score), parse.parse_preference


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory, data_dir: Path, cached_parsers):  # type: ignore[no-untyped-def]
    path = tmp_path_factory.mktemp("ingest") / "answers.sqlite"
    parse_score, parse_preference = cached_parsers
    with AnswerStore(path) as store:
        started = time.perf_counter()
        report = ingest_recorded(store, data_dir, parse_score=parse_score, parse_preference=parse_preference)
        elapsed = time.perf_counter() - started
        yield store, report, elapsed


def test_real_counts(ingested: tuple[AnswerStore, IngestReport, float]) -> None:
    store, report, elapsed = ingested
    print()
    for line in format_report(report):
        print(line)
    assert report.inserted == 2 * 6400 + 4 * 4800 + 8800 == 40800
    assert (report.updated, report.unchanged) == (0, 0)
    assert store.count() == 40800
    for name in LOGPROB_JUDGES:
        counts = report.for_judge(name)
        assert (counts.rows, counts.parsed, counts.unparsed) == (6400, 0, 0)
        assert counts.recorded + counts.missing == 6400
        assert counts.parse_rate is None
    assert report.for_judge("gpt-4o-mini-2024-07-18").missing == 1
    assert report.for_judge("qwen2.5-72b-instruct").missing == 0
    for name in TEXT_JUDGES:
        counts = report.for_judge(name)
        assert (counts.rows, counts.recorded, counts.missing) == (4800, 0, 0)
        assert counts.parsed + counts.unparsed == 4800
        assert counts.parse_rate is not None and counts.parse_rate >= 0.995, (name, counts.unparsed_examples)
        assert len(counts.unparsed_examples) == min(5, counts.unparsed)
    pairwise = report.for_judge("gpt-3.5-turbo-0301", "pairwise")
    assert pairwise.rows == 8800 and pairwise.parse_rate is not None and pairwise.parse_rate >= 0.995


def test_stored_values_match_the_files(ingested: tuple[AnswerStore, IngestReport, float], data_dir: Path) -> None:
    store, _, _ = ingested
    raw = [
        json.loads(line)
        for line in (data_dir / "judges" / "summeval" / "qwen2.5-72b-instruct.jsonl").read_text().splitlines()
    ]
    expected = {r["item_id"]: (r["score"], r["logprobs"]) for r in raw if r["criterion"] == "consistency"}
    rows = aligned_direct(store, "qwen2.5-72b-instruct", "consistency")
    assert [r.item_id for r in rows] == sorted(expected)
    assert all((r.judge_score, r.logprobs) == expected[r.item_id] for r in rows)
    for criterion in CRITERIA:
        assert len(aligned_direct(store, "gpt-4o-mini-2024-07-18", criterion)) == 1600
        assert len(aligned_direct(store, "llama-2-70b-chat", criterion)) == 1200
    (missing,) = [r for r in store.iter_answers(judge="gpt-4o-mini-2024-07-18") if r.judge_score is None]
    assert missing.parse_rule == "missing" and missing.criterion == "relevance"
    families = {(r.judge, r.prompt_family) for r in store.iter_answers(criterion="fluency")}
    assert ("llama-2-7b-chat", "rts") in families and ("qwen2.5-72b-instruct", "geval") in families


def test_pairwise_orders_and_outcomes(ingested: tuple[AnswerStore, IngestReport, float], data_dir: Path) -> None:
    store, _, _ = ingested
    answers = list(store.iter_answers(task="pairwise"))
    assert Counter(a.order for a in answers) == {"ab": 4400, "ba": 4400}
    raw = [
        json.loads(line)
        for line in (data_dir / "pairwise" / "summeval" / "gpt-3.5-turbo-0301.jsonl").read_text().splitlines()
    ]
    by_key = {(a.item_id, a.criterion, a.order): a for a in answers}
    letters = {"first": "A", "second": "B", "tie": "C"}
    for row in raw[:400]:
        lo, hi = sorted((row["first"], row["second"]))
        answer = by_key[(f"{row['doc_id']}/{lo}|{hi}", row["criterion"], "ab" if row["first"] == lo else "ba")]
        assert answer.raw_reply == row["response"]
        assert answer.outcome is not None and row["response"].startswith(letters[answer.outcome])


def test_reingest_changes_nothing(
    ingested: tuple[AnswerStore, IngestReport, float], data_dir: Path, cached_parsers
) -> None:  # type: ignore[no-untyped-def]
    store, _, _ = ingested
    before = list(store.iter_answers(judge="llama-2-13b-chat", criterion="coherence"))
    parse_score, parse_preference = cached_parsers
    again = ingest_recorded(store, data_dir, parse_score=parse_score, parse_preference=parse_preference)
    assert (again.inserted, again.updated, again.unchanged) == (0, 0, 40800)
    assert list(store.iter_answers(judge="llama-2-13b-chat", criterion="coherence")) == before


class _Parsed:
    def __init__(self, score: int | None, rule: str) -> None:
        self.score, self.rule = score, rule


def _stub_score(reply: str | None) -> _Parsed:
    digits = [c for c in reply or "" if c in "12345"]
    return _Parsed(int(digits[0]), "stub") if digits else _Parsed(None, "stub_none")


def test_flags_on_a_small_data_dir(tmp_path: Path) -> None:
    def write(path: Path, rows: list[dict[str, object]]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))

    write(tmp_path / "summeval" / "articles.jsonl", [{"doc_id": "d", "article": "a"}])
    write(
        tmp_path / "summeval" / "items.jsonl",
        [
            {
                "item_id": f"d/{s}",
                "doc_id": "d",
                "system_id": s,
                "summary": "x",
                "expert_mean": dict.fromkeys(CRITERIA, 2.0),
            }
            for s in ("M1", "M2")
        ],
    )
    rows: list[dict[str, object]] = [
        {"item_id": "d/M1", "criterion": c, "score": None, "logprobs": None, "response": f"no score {letter}"}
        for letter, c in zip("abcd", CRITERIA, strict=True)
    ] + [
        {"item_id": "d/M2", "criterion": "coherence", "score": None, "logprobs": None, "response": "Score: 4"},
        {"item_id": "d/M2", "criterion": "fluency", "score": None, "logprobs": None, "response": "two x"},
        {"item_id": "d/M2", "criterion": "relevance", "score": None, "logprobs": None, "response": None},
        {"item_id": "d/M2", "criterion": "consistency", "score": 5, "logprobs": None, "response": "5"},
    ]
    write(tmp_path / "judges" / "summeval" / "mine.jsonl", rows)
    write(
        tmp_path / "pairwise" / "summeval" / "mine.jsonl",
        [
            {"doc_id": "d", "criterion": "coherence", "first": "M2", "second": "M1", "response": "B, clearly"},
            {"doc_id": "d", "criterion": "coherence", "first": "M1", "second": "M2", "response": None},
        ],
    )
    with AnswerStore(tmp_path / "s.sqlite") as store:
        report = ingest_recorded(
            store,
            tmp_path,
            parse_score=_stub_score,
            parse_preference=lambda r: {"A": "first", "B": "second"}.get((r or " ")[0]),
        )
        direct = report.for_judge("mine")
        assert direct.prompt_family == "unknown"
        assert (direct.rows, direct.recorded, direct.parsed, direct.unparsed, direct.missing) == (8, 1, 1, 5, 1)
        assert direct.unparsed_examples == ("no score a", "no score b", "no score c", "no score d", "two x")
        assert direct.parse_rate == pytest.approx(1 / 6)
        stored = {(r.item_id, r.criterion): r for r in store.iter_answers(task="direct")}
        assert len(stored) == 8  # nothing dropped
        assert stored[("d/M2", "relevance")].parse_rule == "missing"
        assert stored[("d/M2", "consistency")].parse_rule == "recorded"
        assert stored[("d/M2", "coherence")].judge_score == 4
        assert stored[("d/M1", "fluency")].parse_rule == "stub_none"
        pair = report.for_judge("mine", "pairwise")
        assert (pair.rows, pair.parsed, pair.missing) == (2, 1, 1)
        verdicts = {r.order: r for r in store.iter_answers(task="pairwise")}
        assert verdicts["ba"].item_id == "d/M1|M2" and verdicts["ba"].outcome == "second"
        assert verdicts["ab"].outcome is None and verdicts["ab"].parse_rule == "missing"
