"""What a served cell's monitor watches, and what one labelled item says to each watched guarantee: the one rule the
service's monitors (``service.monitoring.cells``) and the studies (``offline.studies.monitoring.skill``) both use.

Rules. A cell served at set level ``alpha`` (and, when its rule can accept, at ``accept_alpha`` with ``tolerance``)
watches, in this order:

* **coverage** over every item, at ``alpha``;
* **accept error** over the accepted items, at ``accept_alpha`` and ``tolerance`` (only when ``accept_alpha`` is
  given: a rule that accepts nothing promises nothing);
* when the guarantee is label-conditional (``per_label``): for each human label y = 1..K, coverage of y over the
  items labelled y, then (when accept error is watched) the share of label-y items accepted with a point
  ``tolerance`` or more away, over every item labelled y.

The per-label guarantees are watched per document (``unit`` "document", :mod:`calibration.monitoring.detector`):
their promise, by document-level conformal risk control (:mod:`calibration.per_label.intervals`), is on each
document's share of its label-y items, so each document's evidence is that share against the level, whatever the
number of its label-y items; the whole-cell ones per item (``unit`` "item").

Weights, fixed with the spec before the stream: the whole-cell guarantees share half of the budget equally and the
per-label ones the other half equally (all of it for the whole cell when none is watched). Every weight is positive
and they sum to 1, so the cell's weighted mean stays an e-detector (:mod:`calibration.monitoring.monitor`).

What one label says (:func:`watched_outcome`): a whole-cell coverage counts every item and fails when the human
label is outside the served set; a whole-cell accept error counts the accepted items and fails when one is wrong
(``|human - point| >= tolerance``); a label-y guarantee counts only items labelled y (and only under a per-label
guarantee): coverage fails as above, accept error counts every label-y item while an accept level is served and
fails when the item was accepted wrong. Works item by item (bools) and elementwise (numpy arrays).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from calibration.monitoring.detector import GuaranteeSpec
from calibration.monitoring.monitor import CellSpec

__all__ = ["watched_cell_spec", "watched_outcome"]


def watched_cell_spec(
    *,
    alpha: float,
    accept_alpha: float | None,
    tolerance: int,
    per_label: bool,
    n_labels: int,
    max_items: int,
    delta: float,
    horizon: int,
) -> CellSpec:
    """The cell's watched guarantees and weights (module rules)."""
    whole = [GuaranteeSpec(guarantee="coverage", level=alpha, max_items=max_items)]
    if accept_alpha is not None:
        whole.append(
            GuaranteeSpec(guarantee="accept_error", level=accept_alpha, tolerance=tolerance, max_items=max_items)
        )
    if not per_label:
        return CellSpec(guarantees=whole, weights=_normalised([1.0] * len(whole)), delta=delta, horizon=horizon)
    per: list[GuaranteeSpec] = []
    for y in range(1, n_labels + 1):
        mine = [GuaranteeSpec(guarantee="coverage", level=alpha, human_label=y, max_items=max_items, unit="document")]
        if accept_alpha is not None:
            mine.append(
                GuaranteeSpec(
                    guarantee="accept_error", level=accept_alpha, tolerance=tolerance, human_label=y,
                    max_items=max_items, unit="document",
                )
            )  # fmt: skip
        per += mine
    weights = [0.5 / len(whole)] * len(whole) + [0.5 / len(per)] * len(per)
    return CellSpec(guarantees=whole + per, weights=_normalised(weights), delta=delta, horizon=horizon)


def _normalised(weights: list[float]) -> list[float]:
    total = sum(weights)
    return [w / total for w in weights]


def watched_outcome(
    watched: GuaranteeSpec, *, label: Any, covered: Any, accepted: Any, wrong: Any, per_label: bool, accept_served: bool
) -> tuple[Any, Any]:
    """(counted, failed) of one labelled item, or of arrays of items elementwise, for one watched guarantee (module
    rules): ``wrong`` is accepted with |label - point| >= tolerance; ``accept_served``: an accept level was served."""
    if watched.human_label is None:
        mine = np.ones_like(np.asarray(label), dtype=bool)
    else:
        mine = np.logical_and(per_label, np.asarray(label) == watched.human_label)
    if watched.guarantee == "coverage":
        return mine, np.logical_and(mine, np.logical_not(covered))
    counted = np.logical_and(mine, accepted if watched.human_label is None else accept_served)
    return counted, np.logical_and(counted, wrong)
