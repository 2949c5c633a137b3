"""One input's tournament from repeated pairwise verdicts: majorities and directed 3-cycles.

A pairwise judge compares two candidates (e.g. two summaries of one document) k times, possibly in both
presentation orders. ``build_tournament`` aggregates the verdicts per unordered pair into a
:class:`PairRecord`; the majority of each pair is an edge of the tournament (Gupta et al., section 3.1:
``(s_i, s_j)`` is an edge iff the judge prefers ``s_i``). A transitivity violation is a directed 3-cycle;
the per-input violation rate is ``rho(x) = #3-cycles / C(n, 3)``.

Rules, stated once:

* **Majority.** Within a pair, "tie" verdicts abstain: the winner is the side with strictly more won
  repetitions. Equal win counts (an even split, or only "tie" verdicts) make the pair a *tie*: it stays a tie,
  is never turned into an edge, and is counted in ``Tournament.n_tied_pairs``.
* **Win share.** ``win_share = max(wins_a, wins_b) / n``: the share of the pair's repetitions won by the
  majority side (for k = 3 without tie verdicts: 2/3 or 1; with "tie" verdicts also 1/3 or 0). For a tied
  pair it is the common share of either side.
* **Missing pairs** (never judged) have no record and no edge.
* **Random baseline.** In a uniformly random complete tournament each triple is cyclic with probability
  2/8, so the expected violation rate is :data:`RANDOM_TOURNAMENT_VIOLATION_RATE` = 0.25.
* **Presentation order**: whether a pair's verdict survives swapping the order is
  :mod:`calibration.tournaments.position_consistency`.
* **Intervals over inputs** (95%, the input is the unit): the share of inputs with a cycle, exact Clopper-Pearson
  (:func:`calibration.estimates.intervals.clopper_pearson`); the mean rate, percentile bootstrap over inputs
  (:func:`calibration.unit_bootstrap.mean_interval`, 2,000 draws, seed 0 unless given).

==========================================  ============================================
call                                        result
==========================================  ============================================
``build_tournament(candidates, verdicts)``  ``Tournament`` (pairs in candidate order)
``three_cycles(t)``                         ``[("a", "b", "c"), ...]``, each cycle once
``count_three_cycles(t)``                   ``int``
``violation_rate(t)``                       ``float`` in [0, 1]
``summarize_violation_rates(rates)``        ``ViolationSummary`` over many inputs
==========================================  ============================================
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Iterable, Sequence
from typing import Literal

import msgspec
import numpy as np

from calibration.errors import (
    CalibrationError,
    EmptyCalibrationError,
    SelfComparisonError,
    UnknownCandidateError,
)
from calibration.estimates.intervals import clopper_pearson
from calibration.unit_bootstrap import DEFAULT_RESAMPLES, mean_interval

__all__ = [
    "OUTCOMES",
    "Outcome",
    "PairRecord",
    "PairwiseVerdict",
    "RANDOM_TOURNAMENT_VIOLATION_RATE",
    "Tournament",
    "ViolationSummary",
    "build_tournament",
    "count_three_cycles",
    "summarize_violation_rates",
    "three_cycles",
    "violation_rate",
]

Outcome = Literal["first", "second", "tie"]
OUTCOMES = frozenset(("first", "second", "tie"))

#: Expected violation rate of a uniformly random complete tournament (each triple cyclic w.p. 1/4).
RANDOM_TOURNAMENT_VIOLATION_RATE = 0.25


class PairwiseVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """One judge verdict: ``first`` was shown first; outcome "first" means the first-shown candidate won."""

    first: str
    second: str
    outcome: Outcome


class PairRecord(msgspec.Struct, frozen=True, kw_only=True):
    """All repetitions of one unordered pair; ``a`` precedes ``b`` in the tournament's candidate order."""

    a: str
    b: str
    wins_a: int
    wins_b: int
    ties: int
    n: int
    winner: str | None  # None: tied pair (equal wins), never an edge
    win_share: float  # max(wins_a, wins_b) / n


