"""Re-exporting an artifact without churn: floats that moved by no more than ``FLOAT_TOLERANCE`` keep their
written value, and a file whose content did not move is not rewritten.

The same fit on another machine kind (another BLAS, another libm) differs in the last bits of some floats
(118 entries by at most 3.3e-16 on one machine): without this, ``make calibrate`` in a fresh clone rewrites
thousands of floats of the tracked artifact and a diff of it shows noise instead of what changed.

Rules (``settle``): two values are the same when they are equal, or both numbers (not booleans) within
``FLOAT_TOLERANCE`` absolute or relative; dicts key by key, lists item by item, entries by their key
(judge, prompt family, criterion, input kind, method, alpha). Provenance that changes on every run
(``created_at``, and the ``+g<hash>`` suffix of ``code_version``) does not count as a move; the package
version, ``data_hash`` and ``source`` do, and so does a build from a clean commit over one that recorded
uncommitted changes (the same numbers, now traceable to a commit).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import msgspec

from artifact.thresholds import ThresholdsArtifact, load_artifact, save_artifact
from calibration.errors import ArtifactError

__all__ = ["FLOAT_TOLERANCE", "UNCOMMITTED", "same_within", "save_unless_unmoved", "settle"]

FLOAT_TOLERANCE = 1e-12
# What offline.build.export.code_version says instead of a commit when tracked files differ from the checkout's commit.
UNCOMMITTED = "uncommitted changes"
_PROVENANCE = ("created_at", "code_version")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _close(old: Any, new: Any, tolerance: float) -> bool:
    if not (_is_number(old) and _is_number(new)):
        return False
    if math.isnan(old) and math.isnan(new):
        return True
    return math.isclose(old, new, rel_tol=tolerance, abs_tol=tolerance)


def _keep_old_floats(old: Any, new: Any, tolerance: float) -> tuple[Any, bool]:
    """(``new`` with every value within tolerance of ``old`` replaced by old's, whether anything moved)."""
    if type(old) is type(new) and old == new:
        return old, False
    if _close(old, new, tolerance):
        return old, False
    if isinstance(old, dict) and isinstance(new, dict) and old.keys() == new.keys():
        merged, moved = {}, False
        for key, value in new.items():
            merged[key], moved_here = _keep_old_floats(old[key], value, tolerance)
            moved = moved or moved_here
        return merged, moved
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        items = [_keep_old_floats(a, b, tolerance) for a, b in zip(old, new, strict=True)]
        return [item for item, _ in items], any(moved for _, moved in items)
    return new, True


def same_within(old: Any, new: Any, tolerance: float = FLOAT_TOLERANCE) -> bool:
    """True when two values (msgspec Structs or builtins) differ by no more than ``tolerance`` in any number."""
    return not _keep_old_floats(msgspec.to_builtins(old), msgspec.to_builtins(new), tolerance)[1]


def settle(
    previous: ThresholdsArtifact, fresh: ThresholdsArtifact, tolerance: float = FLOAT_TOLERANCE
) -> tuple[ThresholdsArtifact, bool]:
    """(``fresh`` with previous's value for every number that moved by at most ``tolerance``, whether anything
    but run-to-run provenance moved); entries are matched by key, so a new or removed entry moves nothing else."""
    old, new = msgspec.to_builtins(previous), msgspec.to_builtins(fresh)
    old_entries = {entry.key: raw for entry, raw in zip(previous.entries, old["entries"], strict=True)}
    entries, moved = [], len(previous.entries) != len(fresh.entries)
    for entry, raw in zip(fresh.entries, new["entries"], strict=True):
        before = old_entries.get(entry.key)
        kept, moved_here = (raw, True) if before is None else _keep_old_floats(before, raw, tolerance)
        entries.append(kept)
        moved = moved or moved_here
    rest_old = {k: v for k, v in old.items() if k not in ("entries", *_PROVENANCE)}
    rest_new = {k: v for k, v in new.items() if k not in ("entries", *_PROVENANCE)}
    rest, moved_rest = _keep_old_floats(rest_old, rest_new, tolerance)
    version_moved = _release(old["code_version"]) != _release(new["code_version"]) or (
        UNCOMMITTED in old["code_version"] and UNCOMMITTED not in new["code_version"]
    )
    merged = {**rest, "entries": entries, "created_at": new["created_at"], "code_version": new["code_version"]}
    return msgspec.convert(merged, ThresholdsArtifact), moved or moved_rest or version_moved


def _release(code_version: str) -> str:
    """The package version of a ``code_version`` (without ``+g<hash>`` or `` (uncommitted changes)``)."""
    return code_version.split("+")[0].split(" (")[0]


def save_unless_unmoved(artifact: ThresholdsArtifact, path: str | os.PathLike[str]) -> tuple[ThresholdsArtifact, bool]:
    """Save ``artifact`` at ``path`` keeping the floats of the file there that did not move, or leave that file
    untouched when nothing moved; (the artifact now at ``path``, whether the file was written)."""
    location = Path(path)
    try:
        previous = load_artifact(location) if location.exists() else None
    except ArtifactError:
        previous = None  # an unreadable or outdated file is replaced
    if previous is not None:
        settled, moved = settle(previous, artifact)
        if not moved:
            return previous, False
        artifact = settled
    save_artifact(artifact, location)
    return artifact, True
