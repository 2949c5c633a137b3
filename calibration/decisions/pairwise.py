"""Certified pairwise decisions: accept a judge's (or panel's) preference only when human agreement is certified.

The Trust-or-Escalate procedure (Jung, Brahman, Choi, ICLR 2025) with a bound valid for clustered pairs.
Rules, stated once:

* **Coding.** A pair {a, b} is coded in its canonical order: ``+1`` = a preferred, ``-1`` = b preferred,
  ``0`` = tie (or no preference).
* **Confidence signal** (:func:`vote_signal`). Over a pair's verdicts (both presentation orders, every
  repetition; for a panel, every member's verdicts, each member weighted equally), the share of the weight naming
  a (``s_a``) and naming b (``s_b``); ties count in the denominator. ``preferred`` = the side with the larger
  share, ``confidence`` = that share; equal shares give ``preferred = 0`` and ``confidence = 0`` (never accepted).
* **Human label** (:func:`human_majority`): the outcome (a, b, tie) with strictly most votes; no strict plurality
  is a tie.
* **Error** (:func:`disagreements`). An accepted pair is an error when the human label is not the preferred
  side. Human ties: ``ties="exclude"`` leaves the pair out of calibration and of the error (the guarantee is then
  P(human prefers the other side | accepted, human not tied)); ``ties="error"`` counts a human tie as a
  disagreement (the stricter reading).
* **Acceptance.** Pair accepted at level l when ``preferred != 0`` and ``confidence >= l - 1e-12``.
* **Fixed-sequence test** (:func:`certify_threshold`). Levels are tested from the most confident downwards; the
  null at level l is "risk(l) > alpha", risk(l) = E[errors among accepted] / E[accepted]. The level is certified
  when its p-value is <= delta; testing stops at the first level not certified (also one that accepts no
  calibration pair). The threshold is the last certified level (None: nothing certified, always abstain). With
  valid p-values this controls the family-wise error at delta, so P(risk(threshold) <= alpha) >= 1 - delta.
  With ``starts`` (k fixed start levels; Learn-then-Test's fixed sequence with multiple starts) one such chain
  runs from each start downwards at delta / k (Bonferroni over chains); the threshold is the lowest level any
  chain certified. It helps a low-power bound when the most confident levels accept few pairs (a chain that
  starts there stops at once).
* **Bounds** (the p-value per level):

  - ``group_betting`` (default; valid with several pairs per group, e.g. the 10 pairs of a Vicuna80 question).
    Groups (questions, battles) are the exchangeable units. Per group g, e_g errors among a_g accepted pairs and
    x_g = alpha + (e_g - alpha a_g) / m in [0, 1] (m = ``group_size_bound`` >= every group's pair count); risk(l)
    <= alpha exactly when E[x] <= alpha. The p-value of "E[x] >= alpha" is 1 / K with K the mean over the fixed
    bets nu in ``BETS`` / (1 - alpha) of prod_g (1 - nu (x_g - alpha)): each product has expectation <= 1 under
    the null for independent groups, so by Markov P(K >= 1/delta) <= delta (a betting test, Waudby-Smith &
    Ramdas 2024, with a fixed mixture of constant bets: order-free and deterministic).
  - ``pair_binomial`` (Trust-or-Escalate's own): the exact binomial p-value P(Bin(n, alpha) <= k) over n
    accepted pairs with k errors (equivalently: the Clopper-Pearson upper bound at 1 - delta is <= alpha). It
    treats pairs as independent; with pairs clustered in groups it is only as valid as a group-resampling
    simulation shows (the offline study runs one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from calibration.decisions.risk_control import clopper_pearson_upper
from calibration.errors import CalibrationError, EmptyCalibrationError, InvalidAlphaError

__all__ = [
    "BETS",
    "BOUNDS",
    "DEFAULT_LEVELS",
    "GROUP_STARTS",
    "LEVEL_TOLERANCE",
    "Bound",
    "LevelTest",
    "PairSignal",
    "PairwiseCertificate",
    "Ties",
    "accepted",
    "binomial_p_value",
    "certify_threshold",
    "clopper_pearson_upper",
    "disagreements",
    "distinct_starts",
    "group_betting_p_value",
    "human_majority",
    "vote_signal",
]

Bound = Literal["group_betting", "pair_binomial"]
Ties = Literal["exclude", "error"]
BOUNDS: tuple[Bound, ...] = ("group_betting", "pair_binomial")
#: Candidate thresholds, most confident first (fixed before any data: 1.00, 0.95, ..., 0.05).
DEFAULT_LEVELS: tuple[float, ...] = tuple(round(k / 20, 2) for k in range(20, 0, -1))
#: Bet sizes as shares of the largest safe bet 1 / (1 - alpha); fixed, so the mixture is a valid test.
BETS: tuple[float, ...] = (0.25, 0.5, 0.75, 0.95)
#: Start levels of the multi-start fixed sequence used with ``group_betting``: unanimity, 4/5 and 3/5 of the
#: vote share (fixed constants, not fitted; a group bound has too little power at the sparse top levels alone).
GROUP_STARTS: tuple[float, ...] = (1.0, 0.8, 0.6)
LEVEL_TOLERANCE = 1e-12


@dataclass(frozen=True)
class PairSignal:
    """Per pair: ``preferred`` (+1 = a, -1 = b, 0 = none) and ``confidence`` in [0, 1] (0 when none)."""

    preferred: np.ndarray
    confidence: np.ndarray


@dataclass(frozen=True)
class LevelTest:
    """One tested level: accepted calibration pairs and groups, errors, p-value, certified or not."""

    level: float
    chain: int  # index of the start the chain began at (0 without starts)
    n_accepted: int
    n_errors: int
    n_groups_accepting: int
    p_value: float
    certified: bool


@dataclass(frozen=True)
class PairwiseCertificate:
    """The outcome of the fixed-sequence test: the threshold (None: abstain always) and every tested level."""

    alpha: float
    delta: float
    bound: str
    threshold: float | None
    n_pairs: int
    n_groups: int
    group_size_bound: int
    tests: tuple[LevelTest, ...]
    starts: tuple[float, ...] = ()


def _check_level(value: float, name: str) -> float:
    value = float(value)
    if not np.isfinite(value) or not 0.0 < value < 1.0:
        raise InvalidAlphaError(f"{name} must lie strictly between 0 and 1, got {value!r}")
    return value


def vote_signal(votes: np.ndarray, weights: np.ndarray | None = None) -> PairSignal:
    """Preferred side and confidence per pair (module rules) from ``votes`` (n_pairs, k) in {+1, -1, 0} or NaN
    (absent) and optional non-negative ``weights`` of the same shape (default 1 per present verdict).

    Raises:
        CalibrationError: a vote outside {+1, -1, 0, NaN}, a negative weight, or shapes that differ.
    """
    v = np.asarray(votes, dtype=float)
    if v.ndim != 2:
        raise CalibrationError(f"votes must be a 2-D array (pairs x verdicts), got shape {v.shape}")
    present = ~np.isnan(v)
    if not np.all(np.isin(v[present], (-1.0, 0.0, 1.0))):
        raise CalibrationError("votes must be +1 (a), -1 (b), 0 (tie) or NaN (absent)")
    w = np.ones_like(v) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != v.shape or np.any(w[present] < 0) or not np.all(np.isfinite(w[present])):
        raise CalibrationError(f"weights must be finite, >= 0 and of the votes' shape {v.shape}, got {w.shape}")
    w = np.where(present, w, 0.0)
    total = w.sum(axis=1)
    safe = np.where(total > 0, total, 1.0)
    share_a = np.where(v == 1.0, w, 0.0).sum(axis=1) / safe
    share_b = np.where(v == -1.0, w, 0.0).sum(axis=1) / safe
    preferred = np.sign(share_a - share_b).astype(np.int8)
    preferred[np.isclose(share_a, share_b, rtol=0.0, atol=LEVEL_TOLERANCE) | (total <= 0)] = 0
    confidence = np.where(preferred != 0, np.maximum(share_a, share_b), 0.0)
    return PairSignal(preferred=preferred, confidence=confidence)


def human_majority(n_a: np.ndarray, n_b: np.ndarray, n_tie: np.ndarray) -> np.ndarray:
    """Per pair the human label from vote counts: +1 / -1 / 0 for the strict plurality of a / b / tie, else 0."""
    a, b, t = (np.asarray(x, dtype=int) for x in (n_a, n_b, n_tie))
    return np.where((a > b) & (a > t), 1, np.where((b > a) & (b > t), -1, 0)).astype(np.int8)


def disagreements(preferred: np.ndarray, human: np.ndarray, ties: Ties = "exclude") -> tuple[np.ndarray, np.ndarray]:
    """``(errors, counted)`` per pair: error = human label differs from ``preferred``; ``counted`` is False for a
    human tie under ``ties="exclude"`` (left out of calibration and error), else True."""
    if ties not in ("exclude", "error"):
        raise CalibrationError(f"ties must be 'exclude' or 'error', got {ties!r}")
    p, h = np.asarray(preferred), np.asarray(human)
    counted = np.ones(h.shape, dtype=bool) if ties == "error" else h != 0
    return p != h, counted


def accepted(signal_preferred: np.ndarray, confidence: np.ndarray, threshold: float | None) -> np.ndarray:
    """Boolean mask of pairs accepted at ``threshold`` (none when it is None)."""
    c = np.asarray(confidence, dtype=float)
    if threshold is None:
        return np.zeros(c.shape, dtype=bool)
    accepted: NDArray[np.bool_] = (np.asarray(signal_preferred) != 0) & (c >= threshold - LEVEL_TOLERANCE)
    return accepted


def binomial_p_value(n_errors: int, n_accepted: int, alpha: float) -> float:
    """Exact p-value of "error rate >= alpha" after ``n_errors`` in ``n_accepted`` trials: P(Bin(n, alpha) <= k);
    1 when nothing was accepted."""
    if n_accepted <= 0:
        return 1.0
    return float(stats.binom.cdf(n_errors, n_accepted, alpha))


def group_betting_p_value(
    group_errors: np.ndarray, group_accepted: np.ndarray, alpha: float, group_size_bound: int
) -> float:
    """Betting p-value of "E[errors] >= alpha E[accepted]" over independent groups (module rules, ``group_betting``).

    Raises:
        CalibrationError: a group with more errors than accepted pairs or more accepted than ``group_size_bound``.
    """
    e, a = np.asarray(group_errors, dtype=float), np.asarray(group_accepted, dtype=float)
    if np.any(e > a) or np.any(e < 0) or np.any(a > group_size_bound):
        raise CalibrationError(f"each group needs 0 <= errors <= accepted <= group_size_bound ({group_size_bound})")
    x = alpha + (e - alpha * a) / group_size_bound
    log_capital = [np.sum(np.log1p(-(share / (1.0 - alpha)) * (x - alpha))) for share in BETS]
    # Mean capital in log space (stable for long products), p = 1 / capital, at most 1.
    log_mean = float(np.logaddexp.reduce(log_capital) - np.log(len(BETS)))
    return float(np.exp(min(0.0, -log_mean)))


def distinct_starts(starts: tuple[float, ...], verdicts_per_pair: int) -> tuple[float, ...]:
    """``starts`` without those that accept the same pairs as a higher start when a pair's vote share is a
    multiple of 1 / ``verdicts_per_pair`` (a design fact, not data): two starts s, t are one chain when
    ceil(s k) = ceil(t k); the higher is kept. Keeps delta / k from being spent on duplicate chains."""
    if verdicts_per_pair < 1:
        raise CalibrationError(f"verdicts_per_pair must be >= 1, got {verdicts_per_pair}")
    kept, seen = [], set()
    for start in sorted(starts, reverse=True):
        key = math.ceil(start * verdicts_per_pair - 1e-9)
        if key not in seen:
            seen.add(key)
            kept.append(start)
    return tuple(kept)


def _checked_levels(levels: tuple[float, ...]) -> np.ndarray:
    """The levels as an array; CalibrationError unless non-empty and strictly decreasing within (0, 1]."""
    lv = np.asarray(levels, dtype=float)
    if lv.size == 0 or np.any(np.diff(lv) >= 0) or lv[0] > 1.0 or lv[-1] <= 0.0:
        raise CalibrationError("levels must be strictly decreasing within (0, 1]")
    return lv


def _start_indices(lv: np.ndarray, starts: tuple[float, ...]) -> list[int]:
    """The index in ``lv`` of each start (within LEVEL_TOLERANCE), [0] without starts; CalibrationError unless the
    starts are distinct members of the levels."""
    first = [
        int(np.flatnonzero(np.isclose(lv, start, rtol=0.0, atol=LEVEL_TOLERANCE))[0])
        if np.isclose(lv, start, rtol=0.0, atol=LEVEL_TOLERANCE).any()
        else -1
        for start in starts
    ] or [0]
    if min(first) < 0 or len(set(first)) != len(first):
        raise CalibrationError(f"starts {starts} must be distinct members of levels")
    return first


def certify_threshold(
    confidence: np.ndarray,
    preferred: np.ndarray,
    errors: np.ndarray,
    groups: np.ndarray,
    *,
    alpha: float,
    delta: float,
    bound: Bound = "group_betting",
    levels: tuple[float, ...] = DEFAULT_LEVELS,
    group_size_bound: int | None = None,
    starts: tuple[float, ...] = (),
) -> PairwiseCertificate:
    """Fixed-sequence test over ``levels`` (module rules) on calibration pairs (arrays of one length; ``errors``
    per pair as if accepted; ``groups`` the exchangeable unit of each pair); ``group_size_bound`` defaults to the
    largest group's pair count; ``starts`` (each one of ``levels``) runs one chain per start at delta / k.

    Raises:
        InvalidAlphaError: alpha or delta outside (0, 1).
        EmptyCalibrationError: no pair, or arrays of different lengths.
        CalibrationError: unknown bound, levels not strictly decreasing in (0, 1], a group above the size bound.
    """
    alpha, delta = _check_level(alpha, "alpha"), _check_level(delta, "delta")
    if bound not in BOUNDS:
        raise CalibrationError(f"bound must be one of {BOUNDS}, got {bound!r}")
    lv = _checked_levels(levels)
    c, p = np.asarray(confidence, dtype=float), np.asarray(preferred)
    err, g = np.asarray(errors, dtype=bool), np.asarray(groups)
    if c.size == 0 or not (c.shape == p.shape == err.shape == g.shape) or c.ndim != 1:
        raise EmptyCalibrationError("confidence, preferred, errors and groups must be 1-D, non-empty, equal length")
    _, index = np.unique(g, return_inverse=True)
    n_groups = int(index.max()) + 1
    sizes = np.bincount(index, minlength=n_groups)
    m = int(sizes.max()) if group_size_bound is None else int(group_size_bound)
    if m < sizes.max():
        raise CalibrationError(f"group_size_bound {m} is below the largest group's {int(sizes.max())} pairs")
    first = _start_indices(lv, starts)
    level_delta = delta / len(first)
    memo: dict[int, tuple[int, int, int, float]] = {}

    def test_level(i: int) -> tuple[int, int, int, float]:
        if i not in memo:
            acc = accepted(p, c, float(lv[i]))
            group_acc = np.bincount(index, weights=acc, minlength=n_groups)
            group_err = np.bincount(index, weights=acc & err, minlength=n_groups)
            n_acc, n_err = int(acc.sum()), int((acc & err).sum())
            if n_acc == 0:
                p_value = 1.0
            elif bound == "pair_binomial":
                p_value = binomial_p_value(n_err, n_acc, alpha)
            else:
                p_value = group_betting_p_value(group_err, group_acc, alpha, m)
            memo[i] = (n_acc, n_err, int((group_acc > 0).sum()), p_value)
        return memo[i]

    tests: list[LevelTest] = []
    threshold: float | None = None
    for chain, start in enumerate(first):
        for i in range(start, lv.size):
            n_acc, n_err, n_grp, p_value = test_level(i)
            certified = p_value <= level_delta
            tests.append(
                LevelTest(
                    level=float(lv[i]),
                    chain=chain,
                    n_accepted=n_acc,
                    n_errors=n_err,
                    n_groups_accepting=n_grp,
                    p_value=p_value,
                    certified=certified,
                )
            )
            if not certified:
                break
            threshold = float(lv[i]) if threshold is None else min(threshold, float(lv[i]))
    return PairwiseCertificate(
        alpha=alpha,
        delta=delta,
        bound=bound,
        threshold=threshold,
        n_pairs=int(c.size),
        n_groups=n_groups,
        group_size_bound=m,
        tests=tuple(tests),
        starts=tuple(float(lv[i]) for i in first) if starts else (),
    )
