"""Compare candidates: pairwise verdicts (a live judge's or the caller's) -> tournament diagnostics.

Two kinds of request (exactly one; both or neither -> 422):

* **Live**: ``document`` + ``candidates`` (3..MAX_CANDIDATES, unique ids). For every unordered pair (i < j in
  candidate order) and every repetition r < ``repetitions`` the judge sees (i, j), and with ``swap`` also
  (j, i). All calls run concurrently, bounded per judge by the client's semaphore; answers are cached per
  (pair, order, repetition).
* **Caller's preferences**: ``[{winner, loser}]`` (or ``tie: true``) becomes the verdict ``first=winner,
  second=loser, outcome="first"`` (or ``"tie"``); ``[{first, second, verdict}]`` is a verdict as shown to the
  judge (``verdict`` "first" | "second" | "tie"). One form per preference (422 otherwise). The candidates are the
  ids in order of first appearance (1..MAX_CANDIDATES; more is a 422). A self-comparison (a candidate against
  itself) is no edge of a tournament: it is left out of every figure and listed in ``ignored_preferences`` with
  its index and why, and the reason counts it (never dropped silently). With fewer than 3 candidates there is no
  triple (no cycle can exist); with 1 there is no pair, and every ranking is that one candidate (scores null).
  ``position_consistency`` is computed when every
  preference gives its presentation order, and is null otherwise (the order of a winner/loser verdict is
  unknown). ``criterion`` is optional here (echoed when given); a live comparison needs it.

A failed judge call (``JudgeCallError`` after the client's retries, or an unreadable ``JudgeReplyError``)
does not fail the request: that verdict is missing, the call is listed in ``failed_calls`` with its problem,
``complete`` is false, the reason says how many verdicts are missing, and a warning is logged. A pair with
no verdict left is a missing pair of the tournament (no edge). If every call fails there is nothing to
report: 502 naming the first failed pair.

Decision per pair (``pairs[].decision``) under the request's ``guarantee`` mode (default ``expected``; echoed as
``mode`` beside ``accept_alpha``): :mod:`service.comparing.pair_decisions` states the rule and each mode's promise.

Flag rule: ``flagged`` when the tournament has at least FLAG_MIN_CYCLES (default 1) directed 3-cycles: any
cycle means that no ranking can agree with every majority verdict of this input, so the rankings should not
be trusted as they stand (Gupta et al., section 3).

Accounting: ``cached_calls`` counts verdicts answered from the judge-answer cache, ``judge_calls`` the live calls
that answered (0 with the caller's preferences); ``flags`` holds ``judge_model_mismatch`` when a verdict's reply
named another model than the judge's configured one (``service.judging.model_check``).
"""

from __future__ import annotations

import asyncio
import itertools
import math
from dataclasses import dataclass
from typing import Any

import anyio.to_thread

from artifact.pairwise import PairwiseIndex
from calibration.tournaments.position_consistency import position_consistency
from calibration.tournaments.ranking import (
    rank_bradley_terry,
    rank_mfas_copeland,
    rank_schulze,
    rank_win_rate,
    ranks_of,
)
from calibration.tournaments.tournament import (
    PairwiseVerdict,
    Tournament,
    build_tournament,
    three_cycles,
    violation_rate,
)
from judges.errors import JudgeError
from service.comparing.compare_request import check_call_budget, check_live, preference_verdicts
from service.comparing.mfas_limit import rank_mfas_within
from service.comparing.pair_decisions import check_guarantee, pair_result
from service.config.settings import Settings
from service.errors import InvalidRequestError, ServiceProblem, problem_from_exception
from service.judging.model_check import MODEL_MISMATCH_FLAG
from service.judging.pool import JudgePool
from service.observability.logging import EventLogger
from service.screening.injection import INJECTION_FLAG, screen_texts
from service.wire.common import CRITERIA
from service.wire.compare import (
    CompareRequest,
    CompareResponse,
    FailedCall,
    IgnoredPreference,
    PositionConsistencyInfo,
    RankingOrders,
    RankingRanks,
    RankingScores,
)

