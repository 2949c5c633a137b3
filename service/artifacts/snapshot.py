"""One loaded calibration as a request sees it: the artifact, its look-up tables built once per load, and a memo.

A ``CalibrationSnapshot`` never changes once built; ``service.artifacts.state`` holds the current one and swaps it
atomically on a reload or an activation. ``load_snapshot`` loads, validates and indexes one thresholds file.
"""

from __future__ import annotations

import datetime as dt
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from artifact.selection import selection_failure
from artifact.thresholds import GUARANTEE_MODES, ThresholdEntry, ThresholdIndex, ThresholdsArtifact, load_artifact
from calibration.conformal import METHODS
from calibration.decisions.rule import DecisionRule
from calibration.errors import ArtifactError
from calibration.per_label.rule import LabelRule
from service.artifacts.registry import PRIMARY, ArtifactSet, LoadedArtifact

__all__ = ["MEMO_LIMIT", "CalibrationSnapshot", "LruMemo", "coverage_target", "load_snapshot", "read_thresholds_file"]


Cell = tuple[str, str, str]  # (judge, prompt_family, criterion)
MEMO_LIMIT = 4096


class LruMemo(OrderedDict[tuple[object, ...], object]):
    """A bounded memo: at most ``limit`` entries; a hit makes an entry the most recent, and a new entry past the
    bound evicts the least recently used one (as ``functools.lru_cache``), so a flood of one-off keys (distinct
    alpha values) cannot crowd out the requests that recur."""

    def __init__(self, limit: int = 4096) -> None:
        super().__init__()
        self.limit = limit

    def get(self, key: tuple[object, ...], default: object = None) -> object:
        """The value under ``key`` (now the most recent), or ``default``."""
        try:
            self.move_to_end(key)
        except KeyError:
            return default
        return self[key]

    def put(self, key: tuple[object, ...], value: object) -> None:
        """Keep ``value`` as the most recent entry, evicting the least recent beyond ``limit``."""
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.limit:
            self.popitem(last=False)


def coverage_target(alpha: float) -> float:
    """1 - alpha, rounded to 12 decimals so that 1 - 0.35 reads 0.65."""
    return round(1.0 - alpha, 12)


