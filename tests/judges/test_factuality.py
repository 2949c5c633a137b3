"""Factuality methods: the generation reader on malformed text, the QA pipeline and direct scoring.

Unit tests drive the methods through a tiny in-test completer; the integration tests at the end use the real
JudgeClient over real HTTP against the judge stand-in.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType

import pytest

from judges.client import JudgeClient
from judges.config import JudgeConfig
from judges.errors import JudgeCallError, JudgeReplyError
from judges.factuality import methods as factuality
from judges.factuality import prompts as factuality_prompts
from judges.factuality import qa_similarity
from judges.factuality.methods import (
    MAX_QUESTIONS,
    QAFactuality,
    judge_faithfulness_direct,
    judge_faithfulness_qa,
    judge_score_from_qa,
)
from judges.factuality.prompts import (
    QAPair,
    direct_faithfulness_messages,
    parse_article_answer,
    parse_qa_generation,
    qa_answer_messages,
    qa_generation_messages,
)
from judges.prompts.untrusted import fence
from judges.results import DirectVerdict
from tests.fakes.judge_server import NO_SCORE_REPLY, JudgeServer, Responder, ScriptedReply, peaked_logprobs

ARTICLE = (
    "Mayor Jane Holt opened the Riverside Bridge on Saturday morning, two years after work began. "
    "The crossing cost 12 million pounds and links the old town with the new railway station."
)
SUMMARY = "Jane Holt opened the new Riverside bridge on Sunday after three years of work."

# Scripted judge: the generation reply, then the article's answer per question.
GENERATION = """1. Answer: Jane Holt | Question: Who opened the new bridge?
2. Answer: Sunday | Question: On what day was the bridge opened?
3. Answer: three years | Question: How long did the work on the bridge take?
4. Answer: Riverside bridge | Question: What did Jane Holt open?"""
ARTICLE_ANSWERS = {
    "Who opened the new bridge?": "Mayor Jane Holt",  # F1: [jane, holt] vs [mayor, jane, holt] = 4/5
    "On what day was the bridge opened?": "Saturday",  # F1 0
    "How long did the work on the bridge take?": "two years",  # [three, years] vs [two, years] = 1/2
    "What did Jane Holt open?": "the Riverside Bridge.",  # normalises equal: F1 1, EM 1
}
# Hand computation: score = (0.8 + 0 + 0.5 + 1) / 4 = 0.575; EM = 1/4; 1 + round_half_up(2.3) = 3.
EXPECTED_SIMILARITIES = [0.8, 0.0, 0.5, 1.0]
EXPECTED_SCORE = 0.575
EXPECTED_EM = 0.25
EXPECTED_JUDGE_SCORE = 3


def _question_of(user_text: str) -> str | None:
    match = re.search(r"^Question: <<<QUESTION>>>\n(.*)\n<<<END QUESTION>>>$", user_text, re.MULTILINE)
    return match.group(1) if match else None


def scripted_reply(messages: list[dict[str, str]], generation: str = GENERATION) -> str:
    """The stand-in judge's reply: generation for the generation prompt, else the scripted answer."""
    user = messages[-1]["content"]
    if "requested):" in user:
        return generation
    question = _question_of(user)
    return ARTICLE_ANSWERS.get(question or "", "unanswerable")


@dataclass(frozen=True)
class FakeConfig:
    name: str = "fake"
    logprobs: bool = False
    max_tokens: int = 32


@dataclass(frozen=True)
class FakeCompletion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    tokens: None = None
    model: str | None = "fake-judge"


@dataclass
class FakeCompleter:
    """In-test completer: records every call; replies by `scripted_reply`, with token counts 10 and 2."""

    generation: str = GENERATION
    config: FakeConfig = field(default_factory=FakeConfig)
    calls: list[list[dict[str, str]]] = field(default_factory=list)

    async def complete(
        self, messages: Sequence[dict[str, str]], *, max_tokens: int, logprobs: bool = False
    ) -> FakeCompletion:
        self.calls.append(list(messages))
        await asyncio.sleep(0)
        reply = scripted_reply(list(messages), self.generation)
        return FakeCompletion(text=reply, prompt_tokens=10, completion_tokens=2)


