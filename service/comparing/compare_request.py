"""A compare request read and checked (rules: ``service.comparing.compare``): the live form's document,
candidates and call budget, and the caller's preferences as verdicts (each in exactly one form; self-comparisons
left out and listed). Every refusal is a 422 naming the field.
"""

from __future__ import annotations

import math

from calibration.tournaments.tournament import PairwiseVerdict
from service.config.settings import Settings
from service.errors import InvalidRequestError
from service.wire.compare import CompareRequest, IgnoredPreference, Preference

__all__ = ["check_call_budget", "check_live", "preference_verdicts"]


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


def preference_verdicts(
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


def check_live(request: CompareRequest, settings: Settings) -> list[str]:
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


def check_call_budget(n: int, request: CompareRequest, settings: Settings) -> None:
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
