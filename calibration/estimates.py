"""System-level estimates with valid intervals from a few human labels plus many judge verdicts.

The estimand is the mean human score of a system, ``theta = E[Y]``, from ``n`` labelled items (human label ``Y``
and judge verdict ``f``) and ``N`` unlabelled items (judge verdict only), all drawn at random from the same
population (the random-sampling requirement: the labelled items must be a uniform random subset).

=====================================================  ============================================================
call                                                    what it computes
=====================================================  ============================================================
``classical_intervals(y, alpha)``                       human-only CLT interval, ``mean(y) +- z sd0(y)/sqrt(n)``
``ppi_intervals(y, f, f_unlabelled, alpha)``            PPI++ (power-tuned) CLT interval
``betting_intervals(y, f, f_unlabelled, lo, hi, a)``    finite-sample PPI interval (hedged-capital betting)
``clopper_pearson(successes, n, alpha)``                exact binomial interval (human-only, binary metrics)
``estimate_mean(...)`` / ``estimate_pass_rate(...)``    the served answer: switching rule, human-only interval,
``estimate_win_rate(...)`` / ``estimate_difference``    effective sample gain, label budget
=====================================================  ============================================================

The ``*_intervals`` functions take 2-D arrays (one row per resample, shape ``(B, n)``) so that a simulation runs
in one call; the ``estimate_*`` functions take one sample and answer the wire shape of ``POST /v1/estimates``.

Rules (stated once, used everywhere):

* **Classical.** ``mean(y) +- z_{1-alpha/2} sd(y) / sqrt(n)`` with ``sd`` the population standard deviation
  (``ddof=0``), exactly as ``ppi_py.classical_mean_ci``.
* **PPI++** (Angelopoulos, Duchi, Zrnic 2024, "PPI++: Efficient prediction-powered inference"), mean estimation,
  exactly as ``ppi_py.ppi_mean_ci`` with ``lam=None``: ``lambda = cov0(Y, f) / ((1 + n/N) var1(f_all))`` where
  ``cov0`` is the labelled sample covariance (``ddof=0``) and ``var1`` the variance (``ddof=1``) of the judge over
  labelled and unlabelled items together, **clipped to [0, 1]** (the package's ``clip=True``; the paper's optimum
  is unclipped, clipping keeps the estimator between the classical one (0) and plain PPI (1)). Estimate
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
* **Clopper-Pearson.** ``beta.ppf(alpha/2, k, n-k+1)``, ``beta.ppf(1-alpha/2, k+1, n-k)`` (0 and 1 at the ends).
* **Switching rule** (``SWITCH_RULE``): PPI++'s CLT interval is served when ``n >= MIN_N_CLT`` (50), both the
  human labels and the rectifier ``Y - lambda f`` vary in the labelled sample, and ``n >= SKEW_CONSTANT * g1^2``
  (``g1`` the rectifier's sample skewness, ``ddof=0``; Cochran's rule ``n > 25 g1^2`` with twice his constant);
  otherwise the betting interval. Why: on SummEval, PPI++ alone covered only 0.86 for the most skewed
  consistency scores at n = 200 (samples that miss the rare low scores underestimate the variance, and those
  samples have a large skewness or none at all). The constants were chosen on that study (in-sample), and the
  offline study (``python -m offline estimates``) reports the served coverage they give.
* **Effective sample gain** = ``var_classical / var_PPI++`` (ratio of the two CLT variance estimates, the same as
  the squared width ratio of the two CLT intervals): how many human labels each label is worth with the judge.
* **Label budget**: labels for a target half-width ``W`` under PPI++, ``n = z^2 var0(Y - lambda f) /
  (W^2 - z^2 lambda^2 var0(f_unl)/N)`` (None when the unlabelled term alone exceeds ``W``), at least ``MIN_N_CLT``;
  the default target is half the current PPI++ half-width.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec
import numpy as np
from numpy.typing import NDArray
from scipy import stats

from calibration.errors import CalibrationError, EmptyCalibrationError, InvalidAlphaError

__all__ = [
    "ALPHA_JUDGE_SHARE",
    "MIN_N_CLT",
    "SKEW_CONSTANT",
    "SWITCH_RULE",
    "EstimateAnswer",
    "Intervals",
    "LabelBudget",
    "Sample",
    "betting_intervals",
    "classical_intervals",
    "clopper_pearson",
    "estimate_difference",
    "estimate_mean",
    "estimate_pass_rate",
    "estimate_win_rate",
    "fisher_z_interval",
    "judge_mean_bounds",
    "label_budget",
    "ppi_intervals",
    "ppi_lambda",
    "served_uses_clt",
    "switch_reason",
]

MIN_N_CLT = 50
# Cochran's rule for a CLT interval on a skewed population is n > 25 g1^2 (Sampling Techniques, 1977); twice
# his constant is what kept PPI++ >= 0.93 on SummEval's skewed consistency scores (a choice made on that study).
SKEW_CONSTANT = 50
ALPHA_JUDGE_SHARE = 0.1  # share of alpha spent on the judge-mean interval inside the betting method
SWITCH_RULE = (f"PPI++ CLT interval when n >= {MIN_N_CLT}, the human labels and the rectifier Y - lambda f both vary "
               f"in the labelled sample, and n >= {SKEW_CONSTANT} g1^2 with g1 the rectifier's sample skewness; "
               "otherwise the finite-sample betting interval")
_BET_C = 0.5  # WSR's truncation constant c: a bet never stakes more than half of the capital
_BISECTIONS = 24  # bracket (hi - lo) / 2^24: far below any reported digit
_MIN_LAMBDA_HISTORY = 3  # items needed before the predictable tuning weight leaves 0


class Intervals(msgspec.Struct, frozen=True, kw_only=True):
    """One method's answer per resample row: point estimates, bounds, standard errors (NaN for betting)."""

    method: str
    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    se: np.ndarray
    lam: np.ndarray

    @property
    def width(self) -> np.ndarray:
        """high - low per row."""
        widths: NDArray[np.float64] = self.high - self.low
        return widths

    def covers(self, truth: float) -> np.ndarray:
        """Boolean per row: low <= truth <= high."""
        return (self.low <= truth) & (truth <= self.high)


