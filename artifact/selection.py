"""The selection rule's outcome for a default method (calibration.input_kinds.selection): why no method qualified, in
words, or None.

From format 3 the outcome is typed in the artifact (``DefaultMethod.selection_qualified`` and
``selection_failures``). An artifact of an earlier format recorded a failed selection only in the default's reason
(``fallback to <method>: no method qualified ... (<method>: size, coverage (5th pct), min label, min score bin ...)``);
for those the figures, printed to 2-3 decimals, are read once, here, and checked against the rule's floors (figures
that cannot be read leave the reason itself).
"""

from __future__ import annotations

import re

from artifact.entries import DefaultMethod
from calibration.input_kinds.selection import CHECK_WORDS

__all__ = ["legacy_selection_failure", "selection_failure"]

_FALLBACK = "fallback to "
_FIGURES = re.compile(
    r"\((?P<method>[A-Za-z_]+): size [\d.]+, coverage (?P<mean>[\d.]+) \(5th pct (?P<p5>[\d.]+)\), "
    r"min label (?P<label>[\d.]+), min score bin (?P<bin>[\d.]+)"
)
_ALPHA = re.compile(r"alpha=(?P<alpha>0?\.\d+)")


def selection_failure(default: DefaultMethod) -> str | None:
    """None when the default method qualified; else which checks of the selection rule its fallback fails."""
    if default.selection_qualified is None:
        return legacy_selection_failure(default.reason)
    if default.selection_qualified:
        return None
    what = "; ".join(default.selection_failures) or "no check is recorded"
    return f"no method met the selection rule; the fallback {default.method} fails: {what}"


def legacy_selection_failure(reason: str) -> str | None:
    """An artifact before format 3: the outcome read from the default's reason (module rules)."""
    if not reason.startswith(_FALLBACK):
        return None
    figures, level = _FIGURES.search(reason), _ALPHA.search(reason)
    if figures is None or level is None:
        return f"no method met the selection rule ({reason})"
    target = 1.0 - float(level["alpha"])
    failed = [
        f"{name} {float(figures[key]):g} < {target - slack:.2f}"
        for key, (name, slack) in CHECK_WORDS.items()
        if float(figures[key]) < target - slack - 1e-12
    ]
    what = "; ".join(failed) if failed else "no check could be named from the recorded figures"
    return (
        f"no method met the selection rule at alpha={float(level['alpha']):g}; the fallback "
        f"{figures['method']} fails: {what}"
    )
