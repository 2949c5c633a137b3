"""Prediction-powered ranking: per-model win rates and rank sets from a few human votes plus many judge verdicts.

Chatzi, Straitouri, Thejaswi, Gomez-Rodriguez, "Prediction-Powered Ranking of Large Language Models" (NeurIPS
2024). Battles are pairs (model_a, model_b) with a winner; each model's **win rate** is
``theta_i = P(model i wins | a battle involving i)``; a tie counts 0 for both sides (the paper's convention; pass
0.5-valued outcomes to count it half).

=====================================================  ============================================================
call                                                    what it computes
=====================================================  ============================================================
``win_rates(battles, k)``                               per-model mean wins and their covariance (human-only or
                                                        judge-only)
``ppr_win_rates(labelled, unlabelled, k)``              prediction-powered win rates (power-tuned) and covariance
``rank_sets(estimate, alpha)``                          rank set per model from a joint (1 - alpha) region
``rank_sets(estimate, alpha, min_labelled=m)``          the same with models of fewer than m battles unknown
``rank_sets_from_intervals(lower, upper)``              rank sets from simultaneous intervals
``true_ranks(theta)``                                   1 + number of models strictly better
=====================================================  ============================================================

Rules:

* **Covariance** (sandwich of the per-model mean, battles i.i.d.): ``Sigma_ij = sum_t r_it r_jt / (c_i c_j)``
  with ``r_it`` the residual of model i's outcome in battle t (0 when i is not in it) and ``c_i`` its number of
  battles. (The authors' released ``estimate.py`` divides by ``n^2``, the number of battles, instead of
  ``c_i c_j``: that is about ``(k/2)^2`` times smaller for balanced battles; we use the sandwich.)
* **PPR estimate**: ``theta = lambda * judge mean on the unlabelled battles + mean over the labelled battles of
  (human - lambda * judge)``, ``Sigma = lambda^2 Sigma_unlabelled(judge) + Sigma_labelled(human - lambda judge)``;
  ``lambda`` minimises ``trace(Sigma)`` (PPI++ power tuning, the paper's ``lhat_opt`` objective), clipped to
  [0, 1].
* **Joint region** (``construction``): ``"ellipsoid"`` (the paper's): the chi-square ellipsoid
  ``(theta - hat)^T Sigma^-1 (theta - hat) <= chi2_{k, 1-alpha}``; model j is certainly above i when
  ``hat_j - hat_i > sqrt(chi2_{k,1-alpha} * Var(hat_j - hat_i))`` (the minimum of ``theta_j - theta_i`` over the
  ellipsoid is positive). ``"bonferroni"``: per-model intervals ``hat_i +- z_{1 - alpha/(2k)} sd_i``; j above i
  when ``lower_j > upper_i``.
* **Order** (``canonical_battles``): the battles are turned (``model_a < model_b``) and sorted before anything is
  summed, so the estimate, its covariance and the rank sets are the same floats whatever order (or sides) the
  battles came in; only the numbering of the models (the caller's) is kept.
* **Rank set** of i: ``[1 + #{j certainly above i}, k - #{j certainly below i}]``; ranks are 1 = best. Whenever
  the true win rates lie in the joint region, every model's true rank lies in its rank set (so the rank sets
  cover the true ranking jointly with the region's probability). A model without battles gets ``[1, k]``.
* **Under-labelled guard** (``min_labelled``, default 0: off): a model with fewer than ``min_labelled`` battles in
  the estimate (``counts``: the labelled battles of a PPR or human-only estimate) is *unknown*: its variance is
  taken as infinite, its covariance with every other model as 0. So ``Var(hat_j - hat_i)`` is infinite for every
  pair involving it and no such pair is ever separated (``gap > inf`` is false; the chi-square quantile keeps k
  degrees of freedom: the limit of the ellipsoid as that variance grows), its Bonferroni interval is
  ``[-inf, inf]``, its rank set is ``[1, k]``, and every other model's set counts it neither certainly above nor
  certainly below (so the set reaches one rank further on each side where it would have).
  :meth:`WinRateEstimate.intervals` gives it ``(-inf, inf)`` (a caller reporting a win rate may clip to
  ``[0, 1]``). The rule is explicit (masks, not arithmetic on inf), so no NaN arises from it.
  Why: a model whose few labelled outcomes are all equal has a zero estimated variance, and the asymptotic region
  would separate it on almost no evidence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import msgspec
import numpy as np
from numpy.typing import NDArray
from scipy import stats

from calibration.errors import CalibrationError, EmptyCalibrationError, InvalidAlphaError

__all__ = [
    "Battles",
    "RankSets",
    "WinRateEstimate",
    "canonical_battles",
    "ppr_win_rates",
    "rank_sets",
    "rank_sets_from_intervals",
    "rank_sets_grid",
    "true_ranks",
    "win_rates",
]

Construction = Literal["ellipsoid", "bonferroni"]


class Battles(msgspec.Struct, frozen=True, kw_only=True):
    """Battles as aligned arrays: model indices (0..k-1) and each side's outcome (1 won, 0 not; 0.5 allowed)."""

    model_a: np.ndarray
    model_b: np.ndarray
    win_a: np.ndarray
    win_b: np.ndarray

    def take(self, index: np.ndarray) -> Battles:
        """The battles at ``index``."""
        return Battles(
            model_a=self.model_a[index], model_b=self.model_b[index], win_a=self.win_a[index], win_b=self.win_b[index]
        )

    def __len__(self) -> int:
        return int(self.model_a.size)


