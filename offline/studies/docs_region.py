"""A generated region of a hand-written docs page, shared by the studies that write one (``--docs``): the page keeps
its own text, and the region between two marker lines is replaced whole by the study's Markdown; its figure is a
small committed PNG.

* :func:`wrap`: a paragraph wrapped at 120 characters, like the hand-written ones (words never broken).
* :func:`replace_region`: the page with its text from ``begin`` to ``end`` (inclusive) replaced; ValueError naming
  the markers when the page lacks them.
* :func:`page_with_region`: the same read from a page file, a missing file or region a DataError naming the page.
* :func:`save_line_plot`: a matplotlib figure saved as a 128-colour PNG (a line plot needs no more; a few tens of
  KB), then closed.
"""

from __future__ import annotations

import io
import textwrap
from pathlib import Path
from typing import Any

from PIL import Image

from offline.data.errors import DataError

__all__ = ["page_with_region", "replace_region", "save_line_plot", "wrap"]


def wrap(text: str) -> str:
    """A paragraph wrapped at 120 characters (words never broken)."""
    return textwrap.fill(text, width=120, break_long_words=False, break_on_hyphens=False)


def replace_region(page: str, generated: str, *, begin: str, end: str, name: str) -> str:
    """``page`` with its text from ``begin`` to ``end`` (inclusive) replaced by ``generated``; ValueError without
    the markers (``name`` says which region)."""
    start, stop = page.find(begin), page.find(end)
    if start < 0 or stop < start:
        raise ValueError(f"the page has no {name} region: add the lines {begin!r} and {end!r}")
    return page[:start] + generated + page[stop + len(end) :]


def page_with_region(page: Path, generated: str, *, begin: str, end: str, name: str) -> str:
    """The text of the page file with its region replaced; DataError when the file or the region is missing."""
    if not page.is_file():
        raise DataError(None, None, f"{page} not found: --docs names the docs folder holding {page.name}")
    try:
        return replace_region(page.read_text(), generated, begin=begin, end=end, name=name)
    except ValueError as error:
        raise DataError(None, None, f"{page}: {error}") from error


def save_line_plot(fig: Any, path: Path, *, dpi: int = 100) -> None:
    """Save the matplotlib ``fig`` at ``path`` as a 128-colour PNG and close it."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=dpi, format="png")
    plt.close(fig)
    with Image.open(buffer) as image:
        image.convert("RGB").quantize(colors=128).save(path, optimize=True)