# --- the generation reader -------------------------------------------------------------------------------

EXAMPLE_SUMMARY = "Maple Grove's council voted 7-2 on Tuesday to build a library on the old bus depot site."


def test_parse_generation_well_formed() -> None:
    reply = (
        "1. Answer: Maple Grove's council | Question: Who voted?\n2. Answer: Tuesday | Question: When was the vote?\n"
    )
    parsed = parse_qa_generation(reply, summary=EXAMPLE_SUMMARY, n_questions=2)
    assert parsed.pairs == [
        QAPair(answer="Maple Grove's council", question="Who voted?"),
        QAPair(answer="Tuesday", question="When was the vote?"),
    ]
    assert parsed.problems == []
    assert parsed.n_parsed == 2


def test_parse_generation_accepts_format_variants() -> None:
    reply = (
        "Here are the pairs:\n"
        "**1.** **Answer:** 7-2 | **Question:** What was the margin?\n"
        "2) question: On what day was the vote? | answer: Tuesday\n"
        "3. ANSWER: old bus depot site QUESTION: Where will the library go?\n"
        "4. Answer: the Library\n"
        "   Question: What will be built?\n"
    )
    parsed = parse_qa_generation(reply, summary=EXAMPLE_SUMMARY, n_questions=4)
    assert [(pair.answer, pair.question) for pair in parsed.pairs] == [
        ("7-2", "What was the margin?"),
        ("Tuesday", "On what day was the vote?"),
        ("old bus depot site", "Where will the library go?"),
        ("the Library", "What will be built?"),  # in the summary after normalisation
    ]
    assert parsed.problems == ["skipped 1 line(s) of text outside the pair format"]


def test_parse_generation_reports_broken_pairs() -> None:
    reply = (
        "1. Answer: Tuesday | Question: When was the vote?\n"
        "2. Who voted? - the council\n"
        "3. Answer: | Question: What was built?\n"
        "4. Answer: 7-2 | Question:\n"
        "5. Answer: council Answer: library | Question: Who?\n"
        "6. Question: What was the margin?\n"
        "7. Answer: library\n"
    )
    parsed = parse_qa_generation(reply, summary=EXAMPLE_SUMMARY, n_questions=1)
    assert parsed.pairs == [QAPair(answer="Tuesday", question="When was the vote?")]
    assert parsed.n_parsed == 1
    assert len(parsed.problems) == 6
    for line in (2, 3, 4, 5, 6, 7):
        assert sum(f"broken pair on line {line}:" in problem for problem in parsed.problems) == 1, line


def test_parse_generation_drops_answers_not_in_summary() -> None:
    reply = (
        "1. Answer: federal grant | Question: Who pays?\n"  # not in the summary
        "2. Answer: Gro | Question: Which council?\n"  # a part of a word is not a span
        "3. Answer: bus depot old | Question: Where?\n"  # the words, but not in order
        "4. Answer: the | Question: Which one?\n"  # normalises to nothing
        "5. Answer: Old Bus-Depot | Question: What site?\n"  # normalises to "old busdepot": not a span
        "6. Answer: \u201cTuesday\u201d | Question: When?\n"  # quotes go: kept
    )
    parsed = parse_qa_generation(reply, summary=EXAMPLE_SUMMARY, n_questions=1)
    assert parsed.pairs == [QAPair(answer="Tuesday", question="When?")]
    assert parsed.n_parsed == 6
    dropped = [problem for problem in parsed.problems if problem.startswith("dropped pair")]
    assert len(dropped) == 5
    assert sum("not a span of the summary" in problem for problem in dropped) == 4
    assert sum("empty after normalisation" in problem for problem in dropped) == 1


