"""Selective risk control in expectation, documents as the unit: the ``expected`` mode's accept and gate rule.

A region R (a set of bins of a decision rule) is chosen on the FIT documents only, then tested on the CERTIFY
documents. Rules, stated once:

* **One item per document.** From each CERTIFY document one item is drawn uniformly, with
  ``numpy.random.default_rng([seed, 4])`` (:func:`one_per_document`): the n draws are i.i.d. draws of "a random
  item of a random document", the distribution a new document's verdicts are weighed by (documents count
  equally, whatever their size). Inside a document the items are first sorted by what the test reads (bin, then
  label), so the draw does not depend on the input's order.
* **Test** (:func:`selective_test`). Among the n drawn items, A fall in R and E of those are errors. R is accepted
  with probability phi = min(1, alpha (A + 1) / (E + 1)), decided by one seeded uniform u per row
  (:func:`row_uniform`, ``default_rng([seed, 5, kind, position, crc32(cell names)])``): accepted iff u < phi. phi =
  1 (accepted whatever u) exactly when E + 1 <= alpha (A + 1).
* **Promise.** Let r = P(error | item in R) for a random item of a new document (R fixed by FIT). Averaged over the
  calibration documents, r x P(R accepted) <= alpha: the error rate among accepted verdicts on new documents is <=
  alpha on average, a calibration that accepts nothing counting as zero error. Proof: given A, E ~ Bin(A, r) and E[1
  / (E + 1)] = (1 - (1 - r)^(A + 1)) / ((A + 1) r), so r E[phi | A] <= alpha r (A + 1) E[1 / (E + 1)] = alpha (1 -
  (1 - r)^(A + 1)) <= alpha. FIT and CERTIFY hold different documents, so R is fixed given FIT.
* **Choice of R** (:func:`choose_prefix`, FIT only). Among the prefixes of the FIT confidence order whose FIT
  posterior mean error (e + 1) / (m + 2) is <= alpha (m FIT items in the prefix, e errors), the one maximising share
  x E[phi], where share = m / (FIT items) and E[phi] is predicted for the CERTIFY document count with a
  beta-binomial: A = round(share x n), E ~ BetaBinomial(A, e + 1, m - e + 1). Ties: the shorter prefix. No prefix
  qualifies: nothing is tested (R empty, nothing accepted).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = [
    "SelectiveOutcome",
    "acceptance_probability",
    "choose_prefix",
    "one_per_document",
    "row_uniform",
    "selective_test",
]

_KIND_CODES = {"accept": 0, "gate": 1}


@dataclass(frozen=True)
class SelectiveOutcome:
    """The test of one region: drawn items in it, errors among them, the acceptance probability and the verdict."""

    n_in_region: int
    n_errors: int
    acceptance_probability: float
    uniform: float
    accepted: bool


def one_per_document(group_index: np.ndarray, n_groups: int, seed: int, keys: Sequence[np.ndarray] = ()) -> np.ndarray:
    """Item positions, one per document 0..n_groups-1 drawn uniformly among its items (module rules). Inside a
    document the items are ordered by ``keys`` (last key first, as numpy.lexsort) before the draw, so the drawn
    values do not depend on the order the items came in."""
    index = np.asarray(group_index, dtype=np.int64)
    order = np.lexsort((*keys, index))
    sizes = np.bincount(index, minlength=n_groups)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    present = np.flatnonzero(sizes)
    picks = np.random.default_rng([seed, 4]).integers(0, sizes[present])
    chosen: np.ndarray = order[starts[present] + picks]
    return chosen


def row_uniform(seed: int, kind: str, position: int, cell: str = "") -> float:
    """The row's seeded uniform in [0, 1) (module rules): ``kind`` accept or gate, ``position`` its row number,
    ``cell`` the names of what the row decides (so that two cells' rows do not share one draw)."""
    words = [seed, 5, _KIND_CODES[kind], position, zlib.crc32(cell.encode("utf-8"))]
    return float(np.random.default_rng(words).random())


def acceptance_probability(n_in_region: int, n_errors: int, alpha: float) -> float:
    """phi = min(1, alpha (A + 1) / (E + 1)); 0 for an empty region."""
    if n_in_region == 0:
        return 0.0
    return min(1.0, alpha * (n_in_region + 1) / (n_errors + 1))


def selective_test(errors: np.ndarray, in_region: np.ndarray, alpha: float, uniform: float) -> SelectiveOutcome:
    """Test a region on the drawn items (``errors`` and ``in_region`` per drawn item; module rules)."""
    inside = np.asarray(in_region, dtype=bool)
    a = int(inside.sum())
    e = int(np.asarray(errors, dtype=bool)[inside].sum())
    phi = acceptance_probability(a, e, alpha)
    return SelectiveOutcome(
        n_in_region=a, n_errors=e, acceptance_probability=phi, uniform=uniform, accepted=a > 0 and uniform < phi
    )


def _expected_phi(n_in_region: int, errors: int, items: int, alpha: float) -> float:
    """E[phi] when A = n_in_region and E ~ BetaBinomial(A, errors + 1, items - errors + 1)."""
    if n_in_region == 0:
        return 0.0
    e = np.arange(n_in_region + 1)
    pmf = stats.betabinom.pmf(e, n_in_region, errors + 1, items - errors + 1)
    return float(np.sum(pmf * np.minimum(1.0, alpha * (n_in_region + 1) / (e + 1))))


def choose_prefix(
    sequence: Sequence[int], fit_bins: np.ndarray, fit_bad: np.ndarray, alpha: float, n_certify: int
) -> list[int]:
    """The bins of the chosen prefix of ``sequence`` (module rules); [] when no prefix qualifies."""
    n_fit = int(fit_bins.size)
    if n_fit == 0:
        return []
    best: list[int] = []
    best_value = 0.0
    inside = np.zeros(n_fit, dtype=bool)
    for j, b in enumerate(sequence):
        inside |= fit_bins == b
        m = int(inside.sum())
        e = int(fit_bad[inside].sum())
        if m == 0 or (e + 1) / (m + 2) > alpha:
            continue
        share = m / n_fit
        value = share * _expected_phi(int(math.floor(share * n_certify + 0.5)), e, m, alpha)
        if value > best_value + 1e-12:
            best, best_value = list(sequence[: j + 1]), value
    return sorted(best)
