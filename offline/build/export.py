"""The build's fits -> the thresholds artifact the service loads (``artifact/thresholds.json`` by default).

Rules, stated once:

* **Entries** (``make artifact``): from the fits per input kind (:mod:`offline.build.input_kinds`, the panels of
  :mod:`offline.build.panels`, the sentence fact-checks of :mod:`offline.build.factuality.validity`), one per
  (judge, prompt family, criterion, input kind, method, alpha, guarantee mode), fitted on *all* labelled items of
  that cell as verdicts of that kind, with held-out figures by document; the default method of a (cell, kind) at
  every level of the 0.01-0.30 grid, the other methods at ``OTHER_METHOD_ALPHAS``; one default per (cell, kind).
* **Randomness.** Every fit draws from ``numpy.random.default_rng(seed)`` (``learned_lac``: which half of the
  items fits the matrix; ``aps_randomized``: calibration uniforms).
* **Beside each entry**: the fit's held-out mean coverage, its std, mean set size, number of splits and the
  lowest coverage within a judge-score bin (``min_bin_coverage``).
* **Faithfulness** (only when LLM factuality answers were collected; :mod:`offline.build.factuality.faithfulness`):
  one entry per (judge, ``factuality_direct`` | ``factuality_qa``, ``faithfulness``, method, alpha), the predictor
  fitted on FRANK's valid split; its held-out figures are the FRANK test split's (``n_splits = 1``,
  ``heldout_coverage_std`` null: one split has no spread); the default per cell is the faithfulness study's (the
  SummEval rule). Without such answers nothing is exported for faithfulness and the service answers faithfulness
  uncalibrated.
* **Decision rules** (``decision_rules``): one certified accept/escalate rule per (judge, prompt family, criterion,
  input kind) of the recorded SummEval judges, fitted on all their labelled items by
  :func:`offline.build.rules.export_rules` (document-level bound, tolerances 1-2, accept_alpha 0.05 / 0.10 /
  0.20, quality gates tau 3 and 4, delta 0.05). :func:`replace_decision_rules` swaps only that list in an existing
  artifact (every other byte of the file is re-encoded unchanged: msgspec writes back the floats it read).
* **Provenance.** ``created_at`` ISO-8601 UTC; ``code_version`` = package version, plus ``+g<git short hash>``
  when the checkout is that commit, unchanged; with tracked files changed it is ``<version> (uncommitted changes)``
  and names no commit (no commit holds the code that fitted it); ``data_hash`` = sha256 over the data
  files the thresholds were fitted from (SummEval's when SummEval entries are exported, FRANK's ``items.jsonl``
  when faithfulness entries are; the judges' collected answers live in the answer store and are named in
  ``source``), in sorted relative-path order, hashing for each file its relative path,
  a NUL byte, its size and a NUL byte, then its bytes.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import msgspec

from artifact.input_kinds import OTHER_METHOD_ALPHAS, FitKey, ModeFits, kind_entries  # shared with the service's jobs
from artifact.thresholds import (
    FORMAT_VERSION,
    DefaultMethod,
    ThresholdEntry,
    ThresholdsArtifact,
    load_artifact,
    save_artifact,
)
from calibration.decisions.rule import DecisionRule
from calibration.input_kinds.fit import InputKindFit
from calibration.per_label.rule import LabelRule
from offline.build.artifact_stability import UNCOMMITTED, save_unless_unmoved
from offline.build.factuality.faithfulness import FaithfulnessStudy

__all__ = [
    "DEFAULT_THRESHOLDS",
    "OTHER_METHOD_ALPHAS",
    "build_artifact",
    "code_version",
    "data_files",
    "data_hash",
    "export_thresholds",
    "faithfulness_entries",
    "kind_entries",
    "replace_decision_rules",
]

DEFAULT_THRESHOLDS = Path(__file__).resolve().parents[2] / "artifact" / "thresholds.json"
PACKAGE = "conformal-judge"


def data_files(data_dir: Path, *, summeval: bool = True, frank: bool = False) -> list[Path]:
    """The data files the thresholds are fitted from: SummEval items and the recorded direct-scoring judges
    (``summeval``), FRANK's items (``frank``: the faithfulness targets and splits)."""
    root = Path(data_dir)
    files = []
    if summeval:
        judges = root / "judges" / "summeval"
        files += [root / "summeval" / "items.jsonl", *sorted(judges.glob("*.jsonl"))]
        if (judges / "judges.json").exists():
            files.append(judges / "judges.json")
    if frank:
        files.append(root / "frank" / "items.jsonl")
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def data_hash(files: Iterable[Path], root: Path) -> str:
    """sha256 over (relative path, NUL, size, NUL, bytes) of each file, in sorted relative-path order."""
    digest = hashlib.sha256()
    for path in sorted(files, key=lambda p: p.relative_to(root).as_posix()):
        data = path.read_bytes()
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + str(len(data)).encode() + b"\0")
        digest.update(data)
    return digest.hexdigest()