def test_parse_generation_drops_duplicate_questions_and_truncates() -> None:
    reply = (
        "1. Answer: council | Question: Who voted?\n"
        "2. Answer: Maple Grove's council | Question: who voted\n"  # duplicate after normalisation
        "3. Answer: 7-2 | Question: What was the margin?\n"
        "4. Answer: Tuesday | Question: When?\n"
        "5. Answer: library | Question: What will be built?\n"
    )
    parsed = parse_qa_generation(reply, summary=EXAMPLE_SUMMARY, n_questions=2)
    assert [pair.answer for pair in parsed.pairs] == ["council", "7-2"]
    assert parsed.problems == [
        "dropped pair: duplicate question 'who voted'",
        "4 usable pairs, more than the 2 requested: kept the first 2",
    ]


def test_parse_generation_meets_tokenised_summaries() -> None:
    tokenised = "the club 's new manager , gary locke , signed a three-year deal on friday ."
    reply = (
        "1. Answer: The club\u2019s new manager | Question: Who signed a deal?\n"
        "2. Answer: Gary Locke, | Question: What is the manager's name?\n"
        "3. Answer: three-year deal | Question: What did he sign?\n"
    )
    parsed = parse_qa_generation(reply, summary=tokenised, n_questions=3)
    assert [pair.answer for pair in parsed.pairs] == ["The club\u2019s new manager", "Gary Locke,", "three-year deal"]
    assert parsed.problems == []


@pytest.mark.parametrize("module", [factuality, factuality_prompts, qa_similarity])
def test_all_lists_the_public_names_sorted(module: ModuleType) -> None:
    defined = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == module.__name__
    }
    assert list(module.__all__) == sorted(module.__all__)
    assert defined <= set(module.__all__)
    assert all(hasattr(module, name) for name in module.__all__)


@pytest.mark.parametrize("reply", [None, "", "  \n ", "I cannot help with that.", "1. Who? 2. When?"])
def test_parse_generation_without_pairs(reply: str | None) -> None:
    parsed = parse_qa_generation(reply, summary=EXAMPLE_SUMMARY, n_questions=3)
    assert parsed.pairs == []
    assert parsed.n_parsed == 0
    assert parsed.problems[-1] == "only 0 usable pair(s) of the 3 requested"
    assert len(parsed.problems) >= 2


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Mayor Jane Holt", "Mayor Jane Holt"),
        ('Answer: "two years"\nBecause the article says so.', "two years"),
        ("**Saturday**", "Saturday"),
        ("unanswerable", None),
        ("Unanswerable.", None),
        ("UNANSWERABLE - the article does not say", None),
        ("", None),
        (None, None),
        ("  \n", None),
    ],
)
def test_parse_article_answer(reply: str | None, expected: str | None) -> None:
    assert parse_article_answer(reply) == expected


# --- prompts and the verdict mapping -----------------------------------------------------------------------


def test_prompts_carry_their_texts() -> None:
    generation = qa_generation_messages(SUMMARY, 7)[-1]["content"]
    assert SUMMARY in generation and ARTICLE not in generation
    assert "7 pairs" in generation and "Pairs (7 requested):" in generation
    assert "Answer: <span copied from the summary> | Question:" in generation
    answering = qa_answer_messages(ARTICLE, "Who opened it?")[-1]["content"]
    assert ARTICLE in answering and SUMMARY not in answering
    assert f"Question: {fence('QUESTION', 'Who opened it?')}" in answering
    direct = direct_faithfulness_messages(ARTICLE, SUMMARY)[-1]["content"]
    assert f"Article: {fence('ARTICLE', ARTICLE)}\nSummary: {fence('SUMMARY', SUMMARY)}\nScore:" in direct
    assert "Example" in direct and "Score: 2" in direct  # the one in-context example


@pytest.mark.parametrize(
    ("score", "expected"),
    [(0.0, 1), (0.1, 1), (0.125, 2), (0.25, 2), (0.375, 3), (0.5, 3), (0.625, 4), (0.874, 4), (0.875, 5), (1.0, 5)],
)
def test_judge_score_from_qa(score: float, expected: int) -> None:
    assert judge_score_from_qa(score) == expected


def test_judge_score_from_qa_half_up_survives_float_sums() -> None:
    score = (0.1 + 0.2 + 0.3 + 0.9) / 4  # 0.375 in exact arithmetic, 0.37499999... in floats
    assert judge_score_from_qa(score) == 3


