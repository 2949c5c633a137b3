"""GET /v1/calibration, reload, and the calibration jobs (/v1/calibrations): evidence and artifacts."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from calibration.decisions.rule import DecisionRule
from calibration.per_label.rule import LabelRule, RuleSummary
from calibration.per_label.skill import SkillTest
from service.wire.common import REQUEST_STRUCT, RESPONSE_STRUCT, GuaranteeMode, MarginalMode

__all__ = [
    "ArtifactCell",
    "ArtifactInfo",
    "REFUSED_ARTIFACT_NAME",
    "ArtifactName",
    "ArtifactNameQuery",
    "ArtifactSummary",
    "CalibratedCell",
    "CellCertification",
    "PerLabelFigures",
    "CalibrationEntryInfo",
    "CalibrationInfo",
    "CalibrationJobInfo",
    "CalibrationOverview",
    "CalibrationSummary",
    "CellOverview",
    "DefaultMethodInfo",
    "HeldoutLevel",
    "ReloadRequest",
    "ReloadResponse",
    "ServedLevels",
]


# ---------------------------------------------------------------------------------------- /v1/calibration


class CalibrationEntryInfo(msgspec.Struct, **RESPONSE_STRUCT):
    """One calibrated cell and level, with the offline study's held-out figures."""

    judge: str
    prompt_family: str
    criterion: str
    method: str
    alpha: float
    coverage_target: float
    n_cal: int
    heldout_coverage: float | None
    heldout_coverage_std: float | None
    heldout_set_size: float | None
    n_splits: int
    is_default: bool
    artifact: str = "primary"  # the artifact that owns this cell
    n_labels: int = 5  # K of the cell's scale 1..K
    input_kind: str = "score"  # the kind of verdict the entry serves: score | probabilities | mean
    heldout_coverage_p5: float | None = None  # 5th percentile over the splits by document
    empty_share: float | None = None
    # What a pipeline should expect on unseen documents (held out by document), under the former set-size rule
    # (ACCEPT_MAX_SET_SIZE / ESCALATE_MIN_SET_SIZE); /v1/score now decides by ``decision_rules``
    # (service.scoring.policy):
    accept_share: float | None = None
    review_share: float | None = None
    escalate_share: float | None = None
    accept_accuracy: float | None = None  # share of accepted verdicts whose human label is in the set
    # the guarantee mode of the entry: expected (on average over calibration documents) | pac (confidence 1 - delta)
    mode: MarginalMode = "pac"


class DefaultMethodInfo(msgspec.Struct, **RESPONSE_STRUCT):
    """The method used for a (judge, prompt family, criterion) when a request names none."""

    judge: str
    prompt_family: str
    criterion: str
    method: str
    reason: str
    input_kind: str = "score"  # the kind of verdict this default applies to
    # no method met the selection rule (the default is its fallback): /v1/score escalates this cell with rule_failed
    rule_failed: bool = False
    mode: MarginalMode | None = None  # the guarantee mode whose entries it chooses among (None: every mode)


class CalibrationInfo(msgspec.Struct, **RESPONSE_STRUCT):
    """What calibration is loaded: coverage, provenance and every entry."""

    calibration_id: str
    path: str
    loaded_at: str
    format_version: int
    created_at: str
    code_version: str
    data_hash: str
    source: str
    label_scale: list[int]
    judges: list[str]
    prompt_families: list[str]
    criteria: list[str]
    methods: list[str]
    levels: list[float]
    n_entries: int
    entries: list[CalibrationEntryInfo]
    default_methods: list[DefaultMethodInfo]
    artifacts: list[ArtifactInfo] = []  # the artifacts merged into this calibration, each with the cells it owns
    # The certified decision rules (calibration.decisions.rule, as in the artifact): per cell and input kind, the
    # bins, calibrated points, certifications per (tolerance, accept_alpha), quality gates and per-label rows
    decision_rules: list[DecisionRule] = []
    # the per-label guarantee's rules (the default; calibration.per_label.rule), with their skill tests and figures
    label_rules: list[LabelRule] = []


class ArtifactCell(msgspec.Struct, **RESPONSE_STRUCT):
    """A cell (judge, prompt family, criterion) an artifact owns, with its scale, methods and levels."""

    judge: str
    prompt_family: str
    criterion: str
    n_labels: int
    methods: list[str]
    levels: list[float]
    default_method: str | None  # for score-only verdicts (see default_methods for every input kind)
    default_methods: dict[str, str] = {}  # input kind -> default method of the default (expected) guarantee


