"""A monitor's collected feedback as a labelled file: what a recalibration from feedback submits as a calibration job.

The rows are the monitor's kept labelled rows (``service.monitoring.store``: the latest MONITOR_REMEMBERED_IDS),
each the feedback item in the labelled JSON Lines format (``artifact.labels``) under the judge and prompt family
that served it, its ``group`` the document. The calibration job then applies its own rules (enough items and
documents per cell, ``service.jobs.calibration_jobs``). The job's artifact takes the name of the artifact that owns the
cell now, so activating it replaces that artifact and the cell's calibration id changes (which clears the alarm);
a cell of the primary artifact cannot be replaced by an activation (the registry's ownership rule), so its job
gets a name of its own and the answer says how to serve it.
"""

from __future__ import annotations

import msgspec

from service.artifacts.registry import PRIMARY
from service.artifacts.snapshot import CalibrationSnapshot
from service.errors import InvalidRequestError, NotFoundError
from service.monitoring.monitors import Monitors
from service.monitoring.store import MonitorRecord

__all__ = ["FeedbackFile", "feedback_file"]


class FeedbackFile(msgspec.Struct, frozen=True, kw_only=True):
    """A monitor's feedback as a labelled body: its rows, documents, scale and the artifact name to fit under."""

    record: MonitorRecord
    body: bytes
    rows: int
    documents: int
    scale: int
    name: str | None  # the owning artifact's name (None: the cell is the primary artifact's)


async def feedback_file(monitors: Monitors, snapshot: CalibrationSnapshot | None, monitor_id: str) -> FeedbackFile:
    """The monitor's kept rows as JSON Lines; 404 for an unknown monitor, 422 when it kept no row."""
    record = await monitors.store.load(monitor_id)
    if record is None:
        raise NotFoundError(f"no monitor {monitor_id!r}: GET /v1/monitor lists the monitor ids")
    rows = await monitors.store.rows(monitor_id)
    if not rows:
        raise InvalidRequestError(f"monitor {monitor_id} kept no labelled row to calibrate on")
    decoded = [msgspec.json.decode(row) for row in rows]
    cell = record.key.cell
    served = (cell.judge, cell.prompt_family, cell.criterion)
    owner = None if snapshot is None else snapshot.artifacts.owners.get(served)
    return FeedbackFile(
        record=record,
        body=b"\n".join(rows) + b"\n",
        rows=len(rows),
        documents=len({row["group"] for row in decoded}),
        scale=int(decoded[0]["scale_max"]),
        name=None if owner in (None, PRIMARY) else owner,
    )
