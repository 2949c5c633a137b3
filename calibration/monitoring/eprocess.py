"""The alarm statistic of one guarantee: a mixture of betting test martingales over finished documents.

Rule. A guarantee at level ``a`` (``alpha`` for coverage, ``accept_alpha`` for accept error) is watched on the
stream of finished documents d = 1, 2, ... Each document's tally (:mod:`calibration.monitoring.tally`) gives

    x_d = (failures_d - a * counted_d) / M   in [-a, 1 - a],

with M = ``max_items``, a bound on a document's labelled items fixed before the stream. Every item's outcome enters
x_d (the document's excess of failures over what the level allows), and the document is one step. For each bet
lambda_g = g / G * ``bet_fraction`` / a (g = 1..G) the wealth is W_g(t) = prod_{d <= t} (1 + lambda_g x_d), and
the e-process is their mixture E(t) = sum_g pi_g W_g(t) under the prior pi_g = (G + 1 - g) / (G (G + 1) / 2):
more weight on the small bets, which a small harm needs and can only win over many documents, while a large harm
is caught quickly even by the lightly weighted large bets (on the study's streams this prior alarms in more
streams on the slow rows than a uniform one, for a few labels more on the fast ones).

Validity. Null: the documents of the stream are drawn independently from a population on which the guarantee
holds, E[failures_d] <= a * E[counted_d] (the item-weighted rate the calibration promises), whatever the dependence
between the items of one document. Then E[x_d | earlier documents] <= 0, each factor is >= 1 - bet_fraction > 0
(x_d >= -a), so every W_g is a nonnegative supermartingale with W_g(0) = 1, so is their mixture, and by Ville's
inequality P(sup_t E(t) >= 1/delta) <= delta: an alarm when E first reaches 1/delta is a false alarm with
probability <= delta however long the stream runs. Bets sized by 1/a (not 1/(1 - a), the side a certification
bets on) are what make the test quick: a harmful shift moves x_d up while x_d can fall at most to -a.

State: G log-wealths and counts, updated in O(G) per finished document (G = ``grid_size``, 10 by default).
"""

from __future__ import annotations

import math
from typing import Literal

import msgspec
import numpy as np

from calibration.monitoring.tally import DocumentTally, check_tally

__all__ = [
    "GUARANTEES",
    "EProcess",
    "GuaranteeSpec",
    "bets",
    "e_value",
    "prior",
    "start_eprocess",
    "update_eprocess",
]

Guarantee = Literal["coverage", "accept_error"]
GUARANTEES: tuple[str, ...] = ("coverage", "accept_error")


class GuaranteeSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One watched guarantee at one served level, and the bets of its test (fixed before the stream)."""

    guarantee: Guarantee
    level: float  # coverage: alpha (miss rate allowed); accept_error: accept_alpha
    tolerance: int | None = None  # accept_error: an error is |human - point| >= tolerance
    max_items: int  # M: the most labelled items a document may bring (bets are sized by it)
    grid_size: int = 10
    bet_fraction: float = 0.9  # largest bet = bet_fraction / level: a factor never falls below 1 - bet_fraction

    def __post_init__(self) -> None:
        if not 0.0 < self.level < 1.0:
            raise ValueError(f"level {self.level} must lie in (0, 1)")
        if self.max_items < 1 or self.grid_size < 1:
            raise ValueError("max_items and grid_size must be at least 1")
        if not 0.0 < self.bet_fraction < 1.0:
            raise ValueError(f"bet_fraction {self.bet_fraction} must lie in (0, 1)")
        if (self.guarantee == "accept_error") != (self.tolerance is not None):
            raise ValueError("a tolerance is given for accept_error and only for it")


class EProcess(msgspec.Struct, frozen=True, kw_only=True):
    """The test's state: one log-wealth per bet, and the documents and labels it has seen."""

    log_wealth: list[float]
    documents: int = 0
    labels: int = 0


def bets(spec: GuaranteeSpec) -> np.ndarray:
    """The G bets lambda_g = g / G * bet_fraction / level, g = 1..G (module rule)."""
    g = np.arange(1, spec.grid_size + 1, dtype=float)
    return g / spec.grid_size * spec.bet_fraction / spec.level


def prior(spec: GuaranteeSpec) -> np.ndarray:
    """The mixture's weights pi_g = (G + 1 - g) / (G (G + 1) / 2), g = 1..G (module rule); they sum to 1."""
    g = np.arange(1, spec.grid_size + 1, dtype=float)
    weights: np.ndarray = (spec.grid_size + 1 - g) / (spec.grid_size * (spec.grid_size + 1) / 2)
    return weights


def start_eprocess(spec: GuaranteeSpec) -> EProcess:
    """Every wealth at 1 (log 0): E = 1 before any document."""
    return EProcess(log_wealth=[0.0] * spec.grid_size)


def update_eprocess(spec: GuaranteeSpec, state: EProcess, tally: DocumentTally) -> EProcess:
    """The state after one finished document (module rule); ValueError for a tally outside the spec."""
    check_tally(tally, spec.max_items)
    x = (tally.failures - spec.level * tally.counted) / spec.max_items
    log_wealth = np.asarray(state.log_wealth, dtype=float) + np.log1p(bets(spec) * x)
    return EProcess(
        log_wealth=[float(v) for v in log_wealth], documents=state.documents + 1, labels=state.labels + tally.labels
    )


def e_value(spec: GuaranteeSpec, state: EProcess) -> float:
    """E(t) = the prior-weighted sum of the bets' wealths (computed in log space; inf only past float range)."""
    logs = np.asarray(state.log_wealth, dtype=float)
    top = float(logs.max())
    return math.exp(top) * float(np.sum(prior(spec) * np.exp(logs - top))) if top < 700 else math.inf
