"""The finite-sample PPI interval: hedged-capital betting on the rectified predictions (valid at every n).

* **Betting** (finite-sample valid for every n; Waudby-Smith & Ramdas 2024, JRSS-B, "Estimating means of bounded
  random variables by betting", hedged capital with the predictable plug-in bets ``PrPl``, ``c = 1/2``, ``theta =
  1/2``): labelled items are taken in the arrival order below and the tuning weight ``lambda_t`` of item ``t`` is the
  clipped PPI++ weight from items ``1..t-1`` only (predictable; 0 for the first three). With the true judge mean
  ``mu``, ``Z_t = Y_t - lambda_t (f_t - mu)`` has conditional mean ``theta``; Y and f in ``[lo, hi]`` bound ``Z_t -
  m`` in ``[lo - m - lambda_t (hi - mu), hi - m + lambda_t (mu - lo)]``. ``mu`` is unknown: a betting interval at
  level ``alpha_judge = alpha / 10`` from the unlabelled verdicts gives ``[mu_lo, mu_hi]``; the test of ``theta = m``
  bets with ``mu_lo`` on the upside and ``mu_hi`` on the downside, which lower-bounds the capital of every ``mu`` in
  the interval (each factor is monotone in ``mu``). The capital is the equal mixture of this judge-assisted hedged
  capital and the human-only one (``lambda = 0``; a mean of test martingales is one), so a useless judge costs at most
  a factor 2 in the threshold. Plug-in bets use a prior pseudo-observation at the scale's midpoint with variance ``(hi
  - lo)^2 / 4``. ``m`` is rejected when the running maximum of the capital reaches ``1 / (alpha - alpha_judge)``
  (Ville's inequality), so the interval covers with probability >= 1 - alpha at every n (union bound). The bounds are
  found by bisection from the centre (the rejected set lies outside an interval; tests check the hull against a fine
  grid) and reported on the outer (rejected) side of the last bracket, so rounding only widens them. ``lo, hi``
  default to the scale ``1..K`` for ``mean`` and ``0..1`` for binary metrics.
* **Arrival order** (``canonical_order``): a betting interval is valid for a random order, not for the order a
  caller happens to send (sorted by id, by score, by system), and it depends on the order. So each row is first
  sorted (by the human label, then the judge verdict: a labelled item's pair stays together; the unlabelled
  verdicts alone), then its items are permuted by the fixed pseudo-random permutation
  ``numpy.random.default_rng(ORDER_SEED).permutation(n)``, ``ORDER_SEED = 20260032``. The answer depends on the
  multiset only (the same for every order of the same items), and is reproducible. The guarantee is over the
  draw of the sample with the permutation taken as random; the seed is fixed in advance, never chosen on data.
* **Bounded memory and time** (``_rejects``): the capitals are streamed over the items in blocks of at most
  ``_CELL_BUDGET`` cells (rows x items) per array, carrying each process's log-capital from block to block, and a
  value of m leaves as soon as it is rejected. When the centre is rejected (degenerate samples, or alpha near 1)
  the bisection starts from the accepted point of a ``_SEED_GRID``-point grid nearest the centre, the grid tested
  in one streamed pass; when none is accepted it starts from the centre. Memory is bounded whatever n, and time
  is at most ``_SEED_GRID + 2 (_BISECTIONS + 1)`` passes over the items (a rejected value stops early).
* **Estimate inside the interval**: the reported bounds are ``min(low, estimate)`` and ``max(high, estimate)``
  (a superset, so the coverage holds; it only matters at a large alpha, where the capital can reject the point).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from calibration.errors import CalibrationError, EmptyCalibrationError
from calibration.estimates.intervals import Intervals, as_rows, check_alpha, ppi_intervals

__all__ = ["ALPHA_JUDGE_SHARE", "betting_intervals", "judge_mean_bounds"]

ALPHA_JUDGE_SHARE = 0.1  # share of alpha spent on the judge-mean interval inside the betting method
_BET_C = 0.5  # WSR's truncation constant c: a bet never stakes more than half of the capital
_BISECTIONS = 24  # bracket (hi - lo) / 2^24: far below any reported digit
_MIN_LAMBDA_HISTORY = 3  # items needed before the predictable tuning weight leaves 0
_SEED_GRID = 257  # points tried for a bisection start when the centre is rejected
_CELL_BUDGET = 1 << 18  # cells (rows x items) per array of one streamed block: 2 MB a float array
_MIN_BLOCK = 64  # items per streamed block at least (many rows: a simulation's resamples)
ORDER_SEED = 20_260_032  # the seed of the arrival order (numpy default_rng): see canonical_order


def canonical_order(y: np.ndarray, f: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """Rows (B, n) in the arrival order the betting interval reads: each row sorted (by ``y``, then ``f``: a
    labelled item's pair stays together), then the columns permuted by ``arrival_permutation(n)``. The answer
    depends on the multiset of each row only, never on the order a caller sent."""
    keys = (y,) if f is None else (f, y)  # np.lexsort: the last key is the primary one
    order = np.lexsort(keys, axis=-1)
    permutation = arrival_permutation(y.shape[1])
    y_sorted = np.take_along_axis(y, order, axis=1)[:, permutation]
    f_sorted = None if f is None else np.take_along_axis(f, order, axis=1)[:, permutation]
    return y_sorted, f_sorted


def arrival_permutation(n: int) -> np.ndarray:
    """The fixed pseudo-random permutation of ``0..n-1`` applied after sorting: numpy's
    ``default_rng(ORDER_SEED).permutation(n)``."""
    permutation: NDArray[np.int64] = np.random.default_rng(ORDER_SEED).permutation(n)
    return permutation


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


def _log_increments(
    m: np.ndarray,
    y: np.ndarray,
    f: np.ndarray,
    lam: np.ndarray | None,
    bets: np.ndarray,
    mu_lo: float,
    mu_hi: float,
    lo: float,
    hi: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-step log-capital factors of the upside and downside bets on theta = m (the worst judge mean on each
    side); ``m`` has one value per row, the other arrays one row or one row per value of ``m``."""
    mm = m[:, None]
    if lam is None:  # lambda = 0 (the human-only process, the judge's mean): the same numbers, fewer operations
        d_up = d_down = y - mm
        neg_span, pos_span = np.maximum(mm - lo, 1e-12), np.maximum(hi - mm, 1e-12)
    else:
        d_up = y - mm - lam * (f - mu_lo)
        d_down = y - mm - lam * (f - mu_hi)
        neg_span = np.maximum(mm - lo + lam * (hi - mu_lo), 1e-12)
        pos_span = np.maximum(hi - mm + lam * (mu_hi - lo), 1e-12)
    log_up = np.log1p(np.minimum(bets, _BET_C / neg_span) * d_up)
    log_down = np.log1p(-np.minimum(bets, _BET_C / pos_span) * d_down)
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
    """True per value of ``m`` (one per row) when some prefix's hedged capital for theta = m reaches the threshold.

    With ``human_bets`` the capital is the equal mixture of the judge-assisted process and the human-only one
    (lambda = 0): a mean of test martingales is one, so the judge can only help at the price of a factor 2.

    Streaming: the items are read in blocks of ``max(_MIN_BLOCK, _CELL_BUDGET // rows)`` columns, each part's
    log-capital carried from block to block, and a row leaves as soon as it is rejected. So the arrays hold at
    most ``rows x block`` cells whatever ``n`` (memory bounded), and a rejected value costs only the items up to
    its crossing.
    """
    rows = max(m.size, y.shape[0])
    n = y.shape[1]
    n_parts = 2 if human_bets is None else 4
    carry = np.zeros((n_parts, rows))
    rejected = np.zeros(rows, dtype=bool)
    active = np.arange(rows)
    block = max(_MIN_BLOCK, _CELL_BUDGET // rows)
    judge_weighted = bool(lam.any())
    for start in range(0, n, block):
        cols = slice(start, min(n, start + block))
        y_b, f_b, bets_b = (_block(array, active, cols) for array in (y, f, bets))
        lam_b = _block(lam, active, cols) if judge_weighted else None
        mm = m if m.size == 1 else m[active]
        parts = list(_log_increments(mm, y_b, f_b, lam_b, bets_b, mu_lo, mu_hi, lo, hi))
        if human_bets is not None:
            parts += list(_log_increments(mm, y_b, f_b, None, _block(human_bets, active, cols), mu_lo, mu_hi, lo, hi))
        # (parts, rows, items): a single row broadcast against several values of m
        log_capital = np.empty((len(parts), max(part.shape[0] for part in parts), parts[0].shape[1]))
        for index, part in enumerate(parts):
            np.cumsum(np.broadcast_to(part, log_capital.shape[1:]), axis=1, out=log_capital[index])
        log_capital += carry[:, active, None]
        hit = _crossed(log_capital, log_threshold)
        carry[:, active] = log_capital[:, :, -1]
        rejected[active[hit]] = True
        active = active[~hit]
        if active.size == 0:
            break
    return rejected


def _crossed(log_capital: np.ndarray, log_threshold: float) -> np.ndarray:
    """Per row: the equal mixture of the parts' capitals reaches the threshold at some item of the block.

    The mixture's log lies within ``[max part - log(parts), max part]``, so rows whose largest part stays below
    the threshold, or whose largest part minus ``log(parts)`` reaches it, are decided without the exact mixture;
    the exact ``logaddexp`` is computed for the others only (the same answer, far fewer logarithms)."""
    penalty = math.log(log_capital.shape[0])
    top = log_capital.max(axis=(0, 2))
    hit = top - penalty >= log_threshold
    unsure = np.flatnonzero(~hit & (top >= log_threshold))
    if unsure.size:
        parts = log_capital[:, unsure]
        pairs = np.logaddexp(parts[0::2], parts[1::2])  # up with down (of each process)
        mixture = (pairs[0] if pairs.shape[0] == 1 else np.logaddexp(pairs[0], pairs[1])) - penalty
        hit[unsure] = mixture.max(axis=1) >= log_threshold
    crossed: NDArray[np.bool_] = hit
    return crossed


def _block(array: np.ndarray, active: np.ndarray, cols: slice) -> np.ndarray:
    """The active rows' items ``cols`` of ``array`` (all of its single row when it has one)."""
    block: NDArray[np.float64] = array[:, cols] if array.shape[0] == 1 else array[active, cols]
    return block


def _accepted_seed(centre: float, rejected: Callable[[np.ndarray], np.ndarray], lo: float, hi: float) -> float:
    """The point of a ``_SEED_GRID``-point grid on ``[lo, hi]`` nearest ``centre`` whose capital is not rejected
    (``centre`` itself when every one is). The grid is tested in one streaming pass (``_rejects``), so its memory is
    bounded by the cell budget whatever ``n``."""
    grid = np.linspace(lo, hi, _SEED_GRID)
    keep = ~rejected(grid)
    if not keep.any():
        return centre
    accepted = grid[keep]
    return float(accepted[np.argmin(np.abs(accepted - centre))])


def judge_mean_bounds(
    f_unlabelled: np.ndarray | Sequence[float], lo: float, hi: float, alpha: float
) -> tuple[float, float]:
    """Betting (1 - alpha) interval for the judge's mean from unlabelled verdicts in [lo, hi]."""
    f_unl, _ = canonical_order(as_rows(f_unlabelled, "judge_unlabelled"))
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

    for row in np.flatnonzero(rejected(centre)):
        # the centre is rejected only in degenerate cases (or at a large alpha): seed the bisection elsewhere
        one = slice(row, row + 1)
        hb = None if human_bets is None else human_bets[one]

        def row_rejected(m: np.ndarray, one: slice = one, hb: np.ndarray | None = hb) -> np.ndarray:
            return _rejects(m, y[one], f[one], lam[one], bets[one], mu_lo, mu_hi, lo, hi, threshold, hb)

        centre[row] = _accepted_seed(float(centre[row]), row_rejected, lo, hi)
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
        y, _ = canonical_order(y)
        zeros = np.zeros_like(y)
        low, high, _ = _betting_core(y, zeros, zeros, lo, hi, alpha, lo, hi)
        mean = y.mean(axis=1)
        return Intervals(
            method="betting (human only)",
            estimate=mean,
            low=np.minimum(low, mean),
            high=np.maximum(high, mean),
            se=np.full(y.shape[0], np.nan),
            lam=np.zeros(y.shape[0]),
        )
    f = as_rows(f, "judge")
    f_unl = canonical_order(as_rows(f_unlabelled, "judge_unlabelled"))[0][0]
    if f.shape != y.shape:
        raise EmptyCalibrationError(f"human and judge must have the same shape, got {y.shape} and {f.shape}")
    y, f_arrival = canonical_order(y, f)
    assert f_arrival is not None
    f = f_arrival
    if min(f.min(), f_unl.min()) < lo - 1e-9 or max(f.max(), f_unl.max()) > hi + 1e-9:
        raise CalibrationError(f"judge verdicts must lie in [{lo}, {hi}]")
    alpha_judge = ALPHA_JUDGE_SHARE * alpha
    mu_lo, mu_hi = judge_bounds if judge_bounds is not None else judge_mean_bounds(f_unl, lo, hi, alpha_judge)
    mu_lo, mu_hi = max(lo, mu_lo), min(hi, mu_hi)
    lam = _predictable_lambda(y, f, float(f_unl.var(ddof=1)) if f_unl.size > 1 else 0.0, y.shape[1] / f_unl.size)
    low, high, _ = _betting_core(y, f, lam, lo, hi, alpha - alpha_judge, mu_lo, mu_hi, mix_human=True)
    point = ppi_intervals(y, f, f_unl, alpha).estimate
    return Intervals(
        method="betting",
        estimate=point,
        low=np.minimum(low, point),
        high=np.maximum(high, point),
        se=np.full(y.shape[0], np.nan),
        lam=lam[:, -1],
    )
