"""The report cards the service shows: the shipped ones (``report_cards.json`` beside the thresholds artifact) and a
calibration job's, looked up by judge and criterion.

The service never computes a card: the labelled data they are computed from is not here (``make calibrate`` and the
calibration jobs compute them, :mod:`artifact.report_evidence`). The shipped file is read when first asked and again
when it changes on disk (its modification time), so ``make calibrate`` followed by a request shows the new figures.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from artifact.report_cards import ReportCards, cards_beside, load_report_cards
from calibration.report_card.card import ReportCard
from service.errors import NotFoundError

__all__ = ["ShippedReportCards", "cards_of"]


class ShippedReportCards:
    """The report cards file beside the thresholds artifact, read lazily and re-read when it changes."""

    def __init__(self, thresholds_path: str | os.PathLike[str]) -> None:
        self.path: Path = cards_beside(thresholds_path)
        self._loaded: tuple[float, ReportCards] | None = None

    def current(self) -> ReportCards | None:
        """The file's cards, or None when there is no file (a ValueError names a malformed one)."""
        try:
            stamp = self.path.stat().st_mtime
        except OSError:
            return None
        if self._loaded is None or self._loaded[0] != stamp:
            self._loaded = (stamp, load_report_cards(self.path))
        return self._loaded[1]

    def judges(self) -> set[str]:
        """The judges with a shipped card."""
        cards = self.current()
        return set() if cards is None else {card.judge for card in cards.cards}


def cards_of(
    cards: Sequence[ReportCard], judge: str, *, criterion: str | None, prompt_family: str | None, where: str
) -> list[ReportCard]:
    """The judge's cards (of ``criterion`` and ``prompt_family`` when given); NotFoundError (404) naming what exists."""
    mine = [card for card in cards if card.judge == judge]
    if not mine:
        known = sorted({card.judge for card in cards})
        raise NotFoundError(
            f"no report card for judge {judge!r} in {where}"
            + (f"; judges with one: {', '.join(known)}" if known else "; it holds none")
        )
    chosen = [
        card
        for card in mine
        if (criterion is None or card.criterion == criterion)
        and (prompt_family is None or card.prompt_family == prompt_family)
    ]
    if not chosen:
        cells = ", ".join(sorted(f"{c.prompt_family}/{c.criterion}" for c in mine))
        raise NotFoundError(f"judge {judge!r} has no report card for that criterion in {where}; it has: {cells}")
    return sorted(chosen, key=lambda c: (c.prompt_family, c.criterion))
