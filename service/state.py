"""The loaded calibration, held for the app and swapped atomically.

A request takes one ``CalibrationSnapshot`` (``holder.current``) at its start and uses only that snapshot,
so a reload in the middle of a request (or a batch) never mixes two artifacts. A reload loads and validates
the new file completely (in a worker thread) before the one reference assignment that publishes it; a
broken file raises ``ArtifactError`` and the old snapshot stays. Reloads are serialised by a lock.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

import anyio.to_thread

from calibration.conformal import METHODS, prediction_set
from calibration.errors import ArtifactError
from calibration.thresholds import ThresholdEntry, ThresholdIndex, ThresholdsArtifact, load_artifact
from service.artifact_file import decode_artifact_bytes, read_artifact_file, resolve_reload_path

__all__ = ["MEMO_LIMIT", "CalibrationHolder", "CalibrationSnapshot", "coverage_target", "load_snapshot"]


Cell = tuple[str, str, str]  # (judge, prompt_family, criterion)
MEMO_LIMIT = 4096


def coverage_target(alpha: float) -> float:
    """1 - alpha, rounded to 12 decimals so that 1 - 0.35 reads 0.65."""
    return round(1.0 - alpha, 12)


@dataclass(frozen=True, kw_only=True)
class CalibrationSnapshot:
    """One loaded artifact with its index, where it came from and when it was loaded.

    The look-up tables below are built once per load (``load_snapshot``), so a request never scans the
    artifact's entries. ``score_sets`` memoises the prediction set of a verdict that is a judge score alone:
    that set is a pure function of (entry, score), so there are at most K per entry. ``memo`` holds what
    ``service.scoring`` resolved from a request's names (judge, family, level, method -> entry): it depends
    on this artifact and on the app's fixed settings only, so it lives and dies with the snapshot; it keeps
    at most ``MEMO_LIMIT`` results and nothing that failed.
    """

    artifact: ThresholdsArtifact
    index: ThresholdIndex
    path: str
    loaded_at: str
    all_levels: tuple[float, ...] = ()
    judge_names: frozenset[str] = frozenset()
    cell_methods: dict[Cell, tuple[str, ...]] = field(default_factory=dict)
    cell_levels: dict[Cell, tuple[float, ...]] = field(default_factory=dict)
    coverage_targets: dict[float, float] = field(default_factory=dict)
    score_sets: dict[tuple[int, int], tuple[int, ...]] = field(default_factory=dict)
    memo: dict[tuple[object, ...], object] = field(default_factory=dict)

    @classmethod
    def build(cls, artifact: ThresholdsArtifact, *, path: str, loaded_at: str) -> CalibrationSnapshot:
        """Index an artifact for the service."""
        methods: dict[Cell, set[str]] = {}
        levels: dict[Cell, set[float]] = {}
        for entry in artifact.entries:
            cell = (entry.judge, entry.prompt_family, entry.criterion)
            methods.setdefault(cell, set()).add(entry.method)
            levels.setdefault(cell, set()).add(entry.alpha)
        return cls(
            artifact=artifact,
            index=ThresholdIndex(artifact),
            path=path,
            loaded_at=loaded_at,
            all_levels=tuple(sorted({entry.alpha for entry in artifact.entries})),
            judge_names=frozenset(entry.judge for entry in artifact.entries),
            cell_methods={cell: tuple(m for m in METHODS if m in found) for cell, found in methods.items()},
            cell_levels={cell: tuple(sorted(found)) for cell, found in levels.items()},
            coverage_targets={entry.alpha: coverage_target(entry.alpha) for entry in artifact.entries},
        )

    @property
    def calibration_id(self) -> str:
        """The artifact's content hash (16 hex digits)."""
        return self.index.calibration_id

    @property
    def n_labels(self) -> int:
        """K, the size of the label scale."""
        return len(self.artifact.label_scale)

    def remember(self, key: tuple[object, ...], value: object) -> None:
        """Keep ``value`` in ``memo`` under ``key`` unless the memo is full."""
        if len(self.memo) < MEMO_LIMIT:
            self.memo[key] = value

    def prediction_set(
        self, entry: ThresholdEntry, judge_score: int, probabilities: list[float] | None
    ) -> tuple[int, ...]:
        """``calibration.conformal.prediction_set`` for an entry of this snapshot (memoised without probabilities)."""
        if probabilities is not None:
            return prediction_set(entry.fitted, judge_score=judge_score, probabilities=probabilities)
        key = (id(entry), judge_score)  # the entry lives as long as this snapshot, so its id is stable
        labels = self.score_sets.get(key)
        if labels is None:
            labels = self.score_sets[key] = prediction_set(entry.fitted, judge_score=judge_score)
        return labels

    def levels(self) -> list[float]:
        """Every calibrated alpha in the artifact, ascending."""
        return list(self.all_levels)

    def methods(self, judge: str, prompt_family: str, criterion: str) -> list[str]:
        """Methods calibrated for a cell, in the core's order ([] when the cell is not calibrated)."""
        return list(self.cell_methods.get((judge, prompt_family, criterion), ()))

    def levels_for(self, judge: str, prompt_family: str, criterion: str) -> list[float]:
        """Alphas calibrated for one (judge, prompt family, criterion), any method, ascending."""
        return list(self.cell_levels.get((judge, prompt_family, criterion), ()))

    def judges(self) -> list[str]:
        """Judges with at least one entry, sorted."""
        return sorted(self.judge_names)

    def cells(self, judge: str) -> list[tuple[str, str]]:
        """(prompt_family, criterion) pairs calibrated for a judge, sorted."""
        return sorted((family, criterion) for j, family, criterion in self.cell_methods if j == judge)

    def prompt_families_for(self, judge: str, criterion: str) -> list[str]:
        """Prompt families calibrated for (judge, criterion), sorted."""
        return sorted(family for j, family, c in self.cell_methods if j == judge and c == criterion)

    def methods_in_order(self) -> list[str]:
        """The methods present in the artifact, in the core's order."""
        present = {method for found in self.cell_methods.values() for method in found}
        return [method for method in METHODS if method in present]


