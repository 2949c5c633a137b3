"""Factuality judging of a summary against its article: direct 1-5 scoring, and the one-LLM QA pipeline.

Both methods follow Laskar et al. (paper 001, on FRANK); the prompts and reply readers are in
``factuality_prompts``, the answer similarity in ``qa_similarity``.

| call                                                       | calls to the judge                    |
|------------------------------------------------------------|---------------------------------------|
| ``await judge_faithfulness_direct(client, doc, summ)``     | 1                                     |
| ``await judge_faithfulness_qa(client, doc, summ)``         | 1 generation + 1 per kept question    |

Rules of the QA method:

- Generation: one call turns the summary into answer-question pairs together (read by
  ``parse_qa_generation``; every skipped pair is named in ``problems``).
- Answering: one call per kept question, each seeing the article and that question only, run concurrently;
  a reply that is empty or says ``unanswerable`` means the article cannot answer (``article_answer=None``).
- Score: the mean over kept questions of ``token_f1(summary_answer, article_answer)``, an unanswerable
  question counting 0; ``exact_match`` is the mean of ``exact_match`` the same way. A kept summary answer
  never normalises to nothing, so token F1's both-empty convention (1.0) cannot decide a question.
- Verdict: ``judge_score = 1 + round_half_up(4 * score)`` (0 -> 1, 0.125 -> 2, 0.5 -> 3, 1 -> 5).
- No usable pair at all: no score exists, so ``JudgeReplyError`` is raised for the item (its message lists
  the problems). A failed call (``JudgeCallError`` after the client's retries) propagates unchanged.

Prompt families: these prompts are this module's own, whatever family a judge is configured with, so their
verdicts are calibrated, stored and looked up under ``FAITHFULNESS_PROMPT_FAMILIES[method]``
(``"factuality_direct"`` / ``"factuality_qa"``; the sentence-level method of ``sentence_check``:
``"factuality_sentences"``), the one name the offline answer store, the thresholds
artifact and the service share.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Final, Protocol

import msgspec

from judges.errors import JudgeError, JudgeReplyError
from judges.factuality.prompts import (
    UNANSWERABLE,
    direct_faithfulness_messages,
    parse_article_answer,
    parse_qa_generation,
    qa_answer_messages,
    qa_generation_messages,
)
from judges.factuality.qa_similarity import exact_match, normalize_answer, token_f1
from judges.parsing.distribution import TokenLogprobs, score_distribution
from judges.parsing.reply import parse_score
from judges.results import DirectVerdict

__all__ = [
    "Completer",
    "CompletionLike",
    "FAITHFULNESS_PROMPT_FAMILIES",
    "JudgeConfigLike",
    "MAX_QUESTIONS",
    "QAEvidence",
    "QAFactuality",
    "exact_match",
    "judge_faithfulness_direct",
    "judge_faithfulness_qa",
    "judge_score_from_qa",
    "normalize_answer",
    "token_f1",
]

MAX_QUESTIONS = 20
# Factuality method -> the prompt family its verdicts are stored and calibrated under (read-only).
FAITHFULNESS_PROMPT_FAMILIES: Final[Mapping[str, str]] = MappingProxyType(
    {"direct": "factuality_direct", "qa": "factuality_qa", "sentences": "factuality_sentences"}
)
_N_LABELS = 5


class CompletionLike(Protocol):
    """What the factuality methods read from one completion (``client.Completion`` fits)."""

    @property
    def text(self) -> str: ...
    @property
    def tokens(self) -> Sequence[TokenLogprobs] | None: ...
    @property
    def prompt_tokens(self) -> int: ...
    @property
    def completion_tokens(self) -> int: ...
    @property
    def model(self) -> str | None: ...


class JudgeConfigLike(Protocol):
    """The parts of a judge's configuration read here (``client.JudgeConfig`` fits)."""

    @property
    def name(self) -> str: ...
    @property
    def logprobs(self) -> bool: ...
    @property
    def max_tokens(self) -> int: ...


class Completer(Protocol):
    """The part of ``JudgeClient`` the factuality methods use: its config and ``complete``."""

    @property
    def config(self) -> JudgeConfigLike: ...

    async def complete(
        self, messages: Sequence[dict[str, str]], *, max_tokens: int, logprobs: bool = False
    ) -> CompletionLike: ...


class QAEvidence(msgspec.Struct, frozen=True, kw_only=True):
    """One question of the QA pipeline: both answers, their similarity, and the raw answering reply."""

    question: str
    summary_answer: str
    article_answer: str | None  # None: the judge said the article cannot answer (or replied nothing)
    similarity: float  # token F1 in [0, 1]; 0 when article_answer is None
    exact_match: float  # 1.0 or 0.0; 0 when article_answer is None
    answer_raw: str


class QAFactuality(msgspec.Struct, frozen=True, kw_only=True):
    """The QA-based faithfulness of one summary, with every step's text kept as evidence."""

    score: float  # mean token F1 over the kept questions, in [0, 1]
    exact_match: float  # mean exact match over the kept questions, in [0, 1]
    judge_score: int  # 1 + round_half_up(4 * score), in 1..5
    n_questions: int  # questions requested
    evidence: list[QAEvidence]
    generation_raw: str
    problems: list[str]
    calls: int
    prompt_tokens: int
    completion_tokens: int
    reply_model: str | None = None  # the model the question-generation reply reported


def judge_score_from_qa(score: float) -> int:
    """Map a QA score in [0, 1] to 1..5 by 1 + round_half_up(4 * score), with 1e-9 slack for float sums."""
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"QA score must lie in [0, 1], got {score!r}")
    return 1 + math.floor(4.0 * score + 0.5 + 1e-9)