class Tournament(msgspec.Struct, frozen=True, kw_only=True):
    """One input's tournament: the candidates in the given order and one record per judged pair.

    ``pairs`` holds every pair with at least one verdict, sorted by the candidates' positions ``(i, j)``,
    ``i < j``. The matrix helpers index rows and columns by candidate position.
    """

    candidates: tuple[str, ...]
    pairs: tuple[PairRecord, ...]

    @property
    def n_candidates(self) -> int:
        """Number of candidates."""
        return len(self.candidates)

    @property
    def n_tied_pairs(self) -> int:
        """Number of judged pairs whose majority is a tie (equal wins on both sides)."""
        return sum(1 for pair in self.pairs if pair.winner is None)

    @property
    def n_missing_pairs(self) -> int:
        """Number of unordered pairs that were never judged."""
        return math.comb(self.n_candidates, 2) - len(self.pairs)

    @property
    def is_complete(self) -> bool:
        """True when every pair was judged and has a majority edge (a tournament in the graph sense)."""
        return self.n_missing_pairs == 0 and self.n_tied_pairs == 0

    def index(self) -> dict[str, int]:
        """Map candidate -> position in the candidate order."""
        return {candidate: position for position, candidate in enumerate(self.candidates)}

    def pair(self, first: str, second: str) -> PairRecord | None:
        """The record of the unordered pair {first, second}, or None when it was never judged."""
        wanted = {first, second}
        for record in self.pairs:
            if {record.a, record.b} == wanted:
                return record
        return None

    def wins_matrix(self) -> np.ndarray:
        """(n, n) float: entry [i, j] = repetitions candidate i won against candidate j (ties excluded)."""
        rows, cols, wins_a, wins_b, _ = self._pair_arrays()
        wins = np.zeros((self.n_candidates, self.n_candidates))
        wins[rows, cols] = wins_a
        wins[cols, rows] = wins_b
        return wins

    def ties_matrix(self) -> np.ndarray:
        """(n, n) float, symmetric: entry [i, j] = "tie" verdicts between candidates i and j."""
        rows, cols, _, _, ties = self._pair_arrays()
        out = np.zeros((self.n_candidates, self.n_candidates))
        out[rows, cols] = ties
        out[cols, rows] = ties
        return out

    def adjacency(self) -> np.ndarray:
        """(n, n) bool: entry [i, j] is True iff i beat j by majority; ties and missing pairs are False."""
        rows, cols, wins_a, wins_b, _ = self._pair_arrays()
        adjacency = np.zeros((self.n_candidates, self.n_candidates), dtype=bool)
        adjacency[rows, cols] = wins_a > wins_b
        adjacency[cols, rows] = wins_b > wins_a
        return adjacency

    def _pair_arrays(self) -> tuple[np.ndarray, ...]:
        """Per judged pair: position of a, position of b, wins_a, wins_b, ties (int arrays)."""
        index = self.index()
        flat = itertools.chain.from_iterable((index[p.a], index[p.b], p.wins_a, p.wins_b, p.ties) for p in self.pairs)
        counts = np.fromiter(flat, dtype=np.int64, count=5 * len(self.pairs)).reshape(-1, 5)
        return tuple(counts.T)


def build_tournament(candidates: Sequence[str], verdicts: Iterable[PairwiseVerdict]) -> Tournament:
    """Aggregate repeated verdicts per unordered pair into a Tournament (majority, ties kept, win share).

    Raises
    ------
    CalibrationError
        Fewer than 2 candidates (EmptyCalibrationError), a duplicate or non-string candidate id, or an
        outcome other than "first" / "second" / "tie".
    UnknownCandidateError
        A verdict names a candidate that is not in ``candidates``.
    SelfComparisonError
        A verdict compares a candidate with itself.
    """
    names = tuple(candidates)
    if len(names) < 2:
        raise EmptyCalibrationError(f"a tournament needs at least 2 candidates, got {len(names)}: {list(names)!r}")
    index: dict[str, int] = {}
    for position, name in enumerate(names):
        if not isinstance(name, str):
            raise CalibrationError(f"candidate ids must be strings, got {name!r} at position {position}")
        if name in index:
            raise CalibrationError(
                f"duplicate candidate id {name!r} at positions {index[name]} and {position}; "
                "candidate ids must be unique"
            )
        index[name] = position

    # counts[(i, j)] with i < j: [wins of i, wins of j, ties]
    counts: dict[tuple[int, int], list[int]] = {}
    for number, verdict in enumerate(verdicts):
        first, second = _verdict_positions(verdict, number, index)
        if verdict.outcome not in OUTCOMES:
            raise CalibrationError(
                f"verdict {number} has outcome {verdict.outcome!r}; it must be one of 'first', 'second', 'tie'"
            )
        key = (first, second) if first < second else (second, first)
        tally = counts.setdefault(key, [0, 0, 0])
        if verdict.outcome == "tie":
            tally[2] += 1
        else:
            winner = first if verdict.outcome == "first" else second
            tally[0 if winner == key[0] else 1] += 1

    pairs = tuple(_pair_record(names[i], names[j], *counts[i, j]) for i, j in sorted(counts))
    return Tournament(candidates=names, pairs=pairs)


def _verdict_positions(verdict: PairwiseVerdict, number: int, index: dict[str, int]) -> tuple[int, int]:
    for name in (verdict.first, verdict.second):
        if name not in index:
            raise UnknownCandidateError(
                f"verdict {number} names unknown candidate {name!r}; known candidates: {list(index)!r}"
            )
    if verdict.first == verdict.second:
        raise SelfComparisonError(
            f"verdict {number} compares candidate {verdict.first!r} with itself; "
            "a pairwise verdict needs two different candidates"
        )
    return index[verdict.first], index[verdict.second]


def _pair_record(a: str, b: str, wins_a: int, wins_b: int, ties: int) -> PairRecord:
    n = wins_a + wins_b + ties
    winner = a if wins_a > wins_b else b if wins_b > wins_a else None
    return PairRecord(
        a=a, b=b, wins_a=wins_a, wins_b=wins_b, ties=ties, n=n, winner=winner, win_share=max(wins_a, wins_b) / n
    )


