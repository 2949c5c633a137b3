"""The one level rule: which calibrated level serves an asked one.

A request's level (alpha for sets, accept_alpha for decisions and gates) is served at the largest calibrated
level <= the asked one, compared with ``LEVEL_TOLERANCE`` (1e-9) of slack so that 0.1 read from JSON matches 0.1
in a request: the conservative side. No calibrated level <= the asked one: None (the caller refuses or
escalates, saying so).

``LEVEL_GRID`` is the grid every shipped cell is calibrated at (sets, per-label rules): 0.01 .. 0.30 by 0.01.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["LEVEL_GRID", "LEVEL_TOLERANCE", "same_level", "served_level"]

LEVEL_TOLERANCE = 1e-9
LEVEL_GRID: tuple[float, ...] = tuple(round(0.01 * step, 2) for step in range(1, 31))


def served_level(calibrated: Iterable[float], asked: float) -> float | None:
    """The largest calibrated level <= ``asked`` (within LEVEL_TOLERANCE), or None."""
    usable = [float(level) for level in calibrated if level <= asked + LEVEL_TOLERANCE]
    return max(usable) if usable else None


def same_level(a: float, b: float) -> bool:
    """Whether two levels are the same calibrated level (within LEVEL_TOLERANCE)."""
    return abs(a - b) <= LEVEL_TOLERANCE
