"""Scoring step 2, verdict: the caller's own (score, log-probs, mean or sentence verdicts) or the judge's, asked now.

The caller's ``judge_logprobs`` are renormalised over 1..K, a token the caller did not send read by
``filled_logprobs`` (ln(1e-5), the recorded data's convention, or lower: always below every token sent); without
``judge_score`` the verdict's score is the most probable token (lower on ties), else the rounded mean. The
verdict lists the input kinds it carries (``calibration.input_kinds.verdicts``), preferred first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import msgspec

from calibration.conformal import probabilities_from_logprobs
from calibration.input_kinds.verdicts import round_half_up
from judges.factuality.sentence_check import judge_score_from_share
from service.errors import InvalidRequestError
from service.scoring.context import ScoringContext
from service.wire.score import QAEvidenceItem, ScoreRequest, SentenceEvidenceItem

__all__ = [
    "MISSING_LOGPROB",
    "Verdict",
    "filled_logprobs",
    "judge_verdict",
    "own_sentence_verdict",
    "own_verdict",
    "verdict_for",
]

MISSING_LOGPROB = math.log(1e-5)


def filled_logprobs(values: Sequence[float | None]) -> list[float]:
    """The caller's log-probs with every token it did not send filled below every token it sent.

    A missing token reads ``MISSING_LOGPROB`` (ln 1e-5, the recorded calibration data's fill for tokens outside
    the judge's top-k) when every value sent is above it, so those answers are the recorded data's; when the
    lowest value sent is at or below ln 1e-5, a missing token reads that lowest value + ln 1e-5 (1e-5 times as
    probable as the least probable token sent). The most probable token sent therefore stays the most probable.
    """
    sent = [value for value in values if value is not None]
    lowest = min(sent, default=0.0)
    fill = MISSING_LOGPROB if lowest > MISSING_LOGPROB else lowest + MISSING_LOGPROB
    return [fill if value is None else value for value in values]


class Verdict(msgspec.Struct, frozen=True, kw_only=True):
    """A 1..K verdict with its probabilities (when known) and where it came from."""

    judge_score: int
    probabilities: list[float] | None
    source: str
    cached: bool = False
    raw_reply: str | None = None
    qa_score: float | None = None
    qa_exact_match: float | None = None
    evidence: list[QAEvidenceItem | SentenceEvidenceItem] | None = None
    sentence_score: float | None = None  # share of sentences judged "no error" (factuality_method "sentences")
    kinds: tuple[str, ...] = (
        "score",
    )  # input kinds the verdict carries (calibration.input_kinds.verdicts), preferred first
    mean: float | None = None  # mean_of_samples, for the ``mean`` kind
    judge_calls: int = 0  # live judge calls this verdict cost (service.judging.pool.Cached.calls)
    model_mismatch: bool = False  # the judge's reply named another model than its configured one


async def verdict_for(ctx: ScoringContext, request: ScoreRequest, judge: str, own: bool, n_labels: int) -> Verdict:
    """The request's verdict on 1..n_labels: the caller's (sentence verdicts, or score / log-probs / mean) or
    ``judge``'s, called now."""
    if request.sentence_verdicts is not None:
        return own_sentence_verdict(request)
    return own_verdict(request, n_labels) if own else await judge_verdict(ctx, request, judge)


def _caller_probabilities(request: ScoreRequest, n_labels: int) -> list[float] | None:
    """The caller's ``judge_logprobs`` renormalised over 1..n_labels (422 outside the scale or with no token)."""
    if request.judge_logprobs is None:
        return None
    if request.judge_logprobs.highest_token() > n_labels:
        raise InvalidRequestError(
            f'judge_logprobs has token "{request.judge_logprobs.highest_token()}" outside this cell\'s scale '
            f"1..{n_labels}"
        )
    values = request.judge_logprobs.values(n_labels)
    if all(value is None for value in values):
        raise InvalidRequestError(
            f'judge_logprobs holds no token: give log-probabilities for some of "1".."{n_labels}"'
        )
    return [float(p) for p in probabilities_from_logprobs(filled_logprobs(values))]


def own_verdict(request: ScoreRequest, n_labels: int = 5) -> Verdict:
    """The caller's ``judge_score`` / ``judge_logprobs`` / ``mean_of_samples`` as a verdict on 1..n_labels (422
    outside the scale)."""
    if request.judge_score is not None and request.judge_score > n_labels:
        raise InvalidRequestError(f"judge_score={request.judge_score} is outside this cell's scale 1..{n_labels}")
    probabilities = _caller_probabilities(request, n_labels)
    mean = request.mean_of_samples
    if mean is not None and mean > n_labels:
        raise InvalidRequestError(f"mean_of_samples={mean} is outside this cell's scale 1..{n_labels}")
    kinds = tuple(
        kind
        for kind, given in (
            ("probabilities", probabilities is not None),
            ("mean", mean is not None),
            ("score", request.judge_score is not None),
        )
        if given
    )
    score = request.judge_score
    if score is None and probabilities is not None:
        score = max(range(len(probabilities)), key=lambda k: (probabilities[k], -k)) + 1
    if score is None:
        assert mean is not None
        score = round_half_up(mean)
    return Verdict(judge_score=score, probabilities=probabilities, source="caller", kinds=kinds, mean=mean)


def _sentence_evidence(verdicts: Sequence[Any]) -> list[QAEvidenceItem | SentenceEvidenceItem]:
    return [
        SentenceEvidenceItem(sentence=v.sentence, error=v.category != "no error", category=v.category, reason=v.reason)
        for v in verdicts
    ]


def own_sentence_verdict(request: ScoreRequest) -> Verdict:
    """The caller's per-sentence verdicts -> share error-free -> ``1 + round_half_up(4 x share)`` (sentence_check)."""
    if request.criterion != "faithfulness" or request.factuality_method != "sentences":
        raise InvalidRequestError('sentence_verdicts need criterion "faithfulness" and factuality_method "sentences"')
    if request.judge_score is not None or request.judge_logprobs is not None or request.mean_of_samples is not None:
        raise InvalidRequestError("send either sentence_verdicts or judge_score / judge_logprobs / mean_of_samples")
    verdicts = request.sentence_verdicts or []
    share = sum(v.category == "no error" for v in verdicts) / len(verdicts)
    return Verdict(
        judge_score=judge_score_from_share(share),
        probabilities=None,
        source="caller",
        evidence=_sentence_evidence(verdicts),
        sentence_score=share,
    )


async def _sentences_verdict(ctx: ScoringContext, judge: str, document: str, summary: str) -> Verdict:
    """Faithfulness by per-sentence checks: the share of error-free sentences, with each sentence's verdict."""
    answer = await ctx.judges.faithfulness_sentences(judge, document, summary)
    checked = answer.value
    return Verdict(
        judge_score=checked.judge_score,
        probabilities=None,
        source="judge",
        cached=answer.cached,
        raw_reply=checked.raw_reply,
        evidence=_sentence_evidence(checked.verdicts),
        sentence_score=checked.score,
        judge_calls=answer.calls,
        model_mismatch=answer.model_mismatch,
    )


async def _qa_verdict(ctx: ScoringContext, judge: str, document: str, summary: str, n_questions: int) -> Verdict:
    """Faithfulness by question answering: the QA score, with each question's answers as evidence."""
    answer = await ctx.judges.faithfulness_qa(judge, document, summary, n_questions)
    qa = answer.value
    return Verdict(
        judge_score=qa.judge_score,
        probabilities=None,
        source="judge",
        cached=answer.cached,
        judge_calls=answer.calls,
        model_mismatch=answer.model_mismatch,
        raw_reply=qa.generation_raw,
        qa_score=qa.score,
        qa_exact_match=qa.exact_match,
        evidence=[
            QAEvidenceItem(
                question=item.question,
                summary_answer=item.summary_answer,
                article_answer=item.article_answer,
                similarity=item.similarity,
                exact_match=item.exact_match,
            )
            for item in qa.evidence
        ],
    )


async def judge_verdict(ctx: ScoringContext, request: ScoreRequest, judge: str) -> Verdict:
    """``judge``'s verdict on the request's texts (through the judge-answer cache), by the criterion's method."""
    document, summary = request.document or "", request.summary or ""
    if request.criterion == "faithfulness" and request.factuality_method == "sentences":
        return await _sentences_verdict(ctx, judge, document, summary)
    if request.criterion == "faithfulness" and request.factuality_method == "qa":
        return await _qa_verdict(ctx, judge, document, summary, request.n_questions)
    if request.criterion == "faithfulness":
        answer = await ctx.judges.faithfulness_direct(judge, document, summary)
    else:
        answer = await ctx.judges.direct(judge, request.criterion, document, summary)
    verdict = answer.value
    return Verdict(
        judge_score=verdict.judge_score,
        probabilities=None if verdict.probabilities is None else [float(p) for p in verdict.probabilities],
        source="judge",
        cached=answer.cached,
        judge_calls=answer.calls,
        model_mismatch=answer.model_mismatch,
        raw_reply=verdict.raw_reply,
        kinds=("score",) if verdict.probabilities is None else ("probabilities", "score"),
    )
