"""The running failure rate of one guarantee with a confidence sequence, from finished documents, in O(1) state.

Estimand: R = E[failures_d] / E[counted_d], the item-weighted failure rate of the stream's document population
(miss rate for coverage, so coverage = 1 - R; error among accepted for accept error). Estimate: R_hat =
sum failures / sum counted.

Confidence sequence (empirical-Bernstein, predictable bets; Waudby-Smith and Ramdas 2024, with the inequality of
Fan, Grama and Liu 2012: exp(l * y - psi(l) * y^2) <= 1 + l * y for y >= -1, 0 <= l < 1, psi(l) = -log(1 - l) - l).
For a candidate rate r, document d gives z_d(r) = (failures_d - r * counted_d) / M in [-1, 1]; at r = R,
E[z_d(R) | earlier documents] = 0 (documents independent, items inside one free to depend on each other). With a
bet l_d chosen from earlier documents only, the same for every r,

    log L_t(r) = sum_d [ l_d z_d(r) - psi(l_d) z_d(r)^2 ],   log U_t(r) = sum_d [ -l_d z_d(r) - psi(l_d) z_d(r)^2 ]

are logs of nonnegative supermartingales at r = R, so P(exists t: L_t(R) >= 2/delta or U_t(R) >= 2/delta) <= delta
(Ville, each side at delta/2). Both are concave quadratics in r held by five running sums, so the set of r in
[0, 1] that neither rejects is found exactly (no grid); its hull is reported, a superset, so the claim
"R lies in [low, high] at every t" holds with probability >= 1 - delta. Bet rule: l_d = min(BET_CAP,
sqrt(2 log(2/delta) / (s2_d * d * log(1 + d)))) with s2_d = (PRIOR_VARIANCE + sum_{i<d} w_i^2) / d and
w_i = (failures_i - R_hat_{i-1} counted_i) / M, the predictable plug-in of Waudby-Smith and Ramdas.
The two sides rejecting every r (probability <= delta) reports the interval [R_hat, R_hat].
"""

from __future__ import annotations

import math

import msgspec

from calibration.monitoring.tally import DocumentTally, check_tally

__all__ = ["BET_CAP", "PRIOR_VARIANCE", "RateEstimate", "RateSequence", "rate_estimate", "update_rate"]

BET_CAP = 0.75
PRIOR_VARIANCE = 0.01  # w units: the variance the first bets assume before documents are seen


class RateSequence(msgspec.Struct, frozen=True, kw_only=True):
    """Running sums: failures and counted items, the bets' five sums (in units of M) and the plug-in's."""

    documents: int = 0
    failures: int = 0
    counted: int = 0
    a: float = 0.0  # sum l f'
    b: float = 0.0  # sum l c'
    p: float = 0.0  # sum psi f'^2
    q: float = 0.0  # sum psi f' c'
    s: float = 0.0  # sum psi c'^2
    w2: float = 0.0  # sum of the plug-in's squared residuals
    allowed: float = 0.0  # sum of the counted items' served levels


class RateEstimate(msgspec.Struct, frozen=True, kw_only=True):
    """The failure rate so far (None before any counted item) and its confidence sequence [low, high]."""

    rate: float | None
    low: float
    high: float
    failures: int
    counted: int
    allowed: float | None = None  # the counted items' mean served level (None before any counted item)


def _psi(bet: float) -> float:
    return -math.log1p(-bet) - bet


def _bet(state: RateSequence, delta: float) -> float:
    d = state.documents + 1
    s2 = (PRIOR_VARIANCE + state.w2) / d
    return min(BET_CAP, math.sqrt(2.0 * math.log(2.0 / delta) / (s2 * d * math.log1p(d))))


def update_rate(state: RateSequence, tally: DocumentTally, *, max_items: int, delta: float) -> RateSequence:
    """The sums after one finished document (module rule); ValueError for a tally outside max_items."""
    check_tally(tally, max_items)
    bet = _bet(state, delta)
    psi = _psi(bet)
    f = tally.failures / max_items
    c = tally.counted / max_items
    previous = state.failures / state.counted if state.counted else 0.0
    return RateSequence(
        documents=state.documents + 1,
        failures=state.failures + tally.failures,
        counted=state.counted + tally.counted,
        a=state.a + bet * f,
        b=state.b + bet * c,
        p=state.p + psi * f * f,
        q=state.q + psi * f * c,
        s=state.s + psi * c * c,
        w2=state.w2 + (f - previous * c) ** 2,
        allowed=state.allowed + tally.allowed,
    )


def _rejected(curvature: float, slope: float, constant: float, threshold: float) -> tuple[float, float] | None:
    """{r : -curvature r^2 + slope r + constant >= threshold}, an interval or None (curvature >= 0)."""
    if curvature <= 0.0:
        if slope == 0.0:
            return (-math.inf, math.inf) if constant >= threshold else None
        root = (threshold - constant) / slope
        return (root, math.inf) if slope > 0 else (-math.inf, root)
    disc = slope * slope + 4.0 * curvature * (constant - threshold)
    if disc < 0.0:
        return None
    half = math.sqrt(disc)
    return ((slope - half) / (2.0 * curvature), (slope + half) / (2.0 * curvature))


def _subtract(pieces: list[tuple[float, float]], cut: tuple[float, float] | None) -> list[tuple[float, float]]:
    """The pieces minus the closed interval ``cut`` (the rejected r's), keeping what is left of each."""
    if cut is None:
        return pieces
    left, right = cut
    kept = []
    for low, high in pieces:
        if right < low or left > high:
            kept.append((low, high))
            continue
        if left > low:
            kept.append((low, left))
        if right < high:
            kept.append((right, high))
    return kept


def rate_estimate(state: RateSequence, *, delta: float) -> RateEstimate:
    """R_hat and the hull of the r in [0, 1] neither side rejects at 2/delta (module rule)."""
    rate = state.failures / state.counted if state.counted else None
    allowed = state.allowed / state.counted if state.counted else None
    threshold = math.log(2.0 / delta)
    lower_side = _rejected(state.s, 2.0 * state.q - state.b, state.a - state.p, threshold)
    upper_side = _rejected(state.s, 2.0 * state.q + state.b, -state.a - state.p, threshold)
    pieces = _subtract(_subtract([(0.0, 1.0)], lower_side), upper_side)
    if not pieces:
        point = 0.0 if rate is None else rate
        return RateEstimate(
            rate=rate, low=point, high=point, failures=state.failures, counted=state.counted, allowed=allowed
        )
    return RateEstimate(
        rate=rate,
        low=min(p[0] for p in pieces),
        high=max(p[1] for p in pieces),
        failures=state.failures,
        counted=state.counted,
        allowed=allowed,
    )
