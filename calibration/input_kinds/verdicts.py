"""Input kinds: what a verdict carries decides which thresholds may be applied to it.

A threshold is valid only for verdicts of the kind it was fitted on. Three kinds, each mapped to the core's
inputs (an integer score and, where there is one, a probability vector over 1..K) by one rule used both when
calibrating and when serving:

================= ============================================ ===============================================
kind              the verdict carries                          core inputs
================= ============================================ ===============================================
``score``         the judge's integer score alone              score; no probabilities
``probabilities`` the judge's log-probs of the K score tokens  score = most probable label (lower on ties),
                                                               probabilities = the renormalised vector; a
                                                               score the caller also sends is not used
``mean``          ``mean_of_samples``: a real mean m in [1, K] score = round_half_up(m); probabilities = the
                  of sampled scores (G-Eval style)             two-point law on floor(m), ceil(m) whose mean is
                                                               m, so ``residual_expected`` scores |m - y|
================= ============================================ ===============================================

``probabilities`` takes its score from the vector (not from a sampled token) so that the kind is a function of
the log-probs alone: a caller who sends log-probs with or without a score gets the same set. Methods per kind:
``score`` has the score-only methods; ``probabilities`` all; ``mean`` the residual family and the learned ones
(LAC and APS on a two-point law would reward sampling noise, not the judge's belief).
"""

from __future__ import annotations

import math
from typing import Literal, overload

import numpy as np
from numpy.typing import NDArray

from calibration.conformal.methods import CONFORMAL_METHODS, Needs
from calibration.errors import ScoreOutOfRangeError

__all__ = [
    "INPUT_KINDS",
    "InputKind",
    "kind_inputs",
    "methods_for_input_kind",
    "round_half_up",
    "two_point_probabilities",
    "verdict_inputs",
]

INPUT_KINDS: tuple[str, ...] = ("score", "probabilities", "mean")
InputKind = Literal["score", "probabilities", "mean"]  # one of INPUT_KINDS


def methods_for_input_kind(kind: str) -> tuple[str, ...]:
    """The methods whose thresholds can be fitted on (and applied to) verdicts of this kind, in METHODS order."""
    if kind == "score":
        return tuple(name for name, m in CONFORMAL_METHODS.items() if m.needs is not Needs.PROBABILITIES)
    if kind == "probabilities":
        return tuple(CONFORMAL_METHODS)
    if kind == "mean":
        return tuple(name for name, m in CONFORMAL_METHODS.items() if m.score.accepts_mean)
    raise ValueError(f"input kind {kind!r} is not one of {', '.join(INPUT_KINDS)}")


def round_half_up(value: float) -> int:
    """Nearest integer, halves rounded up (3.5 -> 4)."""
    return int(math.floor(value + 0.5))


def two_point_probabilities(mean: float, n_labels: int) -> list[float]:
    """The law on floor(mean) and ceil(mean) (1..K) whose expectation is ``mean``; ScoreOutOfRangeError outside."""
    if not math.isfinite(mean) or not 1.0 <= mean <= n_labels:
        raise ScoreOutOfRangeError(f"mean_of_samples={mean!r} lies outside the label scale 1..{n_labels}")
    low = int(math.floor(mean))
    row = [0.0] * n_labels
    if low >= n_labels:
        row[n_labels - 1] = 1.0
        return row
    upper_weight = mean - low
    row[low - 1] = 1.0 - upper_weight
    row[low] += upper_weight
    return row


def _most_probable(probabilities: np.ndarray) -> np.ndarray:
    # np.argmax takes the first maximum: the lower label on ties.
    labels: NDArray[np.int64] = np.argmax(probabilities, axis=1).astype(np.int64) + 1
    return labels


@overload
def kind_inputs(
    kind: Literal["probabilities", "mean"],
    n_labels: int,
    *,
    judge_scores: np.ndarray | None = None,
    probabilities: np.ndarray | None = None,
    means: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]: ...


@overload
def kind_inputs(
    kind: str,
    n_labels: int,
    *,
    judge_scores: np.ndarray | None = None,
    probabilities: np.ndarray | None = None,
    means: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray | None]: ...


def kind_inputs(
    kind: str,
    n_labels: int,
    *,
    judge_scores: np.ndarray | None = None,
    probabilities: np.ndarray | None = None,
    means: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """(scores, probabilities) the core sees for n verdicts of ``kind`` (module table); ValueError when the
    verdicts lack what the kind needs."""
    if kind == "score":
        if judge_scores is None:
            raise ValueError("input kind 'score' needs judge scores")
        return np.asarray(judge_scores, dtype=np.int64), None
    if kind == "probabilities":
        if probabilities is None:
            raise ValueError("input kind 'probabilities' needs probabilities")
        probs = np.asarray(probabilities, dtype=float)
        return _most_probable(probs), probs
    if kind == "mean":
        if means is None:
            raise ValueError("input kind 'mean' needs mean_of_samples")
        values = np.asarray(means, dtype=float)
        rows = np.array([two_point_probabilities(float(m), n_labels) for m in values]).reshape(-1, n_labels)
        return np.floor(values + 0.5).astype(np.int64), rows
    raise ValueError(f"input kind {kind!r} is not one of {', '.join(INPUT_KINDS)}")


def verdict_inputs(
    kind: str,
    n_labels: int,
    *,
    judge_score: int | None = None,
    probabilities: list[float] | None = None,
    mean: float | None = None,
) -> tuple[int, list[float] | None]:
    """(score, probabilities) of one verdict of ``kind``: the single-item twin of :func:`kind_inputs`."""
    if kind == "score":
        if judge_score is None:
            raise ValueError("input kind 'score' needs a judge score")
        return int(judge_score), None
    if kind == "probabilities":
        if probabilities is None:
            raise ValueError("input kind 'probabilities' needs probabilities")
        best = max(range(len(probabilities)), key=lambda k: (probabilities[k], -k))
        return best + 1, list(probabilities)
    if kind == "mean":
        if mean is None:
            raise ValueError("input kind 'mean' needs mean_of_samples")
        return round_half_up(mean), two_point_probabilities(float(mean), n_labels)
    raise ValueError(f"input kind {kind!r} is not one of {', '.join(INPUT_KINDS)}")
