"""The panel study's result types: one row per (panel, criterion, method), leave-one-out, members on the panel's
items, and the study that holds them.
"""

from __future__ import annotations

import msgspec

__all__ = [
    "LeaveOneOut",
    "MemberOnItems",
    "PanelRow",
    "PanelStudy",
]


class PanelRow(msgspec.Struct, frozen=True, kw_only=True):
    """One (panel, criterion, method) at ``alpha`` (module rules)."""

    members: list[str]
    panel: str
    prompt_family: str  # the members' inputs (calibration.input_kinds.mean_panel.panel_family)
    criterion: str
    alpha: float
    method: str
    is_default: bool
    n_items: int
    coverage: float
    set_size: float
    min_label_coverage: float
    accept_share: float
    review_share: float
    escalate_share: float
    best_member: str
    best_member_set_size: float
    best_member_coverage: float
    served_coverage: float | None = None  # default row only: the served recipe on unseen documents
    served_set_size: float | None = None
    ratio_to_best_member: float | None = None  # served_set_size / best_member_set_size


class LeaveOneOut(msgspec.Struct, frozen=True, kw_only=True):
    """What dropping one member does to a panel's served set size at ``alpha``."""

    members: list[str]
    criterion: str
    dropped: str
    set_size: float
    set_size_without: float
    gain: float  # set_size_without - set_size: > 0, the member adds information


class MemberOnItems(msgspec.Struct, frozen=True, kw_only=True):
    """A member's served recipe refitted on a panel's common items (its best input kind), at the study's alpha."""

    panel: str
    criterion: str
    member: str
    kind: str
    n_items: int
    served_coverage: float
    served_set_size: float


class PanelStudy(msgspec.Struct, frozen=True, kw_only=True):
    """The panel study: settings, rules, one row per (panel, criterion, method), leave-one-out rows."""

    alpha: float
    delta: float | None
    n_splits: int
    seed: int
    judges: list[str]
    rules: dict[str, str]
    rows: list[PanelRow]
    leave_one_out: list[LeaveOneOut]
    # EXPORTED_PANEL only: each member refitted on the panel's own items (same rules), per criterion
    members_on_panel_items: list[MemberOnItems] = msgspec.field(default_factory=list)
