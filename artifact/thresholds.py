"""The thresholds artifact: what the offline module exports and the service loads.

One JSON file holds, for every (judge, prompt family, criterion, method, alpha), a fitted conformal predictor
(``FittedConformal``: threshold(s), learned parameters, calibration size, label scale) and the held-out
coverage and set size that the offline study measured for it, plus provenance: format version, creation time,
code version and a hash of the data it was fitted on. ``default_methods`` names, per (judge, prompt family,
criterion), the method the service uses when a request names none, with the reason it was chosen.

Usage:

======================================== =====================================================
``load_artifact(path)``                  read and validate; ``ArtifactError`` names file and problem
``save_artifact(artifact, path)``        validate, then write atomically (temp file + rename)
``ThresholdIndex(artifact)``             O(1) look-ups for the service
``index.lookup(j, pf, c, m, alpha)``     the entry or ``None``
``index.default_method(j, pf, c)``       the recommended method or ``None``
``index.rule(entry)``                    the entry's compiled set rule (``SetRule``), compiled once
======================================== =====================================================
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import msgspec

from artifact.entries import (
    FORMAT_VERSION,
    GUARANTEE_MODES,
    READABLE_VERSIONS,
    DefaultMethod,
    EntryKey,
    ThresholdEntry,
    ThresholdsArtifact,
    alpha_key,
    derived_kind,
)
from calibration.conformal import METHODS
from calibration.conformal.methods import conformal_method
from calibration.conformal.sets import SetRule, compile_rule
from calibration.decisions.rule import DecisionRule, validate_rule
from calibration.errors import ArtifactError
from calibration.input_kinds.verdicts import INPUT_KINDS, methods_for_input_kind
from calibration.per_label.rule import LabelRule, validate_label_rule

__all__ = [
    "FORMAT_VERSION",
    "GUARANTEE_MODES",
    "READABLE_VERSIONS",
    "DefaultMethod",
    "EntryKey",
    "ThresholdEntry",
    "ThresholdIndex",
    "ThresholdsArtifact",
    "artifact_id",
    "decode_artifact",
    "derived_kind",
    "encode_artifact",
    "load_artifact",
    "save_artifact",
    "validate_artifact",
]


def validate_artifact(artifact: ThresholdsArtifact, *, source: str = "<artifact>") -> None:
    """Check internal consistency; raise ArtifactError naming the source and the first problem found."""
    if artifact.format_version not in READABLE_VERSIONS:
        raise ArtifactError(
            f"{source}: format_version {artifact.format_version} is not supported (this code reads "
            f"{', '.join(map(str, READABLE_VERSIONS))})"
        )
    scale = artifact.label_scale
    if len(scale) < 2 or scale != list(range(1, len(scale) + 1)):
        raise ArtifactError(f"{source}: label_scale {scale} must be 1..K with K >= 2")
    seen: set[EntryKey] = set()
    for position, entry in enumerate(artifact.entries):
        where = (
            f"{source}: entries[{position}] ({entry.judge}, {entry.prompt_family}, {entry.criterion}, "
            f"{entry.method}, alpha={entry.alpha})"
        )
        _check_entry(entry, where, len(scale))
        if entry.key in seen:
            raise ArtifactError(f"{where}: duplicate entry")
        seen.add(entry.key)
    # calibration.decisions.rule.validate_rule and calibration.per_label.rule.validate_label_rule
    _check_rules(artifact.decision_rules, validate_rule, source=source, field="decision_rules", noun="decision rule")
    _check_rules(artifact.label_rules, validate_label_rule, source=source, field="label_rules", noun="per-label rule")
    _check_default_methods(artifact, source)


def _check_entry(entry: ThresholdEntry, where: str, widest: int) -> None:
    """One entry on its own: method, input kind, level, scale 2..widest, size and the method's fitted parts."""
    if entry.method not in METHODS:
        raise ArtifactError(f"{where}: unknown method {entry.method!r}")
    if entry.kind not in INPUT_KINDS or entry.method not in methods_for_input_kind(entry.kind):
        raise ArtifactError(f"{where}: method {entry.method!r} cannot be fitted on input kind {entry.kind!r}")
    if entry.fitted.method != entry.method:
        raise ArtifactError(f"{where}: fitted.method {entry.fitted.method!r} differs from the entry's method")
    if not 0.0 < entry.alpha < 1.0 or alpha_key(entry.fitted.alpha) != alpha_key(entry.alpha):
        raise ArtifactError(f"{where}: alpha must lie in (0, 1) and equal fitted.alpha ({entry.fitted.alpha})")
    k = entry.fitted.n_labels  # each cell carries its own scale 1..k; label_scale is the widest
    if not 2 <= k <= widest:
        raise ArtifactError(f"{where}: fitted.n_labels {k} must lie in 2..{widest} (the label scale)")
    if entry.fitted.n_cal < 1:
        raise ArtifactError(f"{where}: calibration size {entry.fitted.n_cal} must be at least 1")
    threshold = entry.fitted.threshold
    if threshold is not None and not math.isfinite(threshold):
        raise ArtifactError(f"{where}: threshold {threshold} is not finite (use null for the full scale)")
    method = conformal_method(entry.method)
    if method.grouping.name is not None and entry.fitted.group_thresholds is None:
        raise ArtifactError(f"{where}: {entry.method} needs group_thresholds")
    if method.score.learned:
        matrix = entry.fitted.learned_matrix
        if matrix is None or len(matrix) != k or any(len(row) != k for row in matrix):
            raise ArtifactError(f"{where}: {entry.method} needs a {k}x{k} learned_matrix")


