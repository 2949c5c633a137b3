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
from service.errors import CalibrationUnavailableError, NotFoundError

__all__ = ["ShippedReportCards", "cards_of"]


class ShippedReportCards:
    """The report cards file beside the thresholds artifact, read lazily and re-read when it changes."""

    def __init__(self, thresholds_path: str | os.PathLike[str]) -> None:
        self.path: Path = cards_beside(thresholds_path)
        self._loaded: tuple[float, ReportCards] | None = None

    def current(self) -> ReportCards | None:
        """The file's cards, or None when there is no file; a file that cannot be read or is malformed is a 503
        problem naming it (the service's calibration still serves; ``make calibrate`` writes the file again)."""
        try:
            stamp = self.path.stat().st_mtime
        except OSError:
            return None
        if self._loaded is None or self._loaded[0] != stamp:
            try:
                self._loaded = (stamp, load_report_cards(self.path))
            except (OSError, ValueError) as error:
                raise CalibrationUnavailableError(
                    f"the report cards file cannot be read: {error}; run `python -m offline report-cards`"
                ) from None
        return self._loaded[1]

    def judges(self) -> set[str]:
        """The judges with a shipped card (none when the file is missing or unreadable: /v1/judges still answers)."""
        try:
            cards = self.current()
        except CalibrationUnavailableError:
            return set()
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
