"""Which monitor a served verdict feeds, what that monitor watches, and what one human label says about the verdict.

A **monitor** is one served cell (judge, prompt family, criterion, input kind) of one calibration (the id of the
artifact that owns the cell, so activating a new calibration for the cell starts a new monitor and leaves the
others alone), at the levels the answer was served at (guarantee mode, the coverage level alpha, and the accept
row's tolerance and accept_alpha when the answer named one), for one tenant. Its ``CellSpec`` is fixed when its
first label arrives, from those served levels and the settings (MONITOR_MAX_ITEMS, MONITOR_DELTA): nothing in
it depends on a label.

A label (``human``, rounded half up and checked against the cell's scale, as calibration reads it) gives:

* **coverage** at alpha: counted always; failed when the label is outside the served prediction set;
* **accept error** at (tolerance, accept_alpha): counted when the answer was ``accept``; failed when
  ``|label - point| >= tolerance``.
"""

from __future__ import annotations

import hashlib

import msgspec

from calibration.kinds.verdicts import round_half_up
from calibration.monitoring import CellSpec, GuaranteeSpec
from service.errors import InvalidRequestError
from service.wire.score import ScoreResponse

__all__ = ["CellKey", "LabelOutcome", "MonitorKey", "label_outcome", "monitor_key", "watched_spec"]


class CellKey(msgspec.Struct, frozen=True, kw_only=True):
    """A served cell of one calibration, for one tenant: what an alarm escalates."""

    tenant: str
    calibration_id: str
    judge: str
    prompt_family: str
    criterion: str
    input_kind: str


class MonitorKey(msgspec.Struct, frozen=True, kw_only=True):
    """A monitor: its cell and the levels it watches (accept_alpha None: no accept row was served)."""

    cell: CellKey
    mode: str
    alpha: float
    tolerance: int | None = None
    accept_alpha: float | None = None

    @property
    def monitor_id(self) -> str:
        """32 hex digits of SHA-256 over the key's JSON: the same in every process."""
        return hashlib.sha256(msgspec.json.encode(self)).hexdigest()[:32]


class LabelOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """One label's outcome per guarantee of its monitor, in the spec's order (coverage, then accept error)."""

    counted: tuple[bool, ...]
    failed: tuple[bool, ...]


def monitor_key(answer: ScoreResponse, *, tenant: str, calibration_id: str) -> MonitorKey:
    """The monitor of a served answer; InvalidRequestError when the answer carries no guarantee to watch."""
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
    accept = next((g for g in answer.guarantees if g.kind == "accept_error"), None)
    cell = CellKey(
        tenant=tenant,
        calibration_id=calibration_id,
        judge=answer.judge,
        prompt_family=answer.prompt_family,
        criterion=answer.criterion,
        input_kind=answer.input_kind or "",
    )
    return MonitorKey(
        cell=cell,
        mode=coverage.mode,
        alpha=coverage.alpha,
        tolerance=None if accept is None else accept.tolerance,
        accept_alpha=None if accept is None else accept.alpha,
    )


def watched_spec(key: MonitorKey, *, max_items: int, delta: float) -> CellSpec:
    """What the monitor watches: coverage at alpha, and accept error at the served row when there was one."""
    guarantees = [GuaranteeSpec(guarantee="coverage", level=key.alpha, max_items=max_items)]
    if key.accept_alpha is not None:
        accept = GuaranteeSpec(
            guarantee="accept_error", level=key.accept_alpha, tolerance=key.tolerance, max_items=max_items
        )
        guarantees.append(accept)
    return CellSpec(guarantees=guarantees, delta=delta)


def label_outcome(answer: ScoreResponse, key: MonitorKey, human: float, n_labels: int) -> LabelOutcome:
    """The label's outcome per watched guarantee; InvalidRequestError for a label outside the scale 1..n_labels."""
    if not 1 <= human <= n_labels:
        raise InvalidRequestError(f"human={human!r} is outside this cell's scale 1..{n_labels}")
    label = min(n_labels, round_half_up(human))
    counted = [True]
    failed = [label not in answer.prediction_set]
    if key.accept_alpha is not None:
        accepted = answer.decision == "accept"
        counted.append(accepted)
        failed.append(accepted and abs(label - answer.point) >= (key.tolerance or 1))
    return LabelOutcome(counted=tuple(counted), failed=tuple(failed))