@pytest.mark.parametrize("score", [-0.01, 1.01, float("nan")])
def test_judge_score_from_qa_rejects_out_of_range(score: float) -> None:
    with pytest.raises(ValueError, match="QA score"):
        judge_score_from_qa(score)


# --- the QA pipeline with an in-test completer -----------------------------------------------------------


def test_qa_pipeline_with_fake_completer_matches_hand_computation() -> None:
    fake = FakeCompleter()
    result = asyncio.run(judge_faithfulness_qa(fake, ARTICLE, SUMMARY, n_questions=4))
    assert isinstance(result, QAFactuality)
    assert [item.similarity for item in result.evidence] == pytest.approx(EXPECTED_SIMILARITIES)
    assert result.score == pytest.approx(EXPECTED_SCORE)
    assert result.exact_match == pytest.approx(EXPECTED_EM)
    assert result.judge_score == EXPECTED_JUDGE_SCORE
    assert result.calls == 5 == len(fake.calls)
    assert (result.prompt_tokens, result.completion_tokens) == (50, 10)
    assert result.problems == []
    assert result.generation_raw == GENERATION


def test_qa_pipeline_counts_unanswerable_as_zero() -> None:
    generation = "1. Answer: Jane Holt | Question: Who opened the new bridge?\n2. Answer: Sunday | Question: Why?"
    result = asyncio.run(judge_faithfulness_qa(FakeCompleter(generation=generation), ARTICLE, SUMMARY, n_questions=2))
    assert [item.article_answer for item in result.evidence] == ["Mayor Jane Holt", None]
    assert [item.similarity for item in result.evidence] == pytest.approx([0.8, 0.0])
    assert result.score == pytest.approx(0.4)
    assert result.judge_score == 3  # 1 + round_half_up(1.6)


@pytest.mark.parametrize("n_questions", [0, 21, -1, 2.5, True, "5"])
def test_qa_rejects_bad_question_counts(n_questions: object) -> None:
    fake = FakeCompleter()
    with pytest.raises(ValueError, match="n_questions"):
        asyncio.run(judge_faithfulness_qa(fake, ARTICLE, SUMMARY, n_questions=n_questions))  # type: ignore[arg-type]
    assert fake.calls == []


def test_qa_accepts_question_count_bounds() -> None:
    for n_questions in (1, MAX_QUESTIONS):
        result = asyncio.run(judge_faithfulness_qa(FakeCompleter(), ARTICLE, SUMMARY, n_questions=n_questions))
        assert len(result.evidence) == min(n_questions, 4)


def test_qa_without_pairs_raises_reply_error() -> None:
    fake = FakeCompleter(generation="Sorry, I cannot do that.")
    with pytest.raises(JudgeReplyError, match="no usable answer-question pair"):
        asyncio.run(judge_faithfulness_qa(fake, ARTICLE, SUMMARY))
    assert len(fake.calls) == 1  # no answering call without a question


# --- integration: the real JudgeClient over real HTTP against the judge stand-in ------------------------


async def _run_qa(config: JudgeConfig, document: str, summary: str, **kwargs: int) -> QAFactuality:
    async with JudgeClient(config) as client:
        return await judge_faithfulness_qa(client, document, summary, **kwargs)


async def _run_direct(config: JudgeConfig, document: str, summary: str) -> DirectVerdict:
    async with JudgeClient(config) as client:
        return await judge_faithfulness_direct(client, document, summary)


def _responder(generation: str = GENERATION) -> Responder:
    return lambda body: scripted_reply(body["messages"], generation)


