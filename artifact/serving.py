"""Which calibrated entry serves a verdict: the one rule the service and ``offline validate`` both apply.

Inputs: the artifact's index, the cell (judge, prompt family, criterion), the input kinds the verdict carries
(:mod:`calibration.input_kinds.verdicts`), the requested level and, optionally, a method. Rules, in order:

1. **Kinds.** Only kinds the verdict carries *and* the cell was calibrated on are candidates; a verdict with log-
   probs and a score carries both ``probabilities`` and ``score``. No candidate -> uncalibrated (never a threshold
   fitted on another kind of input).
2. **Level.** The largest calibrated alpha <= the requested one (within 1e-9): the conservative side, and the
   answer says when it differs. A request below every calibrated level is refused (:class:`LevelRefused`).
3. **Method.** Each candidate kind offers the named method (when the request names one and the kind has it) or
   else its default method (the first calibrated one when it has no default); the offer with the smallest held-out
   mean set size wins (ties: the verdict's kind order), so sending log-probs beside a score never gives a larger
   expected set than the score alone. A named method that no candidate kind has is refused
   (:class:`MethodRefused`, listing what is calibrated and what to send for the kind that has it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec

from artifact.thresholds import ThresholdEntry, ThresholdIndex
from calibration.levels import same_level, served_level

__all__ = ["LevelRefused", "MethodRefused", "ServedEntry", "Uncalibrated", "choose_entry", "interval_hull"]

_WHAT_TO_SEND = {"score": "integer score", "probabilities": "log-probs", "mean": "mean_of_samples"}


class ServedEntry(msgspec.Struct, frozen=True, kw_only=True):
    """The entry that serves a verdict, its kind, method, the level used, and a note when it differs from asked."""

    entry: ThresholdEntry
    kind: str
    method: str
    alpha: float
    note: str = ""


class Uncalibrated(msgspec.Struct, frozen=True, kw_only=True):
    """No entry may serve this verdict, and why."""

    reason: str


class LevelRefused(ValueError):
    """The requested alpha is below every calibrated level; ``allowed`` lists the levels."""

    def __init__(self, message: str, allowed: list[float]) -> None:
        super().__init__(message)
        self.allowed = allowed


class MethodRefused(ValueError):
    """The named method is not calibrated for the verdict's kinds at the level; ``allowed`` lists those that are."""

    def __init__(self, message: str, allowed: list[str]) -> None:
        super().__init__(message)
        self.allowed = allowed


def choose_entry(
    index: ThresholdIndex,
    cell: tuple[str, str, str],
    verdict_input_kinds: Sequence[str],
    alpha: float,
    method: str | None = None,
) -> ServedEntry | Uncalibrated:
    """Apply the module's rules; raises LevelRefused or MethodRefused for a request that cannot be honoured."""
    calibrated = index.kinds(*cell)
    kinds = [kind for kind in verdict_input_kinds if kind in calibrated]
    if not kinds:
        carried = ", ".join(verdict_input_kinds) or "nothing"
        return Uncalibrated(
            reason=(
                f"thresholds for judge={cell[0]!r}, prompt_family={cell[1]!r}, criterion={cell[2]!r} were fitted "
                f"on {', '.join(calibrated) or 'no'} verdicts; this verdict carries {carried}"
            )
        )
    offers: list[tuple[str, str, float]] = []  # (kind, method, level)
    all_levels: set[float] = set()
    for kind in kinds:
        names = [method] if method is not None else [index.default_method(*cell, kind) or index.methods(*cell, kind)[0]]
        for name in names:
            levels = index.alphas(*cell, name, kind)
            all_levels.update(levels)
            level = served_level(levels, alpha)  # calibration.levels: the one level rule
            if level is not None:
                offers.append((kind, name, level))
    if not offers:
        if method is not None and not any(method in index.methods(*cell, kind) for kind in kinds):
            allowed = sorted(
                {m for kind in kinds for m in index.methods(*cell, kind)}, key=lambda m: index.methods(*cell).index(m)
            )
            elsewhere = [kind for kind in calibrated if method in index.methods(*cell, kind)]
            hint = (
                (
                    f" ({method} is calibrated for {' and '.join(elsewhere)} verdicts only: send the judge's "
                    f"{' or '.join(_WHAT_TO_SEND[k] for k in elsewhere)})"
                )
                if elsewhere
                else ""
            )
            raise MethodRefused(
                f"method {method!r} is not calibrated for {' or '.join(kinds)} verdicts of judge={cell[0]!r}, "
                f"prompt_family={cell[1]!r}, criterion={cell[2]!r}{hint}; calibrated: {', '.join(allowed)}",
                allowed,
            )
        levels = sorted(all_levels)
        raise LevelRefused(
            f"alpha={alpha} is below every calibrated level ({', '.join(map(str, levels))}); ask for one of them "
            "or a larger alpha",
            levels,
        )
    served = []
    for kind, name, level in offers:
        entry = index.lookup(*cell, name, level, kind)
        assert entry is not None
        size = entry.heldout_set_size if entry.heldout_set_size is not None else math.inf
        served.append((size, kinds.index(kind), kind, name, level, entry))
    size, _, kind, name, level, entry = min(served, key=lambda row: (row[0], row[1]))
    note = ""
    if not same_level(level, alpha):
        note = f"; alpha={alpha} is not a calibrated level, so the next smaller one ({level}) was used"
    if len(served) > 1:
        others = ", ".join(
            f"{k} verdicts -> {n} ({'n/a' if math.isinf(s) else f'{s:.2f}'})"
            for s, _, k, n, _, _ in served
            if k != kind
        )
        note += (
            f"; served from {kind} verdicts with {name} (held-out mean set size "
            f"{'n/a' if math.isinf(size) else f'{size:.2f}'}; {others})"
        )
    return ServedEntry(entry=entry, kind=kind, method=name, alpha=level, note=note)


def interval_hull(labels: Sequence[int]) -> tuple[int, ...]:
    """The served set: the smallest interval of labels holding the conformal set ({2, 4} -> (2, 3, 4); () stays ()).

    A superset of the conformal set, so its coverage is at least the set's; the service and ``offline validate``
    both serve it, so a set never has a hole.
    """
    return tuple(range(min(labels), max(labels) + 1)) if labels else ()