class LabelBudget(msgspec.Struct, frozen=True, kw_only=True):
    """Labels needed for a target half-width (PPI++ and human-only), and how many more than today."""

    target_half_width: float
    labels_needed: int | None
    more_labels: int | None
    labels_needed_human_only: int | None


class EstimateAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """The answer of one system (wire shape of ``POST /v1/estimates``; intervals are ``[low, high]``)."""

    metric: str
    alpha: float
    estimate: float
    interval: tuple[float, float]
    method: str
    human_only_interval: tuple[float, float]
    human_only_method: str
    effective_sample_gain: float | None
    n_labelled: int
    n_unlabelled: int
    lam: float
    label_budget: LabelBudget | None
    switch_rule: str = SWITCH_RULE
    switch_reason: str | None = None  # why this method: the rule's parts with this sample's numbers
    ppi_interval: tuple[float, float] | None = None
    betting_interval: tuple[float, float] | None = None
    classical_interval: tuple[float, float] | None = None


class Sample(msgspec.Struct, frozen=True, kw_only=True):
    """One system's data: human labels and judge verdicts of the labelled items, judge verdicts of the rest."""

    human: Sequence[float]
    judge: Sequence[float]
    judge_unlabelled: Sequence[float]


def _check_alpha(alpha: float) -> None:
    if not (isinstance(alpha, int | float) and math.isfinite(alpha) and 0 < alpha < 1):
        raise InvalidAlphaError(f"alpha must be a number strictly between 0 and 1, got {alpha!r}")


