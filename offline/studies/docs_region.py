"""A generated region of a hand-written docs page, shared by the studies that write one (``--docs``): the page keeps
its own text, and the region between two marker lines is replaced whole by the study's Markdown; its figure is a
small committed PNG.

* :func:`wrap`: a paragraph wrapped at 120 characters, like the hand-written ones (words never broken).
* :func:`replace_region`: the page with its text from ``begin`` to ``end`` (inclusive) replaced; ValueError naming
  the markers when the page lacks them.
* :func:`page_with_region`: the same read from a page file, a missing file or region a DataError naming the page.
* :func:`style_operating_axes`: the two axes of an operating curve (accept share above, error among accepted
  below, both against ``accept_alpha``) given their line at error = accept_alpha, titles, labels, limits and legends.
* :func:`save_line_plot`: a matplotlib figure saved as a 128-colour PNG (a line plot needs no more; a few tens of
  KB), then closed.
"""

from __future__ import annotations

import io
import textwrap
from pathlib import Path
from typing import Any

from PIL import Image

from offline.build.inputs.errors import DataError

__all__ = ["page_with_region", "replace_region", "save_line_plot", "style_operating_axes", "wrap"]


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


def style_operating_axes(
    share_axis: Any,
    error_axis: Any,
    *,
    limit: float,
    titles: tuple[str, str],
    error_label: str,
    error_top: float,
    legend_size: int,
) -> None:
    """Finish an operating curve's pair of axes: the line error = accept_alpha up to ``limit`` on ``error_axis``,
    the ``titles`` (share, error), the y labels (``error_label`` below), y limits [0, 1] and [0, ``error_top``],
    x from 0 to 1.05 ``limit``, a light grid and an upper-left legend of ``legend_size`` points on both."""
    error_axis.plot([0, limit], [0, limit], color="red", linewidth=1.0, label="error = accept_alpha")
    share_axis.set_title(titles[0])
    error_axis.set_title(titles[1])
    share_axis.set_ylabel("accepted / all verdicts")
    error_axis.set_ylabel(error_label)
    share_axis.set_ylim(0, 1)
    error_axis.set_ylim(0, error_top)
    error_axis.set_xlabel("accept_alpha")
    for axis in (share_axis, error_axis):
        axis.set_xlim(0, limit * 1.05)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=legend_size, loc="upper left")


def save_line_plot(fig: Any, path: Path, *, dpi: int = 100) -> None:
    """Save the matplotlib ``fig`` at ``path`` as a 128-colour PNG and close it."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=dpi, format="png")
    plt.close(fig)
    with Image.open(buffer) as image:
        image.convert("RGB").quantize(colors=128).save(path, optimize=True)