def load_snapshot(path: str | Path) -> CalibrationSnapshot:
    """Load, validate and index the artifact at path; ArtifactError names the file and the problem."""
    location = Path(path)
    try:
        is_directory = location.is_dir()
    except OSError as error:  # e.g. a name too long for the file system
        raise ArtifactError(f"{location}: cannot read thresholds file: {error.strerror or error}") from error
    if is_directory:
        raise ArtifactError(f"{location}: is a directory, not a thresholds file")
    artifact = load_artifact(location)
    return CalibrationSnapshot.build(
        artifact, path=str(location), loaded_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    )


class CalibrationHolder:
    """The current snapshot (or None with the load error), replaced atomically by ``reload``.

    A reload reads only regular files inside ``reload_dir`` (default: the start-up file's directory) of at most
    ``max_artifact_bytes`` (rules: ``service.artifact_file``).
    """

    def __init__(
        self, path: str | Path, *, reload_dir: str | Path | None = None, max_artifact_bytes: int = 50_000_000
    ) -> None:
        self.path = Path(path)
        self.reload_dir = Path(reload_dir) if reload_dir is not None else self.path.parent
        self.max_artifact_bytes = max_artifact_bytes
        self.current: CalibrationSnapshot | None = None
        self.error: str | None = "not loaded yet"
        self._lock = asyncio.Lock()

    def load_initial(self) -> None:
        """Load THRESHOLDS_PATH at start-up; on failure keep None and remember the error (readyz reports it)."""
        try:
            self.current = load_snapshot(self.path)
            self.error = None
        except ArtifactError as error:
            self.current = None
            self.error = str(error)

    async def reload(self, path: str | Path | None = None) -> tuple[CalibrationSnapshot | None, CalibrationSnapshot]:
        """Load path (default: the current path) and swap it in; returns (previous, new); ArtifactError keeps old."""
        async with self._lock:
            target, snapshot = await anyio.to_thread.run_sync(self._load_confined, path)
            previous = self.current
            self.current = snapshot
            self.path = target
            self.error = None
            return previous, snapshot

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
