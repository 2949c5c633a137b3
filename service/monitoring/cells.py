"""Which monitor a served verdict feeds, what that monitor watches, and what one human label says about the verdict.

A **monitor** is one served cell (judge, prompt family, criterion, input kind) of one calibration (the id of the
artifact that owns the cell, so activating a new calibration for the cell starts a new monitor and leaves the
others alone), for one tenant: every level and guarantee mode the cell is served at feeds the same monitor, so one
change detector (one false-alarm budget) stands for everything that can escalate the cell for that tenant. Its
``CellSpec`` is fixed when its first label arrives, from the served answer and the calibration, never from a label:

* **coverage** over every item, each item at the alpha it was served at;
* **accept error** over the accepted items, each at its served accept_alpha and tolerance, watched only when the
  rule that served the answer can accept (a rule that accepts nothing promises nothing);
* when the answer's guarantee is label-conditional (mode ``per_label``: for every human label y, coverage of y and
  the share of label-y items accepted with a wrong point are each promised): the same two for each label y = 1..K,
  over the items whose human label is y, each document's share against the level (the promise's unit). These watch
  the judge's skill: a judge replaced by one that says the same score for everything keeps the marginal rates but
  misses the labels it no longer tells apart.

Weights: the whole-cell guarantees share half of the budget and the per-label ones the other half (all of it when
there are none). The spec and each label's outcome are the pure rule :mod:`calibration.monitoring.watched`, which
the studies use too. The monitor's delta is MONITOR_DELTA split between the tenant's own monitor and the admin's, the
two that can escalate one caller's cell (``service.monitoring.monitors``).

A label (``human``, rounded half up and checked against the cell's scale, as calibration reads it) gives, per
watched guarantee: counted, failed, and the level the item was served at.
"""

from __future__ import annotations

import hashlib

import msgspec

from calibration.input_kinds.verdicts import round_half_up
from calibration.monitoring import CellSpec, watched_cell_spec, watched_outcome
from service.errors import InvalidRequestError
from service.wire.score import Guarantee, ScoreResponse

__all__ = [
    "PER_LABEL_MODES",
    "CellKey",
    "LabelOutcome",
    "MonitorKey",
    "ServedLabel",
    "label_outcome",
    "monitor_key",
    "served_label",
    "served_levels",
    "watched_spec",
]

PER_LABEL_MODES = frozenset({"per_label"})  # guarantee modes that promise each human label its own rates


class CellKey(msgspec.Struct, frozen=True, kw_only=True):
    """A served cell of one calibration, for one tenant: what an alarm escalates."""

    tenant: str
    calibration_id: str
    judge: str
    prompt_family: str
    criterion: str
    input_kind: str


class MonitorKey(msgspec.Struct, frozen=True, kw_only=True):
    """A monitor: its cell (every level and mode the cell is served at feeds it)."""

    cell: CellKey

    @property
    def monitor_id(self) -> str:
        """32 hex digits of SHA-256 over the key's JSON: the same in every process."""
        return hashlib.sha256(msgspec.json.encode(self)).hexdigest()[:32]


class LabelOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """One label's outcome per guarantee of its monitor, in the spec's order: counted, failed, served level."""

    counted: tuple[bool, ...]
    failed: tuple[bool, ...]
    levels: tuple[float, ...]


def served_levels(answer: ScoreResponse) -> tuple[Guarantee, Guarantee | None]:
    """The answer's coverage and accept-error guarantees; InvalidRequestError when it carries no coverage."""
    if not answer.calibrated or answer.prompt_family is None:
        raise InvalidRequestError(
            "this verdict is not calibrated (no thresholds serve it), so no guarantee was served to monitor: "
            + answer.reason
        )
    coverage = next((g for g in answer.guarantees if g.kind == "set_coverage"), None)
    if coverage is None:
        raise InvalidRequestError(
            "this verdict was served without a coverage guarantee (the cell's rule failed), so there is nothing to "
            "monitor: " + answer.reason
        )
    return coverage, next((g for g in answer.guarantees if g.kind == "accept_error"), None)


