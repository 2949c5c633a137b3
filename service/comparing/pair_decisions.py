"""The certified decision of one tournament pair of a compare request.

Certified decision per pair (``pairs[].decision``; Trust-or-Escalate, :mod:`calibration.pairwise_decision`):
``accept`` names the ``preferred`` candidate when the judge (the live judge, or ``judge`` given with the caller's
preferences) holds a certificate at ``accept_alpha`` in the pairwise decisions artifact
(:mod:`artifact.pairwise`: a threshold fitted on real human votes so that P(human disagrees |
accepted) <= accept_alpha with confidence 1 - delta) and the pair's vote share (verdicts for the preferred side /
all verdicts on the pair, both orders and every repetition, ties counted) reaches that threshold. Anything else
abstains (``preferred`` null) and the pair's ``reason`` says why: no judge named, a judge or alpha never
calibrated, nothing certified for it, no preferred side, a share below the threshold, or no artifact loaded.
"""

from __future__ import annotations

from artifact.pairwise import PairwiseIndex, decide_pair
from calibration.tournament import PairRecord
from service.wire.compare import PairResult

__all__ = ["pair_result"]


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


def pair_result(p: PairRecord, index: PairwiseIndex | None, judge: str | None, alpha: float) -> PairResult:
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
