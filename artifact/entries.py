"""The thresholds artifact's contract: its entries, default methods and the whole file, as typed structs.

:mod:`artifact.thresholds` reads, validates, writes and indexes it (and re-exports these names). An entry's
identity is (judge, prompt family, criterion, input kind, method, alpha, guarantee mode); alphas are compared
after rounding to 9 decimals.
"""

from __future__ import annotations

import msgspec

from calibration.conformal import PROBABILITY_METHODS, FittedConformal
from calibration.decisions.rule import DecisionRule
from calibration.per_label.rule import LabelRule

__all__ = [
    "FORMAT_VERSION",
    "GUARANTEE_MODES",
    "READABLE_VERSIONS",
    "DefaultMethod",
    "EntryKey",
    "ThresholdEntry",
    "ThresholdsArtifact",
    "alpha_key",
    "derived_kind",
]

FORMAT_VERSION = 3
# version 1 has no input kinds (an entry's kind is derived from its method); version 2 has no per-label rules
READABLE_VERSIONS = (1, 2, 3)

# judge, prompt family, criterion, input kind, method, alpha, guarantee mode
EntryKey = tuple[str, str, str, str, str, float, str]
GUARANTEE_MODES = ("expected", "pac")  # calibration.decisions.rule.MODES


def derived_kind(method: str) -> str:
    """The input kind of an entry that names none (format 1): probabilities for probability methods, else score."""
    return "probabilities" if method in PROBABILITY_METHODS else "score"


class ThresholdEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One calibrated cell: the fitted predictor and the offline study's held-out figures for it."""

    judge: str
    prompt_family: str
    criterion: str
    method: str
    alpha: float
    fitted: FittedConformal
    heldout_coverage: float | None = None
    heldout_coverage_std: float | None = None
    heldout_set_size: float | None = None
    n_splits: int = 0
    min_bin_coverage: float | None = None  # lowest coverage within a judge-score bin in the study, if measured
    input_kind: str | None = (
        None  # score | probabilities | mean (calibration.input_kinds.verdicts); None: derived_kind(method)
    )
    heldout_coverage_p5: float | None = None  # 5th percentile over the splits by document
    min_label_coverage: float | None = None  # lowest coverage within a human label (small labels pooled)
    empty_share: float | None = None
    non_interval_share: float | None = None
    accept_share: float | None = None  # expected decision shares under the default policy, held out
    review_share: float | None = None
    escalate_share: float | None = None
    accept_accuracy: float | None = None  # share of accepted verdicts whose human label is in the set

    @property
    def kind(self) -> str:
        """The input kind the thresholds were fitted on (and may be applied to)."""
        return self.input_kind or derived_kind(self.method)

    @property
    def mode(self) -> str:
        """The guarantee the thresholds keep: "pac" (fitted at a delta) or "expected" (on average over the
        calibration draw; documents as the unit when ``fitted.pac_unit`` is "group")."""
        return "expected" if self.fitted.delta is None else "pac"

    @property
    def key(self) -> EntryKey:
        """The entry's identity: (judge, prompt_family, criterion, input kind, method, alpha, mode)."""
        return (
            self.judge,
            self.prompt_family,
            self.criterion,
            self.kind,
            self.method,
            alpha_key(self.alpha),
            self.mode,
        )


class DefaultMethod(msgspec.Struct, frozen=True, kw_only=True):
    """The method the service uses for a (judge, prompt family, criterion) when a request names none."""

    judge: str
    prompt_family: str
    criterion: str
    method: str
    reason: str = ""
    input_kind: str | None = None  # None: derived_kind(method)
    # the guarantee mode whose entries it chooses among (GUARANTEE_MODES); None: every mode its method has entries in
    # (artifacts written before modes existed)
    mode: str | None = None
    # the selection rule's outcome, typed (calibration.input_kinds.selection); None where it was not recorded (before
    # format 3), whose outcome is read from ``reason`` (artifact.selection); False: no method qualified and
    # ``selection_failures`` names each check the fallback fails
    selection_qualified: bool | None = None
    selection_failures: list[str] = []

    @property
    def kind(self) -> str:
        """The input kind this default applies to."""
        return self.input_kind or derived_kind(self.method)


class ThresholdsArtifact(msgspec.Struct, frozen=True, kw_only=True):
    """The whole artifact: provenance, the label scale, the entries and the default methods.

    ``label_scale`` is 1..K of the widest cell; each entry's ``fitted.n_labels`` is its own cell's scale.
    """

    format_version: int
    created_at: str
    code_version: str
    data_hash: str
    label_scale: list[int]
    entries: list[ThresholdEntry]
    default_methods: list[DefaultMethod] = []
    source: str = ""
    # Certified accept/escalate rules per (judge, prompt family, criterion, input kind): calibration.decisions.rule
    decision_rules: list[DecisionRule] = []
    # The per-label guarantee's rules per (judge, prompt family, criterion, input kind): calibration.per_label.rule
    label_rules: list[LabelRule] = []


def alpha_key(alpha: float) -> float:
    """Alphas are compared after rounding to 9 decimals, so 0.1 read from JSON matches 0.1 in a request."""
    return round(float(alpha), 9)
