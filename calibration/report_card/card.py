"""The report card of one calibrated cell: typed figures, nothing computed here.

Filled by :mod:`artifact.report_cards` from the functions of this package (agreement, baseline and ceiling, served
evidence, planner); stored in ``artifact/report_cards.json`` for the shipped cells and in a calibration job's result,
and served as JSON and as a page by the service. Shares are in [0, 1]; ``None`` means "no item to take a share of".
"""

from __future__ import annotations

import msgspec

from calibration.unit_bootstrap import UnitInterval

__all__ = [
    "Baseline",
    "Ceiling",
    "HeldoutPlan",
    "LabelEvidence",
    "ModeEvidence",
    "OperatingPoint",
    "Planner",
    "PlannerPoint",
    "ReportCard",
    "Skill",
]


class Skill(msgspec.Struct, frozen=True, kw_only=True):
    """The judge's integer verdict against the human label: each figure with its interval, documents resampled."""

    weighted_kappa: UnitInterval | None  # quadratic; None when undefined (one label alone on a side)
    spearman: UnitInterval | None
    exact_agreement: UnitInterval
    within_tolerance: UnitInterval  # |judge - human| < tolerance
    tolerance: int


class Baseline(msgspec.Struct, frozen=True, kw_only=True):
    """The no-information baseline: the human-label distribution alone, answered by its best constant point."""

    label_counts: list[int]  # items per human label 1..K
    point: int  # the constant label with the largest within-tolerance agreement (ties: the smaller label)
    exact_agreement: float  # of the most frequent label (ties: the smaller label)
    within_tolerance: float  # of ``point``
    weighted_kappa: float = 0.0  # any constant answer has kappa 0 by construction


class Ceiling(msgspec.Struct, frozen=True, kw_only=True):
    """Human-human agreement where items carry several annotators: every pair of annotators of an item, both orders,
    one annotator's label against another's (a single annotator, not the rounded mean the judge is compared with)."""

    n_annotators: int
    n_items: int
    weighted_kappa: UnitInterval | None
    exact_agreement: UnitInterval
    within_tolerance: UnitInterval


class OperatingPoint(msgspec.Struct, frozen=True, kw_only=True):
    """At one accept_alpha, on held-out documents: the share accepted and the error among accepted."""

    accept_alpha: float
    accept_share: float
    error_among_accepted: float | None  # |human - point| >= tolerance among accepted; None when nothing accepted
    n_accepted: int


class LabelEvidence(msgspec.Struct, frozen=True, kw_only=True):
    """One human label on held-out documents: how its items were served."""

    label: int
    n_items: int
    n_documents: int
    set_coverage: float | None  # share of the label's items whose served set holds the label
    accept_share: float | None  # share of the label's items accepted
    wrongly_accepted_share: float | None  # share of the label's items accepted with |label - point| >= tolerance


class ModeEvidence(msgspec.Struct, frozen=True, kw_only=True):
    """One guarantee mode's served answers on held-out documents."""

    mode: str
    alpha: float  # the set's level
    accept_alpha: float  # the level of the per-label table
    coverage: float
    mean_set_size: float
    set_size_counts: list[int]  # items per set size 0..K
    accept_share: float
    wrongly_accepted_share: float
    per_label: list[LabelEvidence]
    operating_curve: list[OperatingPoint]


class PlannerPoint(msgspec.Struct, frozen=True, kw_only=True):
    """Below the file's size, rules fitted on ``n_documents`` distinct drawn documents, ``n_draws`` times, served on
    the file's other documents (measured); from it on, the file projected to a file of ``n_documents`` documents
    like its own, with a band from ``n_draws`` files drawn with replacement from it (``projected``;
    :mod:`calibration.report_card.planner`)."""

    n_documents: int
    projected: bool
    n_draws: int
    accept_share: float  # measured: the mean over draws; projected: the file's projection
    accept_share_low: float  # measured: the 10th percentile over draws (at most the mean); projected: the band's
    accept_share_high: float  # measured: the 90th percentile (at least the mean); projected: the band's
    mean_set_size: float
    set_size_low: float
    set_size_high: float


class Planner(msgspec.Struct, frozen=True, kw_only=True):
    """Accept share and set size as functions of the number of labelled documents, and the documents a target
    share needs (the smallest size of the grid whose mean share reaches it)."""

    mode: str
    tolerance: int
    accept_alpha: float
    alpha: float
    points: list[PlannerPoint]
    target_share: float
    documents_for_target: int | None  # None: no size of the grid reaches the target share
    seed: int


class HeldoutPlan(msgspec.Struct, frozen=True, kw_only=True):
    """How the held-out figures were made."""

    folds: int  # documents split into this many folds; each fold served by rules fitted on the others
    seed: int
    n_documents: int


class ReportCard(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the report page shows for one (judge, prompt family, criterion): the input kind and method the
    service serves a verdict carrying everything the file has."""

    judge: str
    prompt_family: str
    criterion: str
    input_kind: str
    method: str
    n_labels: int
    n_items: int
    n_documents: int
    interval_level: float  # the intervals' confidence, e.g. 0.95
    skill: Skill
    baseline: Baseline
    ceiling: Ceiling | None
    confusion: list[list[int]]  # [judge label - 1][human label - 1]
    heldout: HeldoutPlan
    modes: list[ModeEvidence]
    planner: Planner | None
    beats_baseline: bool  # adds information over the label distribution: the weighted kappa's interval is above 0
    agrees_more_than_baseline: bool  # within-tolerance agreement above the best constant answer's