class WinRateEstimate(msgspec.Struct, frozen=True, kw_only=True):
    """Per-model win rates, their covariance, battle counts and the tuning weight (0 human-only, None judge)."""

    method: str
    theta: np.ndarray
    sigma: np.ndarray
    counts: np.ndarray
    lam: float | None

    def intervals(self, alpha: float, min_labelled: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Marginal (1 - alpha) CLT intervals per model (NaN where a model has no battle; ``(-inf, inf)`` where it
        is under-labelled: fewer than ``min_labelled`` battles)."""
        _check_alpha(alpha)
        half = float(stats.norm.ppf(1 - alpha / 2)) * np.sqrt(np.diag(self.sigma))
        lower, upper = self.theta - half, self.theta + half
        unknown = self.under_labelled(min_labelled)
        if unknown.any():
            lower, upper = np.where(unknown, -np.inf, lower), np.where(unknown, np.inf, upper)
        return lower, upper

    def under_labelled(self, min_labelled: int) -> np.ndarray:
        """Per model: fewer than ``min_labelled`` battles (the guard of the module rules; 0: none is)."""
        if isinstance(min_labelled, bool) or not isinstance(min_labelled, int | np.integer) or min_labelled < 0:
            raise CalibrationError(f"min_labelled must be an integer >= 0, got {min_labelled!r}")
        unknown: NDArray[np.bool_] = np.asarray(self.counts) < min_labelled
        return unknown


class RankSets(msgspec.Struct, frozen=True, kw_only=True):
    """Rank set [low, high] per model (1 = best) and the matrix ``above[i, j]``: j is certainly above i."""

    low: np.ndarray
    high: np.ndarray
    above: np.ndarray

    @property
    def size(self) -> np.ndarray:
        """Number of ranks in each model's set."""
        sizes: NDArray[np.int64] = self.high - self.low + 1
        return sizes

    def covers(self, ranks: np.ndarray) -> np.ndarray:
        """Per model: low <= rank <= high."""
        return (self.low <= ranks) & (ranks <= self.high)


def _check_alpha(alpha: float) -> None:
    if not (isinstance(alpha, int | float) and math.isfinite(alpha) and 0 < alpha < 1):
        raise InvalidAlphaError(f"alpha must be a number strictly between 0 and 1, got {alpha!r}")


def _check(battles: Battles, k: int) -> None:
    arrays = (battles.model_a, battles.model_b, battles.win_a, battles.win_b)
    if len({a.shape for a in arrays}) != 1 or battles.model_a.ndim != 1:
        raise EmptyCalibrationError("battle arrays must be 1-D and equally long")
    if battles.model_a.size and (
        min(battles.model_a.min(), battles.model_b.min()) < 0 or max(battles.model_a.max(), battles.model_b.max()) >= k
    ):
        raise CalibrationError(f"model indices must lie in 0..{k - 1}")
    if np.any(battles.model_a == battles.model_b):
        raise CalibrationError("a battle needs two different models")


def _means(battles: Battles, k: int, wa: np.ndarray, wb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    counts = (np.bincount(battles.model_a, minlength=k) + np.bincount(battles.model_b, minlength=k)).astype(float)
    sums = np.bincount(battles.model_a, wa, minlength=k) + np.bincount(battles.model_b, wb, minlength=k)
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums / counts, counts


def _cross(
    battles: Battles, k: int, counts: np.ndarray, xa: np.ndarray, xb: np.ndarray, ya: np.ndarray, yb: np.ndarray
) -> np.ndarray:
    """sum_t rx_it ry_jt / (c_i c_j) from per-battle residuals of two outcome variables."""
    a, b = battles.model_a, battles.model_b
    index = np.concatenate([a * k + a, b * k + b, a * k + b, b * k + a])
    weights = np.concatenate([xa * ya, xb * yb, xa * yb, xb * ya])
    flat = np.bincount(index, weights, minlength=k * k).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return flat.reshape(k, k) / np.outer(counts, counts)


def canonical_battles(*aligned: Battles) -> tuple[Battles, ...]:
    """Aligned battle sets (the same battles with different outcomes: the human's and the judge's) in one order
    that depends on their multiset only: each battle turned so that ``model_a < model_b`` (its outcomes swapped
    with it), then sorted by the two models and the outcomes of each set. Every sum is then the same
    floating-point sum whatever the order (or the sides) the battles came in."""
    first = aligned[0]
    swap = first.model_a > first.model_b
    turned = [
        Battles(
            model_a=np.where(swap, b.model_b, b.model_a),
            model_b=np.where(swap, b.model_a, b.model_b),
            win_a=np.where(swap, b.win_b, b.win_a),
            win_b=np.where(swap, b.win_a, b.win_b),
        )
        for b in aligned
    ]
    keys: list[np.ndarray] = []
    for b in reversed(turned):
        keys += [b.win_b, b.win_a]
    order = np.lexsort([*keys, turned[0].model_b, turned[0].model_a])  # the last key is the primary one
    return tuple(b.take(order) for b in turned)


def win_rates(battles: Battles, k: int, *, method: str = "human only") -> WinRateEstimate:
    """Per-model mean outcome over the battles it is in, with the sandwich covariance (see module rules)."""
    _check(battles, k)
    (battles,) = canonical_battles(battles)
    theta, counts = _means(battles, k, battles.win_a, battles.win_b)
    ra = battles.win_a - theta[battles.model_a]
    rb = battles.win_b - theta[battles.model_b]
    sigma = _cross(battles, k, counts, ra, rb, ra, rb)
    return WinRateEstimate(method=method, theta=theta, sigma=sigma, counts=counts, lam=0.0)


def ppr_win_rates(
    human: Battles, judge: Battles, judge_unlabelled: Battles, k: int, lam: float | None = None
) -> WinRateEstimate:
    """Prediction-powered win rates: ``human`` and ``judge`` are the same labelled battles (same order) with the
    human's and the judge's outcomes; ``judge_unlabelled`` the judge-only battles. ``lam`` None: power-tuned."""
    _check(human, k)
    _check(judge, k)
    _check(judge_unlabelled, k)
    if not (np.array_equal(human.model_a, judge.model_a) and np.array_equal(human.model_b, judge.model_b)):
        raise CalibrationError("human and judge must describe the same labelled battles in the same order")
    if len(human) == 0 or len(judge_unlabelled) == 0:
        raise EmptyCalibrationError("need labelled and unlabelled battles")
    human, judge = canonical_battles(human, judge)
    unl = win_rates(judge_unlabelled, k)
    h_mean, counts = _means(human, k, human.win_a, human.win_b)
    f_mean, _ = _means(human, k, judge.win_a, judge.win_b)
    a, b = human.model_a, human.model_b
    ha, hb = human.win_a - h_mean[a], human.win_b - h_mean[b]
    fa, fb = judge.win_a - f_mean[a], judge.win_b - f_mean[b]
    sigma_h = _cross(human, k, counts, ha, hb, ha, hb)
    sigma_f = _cross(human, k, counts, fa, fb, fa, fb)
    cross = _cross(human, k, counts, ha, hb, fa, fb)
    if lam is None:
        seen = (counts > 0) & (unl.counts > 0)
        denom = float(np.trace(unl.sigma[np.ix_(seen, seen)]) + np.trace(sigma_f[np.ix_(seen, seen)]))
        lam = float(np.clip(np.trace(cross[np.ix_(seen, seen)]) / denom, 0.0, 1.0)) if denom > 0 else 0.0
    theta = lam * unl.theta + h_mean - lam * f_mean
    sigma = lam**2 * unl.sigma + sigma_h - lam * (cross + cross.T) + lam**2 * sigma_f
    return WinRateEstimate(method="ppr", theta=theta, sigma=sigma, counts=counts, lam=lam)


def rank_sets_from_intervals(lower: np.ndarray, upper: np.ndarray) -> RankSets:
    """Rank sets from simultaneous intervals: j is certainly above i when lower_j > upper_i (NaN: never)."""
    lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    if lower.shape != upper.shape or lower.ndim != 1:
        raise EmptyCalibrationError("lower and upper must be 1-D and equally long")
    with np.errstate(invalid="ignore"):
        above = lower[None, :] > upper[:, None]
    np.fill_diagonal(above, False)
    return _from_above(above)


def _from_above(above: np.ndarray) -> RankSets:
    k = above.shape[0]
    low = 1 + above.sum(axis=1)
    high = k - above.sum(axis=0)
    return RankSets(low=low.astype(int), high=high.astype(int), above=above)


def rank_sets(
    estimate: WinRateEstimate, alpha: float, construction: Construction = "ellipsoid", *, min_labelled: int = 0
) -> RankSets:
    """Rank set per model from the joint (1 - alpha) region of ``construction`` (see module rules); models with
    fewer than ``min_labelled`` battles are unknown (the guard of the module rules)."""
    return rank_sets_grid(estimate, (alpha,), construction, min_labelled=min_labelled)[0]


def rank_sets_grid(
    estimate: WinRateEstimate,
    alphas: Sequence[float],
    construction: Construction = "ellipsoid",
    *,
    min_labelled: int = 0,
) -> list[RankSets]:
    """:func:`rank_sets` at every level of ``alphas`` (the pairwise differences are computed once)."""
    for alpha in alphas:
        _check_alpha(alpha)
    unknown = estimate.under_labelled(min_labelled)
    theta, sigma = estimate.theta, estimate.sigma
    k = theta.size
    diag = np.diag(sigma)
    levels = np.asarray(alphas, dtype=float)
    if construction == "bonferroni":
        z = stats.norm.ppf(1 - levels / (2 * k))
        return [
            rank_sets_from_intervals(*_unknown_wide(theta - q * np.sqrt(diag), theta + q * np.sqrt(diag), unknown))
            for q in z
        ]
    if construction != "ellipsoid":
        raise CalibrationError(f"unknown construction {construction!r}: use 'ellipsoid' or 'bonferroni'")
    sd_diff = np.sqrt(np.maximum(diag[:, None] + diag[None, :] - 2 * sigma, 0.0))
    if unknown.any():  # infinite variance, zero covariance: every difference involving it has infinite sd
        sd_diff[unknown, :] = np.inf
        sd_diff[:, unknown] = np.inf
    gap = theta[None, :] - theta[:, None]  # gap[i, j] = theta_j - theta_i
    result = []
    for quantile in stats.chi2.ppf(1 - levels, k):
        with np.errstate(invalid="ignore"):
            above = gap > math.sqrt(float(quantile)) * sd_diff  # j certainly above i
        np.fill_diagonal(above, False)
        result.append(_from_above(above))
    return result


def _unknown_wide(lower: np.ndarray, upper: np.ndarray, unknown: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The intervals with the unknown models' made ``[-inf, inf]`` (unchanged when none is unknown)."""
    if not unknown.any():
        return lower, upper
    return np.where(unknown, -np.inf, lower), np.where(unknown, np.inf, upper)


def true_ranks(theta: np.ndarray) -> np.ndarray:
    """Rank of each model by ``theta`` (1 = best): 1 + the number of models with a strictly larger value."""
    theta = np.asarray(theta, dtype=float)
    ranks: NDArray[np.int64] = 1 + (theta[None, :] > theta[:, None]).sum(axis=1)
    return ranks