class ArtifactInfo(msgspec.Struct, **RESPONSE_STRUCT):
    """One loaded artifact: its name, content id, provenance and the cells it owns."""

    name: str
    calibration_id: str
    path: str
    loaded_at: str
    created_at: str
    code_version: str
    data_hash: str
    source: str
    label_scale: list[int]
    n_entries: int
    cells: list[ArtifactCell]


class ArtifactSummary(msgspec.Struct, **RESPONSE_STRUCT):
    """One loaded artifact in a short summary: name, id, where it came from, how many cells and entries."""

    name: str
    calibration_id: str
    path: str
    n_cells: int
    n_entries: int


class CalibrationSummary(msgspec.Struct, **RESPONSE_STRUCT):
    """What is loaded, in short (GET /v1/calibration has every entry)."""

    calibration_id: str
    path: str
    loaded_at: str
    created_at: str
    code_version: str
    data_hash: str
    source: str
    label_scale: list[int]
    n_entries: int
    artifacts: list[ArtifactSummary]


class ServedLevels(msgspec.Struct, **RESPONSE_STRUCT):
    """The method a score request is served with (artifact.serving) at these calibrated levels."""

    method: str
    alphas: list[float]


class CellOverview(msgspec.Struct, **RESPONSE_STRUCT):
    """One calibrated cell and input kind in short: what serves it, its set size at the default alpha, and what its
    certified decision rule accepts at the default tolerance and accept_alpha."""

    judge: str
    prompt_family: str
    criterion: str
    input_kind: str  # score | probabilities | mean
    # the guarantee mode of this line: per_label (its per-label rule; figures held out on its own file), expected or
    # pac (its entries and decision rows)
    mode: GuaranteeMode
    artifact: str  # the artifact that owns the cell
    n_labels: int
    served: list[ServedLevels]  # per calibrated level, the method serving it (one row per method)
    # the default method's selection rule failed (its fallback serves; /v1/score escalates with rule_failed)
    selection_failed: bool
    set_size: float | None  # held-out mean set size of the entry served at the default alpha (None: below every level)
    coverage: float | None  # held-out coverage of that entry
    decision_rule: bool  # the artifact has a certified decision rule for this cell and input kind
    # the certification row used at (tolerance, the largest calibrated accept_alpha <= the default); None: no rule/row
    accept_alpha: float | None
    accept_share: float | None  # share of calibration items the row accepts (None: no row, or it failed)
    certified_error: float | None  # pac: upper bound on the error among accepted (None: nothing accepted, or expected)
    certification_failed: bool  # the row exists but its certification failed: every verdict escalates
    skilled: bool | None = None  # per_label: the judge beats the label distribution alone (None: other modes)


class CalibrationOverview(msgspec.Struct, **RESPONSE_STRUCT):
    """GET /v1/calibration?view=summary: provenance, the defaults the figures are read at, one line per cell."""

    view: Literal["summary"]
    calibration_id: str
    path: str
    loaded_at: str
    format_version: int
    created_at: str
    code_version: str
    data_hash: str
    source: str
    label_scale: list[int]
    n_entries: int
    levels: list[float]
    default_alpha: float  # DEFAULT_ALPHA: the level of set_size, and the default accept_alpha
    tolerance: int  # /v1/score's default tolerance
    accept_alpha: float  # /v1/score's default accept_alpha (DEFAULT_ALPHA)
    artifacts: list[ArtifactSummary]
    n_cells: int
    cells: list[CellOverview]


# service.artifacts.activated.check_name: 1-64 letters, digits, _ - . starting with a letter or digit, no "..", not
# ending in ".json", not the reserved "primary" (service.artifacts.registry.RESERVED_NAMES), in any case
REFUSED_ARTIFACT_NAME = r"\.\.|\.[jJ][sS][oO][nN]$|^[pP][rR][iI][mM][aA][rR][yY]$"
ArtifactName = Annotated[
    str,
    Meta(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$",
        description="artifact name: letters, digits, _ - .",
        extra_json_schema={"not": {"pattern": REFUSED_ARTIFACT_NAME}},
    ),
]
# The ``name`` query of POST /v1/calibrations: an artifact name, or empty for the default name cal-<id>
ArtifactNameQuery = Annotated[
    str,
    Meta(
        pattern=r"^([A-Za-z0-9][A-Za-z0-9_.-]{0,63})?$",
        description="artifact name (default, and when empty: cal-<id>)",
        extra_json_schema={"not": {"pattern": REFUSED_ARTIFACT_NAME}},
    ),
]


