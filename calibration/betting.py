"""The finite-sample PPI interval: hedged-capital betting on the rectified predictions (valid at every n).

  ``lambda mean(f_unl) + mean(Y - lambda f)``; variance ``lambda^2 var0(f_unl)/N + var0(Y - lambda f)/n``.
* **Betting** (finite-sample valid for every n; Waudby-Smith & Ramdas 2024, JRSS-B, "Estimating means of bounded
  random variables by betting", hedged capital with the predictable plug-in bets ``PrPl``, ``c = 1/2``,
  ``theta = 1/2``): labelled items are taken in the order given and the tuning weight ``lambda_t`` of item ``t`` is
  the clipped PPI++ weight from items ``1..t-1`` only (predictable; 0 for the first three). With the true judge
  mean ``mu``, ``Z_t = Y_t - lambda_t (f_t - mu)`` has conditional mean ``theta``; Y and f in ``[lo, hi]`` bound
  ``Z_t - m`` in ``[lo - m - lambda_t (hi - mu), hi - m + lambda_t (mu - lo)]``. ``mu`` is unknown: a betting
  interval at level ``alpha_judge = alpha / 10`` from the unlabelled verdicts gives ``[mu_lo, mu_hi]``; the test of
  ``theta = m`` bets with ``mu_lo`` on the upside and ``mu_hi`` on the downside, which lower-bounds the capital of
  every ``mu`` in the interval (each factor is monotone in ``mu``). The capital is the equal mixture of this
  judge-assisted hedged capital and the human-only one (``lambda = 0``; a mean of test martingales is one), so a
  useless judge costs at most a factor 2 in the threshold. Plug-in bets use a prior pseudo-observation at the
  scale's midpoint with variance ``(hi - lo)^2 / 4``. ``m`` is rejected when the running maximum of the capital
  reaches ``1 / (alpha - alpha_judge)`` (Ville's inequality), so the interval covers with
  probability >= 1 - alpha at every n (union bound). The bounds are found by bisection from the centre (the
  rejected set lies outside an interval; tests check the hull against a fine grid) and reported on the outer
  (rejected) side of the last bracket, so rounding only widens them. ``lo, hi`` default to the scale ``1..K``
  for ``mean`` and ``0..1`` for binary metrics.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from calibration.errors import CalibrationError, EmptyCalibrationError
from calibration.intervals import Intervals, as_rows, check_alpha, ppi_intervals

__all__ = ["ALPHA_JUDGE_SHARE", "betting_intervals", "judge_mean_bounds"]

ALPHA_JUDGE_SHARE = 0.1  # share of alpha spent on the judge-mean interval inside the betting method
_BET_C = 0.5  # WSR's truncation constant c: a bet never stakes more than half of the capital
_BISECTIONS = 24  # bracket (hi - lo) / 2^24: far below any reported digit
_MIN_LAMBDA_HISTORY = 3  # items needed before the predictable tuning weight leaves 0


def _predictable_lambda(y: np.ndarray, f: np.ndarray, var_f: float, n_ratio: float) -> np.ndarray:
    """lambda_t from items 1..t-1 only (0 until _MIN_LAMBDA_HISTORY items are seen), clipped to [0, 1]."""
    count = np.arange(1, y.shape[1] + 1, dtype=float)
    sy, sf, syf = np.cumsum(y, axis=1), np.cumsum(f, axis=1), np.cumsum(y * f, axis=1)
    cov = (syf - sy * sf / count) / count  # covariance of items 1..t
    lam = np.zeros_like(y)
    if var_f > 1e-15:
        lam[:, 1:] = np.clip(cov[:, :-1] / ((1 + n_ratio) * var_f), 0.0, 1.0)
    lam[:, :_MIN_LAMBDA_HISTORY] = 0.0
    return lam


def _bets(z: np.ndarray, prior_mean: float, spread: float, alpha: float) -> np.ndarray:
    """WSR's predictable plug-in bet per step (their eq. 26-27 on the raw scale): step t uses z_1..z_{t-1} only,
    with the prior mean ``prior_mean`` and prior variance ``spread^2 / 4`` of one pseudo-observation."""
    t = np.arange(1, z.shape[1] + 1, dtype=float)
    mu = (prior_mean + np.cumsum(z, axis=1)) / (t + 1)
    var = (spread**2 / 4 + np.cumsum((z - mu) ** 2, axis=1)) / (t + 1)
    var_prev = np.concatenate([np.full((z.shape[0], 1), spread**2 / 4), var[:, :-1]], axis=1)
    return np.sqrt(2 * math.log(2 / alpha) / (var_prev * t * np.log1p(t)))


def _log_capitals(
    m: np.ndarray,
    y: np.ndarray,
    f: np.ndarray,
    lam: np.ndarray,
    bets: np.ndarray,
    mu_lo: float,
    mu_hi: float,
    lo: float,
    hi: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Running log-capital of the upside and downside bets on theta = m (the worst judge mean on each side)."""
    mm = m[:, None]
    d_up = y - mm - lam * (f - mu_lo)
    d_down = y - mm - lam * (f - mu_hi)
    neg_span = np.maximum(mm - lo + lam * (hi - mu_lo), 1e-12)
    pos_span = np.maximum(hi - mm + lam * (mu_hi - lo), 1e-12)
    log_up = np.cumsum(np.log1p(np.minimum(bets, _BET_C / neg_span) * d_up), axis=1)
    log_down = np.cumsum(np.log1p(-np.minimum(bets, _BET_C / pos_span) * d_down), axis=1)
    return log_up, log_down