def test_qa_over_http_prompts_and_hand_computed_score(judge_server: JudgeServer) -> None:
    judge_server.responder = _responder()
    judge_server.usage = (100, 7)
    judge_server.latency_s = 0.05  # lets the concurrent answering calls overlap
    result = asyncio.run(_run_qa(judge_server.judge_config(), ARTICLE, SUMMARY, n_questions=4))

    requests = judge_server.requests
    assert len(requests) == 5 == result.calls
    generation, answering = requests[0], requests[1:]
    assert SUMMARY in generation.prompt_text and ARTICLE not in generation.prompt_text
    assert "Pairs (4 requested):" in generation.prompt_text
    assert generation.body["max_tokens"] == 64 * 4 + 64
    for request in answering:
        assert ARTICLE in request.prompt_text and SUMMARY not in request.prompt_text
        assert request.body["max_tokens"] == 64
    asked = sorted(_question_of(request.messages[-1]["content"]) or "" for request in answering)
    assert asked == sorted(ARTICLE_ANSWERS)  # each question asked exactly once, one call per question
    assert not any(request.wants_logprobs for request in requests)
    assert judge_server.max_in_flight >= 2

    assert [item.question for item in result.evidence] == list(ARTICLE_ANSWERS)
    assert [item.article_answer for item in result.evidence] == list(ARTICLE_ANSWERS.values())
    assert [item.answer_raw for item in result.evidence] == list(ARTICLE_ANSWERS.values())
    assert [item.similarity for item in result.evidence] == pytest.approx(EXPECTED_SIMILARITIES)
    assert [item.exact_match for item in result.evidence] == [0.0, 0.0, 0.0, 1.0]
    assert result.score == pytest.approx(EXPECTED_SCORE)
    assert result.exact_match == pytest.approx(EXPECTED_EM)
    assert result.judge_score == EXPECTED_JUDGE_SCORE
    assert (result.prompt_tokens, result.completion_tokens) == (500, 35)
    assert result.generation_raw == GENERATION
    assert result.problems == []


def test_qa_over_http_reports_malformed_generation(judge_server: JudgeServer) -> None:
    generation = (
        "Sure! Here are the pairs.\n"
        "1. Answer: Jane Holt | Question: Who opened the new bridge?\n"
        "2. Answer: federal money | Question: Who paid for the bridge?\n"  # not in the summary
        "3. Who opened it? Jane Holt\n"  # no labels
        "4. Answer: Jane Holt | Question: who opened the new bridge\n"  # duplicate question
        "5. Answer: Sunday | Question:\n"  # no question
        "6. Answer: three years | Question: How long did the work on the bridge take?\n"
        "7. Answer: Sunday | Question: On what day was the bridge opened?\n"  # beyond the 2 requested
    )
    judge_server.responder = _responder(generation)
    result = asyncio.run(_run_qa(judge_server.judge_config(), ARTICLE, SUMMARY, n_questions=2))

    assert judge_server.call_count == 3  # generation + the 2 kept questions only
    assert [item.question for item in result.evidence] == [
        "Who opened the new bridge?",
        "How long did the work on the bridge take?",
    ]
    assert result.score == pytest.approx((0.8 + 0.5) / 2)
    assert result.judge_score == 4  # 1 + round_half_up(2.6)
    assert result.generation_raw == generation
    assert result.problems == [
        "broken pair on line 4: no Answer:/Question: labels: '3. Who opened it? Jane Holt'",
        "broken pair on line 6: need one non-empty answer and question: '5. Answer: Sunday | Question:'",
        "skipped 1 line(s) of text outside the pair format",
        "dropped pair: answer 'federal money' is not a span of the summary",
        "dropped pair: duplicate question 'who opened the new bridge'",
        "3 usable pairs, more than the 2 requested: kept the first 2",
    ]


def test_qa_over_http_reports_empty_answering_reply(judge_server: JudgeServer) -> None:
    generation = "1. Answer: Jane Holt | Question: Who opened the new bridge?\n2. Answer: Sunday | Question: When?"

    def responder(body: dict) -> str:
        user = body["messages"][-1]["content"]
        return generation if "requested):" in user else ("" if "When?" in user else "Jane Holt")

    judge_server.responder = responder
    result = asyncio.run(_run_qa(judge_server.judge_config(), ARTICLE, SUMMARY, n_questions=2))
    assert [item.article_answer for item in result.evidence] == ["Jane Holt", None]
    assert result.score == pytest.approx(0.5)
    assert result.exact_match == pytest.approx(0.5)
    assert result.problems == ["no answer in the reply to question 'When?': counted unanswerable"]