__all__ = [
    "CompareContext",
    "JudgeUnavailableError",
    "LiveVerdicts",
    "TournamentReport",
    "analyse",
    "compare_candidates",
]


class JudgeUnavailableError(ServiceProblem):
    """Every pairwise judge call of a compare request failed (502)."""

    status = 502
    slug = "judge-call-failed"
    title = "The judge calls failed"


@dataclass(frozen=True, kw_only=True)
class CompareContext:
    """What comparing needs: settings, the judges and a logger."""

    settings: Settings
    judges: JudgePool
    logger: EventLogger
    pairwise: PairwiseIndex | None = None  # the certified pairwise thresholds (None: every pair abstains)


@dataclass(frozen=True, kw_only=True)
class LiveVerdicts:
    """A live comparison's verdicts, its failed calls, how many answers came from the cache, how many live calls
    answered and whether any reply named another model than the judge's configured one."""

    verdicts: list[PairwiseVerdict]
    failed: list[FailedCall]
    cached: int
    judge_calls: int
    model_mismatch: bool


@dataclass(frozen=True, kw_only=True)
class TournamentReport:
    """The tournament and everything computed from it (pure; no judge involved)."""

    tournament: Tournament
    cycles: list[tuple[str, str, str]]
    violation_rate: float
    position: PositionConsistencyInfo | None
    rankings: dict[str, object]
    mfas_exact: bool = True  # False: the exact MFAS hit MFAS_TIME_LIMIT_S and mfas_ilp holds the heuristic order


def analyse(
    candidates: list[str], verdicts: list[PairwiseVerdict], *, both_orders: bool, mfas_time_limit_s: float = 2.0
) -> TournamentReport:
    """Tournament, 3-cycles, violation rate, rankings (and position consistency when both orders were judged).

    The exact MFAS runs in a killable process for at most ``mfas_time_limit_s`` (``service.comparing.mfas_limit``).
    """
    tournament = build_tournament(candidates, verdicts)
    mfas, mfas_exact = rank_mfas_within(tournament, mfas_time_limit_s)
    position = None
    if both_orders:
        pc = position_consistency(verdicts)
        position = PositionConsistencyInfo(
            rate=pc.rate, n_pairs_both_orders=pc.n_pairs_both_orders, n_consistent=pc.n_consistent
        )
    return TournamentReport(
        tournament=tournament,
        cycles=three_cycles(tournament),
        violation_rate=violation_rate(tournament),
        position=position,
        rankings={
            "win_rate": rank_win_rate(tournament),
            "bradley_terry": rank_bradley_terry(tournament),
            "schulze": rank_schulze(tournament),
            "mfas_ilp": mfas,
            "mfas_copeland": rank_mfas_copeland(tournament),
        },
        mfas_exact=mfas_exact,
    )


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


async def _live_verdicts(ctx: CompareContext, request: CompareRequest, judge: str) -> LiveVerdicts:
    # compare_candidates checked them: a live comparison has candidates, a document and a criterion
    assert request.candidates is not None and request.document is not None and request.criterion is not None
    criterion = request.criterion
    texts = {candidate.id: candidate.text for candidate in request.candidates}
    ids = [candidate.id for candidate in request.candidates]
    calls = [
        (first, second, repetition)
        for a, b in itertools.combinations(ids, 2)
        for repetition in range(request.repetitions)
        for first, second in (((a, b), (b, a)) if request.swap else ((a, b),))
    ]

    async def one(first: str, second: str, repetition: int) -> tuple[PairwiseVerdict | None, FailedCall | None, Any]:
        try:
            answer = await ctx.judges.prefer(
                judge, criterion, request.document or "", texts[first], texts[second], repetition
            )
        except JudgeError as error:
            problem, _ = problem_from_exception(error)
            return None, FailedCall(first=first, second=second, repetition=repetition, error=problem), None
        verdict = PairwiseVerdict(first=first, second=second, outcome=answer.value.outcome)
        return verdict, None, answer

    outcomes = await asyncio.gather(*(one(*call) for call in calls))
    verdicts = [verdict for verdict, _, _ in outcomes if verdict is not None]
    failed = [failure for _, failure, _ in outcomes if failure is not None]
    answers = [answer for _, _, answer in outcomes if answer is not None]
    cached = sum(1 for answer in answers if answer.cached)
    if not verdicts:
        first = failed[0]
        raise JudgeUnavailableError(
            f"all {len(calls)} pairwise calls to judge {judge!r} failed; first failure: pair "
            f"({first.first}, {first.second}), repetition {first.repetition}: {first.error.detail}"
        )
    if failed:
        ctx.logger.warning("compare.judge_calls_failed", judge=judge, failed=len(failed), calls=len(calls))
    return LiveVerdicts(
        verdicts=verdicts,
        failed=failed,
        cached=cached,
        judge_calls=sum(answer.calls for answer in answers),
        model_mismatch=any(answer.model_mismatch for answer in answers),
    )