def monitor_key(answer: ScoreResponse, *, tenant: str, calibration_id: str) -> MonitorKey:
    """The monitor of a served answer; InvalidRequestError when the answer carries no guarantee to watch."""
    served_levels(answer)
    assert answer.prompt_family is not None
    cell = CellKey(
        tenant=tenant,
        calibration_id=calibration_id,
        judge=answer.judge,
        prompt_family=answer.prompt_family,
        criterion=answer.criterion,
        input_kind=answer.input_kind or "",
    )
    return MonitorKey(cell=cell)


def watched_spec(
    answer: ScoreResponse,
    *,
    n_labels: int,
    accepts: bool,
    max_items: int,
    delta: float,
    horizon: int,
) -> CellSpec:
    """What a new monitor watches (module rules, :func:`calibration.monitoring.watched_cell_spec`): ``accepts`` says
    whether the cell's rule accepts any bin."""
    coverage, accept = served_levels(answer)
    watch_accept = accepts and accept is not None
    return watched_cell_spec(
        alpha=coverage.alpha,
        accept_alpha=accept.alpha if watch_accept and accept is not None else None,
        tolerance=(accept.tolerance or 1) if accept is not None else 1,
        per_label=coverage.mode in PER_LABEL_MODES,
        n_labels=n_labels,
        max_items=max_items,
        delta=delta,
        horizon=horizon,
    )


class ServedLabel(msgspec.Struct, frozen=True, kw_only=True):
    """What one label says of the answer it labels, whatever the monitor watches: the label, whether the set
    covered it, whether the answer was accepted with a point ``tolerance`` or more away, and the served levels."""

    label: int
    scale: int  # K: the labels 1..K the cell's scale has
    covered: bool
    coverage_alpha: float
    per_label: bool  # the served guarantee promised each human label its own rates
    accept_alpha: float | None  # None: no accept-error guarantee was served
    accepted: bool
    wrong: bool  # accepted with |label - point| >= tolerance


def served_label(answer: ScoreResponse, human: float, n_labels: int) -> ServedLabel:
    """The label read as calibration reads it, against the answer; InvalidRequestError outside the scale."""
    if not 1 <= human <= n_labels:
        raise InvalidRequestError(f"human={human!r} is outside this cell's scale 1..{n_labels}")
    label = min(n_labels, round_half_up(human))
    coverage, accept = served_levels(answer)
    accepted = answer.decision == "accept" and accept is not None
    return ServedLabel(
        label=label,
        scale=n_labels,
        covered=label in answer.prediction_set,
        coverage_alpha=coverage.alpha,
        per_label=coverage.mode in PER_LABEL_MODES,
        accept_alpha=None if accept is None else accept.alpha,
        accepted=accepted,
        wrong=accepted and accept is not None and abs(label - answer.point) >= (accept.tolerance or 1),
    )


def label_outcome(spec: CellSpec, served: ServedLabel) -> LabelOutcome:
    """The label's outcome per guarantee of the monitor's spec (:func:`calibration.monitoring.watched_outcome`)."""
    counted: list[bool] = []
    failed: list[bool] = []
    levels: list[float] = []
    for watched in spec.guarantees:
        count, fail = watched_outcome(
            watched,
            label=served.label,
            covered=served.covered,
            accepted=served.accepted,
            wrong=served.wrong,
            per_label=served.per_label,
            accept_served=served.accept_alpha is not None,
        )
        counted.append(bool(count))
        failed.append(bool(fail))
        if watched.guarantee == "coverage":
            levels.append(served.coverage_alpha)
        else:
            levels.append(watched.level if served.accept_alpha is None else served.accept_alpha)
    return LabelOutcome(counted=tuple(counted), failed=tuple(failed), levels=tuple(levels))