def _git(*args: str, cwd: Path | None = None) -> str | None:
    try:
        result = subprocess.run(
            ["git", *args],
            cwd=cwd or Path(__file__).resolve().parents[2],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def code_version(checkout: Path | None = None) -> str:
    """The package version; with ``+g<short hash>`` when the checkout (default: this one) is that commit unchanged,
    with `` (uncommitted changes)`` and no commit when tracked files differ from it."""
    try:
        version = metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        version = "0+unknown"
    commit = _git("rev-parse", "--short", "HEAD", cwd=checkout)
    if not commit:
        return version
    if _git("status", "--porcelain", "--untracked-files=no", cwd=checkout):
        return f"{version} ({UNCOMMITTED})"
    return f"{version}+g{commit}"


def faithfulness_entries(study: FaithfulnessStudy) -> tuple[list[ThresholdEntry], list[DefaultMethod]]:
    """The faithfulness study's predictors (fitted on FRANK valid) with its test-split figures, and its defaults."""
    entries = [
        ThresholdEntry(
            judge=cell.judge,
            prompt_family=cell.prompt_family,
            criterion=cell.criterion,
            method=cell.method,
            alpha=float(cell.alpha),
            fitted=study.fitted[(cell.judge, cell.prompt_family, cell.method, cell.alpha)],
            heldout_coverage=cell.coverage,
            heldout_coverage_std=None,
            heldout_set_size=cell.set_size,
            n_splits=cell.n_splits,
            min_bin_coverage=cell.min_bin_coverage,
        )
        for cell in study.summary.cells
    ]
    defaults = [
        DefaultMethod(
            judge=d.judge,
            prompt_family=d.prompt_family,
            criterion=d.criterion,
            method=d.method,
            reason=f"{d.reason} (FRANK: fitted on valid, figures from test)",
        )
        for d in study.summary.default_methods
    ]
    return entries, defaults


def build_artifact(
    *,
    fits: Mapping[FitKey, ModeFits] | None,
    data_hash: str,
    code_version: str,
    created_at: str | None = None,
    source: str = "",
    faithfulness: FaithfulnessStudy | None = None,
    decision_rules: Sequence[DecisionRule] = (),
    label_rules: Sequence[LabelRule] = (),
) -> ThresholdsArtifact:
    """The artifact: the entries and defaults per input kind of ``fits`` (none when None), then the faithfulness
    entries when given (module rules)."""
    entries, defaults = kind_entries(fits) if fits is not None else ([], [])
    return _artifact(
        entries,
        defaults,
        faithfulness,
        scale=max((e.fitted.n_labels for e in entries), default=5),
        data_hash=data_hash,
        code_version=code_version,
        created_at=created_at,
        source=source,
        decision_rules=decision_rules,
        label_rules=label_rules,
    )


def _artifact(
    entries: list[ThresholdEntry],
    defaults: list[DefaultMethod],
    faithfulness: FaithfulnessStudy | None,
    *,
    scale: int,
    data_hash: str,
    code_version: str,
    created_at: str | None,
    source: str,
    decision_rules: Sequence[DecisionRule] = (),
    label_rules: Sequence[LabelRule] = (),
) -> ThresholdsArtifact:
    if faithfulness is not None:
        more_entries, more_defaults = faithfulness_entries(faithfulness)
        entries = entries + more_entries
        defaults = defaults + more_defaults
    return ThresholdsArtifact(
        format_version=FORMAT_VERSION,
        created_at=created_at or datetime.now(UTC).isoformat(timespec="seconds"),
        code_version=code_version,
        data_hash=data_hash,
        label_scale=list(range(1, scale + 1)),
        entries=entries,
        default_methods=defaults,
        source=source,
        decision_rules=list(decision_rules),
        label_rules=list(label_rules),
    )


def _fits_of(value: ModeFits) -> tuple[InputKindFit, ...]:
    return value if isinstance(value, tuple) else (value,)


def _source(
    faithfulness: FaithfulnessStudy | None,
    seed: int,
    store: Path | None,
    fits: Mapping[FitKey, ModeFits] | None = None,
    delta: float | None = None,
) -> str:
    parts = []
    if fits is not None:
        n_splits = next((h.n_splits for value in fits.values() for fit in _fits_of(value) for h in fit.heldout), 0)
        rule = (
            f"PAC thresholds (coverage >= 1-alpha with probability >= {1 - delta:.2f} over the calibration "
            "documents) and expected-mode thresholds (on average over the calibration documents, document-level "
            "conformal risk control)"
            if delta is not None
            else "expected-mode thresholds (on average over the calibration documents)"
        )
        parts.append(
            f"recorded SummEval judges, y* = rounded expert mean, per input kind (score | probabilities), "
            f"{rule}, fitted on all labelled items with seed {seed}; held-out figures from {n_splits} "
            "splits by document; defaults chosen by cross-fitting by document"
        )
    if faithfulness is not None and faithfulness.summary.cells:
        judges = sorted({(c.judge, c.prompt_family) for c in faithfulness.summary.cells})
        label = faithfulness.summary.label
        parts.append(
            "faithfulness: " + ", ".join(f"{j}/{f}" for j, f in judges) + " from LLM factuality answers in the "
            f"answer store{f' {store}' if store is not None else ''}{f' ({label})' if label else ''}; y* = "
            f"round_half_up(1 + 4 x FRANK Factuality), fitted on FRANK valid with seed {seed}; held-out figures "
            "from FRANK test (n_splits = 1)"
        )
    return "offline calibrate: " + "; ".join(parts or ["no entries"])


def export_thresholds(
    *,
    fits: Mapping[FitKey, ModeFits] | None,
    data_dir: Path,
    path: Path,
    seed: int,
    faithfulness: FaithfulnessStudy | None = None,
    store: Path | None = None,
    delta: float | None = None,
    decision_rules: Sequence[DecisionRule] = (),
    label_rules: Sequence[LabelRule] = (),
) -> ThresholdsArtifact:
    """Build the artifact (provenance from ``data_dir`` and the checkout) and save it atomically at ``path``,
    unless the file there already holds it within 1e-12 (``offline.build.artifact_stability``); returns what is
    there.

    ``fits`` None: SummEval is not exported (the factuality-only run); ``faithfulness`` adds its entries.
    """
    has_faithfulness = faithfulness is not None and bool(faithfulness.summary.cells)
    files = data_files(data_dir, summeval=fits is not None, frank=has_faithfulness)
    artifact = build_artifact(
        fits=fits,
        data_hash=data_hash(files, Path(data_dir)),
        code_version=code_version(),
        source=_source(faithfulness, seed, store, fits, delta),
        faithfulness=faithfulness,
        decision_rules=decision_rules,
        label_rules=label_rules,
    )
    # Re-running on the same data must not churn the tracked file: numbers that moved by <= 1e-12 (another
    # machine kind's last bits) keep their written value, and a file where nothing moved is left as it is.
    artifact, written = save_unless_unmoved(artifact, path)
    if written:
        # save_artifact writes through mkstemp (mode 0600); the shipped artifact must be readable by the service.
        Path(path).chmod(0o644)
    return artifact


def replace_decision_rules(
    path: Path, rules: Sequence[DecisionRule], label_rules: Sequence[LabelRule] | None = None
) -> int:
    """Load the artifact at ``path``, replace its ``decision_rules`` and, when given, its ``label_rules`` (in the
    current format version), validate and save it; the rule count."""
    artifact = load_artifact(path)
    replaced = msgspec.structs.replace(
        artifact,
        decision_rules=list(rules),
        label_rules=list(artifact.label_rules if label_rules is None else label_rules),
        format_version=FORMAT_VERSION,
    )
    save_artifact(replaced, path)
    Path(path).chmod(0o644)
    return len(rules) + (0 if label_rules is None else len(label_rules))