def _reason(report: TournamentReport, flagged: bool, settings: Settings, failed: int, calls: int) -> str:
    n_cycles, n = len(report.cycles), report.tournament.n_candidates
    if flagged:
        text = (
            f"{n_cycles} directed 3-cycle(s) among {math.comb(n, 3)} triples (violation rate "
            f"{report.violation_rate:.3f}; flagged at >= {settings.flag_min_cycles}): the preferences are "
            "intransitive for this input, so no ranking agrees with every majority verdict"
        )
    else:
        text = f"no directed 3-cycle among {math.comb(n, 3)} triples (flagged at >= {settings.flag_min_cycles})"
    tied, missing = report.tournament.n_tied_pairs, report.tournament.n_missing_pairs
    if tied or missing:
        text += f"; {tied} tied and {missing} unjudged pair(s) are not edges"
    if failed:
        text += f"; {failed} of {calls} judge calls failed and their verdicts are missing (see failed_calls)"
    if not report.mfas_exact:
        text += (
            "; the exact MFAS ranking did not finish within "
            f"MFAS_TIME_LIMIT_S={settings.limits.mfas_time_limit_s:g} s, "
            "so mfas_ilp is the Copeland order improved by single-candidate moves (exact: false)"
        )
    return text


async def compare_candidates(ctx: CompareContext, request: CompareRequest) -> CompareResponse:
    """Run a compare request (rules in the module docstring) and shape the response."""
    live = request.document is not None or request.candidates is not None
    if live == (request.preferences is not None):
        raise InvalidRequestError(
            "give either document + candidates (judged by a live judge) or preferences (your own verdicts)"
        )
    if live and request.criterion is None:
        raise InvalidRequestError(
            "a live comparison needs a criterion (the judge is asked about it)", allowed=list(CRITERIA)
        )
    check_guarantee(ctx.pairwise, request.guarantee, request.confidence)
    presented = False
    ignored: list[IgnoredPreference] = []
    judge: str | None = request.judge
    failed: list[FailedCall] = []
    cached = judge_calls = 0
    mismatch = False
    if live:
        judge = judge or ctx.judges.default_judge()
        ctx.judges.client(judge or "")  # first: 422 without judges (whatever the body asks); 422 if not configured
        assert judge is not None
        ids = check_live(request, ctx.settings)
        check_call_budget(len(ids), request, ctx.settings)
        config = ctx.judges.config(judge)
        assert config is not None  # client() above refused an unconfigured judge
        family = config.prompt_family
        if request.prompt_family and request.prompt_family != family:
            raise InvalidRequestError(
                f"judge {judge!r} is asked with prompt family {family!r}; prompt_family {request.prompt_family!r} "
                "does not match",
                allowed=[family],
            )
        asked = await _live_verdicts(ctx, request, judge)
        verdicts, failed, cached = asked.verdicts, asked.failed, asked.cached
        judge_calls, mismatch = asked.judge_calls, asked.model_mismatch
    else:
        ids, verdicts, presented, ignored = preference_verdicts(request, ctx.settings)
        if len(ids) == 1:
            return _lone_candidate(request, ids[0], ignored)
    both_orders = (live and request.swap) or presented
    limit_s = ctx.settings.limits.mfas_time_limit_s
    report = await anyio.to_thread.run_sync(
        lambda: analyse(ids, verdicts, both_orders=both_orders, mfas_time_limit_s=limit_s)
    )
    flagged = len(report.cycles) >= ctx.settings.flag_min_cycles
    calls = len(verdicts) + len(failed)
    rankings = report.rankings
    reason = _reason(report, flagged, ctx.settings, len(failed), calls) + _ignored_note(ignored)
    findings = _injection_findings(request) if live else []
    if findings:  # the judge read texts that try to steer it: the verdicts are not to be trusted as they stand
        flagged = True
        reason += f"; flagged: possible prompt injection in the judged texts ({', '.join(findings)})"
    return CompareResponse(
        criterion=request.criterion,
        judge=judge,
        source="judge" if live else "caller",
        candidates=ids,
        n_candidates=len(ids),
        n_triples=math.comb(len(ids), 3),
        n_verdicts=len(verdicts),
        cycles=[list(cycle) for cycle in report.cycles],
        n_cycles=len(report.cycles),
        violation_rate=report.violation_rate,
        flagged=flagged,
        reason=reason,
        position_consistency=report.position,
        pairs=[
            pair_result(p, ctx.pairwise, judge, request.accept_alpha, request.guarantee)
            for p in report.tournament.pairs
        ],
        rankings=RankingOrders(**{name: list(r.order) for name, r in rankings.items()}),  # type: ignore[attr-defined]
        scores=RankingScores(
            **{name: {k: _finite(v) for k, v in r.scores.items()} for name, r in rankings.items()}  # type: ignore[attr-defined]
        ),
        accept_alpha=request.accept_alpha,
        mode=request.guarantee,
        complete=not failed,
        failed_calls=failed,
        cached_calls=cached,
        judge_calls=judge_calls,
        exact=report.mfas_exact,
        flags=[*([INJECTION_FLAG] if findings else []), *([MODEL_MISMATCH_FLAG] if mismatch else [])],
        ignored_preferences=ignored,
        ranks=RankingRanks(**{name: ranks_of(r) for name, r in rankings.items()}),  # type: ignore[arg-type]
    )


