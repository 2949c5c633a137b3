"""Activated artifacts on disk, so they survive a restart: ``<ARTIFACTS_DIR>/<name>.json``, one artifact each.

Unset ARTIFACTS_DIR: activation lasts for the process only (nothing is written). A name is 1-64 characters of
letters, digits, ``_``, ``-`` and ``.`` starting with a letter or digit, so it is always a plain file name inside the
directory. Files are written atomically (``calibration.thresholds.save_artifact``: temp file + rename) and loaded at
start-up in name order.
"""

from __future__ import annotations

import re
from pathlib import Path

from calibration.errors import ArtifactError
from calibration.thresholds import ThresholdsArtifact, load_artifact, save_artifact
from service.problems import CalibrationUnavailableError

__all__ = ["NAME_PATTERN", "ActivatedStore", "PersistError", "check_name"]

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def check_name(name: str) -> str:
    """The name itself when it may name an artifact (module rule); ValueError otherwise."""
    if not NAME_PATTERN.match(name) or name.endswith(".json") or ".." in name:
        raise ValueError(f"artifact name {name!r} must be 1-64 letters, digits, '_', '-' or '.' (no '..', no .json)")
    return name


class PersistError(CalibrationUnavailableError):
    """ARTIFACTS_DIR cannot be written (503): the activation is refused and nothing changes."""


class ActivatedStore:
    """The directory of activated artifacts, or nothing when ``directory`` is None."""

    def __init__(self, directory: str | Path | None) -> None:
        self.directory = None if directory is None else Path(directory)

    def path(self, name: str) -> Path | None:
        """Where artifact ``name`` is kept (None without a directory)."""
        return None if self.directory is None else self.directory / f"{check_name(name)}.json"

    def load_all(self) -> list[tuple[str, Path, ThresholdsArtifact | ArtifactError]]:
        """Every ``*.json`` in the directory, in name order: (name, path, artifact or the error reading it)."""
        if self.directory is None or not self.directory.is_dir():
            return []
        found: list[tuple[str, Path, ThresholdsArtifact | ArtifactError]] = []
        for path in sorted(self.directory.glob("*.json")):
            try:
                found.append((check_name(path.stem), path, load_artifact(path)))
            except ArtifactError as error:
                found.append((path.stem, path, error))
            except ValueError as error:  # a file name that is not an artifact name
                found.append((path.stem, path, ArtifactError(f"{path}: {error}")))
        return found

    def save(self, name: str, artifact: ThresholdsArtifact) -> None:
        """Write the artifact atomically (no-op without a directory); PersistError when the disk refuses, so the
        caller publishes nothing (never half-activated)."""
        path = self.path(name)
        if path is not None:
            try:
                save_artifact(artifact, path)
            except OSError as error:
                raise PersistError(f"cannot keep the artifact in ARTIFACTS_DIR ({path}): {error.strerror or error}; "
                                   "nothing was activated") from None

    def delete(self, name: str) -> None:
        """Remove the persisted copy, if any."""
        path = self.path(name)
        if path is not None:
            path.unlink(missing_ok=True)
