"""One document's labelled outcomes for one watched guarantee: what a feedback store accumulates until the document
ends.

A guarantee speaks of some of a document's labelled items and says how often they may fail:

* **coverage** at level ``alpha``: every labelled item counts; it fails when the human label is outside the served
  prediction set (null: miss rate <= alpha, i.e. coverage >= 1 - alpha);
* **accept error** at (``tolerance``, ``accept_alpha``): only accepted items count; one fails when
  ``|human - point| >= tolerance`` (null: error among accepted <= accept_alpha).

Each counted item brings the level ``a`` it was served at, so items served at different levels can feed one
detector: the document's **excess** is sum over counted items of (failed / a - 1), whose expectation is <= 0 when
every served level's guarantee holds (each item's failure probability <= its own level). ``allowed`` sums the
levels of the counted items (what the levels allow in failures), for the running report.

``labels`` counts every labelled item of the document the monitor saw (counted or not), so that the stream's
length in labels is known; ``counted <= labels`` and ``failures <= counted`` always hold. The tally is updated in
O(1) per label; the monitors read a finished document's tally only (:mod:`calibration.monitoring.detector`),
because the document, not the item, is the exchangeable unit.
"""

from __future__ import annotations

import msgspec

__all__ = ["DocumentTally", "add_item", "check_tally", "single_level_tally"]


class DocumentTally(msgspec.Struct, frozen=True, kw_only=True):
    """A document's labelled items seen by one guarantee: all of them, those it counts, failures, and the excess."""

    labels: int = 0
    counted: int = 0
    failures: int = 0
    excess: float = 0.0  # sum over counted items of failed / level - 1
    allowed: float = 0.0  # sum over counted items of level


def add_item(tally: DocumentTally, *, counted: bool, failed: bool, level: float) -> DocumentTally:
    """The tally with one more labelled item served at ``level``; ValueError for a failure the guarantee does not
    count or a level outside (0, 1)."""
    if failed and not counted:
        raise ValueError("an item the guarantee does not count (not accepted) cannot fail it")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level {level} must lie in (0, 1)")
    return DocumentTally(
        labels=tally.labels + 1,
        counted=tally.counted + int(counted),
        failures=tally.failures + int(failed),
        excess=tally.excess + ((1.0 / level if failed else 0.0) - 1.0 if counted else 0.0),
        allowed=tally.allowed + (level if counted else 0.0),
    )


def check_tally(tally: DocumentTally, max_items: int) -> None:
    """ValueError unless 0 <= failures <= counted <= labels <= max_items and excess >= -counted."""
    if not 0 <= tally.failures <= tally.counted <= tally.labels:
        raise ValueError(
            f"a document tally needs 0 <= failures <= counted <= labels (got {tally.failures}, {tally.counted}, "
            f"{tally.labels})"
        )
    if tally.excess < -tally.counted - 1e-9:
        raise ValueError(f"a document's excess {tally.excess} is below -counted = {-tally.counted}")
    if tally.labels > max_items:
        raise ValueError(
            f"a document with {tally.labels} labelled items exceeds the monitor's max_items={max_items}: the bets "
            "are sized for documents of at most max_items labels, fixed before the stream"
        )


def single_level_tally(*, labels: int, counted: int, failures: int, level: float) -> DocumentTally:
    """The tally of a document whose counted items were all served at one ``level``."""
    return DocumentTally(
        labels=labels,
        counted=counted,
        failures=failures,
        excess=failures / level - counted,
        allowed=level * counted,
    )