_Rule = TypeVar("_Rule", DecisionRule, LabelRule)


def _check_rules(
    rules: Sequence[_Rule],
    validate: Callable[[_Rule], None],
    *,
    source: str,
    field: str,
    noun: str,
) -> None:
    """Each rule of ``field`` valid (``validate`` raises ValueError), at most one per cell and input kind."""
    seen: set[tuple[str, str, str, str]] = set()
    for position, rule in enumerate(rules):
        cell = (rule.judge, rule.prompt_family, rule.criterion, rule.input_kind)
        where = f"{source}: {field}[{position}] ({', '.join(cell)})"
        if cell in seen:
            raise ArtifactError(f"{where}: duplicate {noun}")
        seen.add(cell)
        try:
            validate(rule)
        except ValueError as error:
            raise ArtifactError(f"{where}: {error}") from error


def _check_default_methods(artifact: ThresholdsArtifact, source: str) -> None:
    """Each default method names an entry of its cell and input kind."""
    cells = {(e.judge, e.prompt_family, e.criterion, e.kind, e.method, e.mode) for e in artifact.entries}
    seen: set[tuple[str, str, str, str, str | None]] = set()
    for default in artifact.default_methods:
        cell = (default.judge, default.prompt_family, default.criterion, default.kind)
        where = f"({', '.join(cell)} verdicts{', ' + default.mode if default.mode else ''})"
        if default.mode is not None and default.mode not in GUARANTEE_MODES:
            raise ArtifactError(f"{source}: default method for {where}: unknown mode {default.mode!r}")
        if (*cell, default.mode) in seen:
            raise ArtifactError(f"{source}: two default methods for {where}")
        seen.add((*cell, default.mode))
        modes = GUARANTEE_MODES if default.mode is None else (default.mode,)
        if not any((*cell, default.method, mode) in cells for mode in modes):
            raise ArtifactError(f"{source}: default method {default.method!r} for {where} has no entry")


def encode_artifact(artifact: ThresholdsArtifact) -> bytes:
    """Canonical, human-readable JSON bytes of the artifact (keys in declaration order, indented)."""
    return msgspec.json.format(msgspec.json.encode(artifact), indent=1) + b"\n"


