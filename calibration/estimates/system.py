"""System-level estimates with valid intervals from a few human labels plus many judge verdicts.

The estimand is the mean human score of a system, ``theta = E[Y]``, from ``n`` labelled items (human label ``Y``
and judge verdict ``f``) and ``N`` unlabelled items (judge verdict only), all drawn at random from the same
population (the random-sampling requirement: the labelled items must be a uniform random subset).

=====================================================  ============================================================
call (module)                                           what it computes
=====================================================  ============================================================
``intervals.classical_intervals(y, alpha)``             human-only CLT interval, ``mean(y) +- z sd0(y)/sqrt(n)``
``intervals.ppi_intervals(y, f, f_unlabelled, a)``      PPI++ (power-tuned) CLT interval
``betting.betting_intervals(y, f, f_unl, lo, hi, a)``   finite-sample PPI interval (hedged-capital betting)
``intervals.clopper_pearson(successes, n, alpha)``      exact binomial interval (human-only, binary metrics)
``estimate_mean(...)`` / ``estimate_pass_rate(...)``    the served answer: switching rule, human-only interval,
``estimate_win_rate(...)`` / ``estimate_difference``    effective sample gain, label budget
=====================================================  ============================================================

The ``*_intervals`` functions take 2-D arrays (one row per resample, shape ``(B, n)``) so that a simulation runs
in one call; the ``estimate_*`` functions take one sample and answer the wire shape of ``POST /v1/estimates``.

The intervals themselves live in ``calibration.estimates.intervals`` (classical, PPI++, Clopper-Pearson) and
``calibration.estimates.betting`` (the finite-sample betting interval), each with its rule; this module serves one of
them.

Rules (stated once, used everywhere):

* **Switching rule** (``SWITCH_RULE``): PPI++'s CLT interval is served when ``n >= MIN_N_CLT`` (50), both the
  human labels and the rectifier ``Y - lambda f`` vary in the labelled sample, and ``n >= SKEW_CONSTANT * g1^2``
  (``g1`` the rectifier's sample skewness, ``ddof=0``; Cochran's rule ``n > 25 g1^2`` with twice his constant);
  otherwise the betting interval. Why: on SummEval, PPI++ alone covered only 0.86 for the most skewed
  consistency scores at n = 200 (samples that miss the rare low scores underestimate the variance, and those
  samples have a large skewness or none at all). The constants were chosen on that study (in-sample), and the
  offline study (``python -m offline estimates``) reports the served coverage they give.
* **Effective sample gain** = ``var_classical / var_PPI++`` (ratio of the two CLT variance estimates, the same as
  the squared width ratio of the two CLT intervals): how many human labels each label is worth with the judge.
  ``served_gain`` is the squared width ratio of the intervals served (human-only / served), and ``gain_note``
  says in the answer which of the two the figures describe (with betting served they differ; see its text).
* **Label budget**: labels for a target half-width ``W`` under PPI++, ``n = z^2 var0(Y - lambda f) /
  (W^2 - z^2 lambda^2 var0(f_unl)/N)`` (no count when the unlabelled term alone exceeds ``W``), at least
  ``MIN_N_CLT``, and never more than the human-only count ``z^2 var0(Y) / W^2`` (PPI++ tunes lambda again at
  the larger n, and lambda = 0 is the classical interval); the default target is half the current PPI++ half-width.
* **Order**: the answer depends on the multisets of the sample only. The labelled pairs are sorted (human label,
  then judge verdict) and the unlabelled verdicts sorted before anything is summed; the betting intervals then
  read them in ``betting.canonical_order`` (sorted, then the fixed permutation of seed ``betting.ORDER_SEED``).
* **Estimate inside its interval**: every served interval (and the human-only one) contains its estimate (the
  betting bounds are widened to it where they miss it, which only happens at large alpha; a superset keeps the
  coverage).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec
import numpy as np
from numpy.typing import NDArray

from calibration.errors import CalibrationError, EmptyCalibrationError
from calibration.estimates.betting import betting_intervals
from calibration.estimates.intervals import (
    as_rows,
    classical_intervals,
    clopper_pearson,
    ppi_intervals,
    two_sided_z,
)

__all__ = [
    "MIN_N_CLT",
    "SKEW_CONSTANT",
    "SWITCH_RULE",
    "EstimateAnswer",
    "LabelBudget",
    "Sample",
    "estimate_difference",
    "estimate_mean",
    "estimate_pass_rate",
    "estimate_win_rate",
    "label_budget",
    "served_uses_clt",
    "switch_reason",
]

MIN_N_CLT = 50
# Cochran's rule for a CLT interval on a skewed population is n > 25 g1^2 (Sampling Techniques, 1977); twice
# his constant is what kept PPI++ >= 0.93 on SummEval's skewed consistency scores (a choice made on that study).
SKEW_CONSTANT = 50
SWITCH_RULE = (
    f"PPI++ CLT interval when n >= {MIN_N_CLT}, the human labels and the rectifier Y - lambda f both vary "
    f"in the labelled sample, and n >= {SKEW_CONSTANT} g1^2 with g1 the rectifier's sample skewness; "
    "otherwise the finite-sample betting interval"
)


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
    served_gain: float | None = None  # (human-only width / served width)^2: the gain in the intervals served
    gain_note: str | None = None  # how effective_sample_gain and the label budget relate to the intervals served


class Sample(msgspec.Struct, frozen=True, kw_only=True):
    """One system's data: human labels and judge verdicts of the labelled items, judge verdicts of the rest."""

    human: Sequence[float]
    judge: Sequence[float]
    judge_unlabelled: Sequence[float]


