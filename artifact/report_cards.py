"""The report cards file (``artifact/report_cards.json``): one :class:`calibration.report_card.card.ReportCard` per
calibrated (judge, prompt family, criterion), written by ``python -m offline report-cards`` (the last step of
``make calibrate``) beside the thresholds artifact, read by the service.

A separate file, not a part of ``thresholds.json``: the cards are evidence about a calibration (figures computed on
the labelled data, which the service never holds), not what serves a verdict, so the artifact's format and its
digest (the calibration id) do not move when a figure of the report is added or recomputed.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from calibration.report_card.card import ReportCard

__all__ = [
    "REPORT_CARDS_FILE",
    "REPORT_CARDS_VERSION",
    "ReportCards",
    "cards_beside",
    "decode_report_cards",
    "encode_report_cards",
    "load_report_cards",
    "save_report_cards",
]

REPORT_CARDS_VERSION = 1
REPORT_CARDS_FILE = "report_cards.json"


class ReportCards(msgspec.Struct, frozen=True, kw_only=True):
    """The file: its version, when and from what it was computed, and the cards sorted by their cell."""

    format_version: int = REPORT_CARDS_VERSION
    created_at: str
    source: str
    cards: list[ReportCard]


def encode_report_cards(cards: ReportCards) -> bytes:
    """Indented JSON with a final newline (a committed file that diffs line by line)."""
    return msgspec.json.format(msgspec.json.encode(cards), indent=1) + b"\n"


def decode_report_cards(data: bytes, *, source: str = "<bytes>") -> ReportCards:
    """The file's cards; ValueError naming ``source`` on a malformed file or another format version."""
    try:
        cards = msgspec.json.decode(data, type=ReportCards)
    except msgspec.DecodeError as error:
        raise ValueError(f"{source}: not a report cards file: {error}") from None
    if cards.format_version != REPORT_CARDS_VERSION:
        raise ValueError(
            f"{source}: report cards format {cards.format_version}, this code reads {REPORT_CARDS_VERSION}"
        )
    return cards


def load_report_cards(path: str | os.PathLike[str]) -> ReportCards:
    """Read and check the file at ``path``."""
    return decode_report_cards(Path(path).read_bytes(), source=str(path))


def save_report_cards(cards: ReportCards, path: str | os.PathLike[str]) -> None:
    """Write the file atomically (a temporary file renamed over the target)."""
    target = Path(path)
    temporary = target.with_name(target.name + ".tmp")
    temporary.write_bytes(encode_report_cards(cards))
    temporary.replace(target)


def cards_beside(artifact_path: str | os.PathLike[str]) -> Path:
    """Where the report cards of the artifact at ``artifact_path`` live: ``report_cards.json`` in its folder."""
    return Path(artifact_path).with_name(REPORT_CARDS_FILE)
