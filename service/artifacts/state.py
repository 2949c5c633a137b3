"""The loaded calibration, held for the app and swapped atomically.

A request takes one ``CalibrationSnapshot`` (``holder.current``; :mod:`service.artifacts.snapshot`) at its
start and uses only that snapshot, so a reload in the middle of a request (or a batch) never mixes two artifacts.
A reload loads and validates the new file completely (in a worker thread) before the one reference assignment
that publishes it; a broken file raises ``ArtifactError`` and the old snapshot stays. Reloads are serialised by
a lock.

Names: an activated artifact's name follows ``service.artifacts.activated.check_name`` (a reserved name such as
``primary``
is refused: the primary artifact is replaced only by a reload without a name, and is never removed through the
API); every judge, prompt family and criterion of any artifact is printable text (``service.artifacts.registry``),
checked
before anything is published.

A process that does not activate itself (a job worker) follows the activations and deletions made by the API
through the shared store (``follow``: a cheap version check, reloading the activated set only when it changed).
"""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import anyio.to_thread

from artifact.pairwise import DEFAULT_PATH as DEFAULT_PAIRWISE_PATH
from artifact.pairwise import PairwiseIndex, load_pairwise_artifact
from artifact.thresholds import ThresholdsArtifact
from calibration.errors import ArtifactError
from service.artifacts.activated import ActivatedStore, check_name
from service.artifacts.artifact_file import decode_artifact_bytes, read_artifact_file, resolve_reload_path
from service.artifacts.registry import (
    PRIMARY,
    ArtifactSet,
    LoadedArtifact,
    OwnershipConflictError,
    unprintable_names,
)
from service.artifacts.snapshot import CalibrationSnapshot, read_thresholds_file
from service.errors import ConflictError, InvalidRequestError

__all__ = ["CalibrationHolder"]


