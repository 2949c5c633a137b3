"""Live collection: the paper's subset, resumability, failures, both orders, bounded concurrency.

Most tests drive ``collect`` with an in-process fake client (fast, exact call accounting); the last ones run
the real ``JudgeClient`` against the judge stand-in over HTTP (the ``judge_server`` fixture).
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest

from judges.client import JudgeClient
from judges.errors import JudgeCallError, JudgeReplyError
from offline.build.answers.records import AnswerKey, AnswerRecord
from offline.build.answers.store import AnswerStore
from offline.build.inputs.frank import load_frank
from offline.build.inputs.pairwise import presented
from offline.build.inputs.summeval import SummEval, load_summeval
from offline.collecting.run import collect, run_keys, verdict_record
from offline.collecting.targets import PAPER_SYSTEMS, TargetItem, default_subset, frank_targets, targets


@pytest.fixture(scope="module")
def summeval(data_dir: Path) -> SummEval:
    return load_summeval(data_dir)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[AnswerStore]:
    with AnswerStore(tmp_path / "answers.sqlite") as opened:
        yield opened


class FakeVerdict(msgspec.Struct, frozen=True, kw_only=True):
    judge_score: int
    probabilities: list[float] | None
    raw_reply: str
    prompt_tokens: int
    completion_tokens: int


class FakeClient:
    """Duck-typed JudgeClient: scores by summary length, prefers the longer summary; fails on request."""

    def __init__(self, *, fail: set[tuple[str, str]] | None = None, delay_s: float = 0.0) -> None:
        self.config = SimpleNamespace(name="fake-judge", prompt_family="paper", model="fake-model")
        self.fail = fail or set()
        self.delay_s = delay_s
        self.calls: list[tuple[Any, ...]] = []
        self.in_flight = 0
        self.max_in_flight = 0

    async def _enter(self, call: tuple[Any, ...]) -> None:
        self.calls.append(call)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        await asyncio.sleep(self.delay_s)
        self.in_flight -= 1

    async def score(self, criterion: str, document: str, summary: str) -> FakeVerdict:
        await self._enter(("score", criterion, summary))
        if (criterion, summary) in self.fail:
            raise JudgeCallError("HTTP 500 after 3 attempts", judge="fake-judge", status=500, attempts=3)
        score = 1 + len(summary) % 5
        probabilities = [0.0] * 5
        probabilities[score - 1] = 0.75
        probabilities[(score % 5)] = 0.25
        return FakeVerdict(
            judge_score=score, probabilities=probabilities, raw_reply=str(score), prompt_tokens=100, completion_tokens=1
        )

    async def prefer(self, criterion: str, document: str, first_text: str, second_text: str) -> Any:
        await self._enter(("prefer", criterion, first_text, second_text))
        outcome = "first" if (len(first_text), first_text) > (len(second_text), second_text) else "second"
        return SimpleNamespace(
            outcome=outcome, raw_reply="A" if outcome == "first" else "B", prompt_tokens=200, completion_tokens=1
        )


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_default_subset_is_the_stated_reading(summeval: SummEval) -> None:
    subset = default_subset(summeval)
    assert len(subset) == 240
    docs = list(dict.fromkeys(item.doc_id for item in subset))
    assert docs == summeval.doc_ids()[:30]
    for doc_id in docs:
        block = [item.system_id for item in summeval.items if item.doc_id == doc_id]
        chosen = [item.system_id for item in subset if item.doc_id == doc_id]
        assert chosen == [block[p] for p in (0, 2, 4, 6, 9, 11, 13, 15)]
        assert tuple(chosen) == PAPER_SYSTEMS
    with pytest.raises(ValueError, match="asked for 101 documents"):
        default_subset(summeval, n_documents=101)


def test_direct_collect_then_resume_makes_no_calls(summeval: SummEval, store: AnswerStore) -> None:
    items = default_subset(summeval)[:4]
    client = FakeClient()
    report = _run(
        collect(
            store,
            client,
            task="direct",
            items=items,
            articles=summeval.articles,
            criteria=["coherence", "fluency"],
            repetitions=2,
            progress=False,
        )
    )
    assert (report.planned, report.calls, report.skipped, report.failed) == (16, 16, 0, 0)
    assert (report.prompt_tokens, report.completion_tokens) == (1600, 16)
    assert (report.judge, report.prompt_family, report.task) == ("fake-judge", "paper", "direct")
    assert store.count(judge="fake-judge", task="direct") == 16
    record = store.get(
        AnswerKey(
            judge="fake-judge",
            prompt_family="paper",
            task="direct",
            criterion="fluency",
            item_id=items[1].item_id,
            repetition=1,
        )
    )
    assert record is not None
    assert record.judge_score == 1 + len(items[1].summary) % 5
    assert record.model == "fake-model" and record.error is None and record.prompt_tokens == 100
    assert record.logprobs is not None
    probabilities = {k: math.exp(v) for k, v in record.logprobs.items()}
    assert probabilities[str(record.judge_score)] == pytest.approx(0.75)
    assert sum(probabilities.values()) == pytest.approx(1.0, abs=1e-4)  # zeros stored at the ln(1e-5) floor
    # the document sent is the item's article
    assert client.calls[0][2] == items[0].summary
    again = _run(
        collect(
            store,
            client,
            task="direct",
            items=items,
            articles=summeval.articles,
            criteria=["coherence", "fluency"],
            repetitions=2,
            progress=False,
        )
    )
    assert (again.calls, again.skipped) == (0, 16)
    assert len(client.calls) == 16


def test_partial_store_is_resumed(summeval: SummEval, store: AnswerStore) -> None:
    items = default_subset(summeval)[:6]
    first = _run(
        collect(
            store,
            FakeClient(),
            task="direct",
            items=items[:3],
            articles=summeval.articles,
            criteria=["relevance"],
            repetitions=1,
            progress=False,
        )
    )
    assert first.calls == 3
    client = FakeClient()
    second = _run(
        collect(
            store,
            client,
            task="direct",
            items=items,
            articles=summeval.articles,
            criteria=["relevance"],
            repetitions=1,
            progress=False,
        )
    )
    assert (second.calls, second.skipped) == (3, 3)
    assert [call[2] for call in client.calls] == [item.summary for item in items[3:]]


def test_failures_are_recorded_counted_and_retried(summeval: SummEval, store: AnswerStore) -> None:
    items = default_subset(summeval)[:5]
    failing = {("coherence", items[1].summary), ("coherence", items[3].summary)}
    report = _run(
        collect(
            store,
            FakeClient(fail=failing),
            task="direct",
            items=items,
            articles=summeval.articles,
            criteria=["coherence"],
            repetitions=1,
            progress=False,
        )
    )
    assert (report.calls, report.succeeded, report.failed) == (5, 3, 2)
    assert {note.key.item_id for note in report.failures} == {items[1].item_id, items[3].item_id}
    assert all("JudgeCallError: HTTP 500" in note.error for note in report.failures)
    stored = {r.item_id: r for r in store.iter_answers(judge="fake-judge")}
    assert len(stored) == 5  # failures are in the store too, never lost
    assert stored[items[1].item_id].error is not None and stored[items[1].item_id].judge_score is None
    assert [c.n_failed for c in store.counts()] == [2]
    # without retrying failures, nothing is left to do
    skip = _run(
        collect(
            store,
            FakeClient(),
            task="direct",
            items=items,
            articles=summeval.articles,
            criteria=["coherence"],
            repetitions=1,
            progress=False,
            retry_failed=False,
        )
    )
    assert skip.calls == 0
    # by default the next run retries exactly the failed keys
    client = FakeClient()
    retry = _run(
        collect(
            store,
            client,
            task="direct",
            items=items,
            articles=summeval.articles,
            criteria=["coherence"],
            repetitions=1,
            progress=False,
        )
    )
    assert (retry.calls, retry.failed, retry.skipped) == (2, 0, 3)
    assert store.get(stored[items[1].item_id].key).error is None  # type: ignore[union-attr]
    assert (
        _run(
            collect(
                store,
                client,
                task="direct",
                items=items,
                articles=summeval.articles,
                criteria=["coherence"],
                repetitions=1,
                progress=False,
            )
        ).calls
        == 0
    )


def test_unreadable_reply_keeps_the_raw_text(store: AnswerStore) -> None:
    async def run_one(key: AnswerKey) -> AnswerRecord:
        raise JudgeReplyError("no score", judge="j", raw_reply="I cannot rate this.", reason="no_score_statement")

    key = AnswerKey(judge="j", prompt_family="paper", task="direct", criterion="fluency", item_id="x")
    report = _run(run_keys(store, [key], run_one, progress=False))
    assert report.failed == 1
    stored = store.get(key)
    assert stored is not None and stored.raw_reply == "I cannot rate this."
    assert stored.error is not None and stored.error.startswith("JudgeReplyError")


def test_pairwise_both_orders(summeval: SummEval, store: AnswerStore) -> None:
    items = default_subset(summeval)[:8]  # one document, 8 systems
    client = FakeClient()
    report = _run(
        collect(
            store,
            client,
            task="pairwise",
            items=items,
            articles=summeval.articles,
            criteria=["coherence"],
            repetitions=1,
            both_orders=True,
            progress=False,
        )
    )
    assert report.calls == 28 * 2
    answers = list(store.iter_answers(task="pairwise"))
    assert Counter(a.order for a in answers) == {"ab": 28, "ba": 28}
    texts = {item.system_id: item.summary for item in items}
    sent = {(call[2], call[3]) for call in client.calls}
    winners: dict[str, set[str]] = {}
    for answer in answers:
        _, first, second = presented(answer.item_id, answer.order)
        assert (texts[first], texts[second]) in sent  # shown in the key's order
        assert answer.outcome in ("first", "second") and answer.judge_score is None
        winners.setdefault(answer.item_id, set()).add(first if answer.outcome == "first" else second)
    # this fake has no position bias: each pair has the same winner in both orders
    assert all(len(w) == 1 for w in winners.values())
    one_order = _run(
        collect(
            store,
            FakeClient(),
            task="pairwise",
            items=items,
            articles=summeval.articles,
            criteria=["coherence"],
            repetitions=3,
            progress=False,
        )
    )
    assert (one_order.planned, one_order.skipped, one_order.calls) == (28 * 3, 28, 28 * 2)


def test_concurrency_is_bounded(summeval: SummEval, store: AnswerStore) -> None:
    items = default_subset(summeval)[:24]
    client = FakeClient(delay_s=0.005)
    report = _run(
        collect(
            store,
            client,
            task="direct",
            items=items,
            articles=summeval.articles,
            criteria=["coherence"],
            repetitions=1,
            concurrency=4,
            progress=True,
        )
    )
    assert report.calls == 24
    assert client.max_in_flight == 4


def test_factuality_hook(store: AnswerStore) -> None:
    class QAResult(msgspec.Struct, frozen=True, kw_only=True):
        score: float
        judge_score: int
        prompt_tokens: int
        completion_tokens: int

    seen = []

    async def judge_faithfulness_qa(client: Any, document: str, summary: str) -> QAResult:
        seen.append((client, document, summary))
        return QAResult(score=0.5, judge_score=3, prompt_tokens=50, completion_tokens=20)

    item = TargetItem(item_id="h1/bart", doc_id="h1", system_id="bart", document="The article.", summary="The summary.")
    client = SimpleNamespace()
    report = _run(
        collect(
            store,
            client,
            task="factuality_qa",
            items=[item],
            criteria=["faithfulness"],
            repetitions=1,
            item_judge=judge_faithfulness_qa,
            judge="j",
            progress=False,
        )
    )
    assert report.calls == 1 and seen == [(client, "The article.", "The summary.")]
    assert report.prompt_family == "factuality_qa"
    (record,) = store.iter_answers(task="factuality_qa")
    # One name: the factuality prompts' own family (= the task), criterion faithfulness, the item's own id.
    assert (record.prompt_family, record.criterion, record.item_id) == ("factuality_qa", "faithfulness", "h1/bart")
    assert record.judge_score == 3 and record.prompt_tokens == 50
    assert msgspec.json.decode(record.raw_reply or "")["score"] == 0.5  # the whole result is kept
    for family, criteria in (("paper", ["faithfulness"]), (None, ["coherence"])):
        with pytest.raises(ValueError, match="prompt family|criterion"):
            _run(
                collect(
                    store,
                    SimpleNamespace(config=SimpleNamespace(name="j", prompt_family="paper", model="m")),
                    task="factuality_direct",
                    items=[item],
                    criteria=criteria,
                    prompt_family=family,
                    progress=False,
                )
            )


def test_frank_targets_are_a_seeded_nested_sample_with_articles(data_dir: Path) -> None:
    frank = load_frank(data_dir)
    valid = frank_targets(frank, split="valid")
    assert len(valid) == 671 and len(frank_targets(frank)) == 2246 and len(frank_targets(frank, split="test")) == 1575
    small, large = (frank_targets(frank, split="valid", limit=n, seed=7) for n in (20, 60))
    assert len(small) == 20 and len(large) == 60
    assert {t.item_id for t in small} < {t.item_id for t in large}  # a larger limit extends a smaller one
    assert small == frank_targets(frank, split="valid", limit=20, seed=7)  # reproducible
    assert small != frank_targets(frank, split="valid", limit=20, seed=8)
    order = [t.item_id for t in valid]
    assert [order.index(t.item_id) for t in large] == sorted(order.index(t.item_id) for t in large)  # file order
    items = {item.item_id: item for item in frank.items}
    for target in large:
        item = items[target.item_id]
        assert target.item_id == f"{item.hash}/{item.model_name}" and item.split == "valid"
        assert (target.doc_id, target.system_id, target.summary) == (item.hash, item.model_name, item.summary)
        assert target.document == frank.articles[item.hash].article
    with pytest.raises(ValueError, match="split"):
        frank_targets(frank, split="train")


def test_input_errors(summeval: SummEval, store: AnswerStore) -> None:
    items = default_subset(summeval)[:2]
    with pytest.raises(ValueError, match="pass articles="):
        targets(items)
    with pytest.raises(ValueError, match="task must be one of"):
        _run(collect(store, FakeClient(), task="ranking", items=items, criteria=["coherence"]))
    with pytest.raises(ValueError, match="judge's name and prompt_family"):
        _run(
            collect(
                store, SimpleNamespace(), task="direct", items=items, articles=summeval.articles, criteria=["coherence"]
            )
        )


def test_run_one_answering_another_key_is_a_failure(store: AnswerStore) -> None:
    key = AnswerKey(judge="j", prompt_family="p", task="direct", criterion="fluency", item_id="a")

    async def run_one(asked: AnswerKey) -> AnswerRecord:
        return AnswerRecord(
            judge="j", prompt_family="p", task="direct", criterion="fluency", item_id="b", judge_score=3
        )

    report = _run(run_keys(store, [key, key], run_one, progress=False))
    assert (report.planned, report.failed) == (1, 1)
    assert store.get(key).error is not None  # type: ignore[union-attr]


def test_verdict_record_keeps_client_logprobs() -> None:
    key = AnswerKey(judge="j", prompt_family="paper", task="direct", criterion="fluency", item_id="a")
    verdict = SimpleNamespace(
        judge_score=4,
        logprobs={"1": None, "4": -0.2, "5": -1.7},  # "1" was outside the returned top-k
        probabilities=[0.0, 0.0, 0.0, 0.8, 0.2],
        raw_reply="4",
        parse_rule="bare",
        prompt_tokens=10,
        completion_tokens=1,
    )
    record = verdict_record(key, verdict, model="m")
    assert record.logprobs == {"4": -0.2, "5": -1.7}
    assert (record.judge_score, record.parse_rule, record.raw_reply, record.model) == (4, "bare", "4", "m")
    pair = AnswerKey(
        judge="j", prompt_family="paper", task="pairwise", criterion="fluency", item_id="d/a|b", order="ba"
    )
    preference = verdict_record(pair, SimpleNamespace(outcome="tie", raw_reply="C"), model=None)
    assert (preference.outcome, preference.judge_score, preference.parse_rule) == ("tie", None, "client")


# --- the real client against the judge stand-in over HTTP -------------------------------------------------


@pytest.fixture
def server(judge_server: Any) -> Any:
    # The stand-in from tests/fakes/fixtures.py; a missing fixture or a broken client import fails, never skips.
    return judge_server


def _client(server: Any, **overrides: Any) -> Any:
    return JudgeClient(server.judge_config(**overrides))


def test_http_direct_resume_and_failures(server: Any, summeval: SummEval, store: AnswerStore) -> None:
    items = default_subset(summeval)[:3]

    async def scenario() -> tuple[Any, Any, Any]:
        async with _client(server, max_retries=0) as client:
            server.inject("error_500", times=1)
            first = await collect(
                store,
                client,
                task="direct",
                items=items,
                articles=summeval.articles,
                criteria=["coherence", "relevance"],
                repetitions=2,
                concurrency=1,
                progress=False,
            )
            calls_after_first = server.call_count
            second = await collect(
                store,
                client,
                task="direct",
                items=items,
                articles=summeval.articles,
                criteria=["coherence", "relevance"],
                repetitions=2,
                progress=False,
            )
            third = await collect(
                store,
                client,
                task="direct",
                items=items,
                articles=summeval.articles,
                criteria=["coherence", "relevance"],
                repetitions=2,
                progress=False,
            )
            assert server.call_count == calls_after_first + 1  # only the failed key was asked again
            return first, second, third

    first, second, third = _run(scenario())
    assert (first.planned, first.calls, first.failed, first.succeeded) == (12, 12, 1, 11)
    assert (second.calls, second.failed, second.skipped) == (1, 0, 11)
    assert (third.calls, third.skipped) == (0, 12)
    assert first.prompt_tokens > 0 and first.completion_tokens > 0
    from tests.fakes.judge_server import peaked_logprobs

    answers = list(store.iter_answers(task="direct"))
    assert {r.judge_score for r in answers} == {server.default_score}
    expected = peaked_logprobs(server.default_score)
    for answer in answers:
        assert answer.logprobs is not None and set(answer.logprobs) == set(expected)
        assert all(answer.logprobs[k] == pytest.approx(v, abs=1e-9) for k, v in expected.items())
        assert answer.model == "stand-in-judge" and answer.judge == "stand-in"


def test_http_pairwise_both_orders(server: Any, summeval: SummEval, store: AnswerStore) -> None:
    items = default_subset(summeval)[:3]
    server.responder = lambda body: "A"

    async def scenario() -> Any:
        async with _client(server) as client:
            return await collect(
                store,
                client,
                task="pairwise",
                items=items,
                articles=summeval.articles,
                criteria=["fluency"],
                repetitions=1,
                both_orders=True,
                progress=False,
            )

    report = _run(scenario())
    assert (report.calls, report.failed) == (6, 0)
    assert server.call_count == 6
    answers = list(store.iter_answers(task="pairwise"))
    assert {a.outcome for a in answers} == {"first"}
    texts = {item.system_id: item.summary for item in items}
    prompts = [request.prompt_text for request in server.requests]
    for answer in answers:
        _, first, second = presented(answer.item_id, answer.order)
        assert any(p.find(texts[first]) < p.find(texts[second]) and p.find(texts[first]) >= 0 for p in prompts)


def test_empty_run_is_still_named(store: AnswerStore) -> None:
    report = _run(collect(store, FakeClient(), task="direct", items=[], criteria=["coherence"], progress=False))
    assert (report.judge, report.prompt_family, report.task, report.planned, report.calls) == (
        "fake-judge",
        "paper",
        "direct",
        0,
        0,
    )
