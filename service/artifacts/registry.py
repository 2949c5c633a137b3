"""The set of loaded artifacts and the one rule that merges them: each artifact owns cells.

A cell is (judge, prompt family, criterion). The service holds an ordered set of named artifacts: the primary one
(``PRIMARY``, loaded from THRESHOLDS_PATH, the shipped calibration by default) and any the operator or a user
activated. Rules, stated once:

* **Ownership.** An artifact owns every cell it has an entry for. Two artifacts never own one cell.
* **Adding** an artifact under a name not in the set adds its cells; a cell already owned by another artifact is
  refused (:class:`OwnershipConflictError`, naming the cell and both artifacts; the set is unchanged).
* **Replacing** an artifact (the same name again) drops the cells it owned and takes the new ones, with the same
  conflict check against the others.
* **Removing** drops its cells; the primary one stays unless removed explicitly.
* **Reserved names.** ``PRIMARY`` names the artifact loaded from THRESHOLDS_PATH (the shipped calibration by
  default): an activated artifact may not take it (``RESERVED_NAMES``, compared case-insensitively), so an
  activation can never replace, and a deletion never remove, the primary artifact.
* **Printable names.** Every judge, prompt family and criterion of an artifact is non-empty printable text: no
  control, bidi-override, zero-width or other format characters (``str.isprintable``), so a name shows as what
  it is in the spec, the answers and the logs (:func:`unprintable_names`).
* **Merged view.** Entries, default methods and decision rules are the union (primary first, then in activation
  order); the label scale is the widest (each entry keeps its own ``fitted.n_labels``); with one artifact the
  merged view *is* that artifact (so its ``calibration_id`` is unchanged).

Pure: no I/O, no framework; :mod:`service.artifacts.state` holds the current set and builds the snapshot from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from artifact.thresholds import ThresholdsArtifact, artifact_id
from service.errors import OwnershipConflictError  # raised here; a 409 ``cell-owned`` problem

__all__ = [
    "PRIMARY",
    "RESERVED_NAMES",
    "ArtifactSet",
    "Cell",
    "LoadedArtifact",
    "OwnershipConflictError",
    "cells_of",
    "is_printable_name",
    "unprintable_names",
]

PRIMARY = "primary"
RESERVED_NAMES = frozenset({PRIMARY})  # lower case; an artifact name is compared with .lower()
Cell = tuple[str, str, str]  # (judge, prompt_family, criterion)


def cells_of(artifact: ThresholdsArtifact) -> tuple[Cell, ...]:
    """The cells an artifact owns, in first-entry order."""
    return tuple(dict.fromkeys((e.judge, e.prompt_family, e.criterion) for e in artifact.entries))


def is_printable_name(text: str) -> bool:
    """True for non-empty text of printable characters only (``str.isprintable``: no Cc/Cf/Zl/Zp/Co/Cs/Cn
    character, so no NUL, bidi override such as U+202E, or zero-width character such as U+200B)."""
    return bool(text) and text.isprintable()


def unprintable_names(artifact: ThresholdsArtifact) -> list[str]:
    """The judge, prompt family and criterion names of ``artifact`` that are not printable (module rule), each once,
    as ``repr`` (so the answer shows the hidden characters)."""
    names = {name for e in artifact.entries for name in (e.judge, e.prompt_family, e.criterion)}
    names |= {name for d in artifact.default_methods for name in (d.judge, d.prompt_family, d.criterion)}
    return sorted(repr(name) for name in names if not is_printable_name(name))


@dataclass(frozen=True, kw_only=True)
class LoadedArtifact:
    """One artifact in the set: its name, content, where it came from and when it was loaded."""

    name: str
    artifact: ThresholdsArtifact
    path: str
    loaded_at: str
    calibration_id: str = ""
    cells: tuple[Cell, ...] = ()

    @classmethod
    def of(cls, name: str, artifact: ThresholdsArtifact, *, path: str, loaded_at: str) -> LoadedArtifact:
        """Wrap an artifact (its id and cells computed once)."""
        return cls(
            name=name,
            artifact=artifact,
            path=path,
            loaded_at=loaded_at,
            calibration_id=artifact_id(artifact),
            cells=cells_of(artifact),
        )


@dataclass(frozen=True)
class ArtifactSet:
    """An immutable, ordered set of named artifacts; every change returns a new set (module rules)."""

    members: tuple[LoadedArtifact, ...] = ()
    owners: dict[Cell, str] = field(default_factory=dict)

    def names(self) -> list[str]:
        """Artifact names in merge order."""
        return [m.name for m in self.members]

    def get(self, name: str) -> LoadedArtifact | None:
        """The artifact of that name, or None."""
        return next((m for m in self.members if m.name == name), None)

    def put(self, loaded: LoadedArtifact) -> ArtifactSet:
        """Add or replace ``loaded.name``; OwnershipConflictError when another artifact owns one of its cells."""
        owners = {cell: owner for cell, owner in self.owners.items() if owner != loaded.name}
        for cell in loaded.cells:
            owner = owners.get(cell)
            if owner is not None:
                raise OwnershipConflictError(cell, owner, loaded.name)
        owners.update(dict.fromkeys(loaded.cells, loaded.name))
        if self.get(loaded.name) is not None:
            members = tuple(loaded if m.name == loaded.name else m for m in self.members)
        else:
            members = (*self.members, loaded)
        return ArtifactSet(members, owners)

    def remove(self, name: str) -> ArtifactSet:
        """The set without ``name``; KeyError when it is not in the set."""
        if self.get(name) is None:
            raise KeyError(name)
        return ArtifactSet(
            tuple(m for m in self.members if m.name != name),
            {cell: owner for cell, owner in self.owners.items() if owner != name},
        )

    def merged(self) -> ThresholdsArtifact | None:
        """The union of the members (module rules), or None for an empty set."""
        if not self.members:
            return None
        if len(self.members) == 1:
            return self.members[0].artifact
        first = self.members[0].artifact
        widest = max(len(m.artifact.label_scale) for m in self.members)
        return ThresholdsArtifact(
            format_version=max(m.artifact.format_version for m in self.members),
            created_at=max(m.artifact.created_at for m in self.members),
            code_version=first.code_version,
            data_hash=first.data_hash,
            label_scale=list(range(1, widest + 1)),
            entries=[e for m in self.members for e in m.artifact.entries],
            default_methods=[d for m in self.members for d in m.artifact.default_methods],
            decision_rules=[r for m in self.members for r in m.artifact.decision_rules],
            label_rules=[r for m in self.members for r in m.artifact.label_rules],
            source="merged: " + "; ".join(f"{m.name} ({m.calibration_id})" for m in self.members),
        )