def decode_artifact(data: bytes, *, source: str = "<bytes>") -> ThresholdsArtifact:
    """Decode and validate artifact JSON; ArtifactError naming the source on malformed or invalid content."""
    try:
        artifact = msgspec.json.decode(data, type=ThresholdsArtifact)
    except msgspec.ValidationError as error:
        version = _peek_version(data)
        if version is not None and version not in READABLE_VERSIONS:
            raise ArtifactError(
                f"{source}: format_version {version} is not supported (this code reads "
                f"{', '.join(map(str, READABLE_VERSIONS))})"
            ) from error
        raise ArtifactError(f"{source}: not a thresholds artifact: {error}") from error
    except msgspec.DecodeError as error:
        raise ArtifactError(f"{source}: malformed JSON: {error}") from error
    validate_artifact(artifact, source=source)
    return artifact


def _peek_version(data: bytes) -> int | None:
    try:
        raw = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return None
    version = raw.get("format_version") if isinstance(raw, dict) else None
    return version if isinstance(version, int) else None


def load_artifact(path: str | os.PathLike[str]) -> ThresholdsArtifact:
    """Read and validate the artifact at path; ArtifactError names the file and the problem."""
    location = Path(path)
    try:
        data = location.read_bytes()
    except FileNotFoundError as error:
        raise ArtifactError(f"{location}: thresholds file not found (run `make calibrate` to write it)") from error
    except OSError as error:
        raise ArtifactError(f"{location}: cannot read thresholds file: {error.strerror}") from error
    return decode_artifact(data, source=str(location))


def save_artifact(artifact: ThresholdsArtifact, path: str | os.PathLike[str]) -> None:
    """Validate, then write the artifact atomically (a reader never sees a half-written file)."""
    location = Path(path)
    validate_artifact(artifact, source=str(location))
    location.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".thresholds-", suffix=".json", dir=location.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(encode_artifact(artifact))
        os.replace(temporary, location)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def artifact_id(artifact: ThresholdsArtifact) -> str:
    """A short content hash of the artifact (16 hex digits): the `calibration_id` the service reports."""
    return hashlib.sha256(msgspec.json.encode(artifact)).hexdigest()[:16]