def _ignored_note(ignored: list[IgnoredPreference]) -> str:
    if not ignored:
        return ""
    return f"; {len(ignored)} self-comparison(s) left out (see ignored_preferences)"


def _lone_candidate(request: CompareRequest, candidate: str, ignored: list[IgnoredPreference]) -> CompareResponse:
    """Preferences naming one candidate only (every one a self-comparison): no pair, so nothing to rank."""
    order = [candidate]
    return CompareResponse(
        criterion=request.criterion,
        judge=request.judge,
        source="caller",
        candidates=order,
        n_candidates=1,
        n_triples=0,
        n_verdicts=0,
        cycles=[],
        n_cycles=0,
        violation_rate=0.0,
        flagged=False,
        reason="1 candidate: no pair to compare, no triple (flagged never)" + _ignored_note(ignored),
        position_consistency=None,
        pairs=[],
        rankings=RankingOrders(win_rate=order, bradley_terry=order, schulze=order, mfas_ilp=order, mfas_copeland=order),
        scores=RankingScores(
            win_rate={candidate: None},
            bradley_terry={candidate: None},
            schulze={candidate: None},
            mfas_ilp={candidate: None},
            mfas_copeland={candidate: None},
        ),
        accept_alpha=request.accept_alpha,
        mode=request.guarantee,
        complete=True,
        failed_calls=[],
        cached_calls=0,
        judge_calls=0,
        ignored_preferences=ignored,
        ranks=RankingRanks(**dict.fromkeys(RankingRanks.__struct_fields__, {candidate: 1})),
    )


def _injection_findings(request: CompareRequest) -> list[str]:
    """``service.screening.injection`` findings in the document and every candidate text of a live comparison."""
    texts: dict[str, str | None] = {"document": request.document}
    texts.update({f"candidate {candidate.id}": candidate.text for candidate in request.candidates or []})
    return screen_texts(texts)
