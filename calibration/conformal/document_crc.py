"""The in-expectation conformal threshold with documents as the unit: document-level conformal risk control.

Items of one document are not exchangeable one by one (16 summaries of one article share it); documents are. So
the loss is taken per document. Rules, stated once:

* **Loss.** A document d with m_d calibration items has loss L_d(q) = (items of d whose true-label score exceeds
  q + 1e-12) / m_d, the share of its items a threshold q would leave uncovered (the set rule: a label joins when
  its score is <= q + 1e-12). L_d is non-increasing in q, in [0, 1].
* **Threshold.** With n calibration documents, q_hat is the smallest candidate q (the distinct calibration
  scores) with sum_d L_d(q) <= alpha (n + 1) - 1, i.e. (n / (n + 1)) mean_d L_d(q) + 1 / (n + 1) <= alpha (one
  document's worth of correction, B = 1). No candidate qualifies exactly when alpha (n + 1) < 1: then None (every
  set is the full scale). The comparison is made in floating point with 1e-9 of slack, so an exact rational tie
  counts as satisfied.
* **Promise** (conformal risk control, Angelopoulos et al. 2024, with documents exchangeable): on average over
  the calibration documents and a new document, the share of the new document's items whose human label is in
  the set is >= 1 - alpha. Proof sketch: with the n + 1 documents' losses exchangeable, the oracle threshold
  q' = min{q : sum_{d <= n+1} L_d(q) <= alpha (n + 1)} is symmetric in them, so E[L_{n+1}(q')] <= alpha; and
  q_hat >= q' because sum_{d <= n} L_d(q) + 1 >= sum_{d <= n+1} L_d(q); L_{n+1} is non-increasing, so
  E[L_{n+1}(q_hat)] <= E[L_{n+1}(q')] <= alpha.
* **Items as documents.** When every document holds one item the rule is the split-conformal quantile: the
  ceil((1 - alpha)(n + 1))-th smallest score (a test checks it).
* **Documents counted more than once** (``document_weight`` w, the planner's projection of the file to a file of
  w n documents like its own, :mod:`calibration.report_card.planner`): each document counts w times, in the sum
  and in n: the smallest candidate q with w sum_d L_d(q) <= alpha (w n + 1) - 1. For a whole number w it is the
  rule above on the file with every document copied w times (a test checks it); w = 1 is the rule above. A
  projection, not a calibration: no promise is made for w != 1.
* **Keys** (Mondrian methods): per key value 1..K the same rule over the documents that hold items of that key,
  each document's loss taken over its items of that key (None where the key has no items or cannot qualify).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from calibration.conformal.group_pac import checked_scores, document_codes
from calibration.conformal.inputs import check_alpha
from calibration.conformal.methods import MEMBERSHIP_TOLERANCE
from calibration.errors import CalibrationError

__all__ = ["document_crc_threshold", "document_crc_thresholds", "keyed_document_crc_levels"]

_SLACK = 1e-9


def document_crc_thresholds(
    true_scores: object, documents: object, alphas: Sequence[float], *, document_weight: float = 1.0
) -> list[float | None]:
    """The threshold at each alpha (module rules); None where alpha (w n + 1) < 1 (full scale)."""
    if not (math.isfinite(document_weight) and document_weight > 0):
        raise CalibrationError(f"document_weight must be a positive number, got {document_weight}")
    scores, codes = checked_scores(true_scores, documents)
    _, codes = np.unique(codes, return_inverse=True)  # documents with items here, 0..n-1
    n_documents = int(codes.max()) + 1
    weights = 1.0 / np.bincount(codes, minlength=n_documents)[codes]  # each item's share of its document's loss
    candidates = np.unique(scores)
    # item i is uncovered at candidate j iff candidates[j] + tol < score_i iff j < c_i
    c = np.searchsorted(candidates + MEMBERSHIP_TOLERANCE, scores, side="left")
    lost_from = np.bincount(c, weights=weights, minlength=candidates.size + 1)
    loss = np.cumsum(lost_from[::-1])[::-1][1:] * document_weight  # loss[j]: weights of items with c_i > j, times w
    result: list[float | None] = []
    for alpha in alphas:
        budget = float(check_alpha(alpha)) * (document_weight * n_documents + 1) - 1.0
        if budget < -_SLACK:
            result.append(None)
            continue
        qualifying = np.flatnonzero(loss <= budget + _SLACK)  # loss is non-increasing: the first one is the least
        result.append(float(candidates[qualifying[0]]) if qualifying.size else None)
    return result


def document_crc_threshold(true_scores: object, documents: object, alpha: float) -> float | None:
    """:func:`document_crc_thresholds` at one alpha."""
    return document_crc_thresholds(true_scores, documents, [alpha])[0]


def keyed_document_crc_levels(
    true_scores: np.ndarray, keys: np.ndarray, documents: np.ndarray, n_labels: int, alphas: Sequence[float]
) -> tuple[list[dict[int, float | None]], dict[int, int]]:
    """Per key value 1..K the threshold at each alpha (one key table per alpha) and the key's item count."""
    tables: list[dict[int, float | None]] = [{} for _ in alphas]
    sizes: dict[int, int] = {}
    codes = document_codes(documents)
    for key in range(1, n_labels + 1):
        members = keys == key
        sizes[key] = int(members.sum())
        values = document_crc_thresholds(true_scores[members], codes[members], alphas) if members.any() else None
        for position, table in enumerate(tables):
            table[key] = None if values is None else values[position]
    return tables, sizes
