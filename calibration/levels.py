"""The one level rule: which calibrated level serves an asked one.

A request's level (alpha for sets, accept_alpha for decisions and gates) is served at the largest calibrated
level <= the asked one, compared with ``LEVEL_TOLERANCE`` (1e-9) of slack so that 0.1 read from JSON matches 0.1
in a request: the conservative side. No calibrated level <= the asked one: None (the caller refuses or
escalates, saying so).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["LEVEL_TOLERANCE", "same_level", "served_level"]

LEVEL_TOLERANCE = 1e-9


def served_level(calibrated: Iterable[float], asked: float) -> float | None:
    """The largest calibrated level <= ``asked`` (within LEVEL_TOLERANCE), or None."""
    usable = [float(level) for level in calibrated if level <= asked + LEVEL_TOLERANCE]
    return max(usable) if usable else None


def same_level(a: float, b: float) -> bool:
    """Whether two levels are the same calibrated level (within LEVEL_TOLERANCE)."""
    return abs(a - b) <= LEVEL_TOLERANCE