def _rows(values: np.ndarray | Sequence[float] | None, name: str) -> np.ndarray:
    """``values`` as finite rows (B, n); None (no values) raises EmptyCalibrationError like an empty row."""
    array = np.asarray(values, dtype=float)
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2 or array.shape[1] == 0:
        raise EmptyCalibrationError(f"{name} must hold at least one value per row, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise CalibrationError(f"{name} holds a value that is not a finite number")
    return array


def _z(alpha: float) -> float:
    return float(stats.norm.ppf(1 - alpha / 2))


def classical_intervals(y: np.ndarray | Sequence[float], alpha: float) -> Intervals:
    """Human-only CLT interval per row of ``y`` (shape (B, n) or (n,)): mean +- z sd0 / sqrt(n)."""
    _check_alpha(alpha)
    y = _rows(y, "human")
    n = y.shape[1]
    mean = y.mean(axis=1)
    se = y.std(axis=1) / math.sqrt(n)
    z = _z(alpha)
    return Intervals(method="classical", estimate=mean, low=mean - z * se, high=mean + z * se, se=se,
                     lam=np.zeros_like(mean))


def ppi_lambda(y: np.ndarray, f: np.ndarray, f_unlabelled: np.ndarray) -> np.ndarray:
    """PPI++ tuning weight per row, clipped to [0, 1]: cov0(Y, f) / ((1 + n/N) var1(f over all items))."""
    y, f = _rows(y, "human"), _rows(f, "judge")
    f_unl = np.asarray(f_unlabelled, dtype=float)
    n, big_n = y.shape[1], f_unl.size
    cov = ((y - y.mean(axis=1, keepdims=True)) * (f - f.mean(axis=1, keepdims=True))).mean(axis=1)
    total = n + big_n
    sum_all = f.sum(axis=1) + f_unl.sum()
    sq_all = (f * f).sum(axis=1) + float((f_unl * f_unl).sum())
    var_all = (sq_all - sum_all * sum_all / total) / (total - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = cov / ((1 + n / big_n) * var_all)
    lam = np.where(var_all > 1e-15, lam, 0.0)
    return np.clip(lam, 0.0, 1.0)


def ppi_intervals(y: np.ndarray | Sequence[float], f: np.ndarray | Sequence[float],
                  f_unlabelled: np.ndarray | Sequence[float], alpha: float,
                  lam: float | np.ndarray | None = None) -> Intervals:
    """PPI++ CLT interval per row (``lam`` None: power-tuned and clipped, as ``ppi_py.ppi_mean_ci``)."""
    _check_alpha(alpha)
    y, f = _rows(y, "human"), _rows(f, "judge")
    f_unl = _rows(f_unlabelled, "judge_unlabelled")[0]
    if y.shape != f.shape:
        raise EmptyCalibrationError(f"human and judge must have the same shape, got {y.shape} and {f.shape}")
    n, big_n = y.shape[1], f_unl.size
    weights = ppi_lambda(y, f, f_unl) if lam is None else np.broadcast_to(np.asarray(lam, dtype=float),
                                                                             (y.shape[0],)).copy()
    rect = y - weights[:, None] * f
    estimate = weights * f_unl.mean() + rect.mean(axis=1)
    se = np.sqrt(weights ** 2 * f_unl.var() / big_n + rect.var(axis=1) / n)
    z = _z(alpha)
    return Intervals(method="ppi++", estimate=estimate, low=estimate - z * se, high=estimate + z * se, se=se,
                     lam=weights)


def clopper_pearson(successes: int, n: int, alpha: float) -> tuple[float, float]:
    """Exact two-sided (1 - alpha) binomial interval for ``successes`` of ``n`` (0 and 1 at the ends)."""
    _check_alpha(alpha)
    if n < 1 or not 0 <= successes <= n:
        raise CalibrationError(f"need 0 <= successes <= n and n >= 1, got {successes} of {n}")
    low = 0.0 if successes == 0 else float(stats.beta.ppf(alpha / 2, successes, n - successes + 1))
    high = 1.0 if successes == n else float(stats.beta.ppf(1 - alpha / 2, successes + 1, n - successes))
    return low, high


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
    var = (spread ** 2 / 4 + np.cumsum((z - mu) ** 2, axis=1)) / (t + 1)
    var_prev = np.concatenate([np.full((z.shape[0], 1), spread ** 2 / 4), var[:, :-1]], axis=1)
    return np.sqrt(2 * math.log(2 / alpha) / (var_prev * t * np.log1p(t)))


def _log_capitals(m: np.ndarray, y: np.ndarray, f: np.ndarray, lam: np.ndarray, bets: np.ndarray,
                  mu_lo: float, mu_hi: float, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """Running log-capital of the upside and downside bets on theta = m (the worst judge mean on each side)."""
    mm = m[:, None]
    d_up = y - mm - lam * (f - mu_lo)
    d_down = y - mm - lam * (f - mu_hi)
    neg_span = np.maximum(mm - lo + lam * (hi - mu_lo), 1e-12)
    pos_span = np.maximum(hi - mm + lam * (mu_hi - lo), 1e-12)
    log_up = np.cumsum(np.log1p(np.minimum(bets, _BET_C / neg_span) * d_up), axis=1)
    log_down = np.cumsum(np.log1p(-np.minimum(bets, _BET_C / pos_span) * d_down), axis=1)
    return log_up, log_down


def _rejects(m: np.ndarray, y: np.ndarray, f: np.ndarray, lam: np.ndarray, bets: np.ndarray,
             mu_lo: float, mu_hi: float, lo: float, hi: float, log_threshold: float,
             human_bets: np.ndarray | None = None) -> np.ndarray:
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


def judge_mean_bounds(f_unlabelled: np.ndarray | Sequence[float], lo: float, hi: float,
                      alpha: float) -> tuple[float, float]:
    """Betting (1 - alpha) interval for the judge's mean from unlabelled verdicts in [lo, hi]."""
    f_unl = _rows(f_unlabelled, "judge_unlabelled")
    zeros = np.zeros_like(f_unl)
    result = _betting_core(f_unl, zeros, zeros, lo, hi, alpha, lo, hi)
    return float(result[0][0]), float(result[1][0])


def _betting_core(y: np.ndarray, f: np.ndarray, lam: np.ndarray, lo: float, hi: float, alpha: float,
                  mu_lo: float, mu_hi: float, mix_human: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
            sub = np.repeat(y[row:row + 1], grid.size, axis=0)
            keep = ~_rejects(grid, sub, np.repeat(f[row:row + 1], grid.size, axis=0),
                             np.repeat(lam[row:row + 1], grid.size, axis=0),
                             np.repeat(bets[row:row + 1], grid.size, axis=0), mu_lo, mu_hi, lo, hi, threshold,
                             None if human_bets is None else np.repeat(human_bets[row:row + 1], grid.size, axis=0))
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


def betting_intervals(y: np.ndarray | Sequence[float], f: np.ndarray | Sequence[float] | None,
                      f_unlabelled: np.ndarray | Sequence[float] | None, lo: float, hi: float, alpha: float,
                      *, judge_bounds: tuple[float, float] | None = None) -> Intervals:
    """Finite-sample (1 - alpha) interval per row: betting on the rectified predictions (human-only when ``f`` is
    None); ``judge_bounds`` may pass a precomputed ``judge_mean_bounds`` at ``ALPHA_JUDGE_SHARE * alpha``."""
    _check_alpha(alpha)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise CalibrationError(f"the score range must be finite with lo < hi, got [{lo}, {hi}]")
    y = _rows(y, "human")
    if y.min() < lo - 1e-9 or y.max() > hi + 1e-9:
        raise CalibrationError(f"human labels must lie in [{lo}, {hi}]")
    if f is None:
        zeros = np.zeros_like(y)
        low, high, _ = _betting_core(y, zeros, zeros, lo, hi, alpha, lo, hi)
        return Intervals(method="betting (human only)", estimate=y.mean(axis=1), low=low, high=high,
                         se=np.full(y.shape[0], np.nan), lam=np.zeros(y.shape[0]))
    f = _rows(f, "judge")
    f_unl = _rows(f_unlabelled, "judge_unlabelled")[0]
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
    return Intervals(method="betting", estimate=point, low=low, high=high, se=np.full(y.shape[0], np.nan),
                     lam=lam[:, -1])


def _switch_parts(y: np.ndarray, f: np.ndarray, lam: np.ndarray) -> tuple[int, np.ndarray, np.ndarray,
                                                                               np.ndarray, np.ndarray]:
    """The switching rule's parts per row: n, labels vary, rectifier varies, skewness g1, n >= SKEW_CONSTANT g1^2."""
    y, f = _rows(y, "human"), _rows(f, "judge")
    n = y.shape[1]
    rect = y - np.asarray(lam, dtype=float).reshape(-1)[:, None] * f
    sd = rect.std(axis=1)
    labels_vary, rect_varies = y.std(axis=1) > 1e-12, sd > 1e-12
    varies = labels_vary & rect_varies
    with np.errstate(divide="ignore", invalid="ignore"):
        skew = ((rect - rect.mean(axis=1, keepdims=True)) ** 3).mean(axis=1) / sd ** 3
    skew_ok = np.where(varies, n >= SKEW_CONSTANT * np.nan_to_num(skew, nan=np.inf) ** 2, False)
    return n, labels_vary, rect_varies, np.where(varies, skew, np.nan), skew_ok


def served_uses_clt(y: np.ndarray, f: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """The switching rule per row: True where PPI++'s CLT interval is served (see ``SWITCH_RULE``)."""
    n, labels_vary, rect_varies, _, skew_ok = _switch_parts(y, f, lam)
    clt: NDArray[np.bool_] = labels_vary & rect_varies & skew_ok & (n >= MIN_N_CLT)
    return clt


def switch_reason(y: np.ndarray | Sequence[float], f: np.ndarray | Sequence[float], lam: float) -> str:
    """Why the switching rule serves PPI++ or betting for one labelled sample, with its numbers."""
    n, labels_vary, rect_varies, skew, skew_ok = _switch_parts(np.asarray(y, dtype=float),
                                                               np.asarray(f, dtype=float), np.asarray([lam]))
    if n < MIN_N_CLT:
        return f"betting: n = {n} < {MIN_N_CLT} labelled items"
    if not labels_vary[0]:
        return "betting: every human label in the labelled sample is the same"
    if not rect_varies[0]:
        return "betting: the rectifier Y - lambda f does not vary in the labelled sample"
    g1 = float(skew[0])
    bound = SKEW_CONSTANT * g1 ** 2
    if not skew_ok[0]:
        return f"betting: n = {n} < {SKEW_CONSTANT} g1^2 = {bound:.1f} (the rectifier's skewness g1 = {g1:.3f})"
    return (f"ppi++: n = {n} >= {MIN_N_CLT}, the labels and the rectifier vary, and n >= {SKEW_CONSTANT} g1^2 = "
            f"{bound:.1f} (g1 = {g1:.3f})")


def _label_count(value: float) -> int | None:
    """ceil(value), at least MIN_N_CLT; None when it is not a finite count (a width too small to represent)."""
    return max(MIN_N_CLT, math.ceil(value)) if math.isfinite(value) else None


def label_budget(y: np.ndarray | Sequence[float], f: np.ndarray | Sequence[float],
                 f_unlabelled: np.ndarray | Sequence[float], alpha: float,
                 target_half_width: float | None = None) -> LabelBudget:
    """Labels needed for ``target_half_width`` under PPI++ (default: half today's PPI++ half-width)."""
    ppi = ppi_intervals(y, f, f_unlabelled, alpha)
    y_arr, f_arr = np.asarray(y, dtype=float), np.asarray(f, dtype=float)
    f_unl = np.asarray(f_unlabelled, dtype=float)
    lam = float(ppi.lam[0])
    z = _z(alpha)
    width = target_half_width if target_half_width is not None else 0.5 * z * float(ppi.se[0])
    if not (math.isfinite(width) and width > 0):
        return LabelBudget(target_half_width=float(width), labels_needed=None, more_labels=None,
                           labels_needed_human_only=None)
    var_rect = float((y_arr - lam * f_arr).var())
    room = width ** 2 - z ** 2 * lam ** 2 * float(f_unl.var()) / f_unl.size
    needed = None if room <= 0 else _label_count(z ** 2 * var_rect / room)
    human = None if width ** 2 <= 0 else _label_count(z ** 2 * float(y_arr.var()) / width ** 2)
    return LabelBudget(target_half_width=float(width), labels_needed=needed,
                       more_labels=None if needed is None else max(0, needed - y_arr.size),
                       labels_needed_human_only=human)


def _human_only(y: np.ndarray, lo: float, hi: float, alpha: float, binary: bool) -> tuple[tuple[float, float], str]:
    """The finite-sample human-only interval: Clopper-Pearson for 0/1 labels, else betting on Y alone."""
    if binary and np.all((y == 0) | (y == 1)):
        return clopper_pearson(int(y.sum()), y.size, alpha), "clopper-pearson"
    result = betting_intervals(y, None, None, lo, hi, alpha)
    return (float(result.low[0]), float(result.high[0])), result.method


def _answer(metric: str, y: np.ndarray, f: np.ndarray, f_unl: np.ndarray, lo: float, hi: float, alpha: float,
            binary: bool, target_half_width: float | None) -> EstimateAnswer:
    if y.size != f.size:
        raise EmptyCalibrationError(f"every labelled item needs a human label and a judge verdict "
                                    f"({y.size} labels, {f.size} verdicts)")
    if y.size < 2 or f_unl.size < 2:
        raise EmptyCalibrationError("need at least 2 labelled and 2 unlabelled items")
    ppi = ppi_intervals(y, f, f_unl, alpha)
    classical = classical_intervals(y, alpha)
    bet = betting_intervals(y, f, f_unl, lo, hi, alpha)
    clt = bool(served_uses_clt(y, f, ppi.lam)[0])
    if clt:
        interval = (float(ppi.low[0]), float(ppi.high[0]))
        human_interval, human_method = (float(classical.low[0]), float(classical.high[0])), "classical"
    else:
        interval = (float(bet.low[0]), float(bet.high[0]))
        human_interval, human_method = _human_only(y, lo, hi, alpha, binary)
    se_ppi, se_classical = float(ppi.se[0]), float(classical.se[0])
    gain = se_classical ** 2 / se_ppi ** 2 if se_ppi > 0 and se_classical > 0 else None
    return EstimateAnswer(
        metric=metric, alpha=alpha, estimate=float(ppi.estimate[0]), interval=interval,
        method="ppi++" if clt else "betting", human_only_interval=human_interval, human_only_method=human_method,
        effective_sample_gain=gain, n_labelled=int(y.size), n_unlabelled=int(f_unl.size), lam=float(ppi.lam[0]),
        label_budget=label_budget(y, f, f_unl, alpha, target_half_width),
        ppi_interval=(float(ppi.low[0]), float(ppi.high[0])), betting_interval=(float(bet.low[0]),
                                                                                  float(bet.high[0])),
        classical_interval=(float(classical.low[0]), float(classical.high[0])),
        switch_reason=switch_reason(y, f, float(ppi.lam[0])))


def _vector(values: Sequence[float], name: str) -> np.ndarray:
    vector: NDArray[np.float64] = _rows(values, name)[0]
    return vector


def estimate_mean(sample: Sample, alpha: float, *, scale_max: int = 5, scale_min: int = 1,
                  target_half_width: float | None = None) -> EstimateAnswer:
    """The served answer for a system's mean score on the scale ``scale_min..scale_max``."""
    y = _vector(sample.human, "human")
    f, f_unl = _vector(sample.judge, "judge"), _vector(sample.judge_unlabelled, "judge_unlabelled")
    return _answer("mean", y, f, f_unl, float(scale_min), float(scale_max), alpha, False, target_half_width)


def estimate_pass_rate(sample: Sample, alpha: float, threshold: float, *,
                       target_half_width: float | None = None) -> EstimateAnswer:
    """The served answer for the share of items whose human score is >= ``threshold`` (judge: its score >=)."""
    y = (_vector(sample.human, "human") >= threshold).astype(float)
    f = (_vector(sample.judge, "judge") >= threshold).astype(float)
    f_unl = (_vector(sample.judge_unlabelled, "judge_unlabelled") >= threshold).astype(float)
    return _answer("pass_rate", y, f, f_unl, 0.0, 1.0, alpha, True, target_half_width)


def estimate_win_rate(sample: Sample, alpha: float, *, target_half_width: float | None = None) -> EstimateAnswer:
    """The served answer for a win rate: values 1 (win), 0 (loss) or 0.5 (tie)."""
    arrays = [_vector(v, name) for v, name in ((sample.human, "human"), (sample.judge, "judge"),
                                                (sample.judge_unlabelled, "judge_unlabelled"))]
    for array, name in zip(arrays, ("human", "judge", "judge_unlabelled"), strict=True):
        if not np.all(np.isin(array, (0.0, 0.5, 1.0))):
            raise CalibrationError(f"{name}: win_rate values must be 0, 0.5 or 1")
    y, f, f_unl = arrays
    return _answer("win_rate", y, f, f_unl, 0.0, 1.0, alpha, True, target_half_width)


def estimate_difference(a: EstimateAnswer, b: EstimateAnswer) -> EstimateAnswer:
    """theta_a - theta_b from two independent systems' answers computed at alpha / 2 each (union bound).

    Both served by PPI++: the CLT interval of the difference at the combined level (variances add); otherwise
    the Minkowski difference of the two finite-sample intervals, which covers with probability >= 1 - alpha.
    """
    if abs(a.alpha - b.alpha) > 1e-12:
        raise CalibrationError("both systems must be answered at the same alpha")
    alpha = 2 * a.alpha

    def minus(x: tuple[float, float], y: tuple[float, float]) -> tuple[float, float]:
        return x[0] - y[1], x[1] - y[0]

    interval = minus(a.interval, b.interval)
    human = minus(a.human_only_interval, b.human_only_interval)
    method = "ppi++ (both)" if a.method == b.method == "ppi++" else "union of per-system intervals"
    if a.method == b.method == "ppi++" and a.ppi_interval and b.ppi_interval:
        z_half, z_full = _z(a.alpha), _z(alpha)
        se_a = (a.ppi_interval[1] - a.ppi_interval[0]) / (2 * z_half)
        se_b = (b.ppi_interval[1] - b.ppi_interval[0]) / (2 * z_half)
        centre = a.estimate - b.estimate
        half = z_full * math.hypot(se_a, se_b)
        interval, method = (centre - half, centre + half), "ppi++"
        if a.classical_interval and b.classical_interval:
            ca = (a.classical_interval[1] - a.classical_interval[0]) / (2 * z_half)
            cb = (b.classical_interval[1] - b.classical_interval[0]) / (2 * z_half)
            c_centre = 0.5 * (a.classical_interval[0] + a.classical_interval[1]
                              - b.classical_interval[0] - b.classical_interval[1])
            human = (c_centre - z_full * math.hypot(ca, cb), c_centre + z_full * math.hypot(ca, cb))
    gains = [g for g in (a.effective_sample_gain, b.effective_sample_gain) if g is not None]
    return EstimateAnswer(
        metric="difference", alpha=alpha, estimate=a.estimate - b.estimate, interval=interval, method=method,
        human_only_interval=human, human_only_method=f"{a.human_only_method} - {b.human_only_method}",
        effective_sample_gain=min(gains) if len(gains) == 2 else None, n_labelled=a.n_labelled + b.n_labelled,
        n_unlabelled=a.n_unlabelled + b.n_unlabelled, lam=float("nan"), label_budget=None,
        switch_reason=f"first system: {a.switch_reason}; second system: {b.switch_reason}")


def fisher_z_interval(r: float, n: int, k: int, alpha: float) -> tuple[float, float] | None:
    """(1 - alpha) interval of a (partial) correlation ``r`` from ``n`` rows controlling ``k`` covariate columns:
    Fisher z, ``tanh(atanh(r) -+ z_{1-alpha/2} / sqrt(n - k - 3))`` (the partial correlation's df ``n - 2 - k``
    minus one, as for the ordinary correlation where k = 0); None when ``n - k - 3 < 1`` or ``|r| = 1``."""
    _check_alpha(alpha)
    if n - k - 3 < 1 or not math.isfinite(r) or abs(r) >= 1:
        return None
    centre, half = math.atanh(r), _z(alpha) / math.sqrt(n - k - 3)
    return math.tanh(centre - half), math.tanh(centre + half)
