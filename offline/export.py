"""Studies -> the thresholds artifact the service loads (``calibration/thresholds.json`` by default).

Rules, stated once:

* **Entries.** One per (judge, prompt family, criterion, method, alpha) the conformal study ran. Each is fitted
  on *all* labelled items of that judge and criterion (the study's held-out figures are measured on splits; the
  shipped thresholds use every item). Probability judges pass both their integer score and their probabilities,
  so ``learned_lac`` uses the probabilities there and the one-hot score for text judges; its fitted matrix is in
  the entry, so the service never refits.
* **Randomness.** Every fit draws from ``numpy.random.default_rng(seed)`` (``learned_lac``: which half of the
  items fits the matrix; ``aps_randomized``: calibration uniforms).
* **Beside each entry**: the study's held-out mean coverage, its std, mean set size, number of splits and the
  lowest coverage within a judge-score bin (``min_bin_coverage``).
* **Provenance.** ``created_at`` ISO-8601 UTC; ``code_version`` = package version, plus ``+g<git short hash>``
  when the checkout has a commit (``.dirty`` when tracked files changed); ``data_hash`` = sha256 over the data
  files the thresholds were fitted from, in sorted relative-path order, hashing for each file its relative path,
  a NUL byte, its size and a NUL byte, then its bytes.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import numpy as np

from calibration.conformal import fit_conformal
from calibration.thresholds import (
    FORMAT_VERSION,
    DefaultMethod,
    ThresholdEntry,
    ThresholdsArtifact,
    save_artifact,
)
from offline.studies.conformal import ConformalSummary, JudgeCriterionData, methods_for

__all__ = ["DEFAULT_THRESHOLDS", "build_artifact", "code_version", "data_files", "data_hash", "export_thresholds"]

DEFAULT_THRESHOLDS = Path(__file__).resolve().parents[1] / "calibration" / "thresholds.json"
PACKAGE = "conformal-judge"


def data_files(data_dir: Path) -> list[Path]:
    """The data files the thresholds are fitted from: SummEval items and the recorded direct-scoring judges."""
    root = Path(data_dir)
    judges = root / "judges" / "summeval"
    files = [root / "summeval" / "items.jsonl", *sorted(judges.glob("*.jsonl"))]
    if (judges / "judges.json").exists():
        files.append(judges / "judges.json")
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def data_hash(files: Iterable[Path], root: Path) -> str:
    """sha256 over (relative path, NUL, size, NUL, bytes) of each file, in sorted relative-path order."""
    digest = hashlib.sha256()
    for path in sorted(files, key=lambda p: p.relative_to(root).as_posix()):
        data = path.read_bytes()
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + str(len(data)).encode() + b"\0")
        digest.update(data)
    return digest.hexdigest()


def _git(*args: str) -> str | None:
    try:
        result = subprocess.run(["git", *args], cwd=Path(__file__).resolve().parents[1], capture_output=True,
                                text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def code_version() -> str:
    """The package version, with ``+g<short hash>`` (and ``.dirty``) when git knows the checkout's commit."""
    try:
        version = metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        version = "0+unknown"
    commit = _git("rev-parse", "--short", "HEAD")
    if not commit:
        return version
    dirty = _git("status", "--porcelain", "--untracked-files=no")
    return f"{version}+g{commit}" + (".dirty" if dirty else "")


def build_artifact(
    datasets: Sequence[JudgeCriterionData],
    summary: ConformalSummary,
    *,
    seed: int,
    data_hash: str,
    code_version: str,
    created_at: str | None = None,
    source: str = "",
) -> ThresholdsArtifact:
    """Fit every (judge, family, criterion, method, alpha) of the study on all items (module rules)."""
    entries = []
    for data in datasets:
        for method in methods_for(data):
            for alpha in summary.alphas:
                cell = summary.cell(data.judge, data.criterion, method, alpha)
                if cell is None:
                    continue
                fitted = fit_conformal(method, alpha, data.labels, judge_scores=data.judge_scores,
                                       probabilities=data.probabilities, rng=np.random.default_rng(seed))
                entries.append(
                    ThresholdEntry(
                        judge=data.judge, prompt_family=data.prompt_family, criterion=data.criterion, method=method,
                        alpha=float(alpha), fitted=fitted, heldout_coverage=cell.coverage,
                        heldout_coverage_std=cell.coverage_std, heldout_set_size=cell.set_size,
                        n_splits=cell.n_splits, min_bin_coverage=cell.min_bin_coverage,
                    )
                )
    defaults = [
        DefaultMethod(judge=d.judge, prompt_family=d.prompt_family, criterion=d.criterion, method=d.method,
                      reason=d.reason)
        for d in summary.default_methods
    ]
    return ThresholdsArtifact(
        format_version=FORMAT_VERSION,
        created_at=created_at or datetime.now(UTC).isoformat(timespec="seconds"),
        code_version=code_version,
        data_hash=data_hash,
        label_scale=list(range(1, 6)),
        entries=entries,
        default_methods=defaults,
        source=source,
    )


def export_thresholds(
    datasets: Sequence[JudgeCriterionData],
    summary: ConformalSummary,
    *,
    data_dir: Path,
    path: Path,
    seed: int,
) -> ThresholdsArtifact:
    """Build the artifact (provenance from ``data_dir`` and the checkout) and save it atomically at ``path``."""
    artifact = build_artifact(
        datasets, summary, seed=seed, data_hash=data_hash(data_files(data_dir), Path(data_dir)),
        code_version=code_version(),
        source=(f"offline calibrate: recorded SummEval judges, y* = rounded expert mean, fitted on all labelled "
                f"items with seed {seed}; held-out figures from {summary.n_splits} seeded 50/50 splits"),
    )
    save_artifact(artifact, path)
    # save_artifact writes through mkstemp (mode 0600); the shipped artifact must be readable by the service user.
    Path(path).chmod(0o644)
    return artifact