@pytest.mark.parametrize("generation", ["I am sorry, I cannot do that.", "", "1. Answer: moon | Question: What?"])
def test_qa_over_http_without_usable_pairs_raises_reply_error(judge_server: JudgeServer, generation: str) -> None:
    judge_server.responder = _responder(generation)
    with pytest.raises(JudgeReplyError, match="no usable answer-question pair") as caught:
        asyncio.run(_run_qa(judge_server.judge_config(), ARTICLE, SUMMARY))
    assert caught.value.reason == "no_qa_pairs"
    assert caught.value.raw_reply == generation
    assert caught.value.judge == "stand-in"
    assert judge_server.call_count == 1


def test_qa_over_http_generation_failure_propagates_call_error(judge_server: JudgeServer) -> None:
    judge_server.responder = _responder()
    judge_server.inject("error_500", times=3)
    with pytest.raises(JudgeCallError) as caught:
        asyncio.run(_run_qa(judge_server.judge_config(max_retries=2), ARTICLE, SUMMARY))
    assert (caught.value.status, caught.value.attempts) == (500, 3)
    assert judge_server.call_count == 3  # the three attempts of the generation call, nothing after


@pytest.mark.parametrize("n_questions", [1, 4])
def test_qa_over_http_answering_failure_propagates_call_error(judge_server: JudgeServer, n_questions: int) -> None:
    def responder(body: dict) -> str:
        reply = scripted_reply(body["messages"])
        if "requested):" in body["messages"][-1]["content"]:
            judge_server.inject("error_500", times=3 * n_questions)  # every answering attempt fails
        return reply

    judge_server.responder = responder
    with pytest.raises(JudgeCallError) as caught:  # the client's own error, not an exception group
        asyncio.run(_run_qa(judge_server.judge_config(max_retries=2), ARTICLE, SUMMARY, n_questions=n_questions))
    assert (caught.value.status, caught.value.attempts) == (500, 3)


def test_direct_over_http_reads_score_and_distribution(judge_server: JudgeServer) -> None:
    judge_server.responder = lambda body: ScriptedReply("2", peaked_logprobs(2))
    judge_server.usage = (321, 1)
    verdict = asyncio.run(_run_direct(judge_server.judge_config(), ARTICLE, SUMMARY))

    (request,) = judge_server.requests
    assert f"Article: {fence('ARTICLE', ARTICLE)}\nSummary: {fence('SUMMARY', SUMMARY)}\nScore:" in request.prompt_text
    assert "Harrow Vale" in request.prompt_text  # the in-context example
    assert request.wants_logprobs
    assert verdict.judge_score == 2
    assert verdict.raw_reply == "2"
    assert (verdict.prompt_tokens, verdict.completion_tokens) == (321, 1)
    expected = [math.exp(value) for value in peaked_logprobs(2).values()]  # already sums to 1 over 1..5
    assert verdict.probabilities == pytest.approx(expected)
    assert sum(verdict.probabilities or []) == pytest.approx(1.0)


def test_direct_over_http_without_logprobs(judge_server: JudgeServer) -> None:
    judge_server.responder = lambda body: "Score: 5"
    verdict = asyncio.run(_run_direct(judge_server.judge_config(logprobs=False), ARTICLE, SUMMARY))
    assert not judge_server.requests[0].wants_logprobs
    assert verdict.judge_score == 5
    assert verdict.probabilities is None


def test_direct_over_http_unreadable_reply_raises_reply_error(judge_server: JudgeServer) -> None:
    judge_server.inject("no_score")
    with pytest.raises(JudgeReplyError) as caught:
        asyncio.run(_run_direct(judge_server.judge_config(), ARTICLE, SUMMARY))
    assert caught.value.raw_reply == NO_SCORE_REPLY


def test_direct_over_http_failure_propagates_call_error(judge_server: JudgeServer) -> None:
    judge_server.inject("error_500", times=2)
    with pytest.raises(JudgeCallError) as caught:
        asyncio.run(_run_direct(judge_server.judge_config(max_retries=1), ARTICLE, SUMMARY))
    assert (caught.value.status, caught.value.attempts) == (500, 2)
