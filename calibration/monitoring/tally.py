"""One document's labelled outcomes for one guarantee: what a feedback store accumulates until the document ends.

A guarantee speaks of some of a document's labelled items and says how often they may fail:

* **coverage** at level ``alpha``: every labelled item counts; it fails when the human label is outside the served
  prediction set (null: miss rate <= alpha, i.e. coverage >= 1 - alpha);
* **accept error** at (``tolerance``, ``accept_alpha``): only accepted items count; one fails when
  ``|human - point| >= tolerance`` (null: error among accepted <= accept_alpha).

``labels`` counts every labelled item of the document the monitor saw (counted or not), so that the stream's
length in labels is known; ``counted <= labels`` and ``failures <= counted`` always hold. The tally is three
integers, updated in O(1) per label; the monitors read a finished document's tally only
(:mod:`calibration.monitoring.eprocess`), because the document, not the item, is the exchangeable unit.
"""

from __future__ import annotations

import msgspec

__all__ = ["DocumentTally", "add_item", "check_tally"]


class DocumentTally(msgspec.Struct, frozen=True, kw_only=True):
    """A document's labelled items seen by one monitor: all of them, those the guarantee counts, and failures."""

    labels: int = 0
    counted: int = 0
    failures: int = 0


def add_item(tally: DocumentTally, *, counted: bool, failed: bool) -> DocumentTally:
    """The tally with one more labelled item; ValueError for a failure the guarantee does not count."""
    if failed and not counted:
        raise ValueError("an item the guarantee does not count (not accepted) cannot fail it")
    return DocumentTally(
        labels=tally.labels + 1, counted=tally.counted + int(counted), failures=tally.failures + int(failed)
    )


def check_tally(tally: DocumentTally, max_items: int) -> None:
    """ValueError unless 0 <= failures <= counted <= labels <= max_items."""
    if not 0 <= tally.failures <= tally.counted <= tally.labels:
        raise ValueError(
            f"a document tally needs 0 <= failures <= counted <= labels (got {tally.failures}, {tally.counted}, "
            f"{tally.labels})"
        )
    if tally.labels > max_items:
        raise ValueError(
            f"a document with {tally.labels} labelled items exceeds the monitor's max_items={max_items}: the bets "
            "are sized for documents of at most max_items labels, fixed before the stream"
        )
