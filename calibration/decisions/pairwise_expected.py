"""Pairwise accept / abstain in expectation, questions (groups) as the unit: the ``expected`` mode's threshold.

The PAC certificate of :mod:`calibration.decisions.pairwise` needs far more labelled questions than users have;
this rule keeps its promise on average over the draw of the calibration questions instead. Rules, stated once:

* **Units.** Each pair belongs to one group (a question; an Arena battle is its own group). The sorted distinct
  group ids are permuted with ``numpy.random.default_rng([seed, 1])``; the first floor(0.2 G) of them (at least
  1) are FIT, the rest CERTIFY (:func:`fit_groups`). FIT and CERTIFY hold different groups.
* **Pairs that count.** Errors are :func:`calibration.decisions.pairwise.disagreements` (``ties="exclude"``
  default: a pair with a human tie is left out of both parts before anything is drawn or counted).
* **Candidates.** The levels ``DEFAULT_LEVELS`` (1.00, 0.95, ..., 0.05); a pair is accepted at level l when it
  prefers a side and its confidence is >= l - 1e-12 (:func:`calibration.decisions.pairwise.accepted`).
* **Choice of the level** (:func:`choose_level`, FIT only). Among the levels whose FIT posterior mean error
  (e + 1) / (m + 2) is <= alpha (m FIT pairs accepted at the level, e errors among them), the one maximising
  share x E[phi]: share = m / (FIT pairs), E[phi] predicted for the CERTIFY draw count n with a beta-binomial,
  A = round(share x n), E ~ BetaBinomial(A, e + 1, m - e + 1) (:func:`expected_phi`). Ties: the higher level. No
  level qualifies: nothing is tested and nothing is accepted.
* **Test on CERTIFY.** One pair is drawn uniformly per CERTIFY group among its pairs that count
  (:func:`calibration.decisions.selective_risk.one_per_document`, ``default_rng([seed, 4])``; inside a group the pairs
  are first sorted by confidence, human label and preferred side, so the draw does not depend on the input's order).
  Among the n drawn pairs, A are accepted at the chosen level and E of those are errors. The level is accepted with
  probability phi = min(1, alpha (A + 1) / (E + 1)) by one seeded uniform u
  (:func:`calibration.decisions.selective_risk.row_uniform` ``(seed, "accept", position, cell)``, cell = "judge|dataset"
  (each judge its own draw), position = the alpha's index in the grid): accepted iff A > 0 and u < phi. The served
  threshold is the chosen level if accepted, else None (abstain always).
* **Promise.** Averaged over the calibration questions, the rate at which humans disagree with accepted preferences
  on new questions is <= alpha (a calibration that accepts nothing counts as zero). Proof sketch: let r = P(error |
  accepted at the level) for a random pair of a random new question (the level is fixed by FIT, independent of
  CERTIFY). The n drawn pairs are i.i.d. draws of that distribution, so given A, E ~ Bin(A, r) and E[1 / (E + 1)] =
  (1 - (1 - r)^(A + 1)) / ((A + 1) r); hence r E[phi | A] <= alpha r (A + 1) E[1 / (E + 1)] = alpha (1 - (1 - r)^(A
  + 1)) <= alpha, and r x P(accepted) <= alpha averaged over calibrations. Pairs of one question may err together:
  only one pair per question enters the test, so the clustering does not matter (a pair-level test that counts every
  CERTIFY pair as independent does not keep the promise).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from calibration.decisions.pairwise import DEFAULT_LEVELS, Ties, accepted, disagreements
from calibration.decisions.selective_risk import one_per_document, row_uniform, selective_test
from calibration.errors import CalibrationError, EmptyCalibrationError, InvalidAlphaError

__all__ = [
    "FIT_FRACTION",
    "ExpectedPairwiseCertificate",
    "choose_level",
    "expected_phi",
    "expected_threshold",
    "fit_groups",
]

#: Share of the calibration groups that choose the level (the rest test it).
FIT_FRACTION = 0.2


@dataclass(frozen=True)
class ExpectedPairwiseCertificate:
    """The outcome of the rule: the served threshold (None: abstain always), the chosen level and its test."""

    alpha: float
    threshold: float | None
    level: float | None  # chosen on FIT (None: no level qualified)
    n_drawn: int  # CERTIFY groups with a pair that counts (one pair drawn from each)
    n_in_region: int  # A: drawn pairs accepted at the level
    n_errors: int  # E: errors among them
    acceptance_probability: float
    uniform: float
    seed: int
    n_fit_groups: int
    n_certify_groups: int
    n_pairs: int
    n_groups: int


def fit_groups(n_groups: int, seed: int) -> np.ndarray:
    """Boolean mask over groups 0..n_groups-1 (codes of the sorted distinct ids): True for FIT (module rules)."""
    n_fit = max(1, int(math.floor(FIT_FRACTION * n_groups)))
    order = np.random.default_rng([seed, 1]).permutation(n_groups)
    mask = np.zeros(n_groups, dtype=bool)
    mask[order[:n_fit]] = True
    return mask


def expected_phi(n_in_region: int, errors: int, items: int, alpha: float) -> float:
    """E[phi] when A = n_in_region and E ~ BetaBinomial(A, errors + 1, items - errors + 1); 0 when A = 0."""
    if n_in_region <= 0:
        return 0.0
    e = np.arange(n_in_region + 1)
    pmf = stats.betabinom.pmf(e, n_in_region, errors + 1, items - errors + 1)
    return float(np.sum(pmf * np.minimum(1.0, alpha * (n_in_region + 1) / (e + 1))))


def choose_level(
    preferred: np.ndarray,
    confidence: np.ndarray,
    errors: np.ndarray,
    alpha: float,
    n_certify: int,
    levels: tuple[float, ...] = DEFAULT_LEVELS,
) -> float | None:
    """The FIT choice (module rules) over FIT pairs that count; None when no level qualifies."""
    n_fit = int(np.asarray(confidence).size)
    if n_fit == 0:
        return None
    err = np.asarray(errors, dtype=bool)
    best: float | None = None
    best_value = 0.0
    for level in levels:
        acc = accepted(preferred, confidence, level)
        m = int(acc.sum())
        e = int((acc & err).sum())
        if m == 0 or (e + 1) / (m + 2) > alpha:
            continue
        share = m / n_fit
        value = share * expected_phi(int(math.floor(share * n_certify + 0.5)), e, m, alpha)
        if value > best_value + 1e-12:
            best, best_value = float(level), value
    return best


def expected_threshold(
    confidence: np.ndarray,
    preferred: np.ndarray,
    human: np.ndarray,
    groups: np.ndarray,
    *,
    alpha: float,
    seed: int = 0,
    position: int = 0,
    ties: Ties = "exclude",
    levels: tuple[float, ...] = DEFAULT_LEVELS,
    cell: str = "",
) -> ExpectedPairwiseCertificate:
    """The rule (module docstring) on calibration pairs: arrays of one length, ``human`` the human label (+1 / -1 /
    0 = tie) and ``groups`` each pair's unit; ``position`` the alpha's index in the grid (its uniform).

    Raises:
        InvalidAlphaError: alpha outside (0, 1).
        EmptyCalibrationError: no pair, or arrays of different lengths.
        CalibrationError: an unknown tie rule.
    """
    alpha = float(alpha)
    if not math.isfinite(alpha) or not 0.0 < alpha < 1.0:
        raise InvalidAlphaError(f"alpha must lie strictly between 0 and 1, got {alpha!r}")
    c, p = np.asarray(confidence, dtype=float), np.asarray(preferred)
    h, g = np.asarray(human), np.asarray(groups)
    if c.size == 0 or c.ndim != 1 or not (c.shape == p.shape == h.shape == g.shape):
        raise EmptyCalibrationError("confidence, preferred, human and groups must be 1-D, non-empty, equal length")
    if ties not in ("exclude", "error"):
        raise CalibrationError(f"ties must be 'exclude' or 'error', got {ties!r}")
    errors, counted = disagreements(p, h, ties)
    _, codes = np.unique(g, return_inverse=True)
    codes = codes.reshape(-1)
    n_groups = int(codes.max()) + 1
    is_fit = fit_groups(n_groups, seed)
    fit = counted & is_fit[codes]
    cert = counted & ~is_fit[codes]
    cert_groups = np.flatnonzero(~is_fit)
    # CERTIFY pairs that count, their group renumbered 0..k-1 among the CERTIFY groups (sorted ids).
    cert_index = np.searchsorted(cert_groups, codes[cert])
    drawn = one_per_document(cert_index, cert_groups.size, seed, keys=(p[cert], h[cert], c[cert]))
    n_drawn = int(drawn.size)
    level = choose_level(p[fit], c[fit], errors[fit], alpha, n_drawn, levels)
    uniform = row_uniform(seed, "accept", position, cell)
    inside = accepted(p[cert][drawn], c[cert][drawn], level) if level is not None else np.zeros(n_drawn, dtype=bool)
    outcome = selective_test(errors[cert][drawn], inside, alpha, uniform)
    return ExpectedPairwiseCertificate(
        alpha=alpha,
        threshold=level if outcome.accepted else None,
        level=level,
        n_drawn=n_drawn,
        n_in_region=outcome.n_in_region,
        n_errors=outcome.n_errors,
        acceptance_probability=outcome.acceptance_probability,
        uniform=uniform,
        seed=seed,
        n_fit_groups=int(is_fit.sum()),
        n_certify_groups=int(cert_groups.size),
        n_pairs=int(c.size),
        n_groups=n_groups,
    )
