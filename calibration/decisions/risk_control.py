"""Risk control for accepted verdicts: upper bounds on the error rate among accepted items, and the fixed-sequence
(Learn-then-Test) walk that picks the accepted set.

The risk of an accepted set A is the item-level rate R(A) = E[e_d] / E[a_d] over a new document d, where a_d counts
the document's items in A and e_d those of them that are errors. Items of one document are NOT independent (16
SummEval summaries share an article), documents are: every group-valid bound here treats the document as the unit.

Rules, stated once:

* **Group-level bound (``betting``, the default and the one offered).** H0: R(A) > alpha  <=>  E[z_d] > 0 with
  z_d = e_d - alpha * a_d. Each document gives x_d = z_d / M in [-alpha, 1 - alpha], where M bounds the number of
  items of a document. M is taken as the largest group size of the certification data: exact when group sizes
  are fixed by the design (SummEval: 16 summaries per document, 12 for the judges that saw 12 systems); with
  free group sizes it assumes new documents are no larger than the largest one seen. Documents, in a seeded
  random order, feed a betting capital K_t = prod_{s<=t} (1 - lambda_s x_s) with lambda_s predictable
  (computed from documents before s only: aGRAPA, lambda = -mean / (variance + mean^2) of the earlier x's with
  one pseudo-document at x = 0 and variance ``PRIOR_VARIANCE``), clipped to [0, BET_CAP / (1 - alpha)]. Under
  H0, E[1 - lambda_s x_s | past] <= 1, so K is a nonnegative supermartingale and by Ville's inequality
  P(sup_t K_t >= 1/delta) <= delta: rejecting H0 when the capital reaches 1/delta is a valid level-delta test
  whatever the dependence inside a document (Waudby-Smith and Ramdas 2024, "Estimating means of bounded random
  variables by betting"; the risk-control use is Bates et al. 2021 / Angelopoulos et al. 2021, "Learn then
  Test").
* **The certified error reported** is the smallest level alpha' >= ``positivity floor`` at which the same capital
  (same lambdas) reaches 1/delta, found by bisection; the capital is increasing in alpha' for fixed lambdas, so
  this is an upper confidence bound at 1 - delta for the tested set. The floor is 1 - 1/lambda_max (below it a
  factor could turn negative); a bound at the floor is reported as the floor (conservative).
* **Best case.** A document adds at most log(1 + lambda_max * alpha) to the log-capital (no error, all M items
  accepted), so fewer documents than :func:`min_groups_to_certify` can never certify alpha at delta, whatever
  they hold; callers report that as a failed rule instead of a silent empty one.
* **Item-level bound (``clopper_pearson_items``), NOT group-valid**: the one-sided exact binomial (Clopper-Pearson)
  upper bound at 1 - delta on k errors among n accepted items, treating items as independent. Kept only to show
  what ignoring documents would claim; it is exact when each unit is one independent item.
* **Fixed sequence** (:func:`fixed_sequence`): hypotheses H0_1, H0_2, ... fixed before the certification data is
  seen (nested sets, most confident first) are tested in order, each at level delta; the walk stops at the first
  non-rejection. With probability >= 1 - delta no true null is rejected (family-wise), so every set before the
  stop has risk <= alpha.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "BET_CAP",
    "BOUNDS",
    "GROUP_VALID_BOUNDS",
    "BettingTest",
    "StepOutcome",
    "betting_test",
    "betting_upper_bound",
    "clopper_pearson_upper",
    "fixed_sequence",
    "group_counts",
    "min_groups_to_certify",
    "risk_test",
]

BOUNDS: tuple[str, ...] = ("betting", "clopper_pearson_items")
GROUP_VALID_BOUNDS: tuple[str, ...] = ("betting",)
BET_CAP = 0.95  # lambda <= BET_CAP / (1 - alpha): a document whose items are all accepted errors keeps 5% capital
PRIOR_VARIANCE = 0.01  # the pseudo-document's variance in the aGRAPA plug-in (x units)
_BISECTION_STEPS = 40


@dataclass(frozen=True)
class BettingTest:
    """A group-level betting test: rejected H0 (risk > alpha)?, the largest log-capital, and the lambdas used."""

    rejected: bool
    log_capital: float  # max over t of log K_t
    lambdas: np.ndarray


@dataclass(frozen=True)
class StepOutcome:
    """One step of a fixed-sequence walk: whether its null was rejected and the bound reported for it."""

    rejected: bool
    bound: float


def group_counts(
    errors: np.ndarray, accepted: np.ndarray, group_index: np.ndarray, n_groups: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per group: errors among accepted items (e_d) and accepted items (a_d); ``group_index`` in 0..n_groups-1."""
    acc = np.asarray(accepted, dtype=bool)
    err = np.asarray(errors, dtype=bool) & acc
    return (
        np.bincount(group_index, weights=err, minlength=n_groups).astype(np.int64),
        np.bincount(group_index, weights=acc, minlength=n_groups).astype(np.int64),
    )


def _lambda_max(alpha: float) -> float:
    return BET_CAP / (1.0 - alpha)


def _lambdas(x: np.ndarray, alpha: float) -> np.ndarray:
    """aGRAPA plug-in lambdas (predictable: lambda_t uses x_1..x_{t-1}), clipped to [0, lambda_max]."""
    n = x.size
    counts = np.arange(1, n + 1, dtype=float)  # pseudo-document + t-1 earlier documents
    before = np.concatenate(([0.0], np.cumsum(x)[:-1]))
    mean = before / counts
    before_sq = np.concatenate(([0.0], np.cumsum(x * x)[:-1]))
    # sum over earlier documents and the pseudo one (at 0) of (x - mean)^2 = sum x^2 - counts * mean^2
    variance = (PRIOR_VARIANCE + before_sq - counts * mean * mean) / counts
    variance = np.maximum(variance, 1e-12)
    raw = -mean / (variance + mean * mean)
    lam: NDArray[np.float64] = np.clip(raw, 0.0, _lambda_max(alpha))
    return lam