def _rejects(
    m: np.ndarray,
    y: np.ndarray,
    f: np.ndarray,
    lam: np.ndarray,
    bets: np.ndarray,
    mu_lo: float,
    mu_hi: float,
    lo: float,
    hi: float,
    log_threshold: float,
    human_bets: np.ndarray | None = None,
) -> np.ndarray:
    """True per row when some prefix's hedged capital for theta = m reaches the threshold.

    With ``human_bets`` the capital is the equal mixture of the judge-assisted process and the human-only one
    (lambda = 0): a mean of test martingales is one, so the judge can only help at the price of a factor 2.
    """
    log_up, log_down = _log_capitals(m, y, f, lam, bets, mu_lo, mu_hi, lo, hi)
    parts = [log_up, log_down]
    if human_bets is not None:
        zeros = np.zeros_like(lam)
        parts += list(_log_capitals(m, y, f, zeros, human_bets, mu_lo, mu_hi, lo, hi))
    log_mixture = np.logaddexp.reduce(np.stack(parts), axis=0) - math.log(len(parts))
    rejected: NDArray[np.bool_] = log_mixture.max(axis=1) >= log_threshold
    return rejected


def judge_mean_bounds(
    f_unlabelled: np.ndarray | Sequence[float], lo: float, hi: float, alpha: float
) -> tuple[float, float]:
    """Betting (1 - alpha) interval for the judge's mean from unlabelled verdicts in [lo, hi]."""
    f_unl = as_rows(f_unlabelled, "judge_unlabelled")
    zeros = np.zeros_like(f_unl)
    result = _betting_core(f_unl, zeros, zeros, lo, hi, alpha, lo, hi)
    return float(result[0][0]), float(result[1][0])


