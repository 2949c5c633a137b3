"""How the results page writes a figure it takes from a report: one formatter for every number on the page.

Rules: decimals with a leading zero and a true minus sign (``−0.12``); ``signed`` adds ``+`` to positive values;
shares as percentages (``46.7%``); counts with thousands separators (``31,997``); ranges ``lo–hi`` (en dash);
``n/a`` for an undefined statistic (a report's ``null``). When a row carries ``<name>_ci`` (a two-number interval)
beside the figure ``<name>``, the figure is written ``figure [lo, hi]`` in the same format.

``Figures(masked=True)`` writes every figure as :data:`MASK` instead: the page rendered that way shows the fixed
text alone, which the tests check holds no number outside code spans and :data:`offline.results_page.page.NOTATION`.
Figures cited from the papers (not from a report) go through :meth:`Figures.cited`, masked the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["MASK", "Figures"]

MASK = "⟦⟧"


class Figures:
    """Formats report figures for the page (or masks them: see the module docstring)."""

    def __init__(self, *, masked: bool = False) -> None:
        self.masked = masked

    def _out(self, text: str) -> str:
        return MASK if self.masked else text

    @staticmethod
    def _decimal(value: float, digits: int, signed: bool) -> str:
        text = f"{abs(value):.{digits}f}"
        if value < 0 and float(text) != 0:
            return "−" + text
        return ("+" if signed and float(text) != 0 else "") + text

    def num(self, value: float | None, digits: int = 2, *, signed: bool = False) -> str:
        """A decimal figure."""
        return self._out("n/a" if value is None else self._decimal(float(value), digits, signed))

    def pct(self, share: float | None, digits: int = 1) -> str:
        """A share as a percentage."""
        return self._out("n/a" if share is None else f"{100 * float(share):.{digits}f}%")

    def sci(self, value: float | None) -> str:
        """A small figure such as a p-value, in scientific notation with one digit (``3e-05``)."""
        return self._out("n/a" if value is None else f"{float(value):.0e}")

    def count(self, n: int) -> str:
        """A count."""
        return self._out(f"{int(n):,}")

    def name(self, text: str) -> str:
        """A name taken from a report (a judge, a method, a criterion)."""
        return self._out(str(text))

    def names(self, texts: Iterable[str]) -> str:
        """Names from a report, comma-separated."""
        return ", ".join(self.name(t) for t in texts)

    def cited(self, text: str) -> str:
        """A figure cited from a paper, not from a report."""
        return self._out(text)

    def span(self, values: Iterable[float | None], digits: int = 2, *, pct: bool = False, signed: bool = False) -> str:
        """``lo–hi`` over the defined values (one figure when they agree at this precision)."""
        defined = [float(v) for v in values if v is not None]
        if not defined:
            return self._out("n/a")
        low, high = min(defined), max(defined)
        if pct:
            a, b = f"{100 * low:.{digits}f}", f"{100 * high:.{digits}f}%"
            return self._out(b if a + "%" == b else f"{a}–{b}")
        a, b = self._decimal(low, digits, signed), self._decimal(high, digits, signed)
        return self._out(a if a == b else f"{a}–{b}")

    def field(
        self, row: Mapping[str, Any], key: str, digits: int = 2, *, pct: bool = False, signed: bool = False
    ) -> str:
        """``row[key]``, followed by ``[lo, hi]`` when the row carries ``<key>_ci``."""
        value = row[key]
        text = self.pct(value, digits) if pct else self.num(value, digits, signed=signed)
        interval = row.get(f"{key}_ci")
        if value is None or not interval:
            return text
        low, high = interval
        if pct:
            return f"{text} [{self.pct(low, digits)}, {self.pct(high, digits)}]"
        return f"{text} [{self.num(low, digits, signed=signed)}, {self.num(high, digits, signed=signed)}]"