def _switch_parts(
    y: np.ndarray, f: np.ndarray, lam: np.ndarray
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The switching rule's parts per row: n, labels vary, rectifier varies, skewness g1, n >= SKEW_CONSTANT g1^2."""
    y, f = as_rows(y, "human"), as_rows(f, "judge")
    n = y.shape[1]
    rect = y - np.asarray(lam, dtype=float).reshape(-1)[:, None] * f
    sd = rect.std(axis=1)
    labels_vary, rect_varies = y.std(axis=1) > 1e-12, sd > 1e-12
    varies = labels_vary & rect_varies
    with np.errstate(divide="ignore", invalid="ignore"):
        skew = ((rect - rect.mean(axis=1, keepdims=True)) ** 3).mean(axis=1) / sd**3
    skew_ok = np.where(varies, n >= SKEW_CONSTANT * np.nan_to_num(skew, nan=np.inf) ** 2, False)
    return n, labels_vary, rect_varies, np.where(varies, skew, np.nan), skew_ok


def served_uses_clt(y: np.ndarray, f: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """The switching rule per row: True where PPI++'s CLT interval is served (see ``SWITCH_RULE``)."""
    n, labels_vary, rect_varies, _, skew_ok = _switch_parts(y, f, lam)
    clt: NDArray[np.bool_] = labels_vary & rect_varies & skew_ok & (n >= MIN_N_CLT)
    return clt


def switch_reason(y: np.ndarray | Sequence[float], f: np.ndarray | Sequence[float], lam: float) -> str:
    """Why the switching rule serves PPI++ or betting for one labelled sample, with its numbers."""
    n, labels_vary, rect_varies, skew, skew_ok = _switch_parts(
        np.asarray(y, dtype=float), np.asarray(f, dtype=float), np.asarray([lam])
    )
    if n < MIN_N_CLT:
        return f"betting: n = {n} < {MIN_N_CLT} labelled items"
    if not labels_vary[0]:
        return "betting: every human label in the labelled sample is the same"
    if not rect_varies[0]:
        return "betting: the rectifier Y - lambda f does not vary in the labelled sample"
    g1 = float(skew[0])
    bound = SKEW_CONSTANT * g1**2
    if not skew_ok[0]:
        return f"betting: n = {n} < {SKEW_CONSTANT} g1^2 = {bound:.1f} (the rectifier's skewness g1 = {g1:.3f})"
    return (
        f"ppi++: n = {n} >= {MIN_N_CLT}, the labels and the rectifier vary, and n >= {SKEW_CONSTANT} g1^2 = "
        f"{bound:.1f} (g1 = {g1:.3f})"
    )


def _label_count(value: float) -> int | None:
    """ceil(value), at least MIN_N_CLT; None when it is not a finite count (a width too small to represent)."""
    return max(MIN_N_CLT, math.ceil(value)) if math.isfinite(value) else None


def label_budget(
    y: np.ndarray | Sequence[float],
    f: np.ndarray | Sequence[float],
    f_unlabelled: np.ndarray | Sequence[float],
    alpha: float,
    target_half_width: float | None = None,
) -> LabelBudget:
    """Labels needed for ``target_half_width`` under PPI++ (default: half today's PPI++ half-width)."""
    ppi = ppi_intervals(y, f, f_unlabelled, alpha)
    y_arr, f_arr = np.asarray(y, dtype=float), np.asarray(f, dtype=float)
    f_unl = np.asarray(f_unlabelled, dtype=float)
    lam = float(ppi.lam[0])
    z = two_sided_z(alpha)
    width = target_half_width if target_half_width is not None else 0.5 * z * float(ppi.se[0])
    if not (math.isfinite(width) and width > 0):
        return LabelBudget(
            target_half_width=float(width), labels_needed=None, more_labels=None, labels_needed_human_only=None
        )
    var_rect = float((y_arr - lam * f_arr).var())
    room = width**2 - z**2 * lam**2 * float(f_unl.var()) / f_unl.size
    tuned = None if room <= 0 else _label_count(z**2 * var_rect / room)
    human = None if width**2 <= 0 else _label_count(z**2 * float(y_arr.var()) / width**2)
    # PPI++ at the larger n tunes lambda again and lambda = 0 is the classical interval: never more than humans alone
    needed = tuned if human is None else human if tuned is None else min(tuned, human)
    return LabelBudget(
        target_half_width=float(width),
        labels_needed=needed,
        more_labels=None if needed is None else max(0, needed - y_arr.size),
        labels_needed_human_only=human,
    )


def _human_only(y: np.ndarray, lo: float, hi: float, alpha: float, binary: bool) -> tuple[tuple[float, float], str]:
    """The finite-sample human-only interval: Clopper-Pearson for 0/1 labels, else betting on Y alone."""
    if binary and np.all((y == 0) | (y == 1)):
        return clopper_pearson(int(y.sum()), y.size, alpha), "clopper-pearson"
    result = betting_intervals(y, None, None, lo, hi, alpha)
    return (float(result.low[0]), float(result.high[0])), result.method


def _canonical(y: np.ndarray, f: np.ndarray, f_unl: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sample in one order that depends on its multisets only (labelled pairs sorted by human label, then
    judge verdict; unlabelled verdicts sorted): every sum below is then the same floating-point sum whatever order
    the caller sent (the betting interval then reads its own arrival order, ``betting.canonical_order``)."""
    order = np.lexsort((f, y))
    return y[order], f[order], np.sort(f_unl)


def _gain_note(method: str, gain: float | None, served_gain: float | None) -> str:
    """How ``effective_sample_gain`` and the label budget relate to the intervals served."""
    if method == "ppi++":
        return (
            "effective_sample_gain and label_budget are those of the PPI++ and classical CLT intervals, the ones "
            "served here"
        )
    served = "not defined" if served_gain is None else f"{served_gain:.3g}"
    clt = "not defined" if gain is None else f"{gain:.3g}"
    return (
        f"effective_sample_gain ({clt}) and label_budget are CLT figures (PPI++ against classical: what the judge is "
        f"worth once n >= {MIN_N_CLT} serves PPI++); at this n the finite-sample betting intervals are served, and "
        f"their squared width ratio (human-only / served) is {served}: below 1 the betting interval with the judge "
        "is wider, because it spends alpha/10 on the judge's mean, hedges its bets over that mean's interval, "
        "learns lambda from earlier labels only and mixes with the human-only capital (a factor 2)"
    )


def _answer(
    metric: str,
    y: np.ndarray,
    f: np.ndarray,
    f_unl: np.ndarray,
    lo: float,
    hi: float,
    alpha: float,
    binary: bool,
    target_half_width: float | None,
) -> EstimateAnswer:
    """The served answer of one sample: PPI++ or betting by the switching rule, with its human-only twin."""
    if y.size != f.size:
        raise EmptyCalibrationError(
            f"every labelled item needs a human label and a judge verdict ({y.size} labels, {f.size} verdicts)"
        )
    if y.size < 2 or f_unl.size < 2:
        raise EmptyCalibrationError("need at least 2 labelled and 2 unlabelled items")
    y, f, f_unl = _canonical(y, f, f_unl)
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
    estimate = float(ppi.estimate[0])
    # the point is in its interval: the betting bounds and the PPI++ point are different float paths to one mean,
    # which can disagree in the last bit (the interval was [2.055555555555556, ...] around 2.0555555555555554)
    interval = (min(interval[0], estimate), max(interval[1], estimate))
    se_ppi, se_classical = float(ppi.se[0]), float(classical.se[0])
    gain = se_classical**2 / se_ppi**2 if se_ppi > 0 and se_classical > 0 else None
    served_width, human_width = interval[1] - interval[0], human_interval[1] - human_interval[0]
    served_gain = (human_width / served_width) ** 2 if served_width > 0 and human_width > 0 else None
    method = "ppi++" if clt else "betting"
    return EstimateAnswer(
        metric=metric,
        alpha=alpha,
        estimate=estimate,
        interval=interval,
        method=method,
        human_only_interval=human_interval,
        human_only_method=human_method,
        effective_sample_gain=gain,
        served_gain=served_gain,
        gain_note=_gain_note(method, gain, served_gain),
        n_labelled=int(y.size),
        n_unlabelled=int(f_unl.size),
        lam=float(ppi.lam[0]),
        label_budget=label_budget(y, f, f_unl, alpha, target_half_width),
        ppi_interval=(float(ppi.low[0]), float(ppi.high[0])),
        betting_interval=(float(bet.low[0]), float(bet.high[0])),
        classical_interval=(float(classical.low[0]), float(classical.high[0])),
        switch_reason=switch_reason(y, f, float(ppi.lam[0])),
    )


def _vector(values: Sequence[float], name: str) -> np.ndarray:
    """``values`` as one finite vector."""
    vector: NDArray[np.float64] = as_rows(values, name)[0]
    return vector


def estimate_mean(
    sample: Sample, alpha: float, *, scale_max: int = 5, scale_min: int = 1, target_half_width: float | None = None
) -> EstimateAnswer:
    """The served answer for a system's mean score on the scale ``scale_min..scale_max``."""
    y = _vector(sample.human, "human")
    f, f_unl = _vector(sample.judge, "judge"), _vector(sample.judge_unlabelled, "judge_unlabelled")
    return _answer("mean", y, f, f_unl, float(scale_min), float(scale_max), alpha, False, target_half_width)


def estimate_pass_rate(
    sample: Sample, alpha: float, threshold: float, *, target_half_width: float | None = None
) -> EstimateAnswer:
    """The served answer for the share of items whose human score is >= ``threshold`` (judge: its score >=)."""
    y = (_vector(sample.human, "human") >= threshold).astype(float)
    f = (_vector(sample.judge, "judge") >= threshold).astype(float)
    f_unl = (_vector(sample.judge_unlabelled, "judge_unlabelled") >= threshold).astype(float)
    return _answer("pass_rate", y, f, f_unl, 0.0, 1.0, alpha, True, target_half_width)


def estimate_win_rate(sample: Sample, alpha: float, *, target_half_width: float | None = None) -> EstimateAnswer:
    """The served answer for a win rate: values 1 (win), 0 (loss) or 0.5 (tie)."""
    arrays = [
        _vector(v, name)
        for v, name in ((sample.human, "human"), (sample.judge, "judge"), (sample.judge_unlabelled, "judge_unlabelled"))
    ]
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
        z_half, z_full = two_sided_z(a.alpha), two_sided_z(alpha)
        se_a = (a.ppi_interval[1] - a.ppi_interval[0]) / (2 * z_half)
        se_b = (b.ppi_interval[1] - b.ppi_interval[0]) / (2 * z_half)
        centre = a.estimate - b.estimate
        half = z_full * math.hypot(se_a, se_b)
        interval, method = (centre - half, centre + half), "ppi++"
        if a.classical_interval and b.classical_interval:
            ca = (a.classical_interval[1] - a.classical_interval[0]) / (2 * z_half)
            cb = (b.classical_interval[1] - b.classical_interval[0]) / (2 * z_half)
            c_centre = 0.5 * (
                a.classical_interval[0] + a.classical_interval[1] - b.classical_interval[0] - b.classical_interval[1]
            )
            human = (c_centre - z_full * math.hypot(ca, cb), c_centre + z_full * math.hypot(ca, cb))
    gains = [g for g in (a.effective_sample_gain, b.effective_sample_gain) if g is not None]
    return EstimateAnswer(
        metric="difference",
        alpha=alpha,
        estimate=a.estimate - b.estimate,
        interval=interval,
        method=method,
        human_only_interval=human,
        human_only_method=f"{a.human_only_method} - {b.human_only_method}",
        effective_sample_gain=min(gains) if len(gains) == 2 else None,
        n_labelled=a.n_labelled + b.n_labelled,
        n_unlabelled=a.n_unlabelled + b.n_unlabelled,
        lam=float("nan"),
        label_budget=None,
        switch_reason=f"first system: {a.switch_reason}; second system: {b.switch_reason}",
    )
