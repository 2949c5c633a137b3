"""An alarmed monitor changes the answers of its cell: escalate, ``rule_failed``, a reason naming the monitor.

The scoring context carries the alarms that apply to the request's caller (its tenant's and the admin's, read from
a cache the monitoring package refreshes: ``service.monitoring.board``), keyed by the cell's calibration id
(the id of the artifact that owns the cell: a new calibration for the cell is a new key, so its alarm no longer
applies), judge, prompt family, criterion and input kind. Without alarms (no Redis, or none raised) the answer is
untouched and this costs one truth test.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from service.artifacts.snapshot import CalibrationSnapshot
from service.wire.score import ScoreResponse

__all__ = ["AlarmNote", "AlarmedCell", "cell_calibration_id", "escalate_for_alarm"]

AlarmedCell = tuple[str, str, str, str, str]  # (calibration id, judge, prompt family, criterion, input kind)


class AlarmNote(msgspec.Struct, frozen=True, kw_only=True):
    """What an answer says of an alarm: the monitor and the guarantee it rejected."""

    monitor_id: str
    guarantee: str
    level: float
    e_value: float
    explanation: str = ""  # the alarm in words: which guarantee or human label, how far


def cell_calibration_id(snapshot: CalibrationSnapshot, judge: str, prompt_family: str, criterion: str) -> str:
    """The id of the artifact that owns the cell (the merged view's id when no member owns it)."""
    owner = snapshot.artifacts.owners.get((judge, prompt_family, criterion))
    member = None if owner is None else snapshot.artifacts.get(owner)
    return snapshot.calibration_id if member is None else member.calibration_id


def escalate_for_alarm(
    snapshot: CalibrationSnapshot, answer: ScoreResponse, alarms: Mapping[AlarmedCell, AlarmNote]
) -> ScoreResponse:
    """The answer, escalated when its cell's monitor is in alarm (the set and the guarantees stay as served)."""
    if not alarms or answer.prompt_family is None or answer.input_kind is None:
        return answer
    cell_id = cell_calibration_id(snapshot, answer.judge, answer.prompt_family, answer.criterion)
    note = alarms.get((cell_id, answer.judge, answer.prompt_family, answer.criterion, answer.input_kind))
    if note is None:
        return answer
    if note.guarantee == "unknown":  # the alarms could not be read: fail closed, saying why
        reason = f"{note.explanation}; ask a human (served: {answer.reason})"
        return msgspec.structs.replace(answer, decision="escalate", escalate=True, rule_failed=True, reason=reason)
    guarantee = "set coverage" if note.guarantee == "coverage" else "error among accepted"
    rejected = note.explanation or (
        f"human labels reject its {guarantee} guarantee at level {note.level:g} (e-value {note.e_value:.3g})"
    )
    reason = (
        f"the feedback monitor {note.monitor_id} of this cell is in alarm: {rejected}; the calibration no longer "
        "holds for this stream, so every verdict of the cell escalates until a new calibration is activated or an "
        f"admin resets the monitor; ask a human (served: {answer.reason})"
    )
    return msgspec.structs.replace(answer, decision="escalate", escalate=True, rule_failed=True, reason=reason)
