"""The pairwise decisions artifact: confidence thresholds per (judge, alpha, mode), and the serving rule.

``python -m offline build`` (``offline.build.pairwise``) fits each judge's thresholds on all of a dataset's groups
and writes this file; the service loads it beside the thresholds artifact and answers every pair of ``/v1/compare`` with
``accept`` (the preferred candidate) or ``abstain``. Two modes, each its own entries:

* ``pac`` (an entry without ``mode`` is one): the fixed-sequence test of :mod:`calibration.decisions.pairwise`,
  P(human disagrees | accepted) <= alpha with confidence 1 - ``delta`` (the artifact's ``delta``) over the
  calibration questions.
* ``expected``: the rule of :mod:`calibration.decisions.pairwise_expected` (one pair per question, a seeded acceptance),
  the disagreement rate among accepted preferences <= alpha on average over calibrations; no ``delta``. The
  entry's ``expected`` holds the test's evidence; ``n_accepted`` and ``n_errors`` are the drawn pairs accepted
  at the chosen level (A) and the errors among them (E).

Serving rule (:func:`decide_pair`): a pair is accepted when the judge has an entry at the requested alpha and mode
whose threshold is not null, the pair's verdicts prefer one side (vote share over both orders and every
repetition, ties in the denominator) and that share is >= threshold - 1e-12. Otherwise it abstains, and the
reason says which condition failed. When one judge name was calibrated on several datasets, the most
conservative entry of the mode serves (a null threshold anywhere means abstain; else the largest threshold).

================================================  =================================================
call                                              result
================================================  =================================================
``load_pairwise_artifact(path)``                  read and validate; ``ArtifactError`` names file and problem
``encode_pairwise_artifact(artifact)``            indented JSON bytes (validated first)
``PairwiseIndex(artifact)``                       ``index.entry(judge, alpha, mode)``: the serving entry or None
``decide_pair(entry, wins_a, wins_b, n)``         ``PairDecision``
================================================  =================================================
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import msgspec

from calibration.decisions.pairwise import BOUNDS, LEVEL_TOLERANCE
from calibration.decisions.selective_risk import acceptance_probability
from calibration.errors import ArtifactError

__all__ = [
    "DEFAULT_PATH",
    "FORMAT_VERSION",
    "MODES",
    "ExpectedEvidence",
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
#: The shipped artifact (written by ``python -m offline build``, ``make artifact``), beside thresholds.json.
DEFAULT_PATH = Path(__file__).resolve().parent / "pairwise_decisions.json"
#: The guarantee modes an entry can be made under (module docstring).
MODES: tuple[str, ...] = ("pac", "expected")


class ExpectedEvidence(msgspec.Struct, frozen=True, kw_only=True):
    """An ``expected`` entry's test (:mod:`calibration.decisions.pairwise_expected`): the level chosen on FIT (null:
    none qualified), the CERTIFY pairs drawn (one per group), the acceptance probability, the uniform and the seed."""

    level: float | None
    n_drawn: int
    acceptance_probability: float
    uniform: float
    seed: int
    n_fit_groups: int
    n_certify_groups: int


class PairwiseEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One judge's certificate at one alpha and mode: the threshold (null: abstain always) and its evidence."""

    judge: str
    dataset: str
    alpha: float
    threshold: float | None
    n_pairs: int
    n_groups: int
    n_accepted: int  # calibration pairs accepted at the threshold
    n_errors: int
    verdicts_per_pair: int  # verdicts behind each calibration pair's vote share (e.g. 2: both orders)
    mode: str = "pac"
    expected: ExpectedEvidence | None = None  # the expected mode's test (null for pac)


class PairwiseArtifact(msgspec.Struct, frozen=True, kw_only=True):
    """The exported entries with the rules they were made under (``delta``, ``bound`` and ``starts``: the pac
    mode's; an expected entry carries its own evidence)."""

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
        problem = _mode_problem(e)
        if problem:
            raise bad(f"entries[{i}]: {problem}")
        key = (e.judge, e.dataset, e.alpha, e.mode)
        if key in seen:
            raise bad(f"entries[{i}]: duplicate (judge, dataset, alpha, mode) {key}")
        seen.add(key)


def _mode_problem(e: PairwiseEntry) -> str | None:
    """What is wrong with the entry's mode and evidence (None: nothing)."""
    if e.mode not in MODES:
        return f"mode must be one of {MODES}, got {e.mode!r}"
    x = e.expected
    if e.mode == "pac":
        return None if x is None else "a pac entry carries no expected evidence"
    if x is None:
        return "an expected entry needs its evidence (expected)"
    if x.level is not None and not 0 < x.level <= 1:
        return "expected.level must be null or lie in (0, 1]"
    passed = x.level is not None and e.n_accepted > 0 and x.uniform < x.acceptance_probability
    if (e.threshold is not None) != passed or (passed and e.threshold != x.level):
        return "an expected threshold is the chosen level when uniform < acceptance_probability, else null"
    if not 0 <= x.uniform < 1 or x.n_fit_groups < 1 or x.n_fit_groups + x.n_certify_groups != e.n_groups:
        return "expected: uniform in [0, 1), n_fit_groups >= 1 and n_fit_groups + n_certify_groups = n_groups"
    if not e.n_accepted <= x.n_drawn <= x.n_certify_groups:
        return "expected: n_accepted <= n_drawn <= n_certify_groups"
    phi = acceptance_probability(e.n_accepted, e.n_errors, e.alpha) if x.level is not None else 0.0
    if not math.isclose(x.acceptance_probability, phi, rel_tol=0.0, abs_tol=1e-9):
        return f"expected.acceptance_probability must be min(1, alpha (A + 1) / (E + 1)) = {phi:g}"
    return None


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
    """Serving look-ups: the most conservative entry per (judge, alpha, mode) (module rule)."""

    def __init__(self, artifact: PairwiseArtifact) -> None:
        """Index ``artifact``'s entries by (judge, alpha rounded to 6 places, mode)."""
        self.artifact = artifact
        chosen: dict[tuple[str, float, str], PairwiseEntry] = {}
        for entry in artifact.entries:
            key = (entry.judge, round(entry.alpha, 6), entry.mode)
            old = chosen.get(key)
            if old is None or _stricter(entry, old):
                chosen[key] = entry
        self._entries = chosen

    def entry(self, judge: str | None, alpha: float, mode: str = "pac") -> PairwiseEntry | None:
        """The serving entry of ``judge`` at ``alpha`` in ``mode``, or None when it was not calibrated."""
        return None if judge is None else self._entries.get((judge, round(alpha, 6), mode))

    def alphas(self, judge: str | None, mode: str = "pac") -> list[float]:
        """The alphas at which ``judge`` has an entry in ``mode``, ascending."""
        return sorted(a for j, a, m in self._entries if j == judge and m == mode)


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
