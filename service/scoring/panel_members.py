"""A panel's members' verdicts for ``/v1/score`` (rules 1-2 of :mod:`service.scoring.panels`): a caller's member
verdict read and checked, or the configured panel's members asked concurrently through the judge pool.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import msgspec

from calibration.conformal import probabilities_from_logprobs
from calibration.input_kinds.mean_panel import expected_score
from service.errors import InvalidRequestError
from service.scoring.context import ScoringContext
from service.scoring.verdict import filled_logprobs
from service.wire.common import CRITERIA as BUILTIN_CRITERIA
from service.wire.score import MemberVerdict, PanelMemberVerdict, ScoreRequest

__all__ = ["LiveMembers", "caller_member", "live_members", "live_panel_members"]


def caller_member(verdict: MemberVerdict, n_labels: int) -> PanelMemberVerdict:
    """A caller's member verdict with its expected score (rule 2); 422 when it carries nothing usable."""
    if verdict.judge_score is None and verdict.judge_logprobs is None and verdict.mean_of_samples is None:
        raise InvalidRequestError(
            f"verdict of judge {verdict.judge!r} needs judge_score, judge_logprobs or mean_of_samples"
        )
    if verdict.judge_score is not None and verdict.judge_score > n_labels:
        raise InvalidRequestError(
            f"judge_score={verdict.judge_score} of judge {verdict.judge!r} is outside 1..{n_labels}"
        )
    if verdict.mean_of_samples is not None and verdict.mean_of_samples > n_labels:
        raise InvalidRequestError(
            f"mean_of_samples={verdict.mean_of_samples} of judge {verdict.judge!r} is outside 1..{n_labels}"
        )
    probabilities = None
    if verdict.judge_logprobs is not None:
        if verdict.judge_logprobs.highest_token() > n_labels:
            raise InvalidRequestError(f"judge_logprobs of judge {verdict.judge!r} has a token above {n_labels}")
        values = verdict.judge_logprobs.values(n_labels)
        if all(value is None for value in values):
            raise InvalidRequestError(f"judge_logprobs of judge {verdict.judge!r} holds no token")
        probabilities = [float(p) for p in probabilities_from_logprobs(filled_logprobs(values))]
    expected = expected_score(
        n_labels, judge_score=verdict.judge_score, probabilities=probabilities, mean=verdict.mean_of_samples
    )
    return PanelMemberVerdict(
        judge=verdict.judge,
        source="caller",
        judge_score=verdict.judge_score,
        probabilities=probabilities,
        mean_of_samples=verdict.mean_of_samples,
        expected_score=expected,
    )


class LiveMembers(msgspec.Struct, frozen=True, kw_only=True):
    """The live members' verdicts, the judge calls they cost and whether any reply named another model."""

    verdicts: list[PanelMemberVerdict]
    judge_calls: int
    model_mismatch: bool


async def live_members(
    ctx: ScoringContext, request: ScoreRequest, members: Sequence[str], n_labels: int
) -> LiveMembers:
    document, summary = request.document or "", request.summary or ""
    for member in members:
        ctx.judges.client(member)  # 503 without judges, 422 for one that is not configured
    answers = await asyncio.gather(
        *(ctx.judges.direct(m, request.criterion, document, summary) for m in members), return_exceptions=True
    )
    failures = [a for a in answers if isinstance(a, BaseException)]
    if len(failures) == len(answers):
        raise failures[0]
    rubric = ctx.judges.rubrics.get(request.criterion)
    result = []
    calls, mismatch = 0, False
    for member, answer in zip(members, answers, strict=True):
        config = ctx.judges.config(member)
        family = rubric.family if rubric is not None else (config.prompt_family if config is not None else None)
        if isinstance(answer, BaseException):
            if not isinstance(answer, Exception):
                raise answer
            result.append(
                PanelMemberVerdict(
                    judge=member, source="judge", prompt_family=family, error=f"{type(answer).__name__}: {answer}"
                )
            )
            continue
        verdict = answer.value
        calls += answer.calls
        mismatch = mismatch or answer.model_mismatch
        probabilities = None if verdict.probabilities is None else [float(p) for p in verdict.probabilities]
        result.append(
            PanelMemberVerdict(
                judge=member,
                source="judge",
                prompt_family=family,
                judge_score=verdict.judge_score,
                probabilities=probabilities,
                cached=answer.cached,
                expected_score=expected_score(n_labels, judge_score=verdict.judge_score, probabilities=probabilities),
            )
        )
    return LiveMembers(verdicts=result, judge_calls=calls, model_mismatch=mismatch)


def live_panel_members(ctx: ScoringContext, request: ScoreRequest) -> list[str]:
    """The members of the configured panel ``request.panel`` (422: unknown panel, missing texts, a criterion the
    judges cannot be asked about)."""
    panels = ctx.judges.panels
    if request.panel not in panels:
        raise InvalidRequestError(f"unknown panel {request.panel!r} (PANELS_FILE)", allowed=sorted(panels))
    if request.document is None or request.summary is None:
        raise InvalidRequestError("document and summary are required when the service calls a panel")
    members = list(panels[request.panel])
    askable = set(BUILTIN_CRITERIA) | set(ctx.judges.rubric_names())
    if request.criterion not in askable:
        raise InvalidRequestError(
            f"unknown criterion {request.criterion!r} for a live panel call", allowed=sorted(askable)
        )
    return members
