"""Which order statistic of the calibration scores is the conformal threshold: marginal and PAC rules.

With n exchangeable calibration scores and a new one, the threshold ``q = s_(k)`` (the k-th smallest) gives:

* **Marginal** (averaged over calibration draws): P(new score <= q) >= k / (n + 1). The split-conformal rank is
  ``k = ceil((1 - alpha)(n + 1))``.
* **Training-conditional / PAC** (Vovk 2012, "Conditional validity of inductive conformal predictors"): for one
  fixed calibration draw the coverage ``C = F(s_(k))`` of continuous scores is Beta(k, n + 1 - k) distributed, so
  ``P(C < 1 - alpha) = P(Binomial(n, 1 - alpha) >= k)``. The PAC rank is the smallest k with that probability
  <= delta: with probability >= 1 - delta over the calibration data, the artifact's coverage is >= 1 - alpha.
  Ties in the scores only raise coverage, so the bound holds for discrete scores too.

When the rank exceeds n no finite threshold exists (``None``: every set is the full scale). Alpha and delta are
read as exact fractions (nearest with denominator <= 10**9); the PAC rank is found with scipy's binomial tail
(``bdtrc``) and settled in exact rational arithmetic wherever the float tail lies within 1e-9 of delta, so it never
depends on float rounding; results are memoised per (n, alpha, delta).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

import numpy as np

__all__ = [
    "as_fraction",
    "binomial_upper_tail",
    "marginal_rank",
    "nearest_fraction",
    "pac_rank",
    "threshold_rank",
]


def as_fraction(value: float, name: str) -> Fraction:
    """``value`` in (0, 1) as the nearest fraction with denominator <= 10**9; ValueError outside (0, 1)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        raise ValueError(f"{name}={value!r} must be a finite number strictly between 0 and 1")
    if not 0.0 < float(value) < 1.0:
        raise ValueError(f"{name}={value!r} must be strictly between 0 and 1")
    return nearest_fraction(float(value))


@lru_cache(maxsize=4096)
def nearest_fraction(value: float) -> Fraction:
    """The nearest fraction to ``value`` with denominator <= 10**9 (no checks: callers check the range first).
    Memoised: a fit reads the same few levels hundreds of thousands of times, and ``limit_denominator`` is slow."""
    return Fraction(value).limit_denominator(10**9)


def marginal_rank(n: int, alpha: Fraction) -> int:
    """ceil((1 - alpha)(n + 1)): the split-conformal rank (may exceed n)."""
    return math.ceil((1 - alpha) * (n + 1))


def binomial_upper_tail(n: int, p: Fraction, k: int) -> Fraction:
    """P(Binomial(n, p) >= k), exactly."""
    if k <= 0:
        return Fraction(1)
    if k > n:
        return Fraction(0)
    q = 1 - p
    return sum((math.comb(n, i) * p**i * q ** (n - i) for i in range(k, n + 1)), Fraction(0))


@lru_cache(maxsize=65536)
def _pac_rank_cached(n: int, alpha: Fraction, delta: Fraction) -> int:
    from scipy.special import bdtrc  # imported here: serving never computes a rank, and scipy.special is slow to load

    coverage = 1 - alpha
    ranks = np.arange(1, n + 2)
    # bdtrc(k - 1, n, p) = P(Binomial(n, p) >= k); k = n + 1 has tail 0.
    tails = bdtrc(ranks - 1, n, float(coverage))
    tails[-1] = 0.0
    k = int(ranks[np.argmax(tails <= float(delta))])

    def exceeds(rank: int) -> bool:
        """Tail > delta, in floats unless the float tail lies within 1e-9 (relative) of delta."""
        tail = float(tails[rank - 1])
        if abs(tail - float(delta)) <= 1e-9 * float(delta):
            return binomial_upper_tail(n, coverage, rank) > delta
        return tail > float(delta)

    while k <= n and exceeds(k):
        k += 1
    while k > 1 and not exceeds(k - 1):
        k -= 1
    return k


def pac_rank(n: int, alpha: Fraction, delta: Fraction) -> int:
    """Smallest k with P(Binomial(n, 1 - alpha) >= k) <= delta (n + 1 when even k = n fails)."""
    if n < 1:
        return 1
    return _pac_rank_cached(n, alpha, delta)


def threshold_rank(n: int, alpha: Fraction, delta: Fraction | None) -> int:
    """The rank of the threshold among n scores: marginal when ``delta`` is None, else PAC."""
    return marginal_rank(n, alpha) if delta is None else pac_rank(n, alpha, delta)
