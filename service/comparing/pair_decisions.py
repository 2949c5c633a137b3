"""The decision of one tournament pair of a compare request, under the request's guarantee mode.

Decision per pair (``pairs[].decision``; Trust-or-Escalate, :mod:`calibration.decisions.pairwise`): ``accept``
names the ``preferred`` candidate when the judge (the live judge, or ``judge`` given with the caller's
preferences) has an entry at ``accept_alpha`` in the request's ``guarantee`` mode in the pairwise decisions
artifact (:mod:`artifact.pairwise`) whose threshold is not null, and the pair's vote share (verdicts for the
preferred side / all verdicts on the pair, both orders and every repetition, ties counted) reaches that
threshold. The modes' promises:

* ``expected`` (default; :mod:`calibration.decisions.pairwise_expected`): on average over calibrations, humans disagree
  with accepted preferences on new questions at most accept_alpha (a calibration accepting nothing counts as zero).
* ``pac`` (:mod:`calibration.decisions.pairwise`): P(human disagrees | accepted) <= accept_alpha with confidence
  1 - delta over the calibration questions (the artifact's delta). ``confidence`` may ask for less, never for
  more: a confidence above 1 - delta is a 422 naming the calibrated one; ``confidence`` with ``expected`` is a 422.

Anything else abstains (``preferred`` null) and the pair's ``reason`` says why: no judge named, a judge, alpha or
mode never calibrated, nothing accepted for it, no preferred side, a share below the threshold, or no artifact
loaded. Every reason about the judge's calibration names the mode.
"""

from __future__ import annotations

from artifact.pairwise import PairwiseEntry, PairwiseIndex, decide_pair
from calibration.tournaments.tournament import PairRecord
from service.errors import InvalidRequestError
from service.wire.compare import PairResult

__all__ = ["check_guarantee", "pair_result"]

_MODES = ("expected", "pac")


def check_guarantee(index: PairwiseIndex | None, mode: str, confidence: float | None) -> None:
    """422 for ``confidence`` with the expected mode, or a pac confidence above the artifact's 1 - delta."""
    if confidence is None:
        return
    if mode != "pac":
        raise InvalidRequestError(
            f"confidence applies to guarantee 'pac' only; guarantee {mode!r} holds on average over calibrations "
            "and has no confidence level: leave confidence out or ask for guarantee 'pac'"
        )
    if index is not None and confidence > 1 - index.artifact.delta + 1e-12:
        calibrated = 1 - index.artifact.delta
        raise InvalidRequestError(
            f"confidence {confidence:g} is above the calibrated confidence {calibrated:g} of the pac pairwise "
            f"certificates: ask for {calibrated:g} or less",
            allowed=[f"{calibrated:g}"],
        )


def _abstain_cause(index: PairwiseIndex | None, judge: str | None, alpha: float, mode: str) -> str | None:
    """Why no pair of this request can be accepted (None: the judge has an accepting entry at alpha in mode)."""
    if index is None:
        return "no pairwise decisions artifact is loaded"
    if judge is None:
        return "no judge named: only a calibrated judge's verdicts can be accepted"
    entry = index.entry(judge, alpha, mode)
    if entry is None:
        known = index.alphas(judge, mode)
        if known:
            return (
                f"judge {judge!r} has no certificate at accept_alpha {alpha:g} (calibrated: "
                f"{', '.join(f'{a:g}' for a in known)}) in the {mode} mode"
            )
        if any(index.alphas(judge, other) for other in _MODES):
            return f"judge {judge!r} was never calibrated in the {mode} mode"
        return f"judge {judge!r} was never calibrated on human pairwise votes ({mode} mode)"
    if entry.threshold is None:
        if mode == "pac":
            return (
                f"no confidence level of judge {judge!r} was certified at accept_alpha {alpha:g} on "
                f"{entry.dataset} human votes (pac)"
            )
        return (
            f"the expected-mode calibration of judge {judge!r} at accept_alpha {alpha:g} on {entry.dataset} human "
            "votes accepts nothing (expected mode: abstain always)"
        )
    return None


def _promise(entry: PairwiseEntry, alpha: float, mode: str, delta: float) -> str:
    if mode == "pac":
        return (
            f"pac: P(human disagrees | accepted) <= {alpha:g} with confidence {1 - delta:g}, certified on "
            f"{entry.dataset} human votes (human ties excluded)"
        )
    return (
        f"expected mode: on average over calibrations, humans disagree with accepted preferences on new questions "
        f"at most {alpha:g} (calibrated on {entry.dataset} human votes, human ties excluded)"
    )


def pair_result(
    p: PairRecord, index: PairwiseIndex | None, judge: str | None, alpha: float, mode: str = "pac"
) -> PairResult:
    """One tournament pair with its decision in ``mode`` (module rules)."""
    entry = None if index is None else index.entry(judge, alpha, mode)
    decision = decide_pair(entry, p.wins_a, p.wins_b, p.n)
    side = {1: p.a, -1: p.b}.get(decision.preferred)
    cause = _abstain_cause(index, judge, alpha, mode)
    if cause is None and index is not None and entry is not None and entry.threshold is not None:
        kind = "certified threshold" if mode == "pac" else "threshold"
        if decision.decision == "accept":
            cause = (
                f"accepted: {decision.confidence:.3f} of the verdicts prefer {side!r} ({kind} "
                f"{entry.threshold:.2f}); {_promise(entry, alpha, mode, index.artifact.delta)}"
            )
        elif side is None:
            cause = f"no preferred side: the verdicts are tied or split evenly ({mode} mode)"
        else:
            cause = (
                f"{decision.confidence:.3f} of the verdicts prefer {side!r}, below the {kind} "
                f"{entry.threshold:.2f} at accept_alpha {alpha:g} ({mode} mode)"
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
