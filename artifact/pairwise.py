"""The pairwise decisions artifact: certified confidence thresholds per (judge, alpha), and the serving rule.

``offline pairwise-decisions --export FILE`` fits each judge's threshold on all of a dataset's groups (the
fixed-sequence test of :mod:`calibration.pairwise_decision`) and writes this file; the service loads it beside
the thresholds artifact and answers every pair of ``/v1/compare`` with ``accept`` (the preferred candidate) or
``abstain``.

Serving rule (:func:`decide_pair`): a pair is accepted when the judge has an entry at the requested alpha
whose threshold is not null, the pair's verdicts prefer one side (vote share over both orders and every
repetition, ties in the denominator) and that share is >= threshold - 1e-12. Otherwise it abstains, and the
reason says which condition failed. When one judge name was calibrated on several datasets, the most
conservative entry serves (a null threshold anywhere means abstain; else the largest threshold).

==========================================  =======================================================
call                                        result
==========================================  =======================================================
``load_pairwise_artifact(path)``            read and validate; ``ArtifactError`` names file and problem
``encode_pairwise_artifact(artifact)``      indented JSON bytes (validated first)
``PairwiseIndex(artifact)``                 ``index.entry(judge, alpha)``: the serving entry or None
``decide_pair(entry, wins_a, wins_b, n)``   ``PairDecision``
==========================================  =======================================================
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import msgspec

from calibration.errors import ArtifactError
from calibration.pairwise_decision import BOUNDS, LEVEL_TOLERANCE

__all__ = [
    "DEFAULT_PATH",
    "FORMAT_VERSION",
    "PairDecision",
    "PairwiseArtifact",
    "PairwiseEntry",
    "PairwiseIndex",
    "decide_pair",
    "decode_pairwise_artifact",
    "encode_pairwise_artifact",
    "load_pairwise_artifact",
    "validate_pairwise_artifact",
]

FORMAT_VERSION = 1
#: The shipped artifact (written by ``python -m offline pairwise-decisions --export``), beside thresholds.json.
DEFAULT_PATH = Path(__file__).resolve().parent / "pairwise_decisions.json"


class PairwiseEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One judge's certificate at one alpha: the threshold (null: nothing certified) and its evidence."""

    judge: str
    dataset: str
    alpha: float
    threshold: float | None
    n_pairs: int
    n_groups: int
    n_accepted: int  # calibration pairs accepted at the threshold
    n_errors: int
    verdicts_per_pair: int  # verdicts behind each calibration pair's vote share (e.g. 2: both orders)


class PairwiseArtifact(msgspec.Struct, frozen=True, kw_only=True):
    """The exported certificates with the rule they were made under."""

    format_version: int
    delta: float
    bound: str
    ties: str
    signal: str
    source: str
    entries: list[PairwiseEntry]
    starts: list[float] = []  # start levels of a multi-start fixed sequence (empty: one chain from the top)


@dataclass(frozen=True)
class PairDecision:
    """``decision`` ("accept" | "abstain"), the preferred candidate side (+1 a, -1 b, 0 none), the vote share."""

    decision: str
    preferred: int
    confidence: float


def validate_pairwise_artifact(artifact: PairwiseArtifact, *, source: str = "<artifact>") -> None:
    """Check version, levels and counts; ArtifactError naming ``source`` and the broken rule."""

    def bad(problem: str) -> ArtifactError:
        return ArtifactError(f"{source}: {problem}")

    if artifact.format_version != FORMAT_VERSION:
        raise bad(f"format_version {artifact.format_version} is not {FORMAT_VERSION}")
    if not 0 < artifact.delta < 1 or artifact.bound not in BOUNDS or artifact.ties not in ("exclude", "error"):
        raise bad(f"delta must lie in (0, 1), bound in {BOUNDS}, ties 'exclude' or 'error'")
    seen = set()
    for i, e in enumerate(artifact.entries):
        if not e.judge or not 0 < e.alpha < 1 or not math.isfinite(e.alpha):
            raise bad(f"entries[{i}]: judge must be named and alpha lie in (0, 1)")
        if e.threshold is not None and not 0 < e.threshold <= 1:
            raise bad(f"entries[{i}]: threshold must be null or lie in (0, 1]")
        if min(e.n_pairs, e.n_groups, e.n_accepted, e.n_errors) < 0 or not e.n_errors <= e.n_accepted <= e.n_pairs:
            raise bad(f"entries[{i}]: counts must satisfy 0 <= n_errors <= n_accepted <= n_pairs")
        key = (e.judge, e.dataset, e.alpha)
        if key in seen:
            raise bad(f"entries[{i}]: duplicate (judge, dataset, alpha) {key}")
        seen.add(key)


def encode_pairwise_artifact(artifact: PairwiseArtifact) -> bytes:
    """Validated, indented JSON with a final newline."""
    validate_pairwise_artifact(artifact)
    return msgspec.json.format(msgspec.json.encode(artifact), indent=1) + b"\n"


def decode_pairwise_artifact(data: bytes, *, source: str = "<bytes>") -> PairwiseArtifact:
    """Decode and validate; ArtifactError on malformed JSON or a broken rule."""
    try:
        artifact = msgspec.json.decode(data, type=PairwiseArtifact)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise ArtifactError(f"{source}: not a pairwise decisions artifact: {error}") from None
    validate_pairwise_artifact(artifact, source=source)
    return artifact


def load_pairwise_artifact(path: str | os.PathLike[str]) -> PairwiseArtifact:
    """Read and validate the file; ArtifactError when it is missing, unreadable or invalid."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise ArtifactError(f"{os.fspath(path)}: cannot read the pairwise decisions artifact: {error}") from None
    return decode_pairwise_artifact(data, source=os.fspath(path))


class PairwiseIndex:
    """Serving look-ups: the most conservative entry per (judge, alpha) (module rule)."""

    def __init__(self, artifact: PairwiseArtifact) -> None:
        """Index ``artifact``'s entries by (judge, alpha rounded to 6 places)."""
        self.artifact = artifact
        chosen: dict[tuple[str, float], PairwiseEntry] = {}
        for entry in artifact.entries:
            key = (entry.judge, round(entry.alpha, 6))
            old = chosen.get(key)
            if old is None or _stricter(entry, old):
                chosen[key] = entry
        self._entries = chosen

    def entry(self, judge: str | None, alpha: float) -> PairwiseEntry | None:
        """The serving entry of ``judge`` at ``alpha``, or None when that judge/alpha was not calibrated."""
        return None if judge is None else self._entries.get((judge, round(alpha, 6)))

    def alphas(self, judge: str | None) -> list[float]:
        """The alphas at which ``judge`` has an entry, ascending."""
        return sorted(a for j, a in self._entries if j == judge)


def _stricter(new: PairwiseEntry, old: PairwiseEntry) -> bool:
    if old.threshold is None:
        return False
    return new.threshold is None or new.threshold > old.threshold


def decide_pair(entry: PairwiseEntry | None, wins_a: int, wins_b: int, n: int) -> PairDecision:
    """The serving rule (module docstring) for one pair from its verdict counts (ties = n - wins_a - wins_b)."""
    preferred = (wins_a > wins_b) - (wins_a < wins_b)
    confidence = max(wins_a, wins_b) / n if n > 0 and preferred else 0.0
    ok = (
        entry is not None
        and entry.threshold is not None
        and preferred != 0
        and confidence >= entry.threshold - LEVEL_TOLERANCE
    )
    return PairDecision(decision="accept" if ok else "abstain", preferred=preferred, confidence=confidence)
