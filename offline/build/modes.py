"""The levels and guarantee modes the build fits at, stated once, and "fit both modes" written once.

* **Levels.** ``ALPHA_GRID`` (:data:`calibration.levels.LEVEL_GRID`, 0.01 .. 0.30 by 0.01): every level of a
  cell's default method in the artifact; ``TABLE_ALPHAS`` (0.05, 0.10, 0.15, 0.20, the levels of the other
  methods, :data:`artifact.input_kinds.OTHER_METHOD_ALPHAS`, and of the faithfulness fits); ``REPORT_ALPHAS`` (0.05,
  0.10, 0.20) and ``HEADLINE_ALPHA`` (0.10), where the fits' held-out evidence is summarised.
* **Modes.** Every cell is fitted in the ``pac`` mode at ``DEFAULT_DELTA`` (0.05, the service's calibration jobs'
  value, :data:`artifact.input_kinds.DEFAULT_DELTA`) and in the ``expected`` mode (``delta`` None);
  :func:`both_modes` runs one fitting function in both and pairs the fits per key, as the artifact takes them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from artifact.input_kinds import DEFAULT_DELTA, OTHER_METHOD_ALPHAS, FitKey, ModeFits
from calibration.input_kinds.fit import InputKindFit
from calibration.levels import LEVEL_GRID

__all__ = [
    "ALPHA_GRID",
    "DEFAULT_DELTA",
    "HEADLINE_ALPHA",
    "REPORT_ALPHAS",
    "TABLE_ALPHAS",
    "both_modes",
    "pair_modes",
]

ALPHA_GRID: tuple[float, ...] = LEVEL_GRID
TABLE_ALPHAS: tuple[float, ...] = tuple(sorted(OTHER_METHOD_ALPHAS))
REPORT_ALPHAS: tuple[float, ...] = (0.05, 0.10, 0.20)
HEADLINE_ALPHA = 0.10


def pair_modes(
    pac: Mapping[FitKey, InputKindFit], expected: Mapping[FitKey, InputKindFit] | None
) -> dict[FitKey, ModeFits]:
    """The artifact's fits per key: (pac, expected) when both were fitted, else the one."""
    if expected is None:
        return dict(pac)
    return {key: (fit, expected[key]) for key, fit in pac.items()}


def both_modes(
    fit: Callable[[float | None], Mapping[FitKey, InputKindFit]], delta: float | None = DEFAULT_DELTA
) -> dict[FitKey, ModeFits]:
    """``fit(delta)`` (pac) and ``fit(None)`` (expected), paired per key; ``fit(None)`` alone when ``delta`` is None."""
    pac = fit(delta)
    return pair_modes(pac, None if delta is None else fit(None))