def _check_inputs(document: str, summary: str) -> None:
    if not document.strip():
        raise ValueError("document is empty")
    if not summary.strip():
        raise ValueError("summary is empty")


def _first_judge_error(group: BaseExceptionGroup) -> BaseException:
    """The first JudgeError in a (nested) exception group, else the group itself."""
    for error in group.exceptions:
        if isinstance(error, BaseExceptionGroup):
            error = _first_judge_error(error)
        if isinstance(error, JudgeError):
            return error
    return group


async def _complete_all(
    client: Completer, conversations: Sequence[list[dict[str, str]]], *, max_tokens: int
) -> list[CompletionLike]:
    """Run the calls concurrently; on a failure cancel the rest and raise that call's own error."""
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(client.complete(each, max_tokens=max_tokens)) for each in conversations]
    except BaseExceptionGroup as failed:
        raise _first_judge_error(failed) from None
    return [task.result() for task in tasks]


async def judge_faithfulness_qa(
    client: Completer,
    document: str,
    summary: str,
    *,
    n_questions: int = 5,
    generation_max_tokens: int | None = None,
    answer_max_tokens: int = 64,
) -> QAFactuality:
    """Score the summary's faithfulness by the module's QA rules with one judge for every step.

    Raises ValueError (n_questions outside 1..MAX_QUESTIONS, empty document or summary), JudgeReplyError
    (no usable pair in the generation reply) and the client's JudgeCallError (a call failed).
    """
    valid = isinstance(n_questions, int) and not isinstance(n_questions, bool)
    if not valid or not 1 <= n_questions <= MAX_QUESTIONS:
        raise ValueError(f"n_questions must be an integer in 1..{MAX_QUESTIONS}, got {n_questions!r}")
    _check_inputs(document, summary)
    # Room for the requested pairs plus a preamble; an extra pair or two still fits and is reported.
    max_tokens = generation_max_tokens or 64 * n_questions + 64
    generation = await client.complete(qa_generation_messages(summary, n_questions), max_tokens=max_tokens)
    parsed = parse_qa_generation(generation.text, summary=summary, n_questions=n_questions)
    if not parsed.pairs:
        raise JudgeReplyError(
            f"judge {client.config.name!r}: no usable answer-question pair in the generation reply, so no QA "
            f"score exists: {'; '.join(parsed.problems)}",
            judge=client.config.name,
            raw_reply=generation.text or "",
            reason="no_qa_pairs",
        )
    conversations = [qa_answer_messages(document, pair.question) for pair in parsed.pairs]
    replies = await _complete_all(client, conversations, max_tokens=answer_max_tokens)
    evidence: list[QAEvidence] = []
    problems = list(parsed.problems)
    for pair, reply in zip(parsed.pairs, replies, strict=True):
        article_answer = parse_article_answer(reply.text)
        if article_answer is None and not normalize_answer(reply.text or "").startswith(UNANSWERABLE):
            problems.append(f"no answer in the reply to question {pair.question!r}: counted unanswerable")
        evidence.append(
            QAEvidence(
                question=pair.question,
                summary_answer=pair.answer,
                article_answer=article_answer,
                similarity=0.0 if article_answer is None else token_f1(pair.answer, article_answer),
                exact_match=0.0 if article_answer is None else exact_match(pair.answer, article_answer),
                answer_raw=reply.text or "",
            )
        )
    score = math.fsum(item.similarity for item in evidence) / len(evidence)
    calls = [generation, *replies]
    return QAFactuality(
        score=score,
        exact_match=math.fsum(item.exact_match for item in evidence) / len(evidence),
        judge_score=judge_score_from_qa(score),
        n_questions=n_questions,
        evidence=evidence,
        generation_raw=generation.text or "",
        problems=problems,
        calls=len(calls),
        prompt_tokens=sum(call.prompt_tokens for call in calls),
        completion_tokens=sum(call.completion_tokens for call in calls),
        reply_model=generation.model,
    )


async def judge_faithfulness_direct(
    client: Completer, document: str, summary: str, *, max_tokens: int | None = None
) -> DirectVerdict:
    """Rate the summary's faithfulness to the document on 1..5 with the one-example prompt, in one call.

    The score is read by ``parse_score``; ``probabilities`` come from the score token's log-probs when the
    judge's config asks for them and the endpoint returns them (else None). ``max_tokens`` defaults to the
    judge's configured ``max_tokens``. Raises ValueError (empty document or summary), JudgeReplyError (no
    score in the reply) and the client's JudgeCallError (the call failed).
    """
    _check_inputs(document, summary)
    completion = await client.complete(
        direct_faithfulness_messages(document, summary),
        max_tokens=max_tokens or client.config.max_tokens,
        logprobs=client.config.logprobs,
    )
    parsed = parse_score(completion.text, n_labels=_N_LABELS)
    if parsed.score is None:
        raise JudgeReplyError(
            f"judge {client.config.name!r}: no faithfulness score in reply ({parsed.rule})",
            judge=client.config.name,
            raw_reply=completion.text,
            reason=parsed.rule,
        )
    probabilities, logprobs = score_distribution(
        completion.tokens, completion.text, parsed.position, n_labels=_N_LABELS
    )
    return DirectVerdict(
        judge_score=parsed.score,
        probabilities=probabilities,
        logprobs=logprobs,
        raw_reply=completion.text,
        parse_rule=parsed.rule,
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
        reply_model=completion.model,
    )