@dataclass(frozen=True, kw_only=True)
class CalibrationSnapshot:
    """One loaded artifact with its index, where it came from and when it was loaded.

    The look-up tables below are built once per load (``load_snapshot``), so a request never scans the
    artifact's entries; each entry's set rule is compiled once, on first use (``ThresholdIndex.rule``), and holds
    the sets of a verdict that is a judge score alone ready (at most K per entry). ``memo`` holds what
    ``service.scoring.score`` resolved from a request's names (judge, family, level, method -> entry): it depends
    on this artifact and on the app's fixed settings only, so it lives and dies with the snapshot; it keeps
    the ``MEMO_LIMIT`` most recently used results (``LruMemo``) and nothing that failed.
    """

    artifact: ThresholdsArtifact
    index: ThresholdIndex  # the artifact's only mode, or pac when it holds both (listings)
    path: str
    loaded_at: str
    all_levels: tuple[float, ...] = ()
    judge_names: frozenset[str] = frozenset()
    cell_methods: dict[Cell, tuple[str, ...]] = field(default_factory=dict)
    cell_levels: dict[Cell, tuple[float, ...]] = field(default_factory=dict)
    coverage_targets: dict[float, float] = field(default_factory=dict)
    memo: LruMemo = field(default_factory=lambda: LruMemo(MEMO_LIMIT))
    artifacts: ArtifactSet = field(default_factory=ArtifactSet)  # the set merged into ``artifact`` (registry)
    cell_labels: dict[Cell, int] = field(default_factory=dict)  # K of each calibrated cell
    criterion_labels: dict[str, int] = field(default_factory=dict)  # K of a criterion (its first cell's)
    # Certified decision rules by (judge, prompt family, criterion, input kind) (service.scoring.policy)
    decision_rules: dict[tuple[str, str, str, str], DecisionRule] = field(default_factory=dict)
    # The per-label guarantee's rules by (judge, prompt family, criterion, input kind) (service.scoring.per_label)
    label_rules: dict[tuple[str, str, str, str], LabelRule] = field(default_factory=dict)
    # Why each default method's selection failed (None: it qualified), by (judge, prompt family, criterion, input
    # kind, guarantee mode): a failed selection is served as a failed rule (artifact.selection.selection_failure)
    default_failures: dict[tuple[str, str, str, str, str], str | None] = field(default_factory=dict)
    # One index per guarantee mode (artifact.thresholds.GUARANTEE_MODES): a request is served its mode's entries only
    indexes: dict[str, ThresholdIndex] = field(default_factory=dict)
    pac_confidences: tuple[float, ...] = ()  # 1 - delta of the pac entries, ascending

    @classmethod
    def build(
        cls, artifact: ThresholdsArtifact, *, path: str, loaded_at: str, artifacts: ArtifactSet | None = None
    ) -> CalibrationSnapshot:
        """Index an artifact (the merged view of ``artifacts`` when given) for the service."""
        methods: dict[Cell, set[str]] = {}
        levels: dict[Cell, set[float]] = {}
        cell_labels: dict[Cell, int] = {}
        for entry in artifact.entries:
            cell = (entry.judge, entry.prompt_family, entry.criterion)
            methods.setdefault(cell, set()).add(entry.method)
            levels.setdefault(cell, set()).add(entry.alpha)
            cell_labels.setdefault(cell, entry.fitted.n_labels)
        criterion_labels: dict[str, int] = {}
        for (_, _, criterion), k in cell_labels.items():
            criterion_labels.setdefault(criterion, k)
        if artifacts is None:
            artifacts = ArtifactSet().put(LoadedArtifact.of(PRIMARY, artifact, path=path, loaded_at=loaded_at))
        return cls(
            artifacts=artifacts,
            cell_labels=cell_labels,
            criterion_labels=criterion_labels,
            artifact=artifact,
            index=ThresholdIndex(artifact),
            indexes={mode: ThresholdIndex(artifact, mode) for mode in GUARANTEE_MODES},
            pac_confidences=tuple(
                sorted({round(1.0 - e.fitted.delta, 12) for e in artifact.entries if e.fitted.delta is not None})
            ),
            path=path,
            loaded_at=loaded_at,
            all_levels=tuple(sorted({entry.alpha for entry in artifact.entries})),
            judge_names=frozenset(entry.judge for entry in artifact.entries),
            cell_methods={cell: tuple(m for m in METHODS if m in found) for cell, found in methods.items()},
            cell_levels={cell: tuple(sorted(found)) for cell, found in levels.items()},
            coverage_targets={entry.alpha: coverage_target(entry.alpha) for entry in artifact.entries},
            decision_rules={(r.judge, r.prompt_family, r.criterion, r.input_kind): r for r in artifact.decision_rules},
            label_rules={(r.judge, r.prompt_family, r.criterion, r.input_kind): r for r in artifact.label_rules},
            default_failures={
                (d.judge, d.prompt_family, d.criterion, d.kind, mode): selection_failure(d)
                for d in sorted(artifact.default_methods, key=lambda d: d.mode is not None)  # a moded default wins
                for mode in ((d.mode,) if d.mode is not None else GUARANTEE_MODES)
            },
        )

    @property
    def calibration_id(self) -> str:
        """The artifact's content hash (16 hex digits)."""
        return self.index.calibration_id

    @property
    def n_labels(self) -> int:
        """K, the size of the widest label scale."""
        return len(self.artifact.label_scale)

    def n_labels_for(self, cell: Cell) -> int:
        """K of a cell: its own; for an uncalibrated cell its criterion's, else 5 (the shipped SummEval scale)."""
        k = self.cell_labels.get(cell)
        return k if k is not None else self.criterion_labels.get(cell[2], 5)

    def remember(self, key: tuple[object, ...], value: object) -> None:
        """Keep ``value`` in ``memo`` under ``key`` (the least recently used entry goes when it is full)."""
        self.memo.put(key, value)

    def index_for(self, mode: str) -> ThresholdIndex:
        """The index of one guarantee mode's entries."""
        return self.indexes[mode]

    def prediction_set(
        self, entry: ThresholdEntry, judge_score: int, probabilities: list[float] | None
    ) -> tuple[int, ...]:
        """``calibration.conformal.prediction_set`` for an entry of this snapshot, by the entry's compiled rule."""
        rule = self.indexes[entry.mode].rule(entry) if self.indexes else self.index.rule(entry)
        return rule.prediction_set(judge_score=judge_score, probabilities=probabilities)

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


def read_thresholds_file(path: str | Path) -> ThresholdsArtifact:
    """Load and validate the artifact at path, without indexing it; ArtifactError names the file and the problem."""
    location = Path(path)
    try:
        is_directory = location.is_dir()
    except OSError as error:  # e.g. a name too long for the file system
        raise ArtifactError(f"{location}: cannot read thresholds file: {error.strerror or error}") from error
    if is_directory:
        raise ArtifactError(f"{location}: is a directory, not a thresholds file")
    return load_artifact(location)


def load_snapshot(path: str | Path) -> CalibrationSnapshot:
    """Load, validate and index the artifact at path; ArtifactError names the file and the problem."""
    return CalibrationSnapshot.build(
        read_thresholds_file(path), path=str(path), loaded_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    )