class ReloadRequest(msgspec.Struct, **REQUEST_STRUCT):
    """Reload the primary artifact from ``path`` (default: the path currently loaded, i.e. THRESHOLDS_PATH), or,
    with ``name``, load ``path`` as the artifact of that name beside the others (it adds or replaces the cells it
    owns; a cell another artifact owns is a 409)."""

    path: Annotated[str, Meta(min_length=1, max_length=4096)] | None = None
    name: ArtifactName | None = None


class ReloadResponse(msgspec.Struct, **RESPONSE_STRUCT):
    """The swap that happened, in short: the previous id, the artifact loaded, its cells (new, taken over from its
    previous version, and dropped: its previous version's cells it no longer has), what is loaded now."""

    previous_calibration_id: str | None
    artifact: str
    cells_added: int
    cells_replaced: int
    calibration: CalibrationSummary
    cells_removed: int = 0
    # e.g. an artifact activated while neither ARTIFACTS_DIR nor the Redis artifacts hash is set: kept for this
    # process only
    warnings: list[str] = []


# ------------------------------------------------------------------------------------------ /v1/calibrations


class HeldoutLevel(msgspec.Struct, **RESPONSE_STRUCT):
    """A new cell's default method at one alpha, held out by group: what a pipeline should expect."""

    alpha: float
    coverage_target: float
    coverage: float
    coverage_p5: float  # 5th percentile over the splits by group
    set_size: float
    share_accept: float
    share_review: float
    share_escalate: float
    accept_accuracy: float | None  # share of accepted items whose human label lies in the set
    share_full_scale: float


class CellCertification(msgspec.Struct, **RESPONSE_STRUCT):
    """The cell's certified decision rule at one (tolerance, accept_alpha) of the grid, on its calibration data:
    whether /v1/score can accept any of its verdicts, and why not when it cannot."""

    tolerance: int  # an error is |human - point| >= tolerance
    accept_alpha: float
    certified: bool  # some verdicts are accepted (their bin is certified): /v1/score answers accept for them
    accept_share: float | None  # share of the certification items whose verdict is accepted
    certified_error: float | None  # upper bound on the error among accepted (<= accept_alpha), confidence 1 - delta
    rule_failed: bool  # the data cannot certify at this level at all (too few documents or items): reason says which
    reason: str
    n_groups: int  # documents that certified (the bound's unit)
    # "expected": accepted when averaged over calibrations the error among accepted is <= accept_alpha (no bound);
    # "pac": certified_error holds with confidence 1 - delta
    mode: MarginalMode = "pac"


class PerLabelFigures(msgspec.Struct, **RESPONSE_STRUCT):
    """A cell's per-label rule (the default guarantee, calibration.per_label): the skill test against the label
    distribution alone, the labels pooled for want of evidence, and its held-out figures on the calibration file
    (the same figures ``offline calibrate --labels`` reports and ``GET /v1/calibration`` shows)."""

    skill: SkillTest
    pooled_labels: list[list[int]]
    summary: RuleSummary | None
    words: str


class CalibratedCell(msgspec.Struct, **RESPONSE_STRUCT):
    """One (cell, input kind) a calibration job fitted: scale, size, default method, its held-out figures per alpha,
    and its certified decision rule."""

    judge: str
    prompt_family: str
    criterion: str
    input_kind: str  # the kind of verdict these thresholds serve: score | probabilities | mean
    n_labels: int
    n_items: int
    n_groups: int
    default_method: str
    reason: str
    heldout: list[HeldoutLevel]
    full_scale_flag: bool  # at the default level the sets are (almost) always the whole scale
    # The decision rule /v1/score applies (the artifact's decision_rules, calibration.decisions.cell_rules): one row per
    # (tolerance, accept_alpha) of the grid, and in words at tolerance 2, accept_alpha 0.1 (the defaults); empty
    # until the job is done
    certifications: list[CellCertification] = []
    decision_summary: str = ""
    per_label: PerLabelFigures | None = None  # the default guarantee's rule (None until the job is done)


class CalibrationJobInfo(msgspec.Struct, **RESPONSE_STRUCT):
    """A calibration job: progress, and when done the new cells with their held-out coverage."""

    id: str
    status: Literal["queued", "running", "done", "failed"]
    artifact_name: str
    created_at: str
    finished_at: str | None
    n_rows: int
    progress: float  # 0..1
    levels: list[float]
    warnings: list[str]
    error: str | None
    activated: bool
    cells: list[CalibratedCell]
    report: str | None = None  # the report page of the job's cells (skill, per-label evidence, planner) once done