def _log_capital(x: np.ndarray, lambdas: np.ndarray) -> float:
    if x.size == 0:
        return 0.0
    factors = 1.0 - lambdas * x
    if np.any(factors <= 0):
        return -math.inf
    return float(max(0.0, np.max(np.cumsum(np.log(factors)))))


def betting_test(
    errors: np.ndarray,
    accepted: np.ndarray,
    *,
    alpha: float,
    delta: float,
    max_group_size: int,
    order: np.ndarray | None = None,
) -> BettingTest:
    """Level-delta test of H0: E[e_d] > alpha E[a_d] from per-document counts (module rules); ``order``: the
    documents' processing order (a permutation drawn independently of the data), natural order when None."""
    e = np.asarray(errors, dtype=float)
    a = np.asarray(accepted, dtype=float)
    if order is not None:
        e, a = e[order], a[order]
    if np.any(e < 0) or np.any(e > a) or np.any(a > max_group_size):
        raise ValueError("per-document counts need 0 <= errors <= accepted <= max_group_size")
    x = (e - alpha * a) / max_group_size
    lambdas = _lambdas(x, alpha)
    log_capital = _log_capital(x, lambdas)
    return BettingTest(rejected=log_capital >= math.log(1.0 / delta), log_capital=log_capital, lambdas=lambdas)


def betting_upper_bound(
    errors: np.ndarray,
    accepted: np.ndarray,
    *,
    alpha: float,
    delta: float,
    max_group_size: int,
    order: np.ndarray | None = None,
) -> float:
    """Upper confidence bound on E[e_d] / E[a_d] at 1 - delta with the lambdas of the test at ``alpha`` (module
    rules); 1.0 when even alpha' -> 1 does not reach 1/delta."""
    e = np.asarray(errors, dtype=float)
    a = np.asarray(accepted, dtype=float)
    if order is not None:
        e, a = e[order], a[order]
    lambdas = _lambdas((e - alpha * a) / max_group_size, alpha)
    threshold = math.log(1.0 / delta)
    top = float(lambdas.max()) if lambdas.size else 0.0
    floor = max(0.0, 1.0 - 1.0 / top) if top > 0 else 0.0

    def rejects(level: float) -> bool:
        return _log_capital((e - level * a) / max_group_size, lambdas) >= threshold

    if not rejects(1.0 - 1e-12):
        return 1.0
    if rejects(floor):
        return floor
    low, high = floor, 1.0 - 1e-12
    for _ in range(_BISECTION_STEPS):
        middle = (low + high) / 2
        if rejects(middle):
            high = middle
        else:
            low = middle
    return high


@lru_cache(maxsize=256)
def min_groups_to_certify(*, alpha: float, delta: float, limit: int = 100_000) -> int:
    """The fewest documents with which the betting test can reject at (alpha, delta) at all: every document
    error-free with all of its items accepted (the best case; the first lambda is 0 by the plug-in's prior)."""
    threshold = math.log(1.0 / delta)
    for n in range(1, limit + 1):
        x = np.full(n, -alpha)
        if _log_capital(x, _lambdas(x, alpha)) >= threshold:
            return n
    return limit + 1


def clopper_pearson_upper(k: int, n: int, delta: float) -> float:
    """One-sided exact binomial upper bound at 1 - delta on a rate with k events in n independent trials."""
    from scipy.special import betaincinv

    if n <= 0:
        return 1.0
    if k >= n:
        return 1.0
    return float(betaincinv(k + 1, n - k, 1.0 - delta))


def risk_test(
    bound: str,
    errors_per_group: np.ndarray,
    accepted_per_group: np.ndarray,
    *,
    alpha: float,
    delta: float,
    max_group_size: int,
    order: np.ndarray | None = None,
) -> StepOutcome:
    """Test H0: risk > alpha with ``bound`` (one of BOUNDS) and report the bound; see the module rules."""
    if bound == "betting":
        test = betting_test(
            errors_per_group, accepted_per_group, alpha=alpha, delta=delta, max_group_size=max_group_size, order=order
        )
        value = (
            betting_upper_bound(
                errors_per_group,
                accepted_per_group,
                alpha=alpha,
                delta=delta,
                max_group_size=max_group_size,
                order=order,
            )
            if test.rejected
            else 1.0
        )
        return StepOutcome(rejected=test.rejected, bound=min(value, alpha) if test.rejected else value)
    if bound == "clopper_pearson_items":
        value = clopper_pearson_upper(int(np.sum(errors_per_group)), int(np.sum(accepted_per_group)), delta)
        return StepOutcome(rejected=value <= alpha, bound=value)
    raise ValueError(f"unknown bound {bound!r}; known: {', '.join(BOUNDS)}")


def fixed_sequence(n_steps: int, step: Callable[[int], StepOutcome | None]) -> list[StepOutcome]:
    """Walk steps 0..n_steps-1 in order; stop at the first non-rejection (or a ``None``: a step that may not be
    tested); return the outcomes of the rejected prefix, in order (module rules)."""
    rejected: list[StepOutcome] = []
    for index in range(n_steps):
        outcome = step(index)
        if outcome is None or not outcome.rejected:
            break
        rejected.append(outcome)
    return rejected