class CalibrationHolder:
    """The current snapshot (or None with the load error), replaced atomically by ``reload``.

    A reload reads only regular files inside ``reload_dir`` (default: the start-up file's directory) of at most
    ``max_artifact_bytes`` (rules: ``service.artifacts.artifact_file``).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        reload_dir: str | Path | None = None,
        max_artifact_bytes: int = 50_000_000,
        artifacts_dir: str | Path | None = None,
        redis_url: str | None = None,
        artifacts_redis_key: str | None = None,
        pairwise_path: str | Path | None = None,
    ) -> None:
        self.path = Path(path)
        # Certified pairwise decisions (artifact.pairwise): /v1/compare abstains on every pair without.
        self.pairwise_path = Path(pairwise_path) if pairwise_path is not None else DEFAULT_PAIRWISE_PATH
        self.pairwise: PairwiseIndex | None = None
        self.pairwise_error: str | None = "not loaded yet"
        self.reload_dir = Path(reload_dir) if reload_dir is not None else self.path.parent
        self.max_artifact_bytes = max_artifact_bytes
        self.current: CalibrationSnapshot | None = None
        self.error: str | None = "not loaded yet"
        self._lock = asyncio.Lock()
        # Activated artifacts persist here (ARTIFACTS_DIR, ARTIFACTS_REDIS_KEY; service.artifacts.activated).
        self.activated = ActivatedStore(artifacts_dir, redis_url=redis_url, redis_key=artifacts_redis_key)
        self.artifacts = ArtifactSet()
        self.skipped: list[str] = []  # persisted artifacts refused at start-up, with the reason
        self._seen_version: tuple[object, ...] | None = None  # the store's version at the last (re)load (follow)

    def load_initial(self) -> None:
        """Load THRESHOLDS_PATH and the persisted activated artifacts at start-up; on failure of the first keep
        None and remember the error (readyz reports it); a persisted artifact that fails or conflicts is skipped
        and listed in ``skipped``."""
        loaded_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        artifacts = ArtifactSet()
        try:
            self.pairwise, self.pairwise_error = PairwiseIndex(load_pairwise_artifact(self.pairwise_path)), None
        except ArtifactError as error:
            self.pairwise, self.pairwise_error = None, str(error)
        try:
            # read, not indexed: _publish below indexes the merged set once (a snapshot built here too was thrown
            # away, 0.2 s of CPU at every start-up on the shipped artifact)
            primary = read_thresholds_file(self.path)
            _check_printable(primary, str(self.path))
            artifacts = artifacts.put(LoadedArtifact.of(PRIMARY, primary, path=str(self.path), loaded_at=loaded_at))
            self.error = None
        except ArtifactError as error:
            self.error = str(error)
        self._seen_version = self.activated.version()  # read before loading: a change meanwhile is seen next time
        self._publish(self._with_activated(artifacts, loaded_at, self.skipped))

    def _with_activated(self, artifacts: ArtifactSet, loaded_at: str, skipped: list[str]) -> ArtifactSet:
        """``artifacts`` plus every persisted activated artifact that loads and fits (the others go to
        ``skipped`` with the reason)."""
        self.activated.unavailable.clear()
        for name, path, outcome in self.activated.load_all():
            try:
                if isinstance(outcome, Exception):
                    raise outcome
                _check_printable(outcome, str(path))
                artifacts = artifacts.put(LoadedArtifact.of(name, outcome, path=str(path), loaded_at=loaded_at))
            except (ArtifactError, OwnershipConflictError) as error:
                skipped.append(f"{path}: {error}")
        skipped.extend(self.activated.unavailable)
        return artifacts

    def follow(self) -> bool:
        """Take in the activations and deletions made elsewhere (the API, another replica) since the last look:
        when the store's version changed, rebuild the set from the primary artifact and the store's artifacts and
        publish it; True when it did. Synchronous and cheap when nothing changed (one Redis GET and/or a directory
        listing); a store that cannot be read keeps the current set."""
        version = self.activated.version()
        if version is None or version == self._seen_version:
            return False
        loaded_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        primary = self.artifacts.get(PRIMARY)
        base = ArtifactSet() if primary is None else ArtifactSet().put(primary)
        skipped: list[str] = []
        try:
            artifacts = self._with_activated(base, loaded_at, skipped)
        except OSError:  # a file vanished or became unreadable mid-listing: keep serving, look again next time
            return False
        if self.activated.unavailable:  # the store went away between the version and the read: try again later
            return False
        self._seen_version = version
        self.skipped = skipped
        self._publish(artifacts)
        return True

    def _publish(self, artifacts: ArtifactSet) -> CalibrationSnapshot | None:
        """Build the snapshot of ``artifacts`` and make it current (None for an empty set)."""
        merged = artifacts.merged()
        primary = artifacts.get(PRIMARY)
        snapshot = (
            None
            if merged is None
            else CalibrationSnapshot.build(
                merged,
                path=primary.path if primary is not None else artifacts.members[0].path,
                loaded_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                artifacts=artifacts,
            )
        )
        self.artifacts = artifacts
        self.current = snapshot
        return snapshot

    async def activate(
        self, name: str, artifact: ThresholdsArtifact, *, source: str
    ) -> tuple[CalibrationSnapshot | None, CalibrationSnapshot]:
        """Add or replace the artifact ``name`` (service.artifacts.registry rules; OwnershipConflictError leaves
        all as it
        was; a reserved or malformed name is a 422, unprintable cell names an ArtifactError), persist it
        (ARTIFACTS_DIR), then publish the merged snapshot; returns (previous, new), read under the lock."""
        _check_activation_name(name)
        _check_printable(artifact, source)
        async with self._lock:
            loaded_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
            previous = self.current
            artifacts = self.artifacts.put(LoadedArtifact.of(name, artifact, path=source, loaded_at=loaded_at))
            await anyio.to_thread.run_sync(self.activated.save, name, artifact)
            snapshot = self._publish(artifacts)
            assert snapshot is not None
            return previous, snapshot

    async def remove(self, name: str) -> CalibrationSnapshot | None:
        """Drop the artifact ``name`` and its persisted copy; KeyError when it is not loaded; ConflictError (409)
        for the primary artifact, which only a reload replaces."""
        if name == PRIMARY:
            raise ConflictError(
                "the primary artifact (THRESHOLDS_PATH) cannot be removed through the API; reload "
                "another file in its place instead"
            )
        async with self._lock:
            artifacts = self.artifacts.remove(name)
            await anyio.to_thread.run_sync(self.activated.delete, name)
            return self._publish(artifacts)

    async def reload(
        self, path: str | Path | None = None, *, name: str | None = None
    ) -> tuple[CalibrationSnapshot | None, CalibrationSnapshot]:
        """Load path (default: the current path) as the primary artifact, or as artifact ``name`` beside it (then
        persisted), and publish the merged snapshot; returns (previous, new). ArtifactError or
        OwnershipConflictError keeps everything as it was."""
        if name is not None and name != PRIMARY:
            _check_activation_name(name)
        async with self._lock:
            target, snapshot = await anyio.to_thread.run_sync(self._load_confined, path)
            _check_printable(snapshot.artifact, str(path if path is not None else self.path))
            previous = self.current
            artifacts = self.artifacts.put(
                LoadedArtifact.of(name or PRIMARY, snapshot.artifact, path=str(target), loaded_at=snapshot.loaded_at)
            )
            if name is not None and name != PRIMARY:
                await anyio.to_thread.run_sync(self.activated.save, name, snapshot.artifact)
            else:
                self.path = target
            published = self._publish(artifacts)
            assert published is not None
            self.error = None
            return previous, published

    def _load_confined(self, requested: str | Path | None) -> tuple[Path, CalibrationSnapshot]:
        """(real path, snapshot) of a reload request's file; ReloadPathError / ArtifactError as the module says."""
        if requested is None:  # the file loaded now: the operator's own THRESHOLDS_PATH, bounded but not confined
            target, allowed, source = self.path, self.path.parent, str(self.path)
        else:
            allowed, source = self.reload_dir, str(requested)
            target = resolve_reload_path(str(requested), allowed, self.max_artifact_bytes)
        data = read_artifact_file(target, allowed, self.max_artifact_bytes)
        artifact = decode_artifact_bytes(data, source)
        loaded_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        return target, CalibrationSnapshot.build(artifact, path=str(target), loaded_at=loaded_at)


def _check_activation_name(name: str) -> None:
    """InvalidRequestError (422) unless ``name`` may name an activated artifact
    (``service.artifacts.activated.check_name``)."""
    try:
        check_name(name)
    except ValueError as error:
        raise InvalidRequestError(str(error)) from None


def _check_printable(artifact: ThresholdsArtifact, source: str) -> None:
    """ArtifactError (422) when a judge, prompt family or criterion name of ``artifact`` is not printable."""
    bad = unprintable_names(artifact)
    if bad:
        raise ArtifactError(
            f"{source}: judge, prompt family and criterion names must be printable text (no control, "
            f"bidi or zero-width characters): {', '.join(bad[:5])}"
        )