def _cycle_triples(adjacency: np.ndarray) -> np.ndarray:
    """(m, 3) int positions (i, j, k) of the cycles i->j->k->i with i the smallest position, sorted."""
    n = adjacency.shape[0]
    found = []
    # Rooting each cycle at its smallest position lists it exactly once; one n x n slab per root keeps
    # memory O(n^2) while the work stays vectorised.
    for i in range(n - 2):
        rest = adjacency[i + 1 :, i + 1 :]
        closing = rest & adjacency[i, i + 1 :, None] & adjacency[None, i + 1 :, i]
        js, ks = np.nonzero(closing)
        if js.size:
            found.append(np.column_stack((np.full(js.size, i), js + i + 1, ks + i + 1)))
    if not found:
        return np.empty((0, 3), dtype=np.int64)
    return np.concatenate(found)


def _count_by_enumeration(adjacency: np.ndarray) -> int:
    n = adjacency.shape[0]
    total = 0
    for i in range(n - 2):
        closing = adjacency[i + 1 :, i + 1 :] & adjacency[i, i + 1 :, None] & adjacency[None, i + 1 :, i]
        total += int(np.count_nonzero(closing))
    return total


def _count_closed_form(adjacency: np.ndarray) -> int:
    # Complete tournaments: a triple is transitive iff one vertex beats both others, so
    # #cycles = C(n, 3) - sum_i C(d_i, 2) with d_i the out-degree.
    n = adjacency.shape[0]
    out_degree = adjacency.sum(axis=1, dtype=np.int64)
    return math.comb(n, 3) - int((out_degree * (out_degree - 1) // 2).sum())


def three_cycles(t: Tournament) -> list[tuple[str, str, str]]:
    """Every directed 3-cycle (a beats b, b beats c, c beats a) once, as (a, b, c) by majority edges.

    Each cycle is rotated to start at its earliest candidate in candidate order; the list is sorted by the
    candidates' positions. Tied and missing pairs are not edges.
    """
    triples = _cycle_triples(t.adjacency())
    names = np.array(t.candidates, dtype=object)
    return list(zip(*(names[triples[:, column]].tolist() for column in range(3)), strict=True))


def count_three_cycles(t: Tournament) -> int:
    """Number of directed 3-cycles in the majority graph (ties and missing pairs are not edges).

    Closed form C(n, 3) - sum_i C(d_i, 2) (d_i = out-degree) when ``t.is_complete``; otherwise vectorised
    enumeration (the same as ``len(three_cycles(t))``).
    """
    adjacency = t.adjacency()
    if t.is_complete:
        return _count_closed_form(adjacency)
    return _count_by_enumeration(adjacency)


def violation_rate(t: Tournament) -> float:
    """rho = #directed 3-cycles / C(n, 3) (Gupta et al., eq. 1); 0.0 when n < 3 (no triple to violate).

    The denominator counts every triple, including those with a tied or missing pair (which cannot be
    cyclic). A uniformly random complete tournament has expectation 0.25.
    """
    triples = math.comb(t.n_candidates, 3)
    if triples == 0:
        return 0.0
    return count_three_cycles(t) / triples


class ViolationSummary(msgspec.Struct, frozen=True, kw_only=True):
    """Distribution of per-input violation rates: mean (the paper's rho-bar), share with a cycle, max, median,
    and the 95% intervals of the mean and of the share over inputs (module rules)."""

    mean: float
    share_with_cycle: float
    max: float
    median: float
    n_inputs: int
    n_with_cycle: int
    mean_ci: list[float]
    share_with_cycle_ci: list[float]


def summarize_violation_rates(
    rates: Sequence[float], *, seed: int = 0, n_resamples: int = DEFAULT_RESAMPLES
) -> ViolationSummary:
    """Summarise per-input violation rates in [0, 1]: mean, share > 0, max, median, count, and the intervals of
    the mean (bootstrap over inputs with ``seed``) and of the share (Clopper-Pearson).

    Raises
    ------
    EmptyCalibrationError
        No rate was given.
    CalibrationError
        A rate is NaN or outside [0, 1].
    """
    values = [float(rate) for rate in rates]
    if not values:
        raise EmptyCalibrationError("summarize_violation_rates needs at least one violation rate, got none")
    for position, value in enumerate(values):
        if not 0.0 <= value <= 1.0:  # also rejects NaN
            raise CalibrationError(f"violation rate {value!r} at position {position} is not in [0, 1]")
    with_cycle = sum(1 for value in values if value > 0.0)
    return ViolationSummary(
        mean=statistics.fmean(values),
        share_with_cycle=with_cycle / len(values),
        max=max(values),
        median=statistics.median(values),
        n_inputs=len(values),
        n_with_cycle=with_cycle,
        mean_ci=mean_interval(values, n_resamples=n_resamples, seed=seed).bounds,
        share_with_cycle_ci=list(clopper_pearson(with_cycle, len(values), 0.05)),
    )