class ThresholdIndex:
    """Read-only look-ups over one guarantee mode's entries of an artifact, built once when it is loaded.

    ``mode`` (GUARANTEE_MODES) picks the entries and defaults the index serves; the service holds one index per
    mode, so a request in one mode is never served another mode's thresholds. ``mode`` None: the artifact's only
    mode, or pac when it holds both.
    """

    def __init__(self, artifact: ThresholdsArtifact, mode: str | None = None) -> None:
        if mode is None:
            present = {entry.mode for entry in artifact.entries}
            mode = present.pop() if len(present) == 1 else "pac"
        if mode not in GUARANTEE_MODES:
            raise ValueError(f"unknown guarantee mode {mode!r}; known: {', '.join(GUARANTEE_MODES)}")
        self.artifact = artifact
        self.mode = mode
        self.calibration_id = artifact_id(artifact)
        own = [entry for entry in artifact.entries if entry.mode == mode]
        self._own = own
        self._entries: dict[tuple[str, str, str, str, str, float], ThresholdEntry] = {
            entry.key[:6]: entry for entry in own
        }
        # The same entries under the alpha exactly as stored: a request that repeats a level finds its entry
        # without the rounding (which costs more than the look-up itself).
        self._entries_exact: dict[tuple[str, str, str, str, str, float], ThresholdEntry] = {
            (e.judge, e.prompt_family, e.criterion, e.kind, e.method, e.alpha): e for e in own
        }
        self._defaults: dict[tuple[str, str, str, str], str] = {
            (d.judge, d.prompt_family, d.criterion, d.kind): d.method
            for d in sorted(artifact.default_methods, key=lambda d: d.mode is not None)  # a moded default wins
            if d.mode in (None, mode)
        }
        self._levels: dict[tuple[str, str, str, str, str], list[float]] = {}
        self._kinds: dict[tuple[str, str, str], list[str]] = {}
        for entry in own:
            self._levels.setdefault(
                (entry.judge, entry.prompt_family, entry.criterion, entry.kind, entry.method), []
            ).append(entry.alpha)
            kinds = self._kinds.setdefault((entry.judge, entry.prompt_family, entry.criterion), [])
            if entry.kind not in kinds:
                kinds.append(entry.kind)
        for levels in self._levels.values():
            levels.sort()
        # Each entry's compiled set rule, by the entry's id, compiled when first asked: at most one per entry of
        # this artifact (the index holds the artifact, so those ids stay theirs); any other entry is not kept.
        self._entry_ids = frozenset(id(entry) for entry in own)
        self._rules: dict[int, SetRule] = {}
        for kinds in self._kinds.values():
            kinds.sort(key=INPUT_KINDS.index)

    def lookup(
        self, judge: str, prompt_family: str, criterion: str, method: str, alpha: float, kind: str | None = None
    ) -> ThresholdEntry | None:
        """The entry for this cell, kind and level (alpha compared after rounding to 9 decimals), or None.

        ``kind`` None: the method's derived kind (format 1's rule).
        """
        resolved = kind or derived_kind(method)
        found = self._entries_exact.get((judge, prompt_family, criterion, resolved, method, alpha))
        if found is not None:
            return found
        return self._entries.get((judge, prompt_family, criterion, resolved, method, alpha_key(alpha)))

    def rule(self, entry: ThresholdEntry) -> SetRule:
        """The compiled set rule of ``entry`` (``calibration.conformal.sets.compile_rule``): compiled on first use and
        kept for this artifact's entries; an entry of another artifact is compiled every time."""
        found = self._rules.get(id(entry))
        if found is not None:
            return found
        compiled = compile_rule(entry.fitted)
        if id(entry) in self._entry_ids:
            self._rules[id(entry)] = compiled
        return compiled

    def default_method(self, judge: str, prompt_family: str, criterion: str, kind: str | None = None) -> str | None:
        """The recommended method for a (judge, prompt family, criterion) and input kind, or None.

        ``kind`` None: the first kind (INPUT_KINDS order) that has a default.
        """
        if kind is not None:
            return self._defaults.get((judge, prompt_family, criterion, kind))
        for candidate in INPUT_KINDS:
            found = self._defaults.get((judge, prompt_family, criterion, candidate))
            if found is not None:
                return found
        return None

    def kinds(self, judge: str, prompt_family: str, criterion: str) -> list[str]:
        """Input kinds calibrated for a cell, in INPUT_KINDS order."""
        return list(self._kinds.get((judge, prompt_family, criterion), ()))

    def entries(self) -> list[ThresholdEntry]:
        """This mode's entries in artifact order."""
        return list(self._own)

    def judges(self) -> list[str]:
        """Judges with at least one entry, sorted."""
        return sorted({entry.judge for entry in self._own})

    def prompt_families(self, judge: str) -> list[str]:
        """Prompt families calibrated for a judge, sorted."""
        return sorted({e.prompt_family for e in self._own if e.judge == judge})

    def criteria(self, judge: str, prompt_family: str | None = None) -> list[str]:
        """Criteria calibrated for a judge (and prompt family when given), sorted."""
        return sorted(
            {
                e.criterion
                for e in self._own
                if e.judge == judge and (prompt_family is None or e.prompt_family == prompt_family)
            }
        )

    def methods(self, judge: str, prompt_family: str, criterion: str, kind: str | None = None) -> list[str]:
        """Methods calibrated for a cell (of one input kind when given), in the core's method order."""
        present = {
            e.method
            for e in self._own
            if (e.judge, e.prompt_family, e.criterion) == (judge, prompt_family, criterion)
            and (kind is None or e.kind == kind)
        }
        return [method for method in METHODS if method in present]

    def alphas(
        self, judge: str, prompt_family: str, criterion: str, method: str, kind: str | None = None
    ) -> list[float]:
        """Levels calibrated for a cell, method (and input kind; None = the method's derived kind), ascending."""
        return list(self._levels.get((judge, prompt_family, criterion, kind or derived_kind(method), method), ()))
