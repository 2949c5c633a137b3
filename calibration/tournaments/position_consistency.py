"""Position consistency: does a pair's verdict survive swapping the presentation order (plus tie and bias rates).

A pairwise judge sees two candidates in one order; asked again with the order swapped, a judge without position
bias gives the same majority. The verdicts and their outcomes are those of :mod:`calibration.tournaments.tournament`;
the rules of the per-order majority and of the rates are stated on :func:`position_consistency`.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from calibration.errors import CalibrationError, SelfComparisonError
from calibration.tournaments.tournament import OUTCOMES, PairwiseVerdict

__all__ = ["PositionConsistency", "position_consistency"]


class PositionConsistency(msgspec.Struct, frozen=True, kw_only=True):
    """Does a pair's verdict survive swapping the presentation order? See ``position_consistency``."""

    rate: float | None  # n_consistent / n_pairs_both_orders; None when no pair was judged in both orders
    n_pairs: int  # distinct unordered pairs with at least one verdict
    n_pairs_both_orders: int
    n_consistent: int
    n_verdicts: int
    n_ties: int  # "tie" verdicts
    tie_rate: float | None  # n_ties / n_verdicts; None when there is no verdict
    first_win_rate: float | None  # share of decisive verdicts won by the first-shown candidate


def position_consistency(verdicts: Iterable[PairwiseVerdict]) -> PositionConsistency:
    """Share of pairs judged in both orders whose per-order majority survives the swap; plus tie and bias rates.

    For each unordered pair {x, y} and each presentation order, the order's majority is the candidate (by
    identity, not by position) with strictly more won repetitions in that order, or a tie when the wins
    are equal ("tie" verdicts abstain). The pair is consistent when both orders give the same candidate or
    both give a tie. Pairs judged in one order only are counted in ``n_pairs`` but not in the rate.
    ``tie_rate`` is over all verdicts; ``first_win_rate`` (position bias; 0.5 = none) over decisive ones.

    Raises
    ------
    SelfComparisonError
        A verdict compares a candidate with itself.
    CalibrationError
        An outcome other than "first" / "second" / "tie".
    """
    # per_order[(first, second)] = [wins of first, wins of second] in that presentation order
    per_order: dict[tuple[str, str], list[int]] = {}
    n_verdicts = n_ties = first_wins = 0
    for number, verdict in enumerate(verdicts):
        if verdict.first == verdict.second:
            raise SelfComparisonError(
                f"verdict {number} compares candidate {verdict.first!r} with itself; "
                "a pairwise verdict needs two different candidates"
            )
        if verdict.outcome not in OUTCOMES:
            raise CalibrationError(
                f"verdict {number} has outcome {verdict.outcome!r}; it must be one of 'first', 'second', 'tie'"
            )
        n_verdicts += 1
        tally = per_order.setdefault((verdict.first, verdict.second), [0, 0])
        if verdict.outcome == "tie":
            n_ties += 1
        elif verdict.outcome == "first":
            tally[0] += 1
            first_wins += 1
        else:
            tally[1] += 1

    pairs = {frozenset(order) for order in per_order}
    n_both = n_consistent = 0
    for first, second in per_order:
        if (second, first) not in per_order or first > second:
            continue  # visit each pair judged in both orders once
        n_both += 1
        forward = _order_majority(first, second, per_order[first, second])
        backward = _order_majority(second, first, per_order[second, first])
        n_consistent += forward == backward
    decisive = n_verdicts - n_ties
    return PositionConsistency(
        rate=n_consistent / n_both if n_both else None,
        n_pairs=len(pairs),
        n_pairs_both_orders=n_both,
        n_consistent=n_consistent,
        n_verdicts=n_verdicts,
        n_ties=n_ties,
        tie_rate=n_ties / n_verdicts if n_verdicts else None,
        first_win_rate=first_wins / decisive if decisive else None,
    )


def _order_majority(first: str, second: str, tally: list[int]) -> str | None:
    if tally[0] > tally[1]:
        return first
    if tally[1] > tally[0]:
        return second
    return None
