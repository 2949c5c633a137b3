"""One watched guarantee's change detector: a Shiryaev-Roberts e-detector over finished documents, a mixture over
bets, which restarts its bets at every document, so its delay after a change does not grow with the healthy history.

Rule. A guarantee is watched on the stream of finished documents d = 1, 2, ... Each document's tally
(:mod:`calibration.monitoring.tally`) gives its excess e_d = sum over counted items of (failed / a_i - 1), each item
at the level a_i it was served at, and

    x_d = e_d / M   in [-1, inf),

with M = ``max_items``, a bound on a document's labelled items fixed before the stream (``unit`` "item", the
default: the null is item-weighted). With ``unit`` "document" the null is each document's own share (the promise
of document-level conformal risk control: on average over documents, the share of a document's counted items that
fail is <= the level), and x_d = e_d / n_d with n_d the document's counted items (x_d = 0 when it counts none):
the mean over its counted items of (failed / a_i - 1), again in [-1, inf). For each bet
lambda_g = g / G * ``bet_fraction`` (g = 1..G) the detector is the Shiryaev-Roberts recursion

    R_g(0) = 0,   R_g(t) = (1 + lambda_g x_t) (R_g(t - 1) + 1)
           = sum_{j <= t} prod_{j <= d <= t} (1 + lambda_g x_d),

the sum over every possible change point j of the wealth of a bettor who started at document j: a bettor that
started before a long healthy stretch is worth little, the ones that start after the change carry the statistic,
so the evidence after a change no longer has to repay what the healthy documents cost. The guarantee's statistic
is the mixture R(t) = sum_g pi_g R_g(t) under the prior pi_g = (G + 1 - g) / (G (G + 1) / 2) (more weight on the
small bets, which a small harm needs). The state stores log(1 + R_g) >= 0, so it neither underflows on a long
healthy stream nor holds -inf.

Validity. Null: the documents of the stream are drawn independently from a population on which every served
level's guarantee holds (unit "item": E[failures] <= a E[counted] for the items served at level a; unit
"document": E[mean over a document's counted items of failed / a_i] <= 1 over the documents that count any, i.e.
E[share failed] <= a at one level), whatever the dependence between the items of one document. Then
E[x_d | earlier documents] <= 0 and each factor is >= 1 - bet_fraction > 0,
so E[R_g(t) | earlier documents] <= R_g(t - 1) + 1: R(t) - t is a supermartingale (R is an e-detector, Shin,
Ramdas and Rinaldo 2023). Two guarantees follow for the alarm "R(t) >= c":

* over a horizon of H documents: S(t) = R(t) + H - t (t <= H) is a nonnegative supermartingale with S(0) = H and
  S(t) >= R(t), so by Ville's inequality P(some t <= H has R(t) >= c) <= H / c; with c = H / delta a false alarm
  within the first H documents has probability <= delta (and within k H documents <= k delta);
* on average: the first alarm time tau has E[tau] >= c documents under the null (optional stopping on R(t) - t).

State: G floats and counts, updated in O(G) per finished document (G = ``grid_size``, 10 by default).
"""

from __future__ import annotations

import math
from typing import Literal

import msgspec
import numpy as np

from calibration.monitoring.tally import DocumentTally, check_tally

__all__ = [
    "GUARANTEES",
    "DetectorState",
    "GuaranteeSpec",
    "bets",
    "e_value",
    "prior",
    "scaled_excess",
    "start_detector",
    "update_detector",
]

Guarantee = Literal["coverage", "accept_error"]
GUARANTEES: tuple[str, ...] = ("coverage", "accept_error")
Unit = Literal["item", "document"]


class GuaranteeSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One watched guarantee (of the whole cell, or of the items of one human label) and the bets of its detector,
    fixed before the stream. ``level`` is the level the items are served at when all share one (studies, the
    reference a report compares with); the detector itself reads each item's own level from the tallies."""

    guarantee: Guarantee
    level: float  # coverage: alpha (miss rate allowed); accept_error: accept_alpha
    tolerance: int | None = None  # accept_error: an error is |human - point| >= tolerance
    human_label: int | None = None  # None: every item; y: only the items whose human label is y
    max_items: int  # M: the most labelled items a document may bring (bets are sized by it)
    grid_size: int = 10
    bet_fraction: float = 0.9  # largest bet: a factor never falls below 1 - bet_fraction
    unit: Unit = "item"  # item: x_d = excess / max_items; document: x_d = excess / the document's counted items

    def __post_init__(self) -> None:
        if not 0.0 < self.level < 1.0:
            raise ValueError(f"level {self.level} must lie in (0, 1)")
        if self.max_items < 1 or self.grid_size < 1:
            raise ValueError("max_items and grid_size must be at least 1")
        if not 0.0 < self.bet_fraction < 1.0:
            raise ValueError(f"bet_fraction {self.bet_fraction} must lie in (0, 1)")
        if (self.guarantee == "accept_error") != (self.tolerance is not None):
            raise ValueError("a tolerance is given for accept_error and only for it")
        if self.human_label is not None and self.human_label < 1:
            raise ValueError(f"human_label {self.human_label} must be >= 1")


class DetectorState(msgspec.Struct, frozen=True, kw_only=True):
    """The detector's state: log(1 + R_g) per bet, and the documents and labels it has seen."""

    log_statistic: list[float]
    documents: int = 0
    labels: int = 0


def bets(spec: GuaranteeSpec) -> np.ndarray:
    """The G bets lambda_g = g / G * bet_fraction, g = 1..G (module rule), on x_d = excess_d / M."""
    g = np.arange(1, spec.grid_size + 1, dtype=float)
    return g / spec.grid_size * spec.bet_fraction


def prior(spec: GuaranteeSpec) -> np.ndarray:
    """The mixture's weights pi_g = (G + 1 - g) / (G (G + 1) / 2), g = 1..G (module rule); they sum to 1."""
    g = np.arange(1, spec.grid_size + 1, dtype=float)
    weights: np.ndarray = (spec.grid_size + 1 - g) / (spec.grid_size * (spec.grid_size + 1) / 2)
    return weights


def scaled_excess(spec: GuaranteeSpec, excess: object, counted: object) -> np.ndarray:
    """x_d of documents (module rule): excess / max_items, or excess / counted (0 where nothing is counted)."""
    e = np.asarray(excess, dtype=float)
    if spec.unit == "item":
        return e / spec.max_items
    c = np.asarray(counted, dtype=float)
    out: np.ndarray = np.where(c > 0, e / np.maximum(c, 1.0), 0.0)
    return out


def start_detector(spec: GuaranteeSpec) -> DetectorState:
    """Every R_g at 0 (log(1 + R_g) = 0): the statistic is 0 before any document."""
    return DetectorState(log_statistic=[0.0] * spec.grid_size)


def update_detector(spec: GuaranteeSpec, state: DetectorState, tally: DocumentTally) -> DetectorState:
    """The state after one finished document (module rule); ValueError for a tally outside the spec."""
    check_tally(tally, spec.max_items)
    x = float(scaled_excess(spec, tally.excess, tally.counted))
    logs = np.logaddexp(np.asarray(state.log_statistic, dtype=float) + np.log1p(bets(spec) * x), 0.0)
    return DetectorState(
        log_statistic=[float(v) for v in logs], documents=state.documents + 1, labels=state.labels + tally.labels
    )


def e_value(spec: GuaranteeSpec, state: DetectorState) -> float:
    """R(t) = the prior-weighted sum of the R_g (inf only past float range)."""
    logs = np.asarray(state.log_statistic, dtype=float)
    if float(logs.max()) >= 700:
        return math.inf
    return float(np.sum(prior(spec) * np.expm1(logs)))
