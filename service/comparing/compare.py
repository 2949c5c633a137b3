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

Certified decision per pair (``pairs[].decision``; Trust-or-Escalate, :mod:`calibration.pairwise_decision`):
``accept`` names the ``preferred`` candidate when the judge (the live judge, or ``judge`` given with the caller's
preferences) holds a certificate at ``accept_alpha`` in the pairwise decisions artifact
(:mod:`artifact.pairwise`: a threshold fitted on real human votes so that P(human disagrees |
accepted) <= accept_alpha with confidence 1 - delta) and the pair's vote share (verdicts for the preferred side /
all verdicts on the pair, both orders and every repetition, ties counted) reaches that threshold. Anything else
abstains (``preferred`` null) and the pair's ``reason`` says why: no judge named, a judge or alpha never
calibrated, nothing certified for it, no preferred side, a share below the threshold, or no artifact loaded.

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

from artifact.pairwise import PairwiseIndex, decide_pair
from calibration.ranking import rank_bradley_terry, rank_mfas_copeland, rank_schulze, rank_win_rate
from calibration.tournament import (
    PairRecord,
    PairwiseVerdict,
    Tournament,
    build_tournament,
    position_consistency,
    three_cycles,
    violation_rate,
)
from judges.errors import JudgeError
from service.comparing.mfas_limit import rank_mfas_within
from service.config.settings import Settings
from service.errors import InvalidRequestError, ServiceProblem, problem_from_exception
from service.judging.model_check import MODEL_MISMATCH_FLAG
from service.judging.pool import JudgePool
from service.screening.injection import INJECTION_FLAG, screen_texts
from service.wire.common import CRITERIA
from service.wire.compare import (
    CompareRequest,
    CompareResponse,
    FailedCall,
    IgnoredPreference,
    PairResult,
    PositionConsistencyInfo,
    Preference,
    RankingOrders,
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
    logger: object
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


def _check_ids(ids: list[str], limit: int, what: str, minimum: int = 3) -> None:
    if len(ids) < minimum:
        raise InvalidRequestError(f"{what} name {len(ids)} distinct candidates; a comparison needs {minimum} or more")
    if len(ids) > limit:
        raise InvalidRequestError(f"{what} name {len(ids)} candidates; the limit is MAX_CANDIDATES={limit}")


def _preference_verdict(index: int, p: Preference) -> PairwiseVerdict:
    """One preference as a verdict; 422 naming the index unless it is exactly one of the two forms."""
    shown = (p.first, p.second, p.verdict)
    if p.winner is not None and p.loser is not None and shown == (None, None, None):
        return PairwiseVerdict(first=p.winner, second=p.loser, outcome="tie" if p.tie else "first")
    if None not in shown and p.winner is None and p.loser is None and not p.tie:
        return PairwiseVerdict(first=p.first, second=p.second, outcome=p.verdict)  # type: ignore[arg-type]
    raise InvalidRequestError(
        f"preferences[{index}] must be either {{winner, loser[, tie]}} or {{first, second, verdict}}, not a mix "
        "or a part of one"
    )


def _preference_verdicts(
    request: CompareRequest, settings: Settings
) -> tuple[list[str], list[PairwiseVerdict], bool, list[IgnoredPreference]]:
    """(candidate ids in order of first appearance, verdicts, whether every preference gave its order, the
    self-comparisons left out)."""
    assert request.preferences is not None
    given = [_preference_verdict(i, p) for i, p in enumerate(request.preferences)]
    ids = list(dict.fromkeys(name for v in given for name in (v.first, v.second)))
    _check_ids(ids, settings.max_candidates, "the preferences", minimum=1)
    ignored = [
        IgnoredPreference(index=i, reason=f"a self-comparison: candidate {v.first!r} against itself is no edge")
        for i, v in enumerate(given)
        if v.first == v.second
    ]
    verdicts = [v for v in given if v.first != v.second]
    return ids, verdicts, all(p.verdict is not None for p in request.preferences), ignored


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
        ctx.logger.warning("compare.judge_calls_failed", judge=judge, failed=len(failed), calls=len(calls))  # type: ignore[attr-defined]
    return LiveVerdicts(
        verdicts=verdicts,
        failed=failed,
        cached=cached,
        judge_calls=sum(answer.calls for answer in answers),
        model_mismatch=any(answer.model_mismatch for answer in answers),
    )


def _check_live(request: CompareRequest, settings: Settings) -> list[str]:
    if request.document is None or request.candidates is None:
        raise InvalidRequestError("a live comparison needs both document and candidates")
    if not request.document.strip():
        raise InvalidRequestError("document is blank: it must contain some text")
    if len(request.document) > settings.max_document_chars:
        raise InvalidRequestError(
            f"document has {len(request.document)} characters; the limit is "
            f"MAX_DOCUMENT_CHARS={settings.max_document_chars}"
        )
    ids = [candidate.id for candidate in request.candidates]
    duplicates = sorted({name for name in ids if ids.count(name) > 1})
    if duplicates:
        raise InvalidRequestError(f"candidate ids must be unique; repeated: {', '.join(duplicates)}")
    _check_ids(ids, settings.max_candidates, "the candidates")
    for candidate in request.candidates:
        if not candidate.text.strip():
            raise InvalidRequestError(f"candidate {candidate.id!r} has a blank text")
        if len(candidate.text) > settings.max_summary_chars:
            raise InvalidRequestError(
                f"candidate {candidate.id!r} has {len(candidate.text)} characters; the limit is "
                f"MAX_SUMMARY_CHARS={settings.max_summary_chars}"
            )
    return ids


def _check_call_budget(n: int, request: CompareRequest, settings: Settings) -> None:
    """422 when pairs x repetitions x orders exceeds MAX_JUDGE_CALLS (one request must not amplify into thousands)."""
    orders = 2 if request.swap else 1
    calls = math.comb(n, 2) * request.repetitions * orders
    cap = settings.limits.max_judge_calls
    if calls > cap:
        raise InvalidRequestError(
            f"this comparison needs {calls} judge calls ({math.comb(n, 2)} pairs x {request.repetitions} "
            f"repetitions x {orders} order(s)); the cap is MAX_JUDGE_CALLS={cap} per request: use fewer "
            "candidates or repetitions, or swap: false"
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
    presented = False
    ignored: list[IgnoredPreference] = []
    judge: str | None = request.judge
    failed: list[FailedCall] = []
    cached = judge_calls = 0
    mismatch = False
    if live:
        judge = judge or ctx.judges.default_judge()
        ctx.judges.client(judge or "")  # first: 503 without judges (whatever the body asks); 422 if not configured
        assert judge is not None
        ids = _check_live(request, ctx.settings)
        _check_call_budget(len(ids), request, ctx.settings)
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
        ids, verdicts, presented, ignored = _preference_verdicts(request, ctx.settings)
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
        pairs=[_pair_result(p, ctx.pairwise, judge, request.accept_alpha) for p in report.tournament.pairs],
        rankings=RankingOrders(**{name: list(r.order) for name, r in rankings.items()}),  # type: ignore[attr-defined]
        scores=RankingScores(
            **{name: {k: _finite(v) for k, v in r.scores.items()} for name, r in rankings.items()}  # type: ignore[attr-defined]
        ),
        complete=not failed,
        failed_calls=failed,
        cached_calls=cached,
        judge_calls=judge_calls,
        exact=report.mfas_exact,
        flags=[*([INJECTION_FLAG] if findings else []), *([MODEL_MISMATCH_FLAG] if mismatch else [])],
        ignored_preferences=ignored,
    )


def _abstain_cause(index: PairwiseIndex | None, judge: str | None, alpha: float) -> str | None:
    """Why no pair of this request can be accepted (None: the judge holds a certificate at alpha)."""
    if index is None:
        return "no pairwise decisions artifact is loaded"
    if judge is None:
        return "no judge named: only a calibrated judge's verdicts can be accepted"
    entry = index.entry(judge, alpha)
    if entry is None:
        known = index.alphas(judge)
        return (
            f"judge {judge!r} was never calibrated on human pairwise votes"
            if not known
            else f"judge {judge!r} has no certificate at accept_alpha {alpha:g} (calibrated: "
            f"{', '.join(f'{a:g}' for a in known)})"
        )
    if entry.threshold is None:
        return (
            f"no confidence level of judge {judge!r} was certified at accept_alpha {alpha:g} on "
            f"{entry.dataset} human votes"
        )
    return None


def _pair_result(p: PairRecord, index: PairwiseIndex | None, judge: str | None, alpha: float) -> PairResult:
    """One tournament pair with its certified decision (module rules)."""
    entry = None if index is None else index.entry(judge, alpha)
    decision = decide_pair(entry, p.wins_a, p.wins_b, p.n)
    side = {1: p.a, -1: p.b}.get(decision.preferred)
    cause = _abstain_cause(index, judge, alpha)
    if cause is None and entry is not None and entry.threshold is not None:
        delta = index.artifact.delta  # type: ignore[union-attr]
        if decision.decision == "accept":
            cause = (
                f"accepted: {decision.confidence:.3f} of the verdicts prefer {side!r} (certified threshold "
                f"{entry.threshold:.2f}); P(human disagrees | accepted) <= {alpha:g} with confidence "
                f"{1 - delta:g}, certified on {entry.dataset} human votes (human ties excluded)"
            )
        elif side is None:
            cause = "no preferred side: the verdicts are tied or split evenly"
        else:
            cause = (
                f"{decision.confidence:.3f} of the verdicts prefer {side!r}, below the certified threshold "
                f"{entry.threshold:.2f} at accept_alpha {alpha:g}"
            )
    return PairResult(
        a=p.a,
        b=p.b,
        wins_a=p.wins_a,
        wins_b=p.wins_b,
        ties=p.ties,
        n=p.n,
        winner=p.winner,
        win_share=p.win_share,
        decision=decision.decision,  # type: ignore[arg-type]
        preferred=side if decision.decision == "accept" else None,
        reason=cause or "",
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
        complete=True,
        failed_calls=[],
        cached_calls=0,
        judge_calls=0,
        ignored_preferences=ignored,
    )


def _injection_findings(request: CompareRequest) -> list[str]:
    """``service.screening.injection`` findings in the document and every candidate text of a live comparison."""
    texts: dict[str, str | None] = {"document": request.document}
    texts.update({f"candidate {candidate.id}": candidate.text for candidate in request.candidates or []})
    return screen_texts(texts)