def _betting_core(
    y: np.ndarray,
    f: np.ndarray,
    lam: np.ndarray,
    lo: float,
    hi: float,
    alpha: float,
    mu_lo: float,
    mu_hi: float,
    mix_human: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bounds (low, high) and centre per row of the hedged-capital interval at level alpha."""
    mu_mid = 0.5 * (mu_lo + mu_hi)
    z = y - lam * (f - mu_mid)
    centre = np.clip(z.mean(axis=1), lo, hi)  # where the bisection starts (not used by the bets)
    bets = _bets(z, 0.5 * (lo + hi), hi - lo, alpha)
    human_bets = _bets(y, 0.5 * (lo + hi), hi - lo, alpha) if mix_human else None
    threshold = math.log(1 / alpha)

    def rejected(m: np.ndarray) -> np.ndarray:
        return _rejects(m, y, f, lam, bets, mu_lo, mu_hi, lo, hi, threshold, human_bets)

    centre_rejected = rejected(centre)
    if centre_rejected.any():
        # the sample mean is rejected only in degenerate cases: search a grid for a point that is not
        grid = np.linspace(lo, hi, 257)
        for row in np.flatnonzero(centre_rejected):
            sub = np.repeat(y[row : row + 1], grid.size, axis=0)
            keep = ~_rejects(
                grid,
                sub,
                np.repeat(f[row : row + 1], grid.size, axis=0),
                np.repeat(lam[row : row + 1], grid.size, axis=0),
                np.repeat(bets[row : row + 1], grid.size, axis=0),
                mu_lo,
                mu_hi,
                lo,
                hi,
                threshold,
                None if human_bets is None else np.repeat(human_bets[row : row + 1], grid.size, axis=0),
            )
            if keep.any():
                centre[row] = grid[np.flatnonzero(keep)[keep.sum() // 2]]
    bounds = []
    for outer in (lo, hi):
        rej = np.full_like(centre, outer)  # outer end: taken as rejected (the bound is reported there at worst)
        acc = centre.copy()
        outer_rejected = rejected(rej)
        # if even the scale's end is not rejected, the bound is the end itself
        for _ in range(_BISECTIONS):
            mid = 0.5 * (rej + acc)
            r = rejected(mid)
            rej = np.where(r, mid, rej)
            acc = np.where(r, acc, mid)
        bounds.append(np.where(outer_rejected, rej, outer))
    return bounds[0], bounds[1], centre


def betting_intervals(
    y: np.ndarray | Sequence[float],
    f: np.ndarray | Sequence[float] | None,
    f_unlabelled: np.ndarray | Sequence[float] | None,
    lo: float,
    hi: float,
    alpha: float,
    *,
    judge_bounds: tuple[float, float] | None = None,
) -> Intervals:
    """Finite-sample (1 - alpha) interval per row: betting on the rectified predictions (human-only when ``f`` is
    None); ``judge_bounds`` may pass a precomputed ``judge_mean_bounds`` at ``ALPHA_JUDGE_SHARE * alpha``."""
    check_alpha(alpha)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise CalibrationError(f"the score range must be finite with lo < hi, got [{lo}, {hi}]")
    y = as_rows(y, "human")
    if y.min() < lo - 1e-9 or y.max() > hi + 1e-9:
        raise CalibrationError(f"human labels must lie in [{lo}, {hi}]")
    if f is None:
        zeros = np.zeros_like(y)
        low, high, _ = _betting_core(y, zeros, zeros, lo, hi, alpha, lo, hi)
        return Intervals(
            method="betting (human only)",
            estimate=y.mean(axis=1),
            low=low,
            high=high,
            se=np.full(y.shape[0], np.nan),
            lam=np.zeros(y.shape[0]),
        )
    f = as_rows(f, "judge")
    f_unl = as_rows(f_unlabelled, "judge_unlabelled")[0]
    if f.shape != y.shape:
        raise EmptyCalibrationError(f"human and judge must have the same shape, got {y.shape} and {f.shape}")
    if min(f.min(), f_unl.min()) < lo - 1e-9 or max(f.max(), f_unl.max()) > hi + 1e-9:
        raise CalibrationError(f"judge verdicts must lie in [{lo}, {hi}]")
    alpha_judge = ALPHA_JUDGE_SHARE * alpha
    mu_lo, mu_hi = judge_bounds if judge_bounds is not None else judge_mean_bounds(f_unl, lo, hi, alpha_judge)
    mu_lo, mu_hi = max(lo, mu_lo), min(hi, mu_hi)
    lam = _predictable_lambda(y, f, float(f_unl.var(ddof=1)) if f_unl.size > 1 else 0.0, y.shape[1] / f_unl.size)
    low, high, _ = _betting_core(y, f, lam, lo, hi, alpha - alpha_judge, mu_lo, mu_hi, mix_human=True)
    point = ppi_intervals(y, f, f_unl, alpha).estimate
    return Intervals(
        method="betting", estimate=point, low=low, high=high, se=np.full(y.shape[0], np.nan), lam=lam[:, -1]
    )
