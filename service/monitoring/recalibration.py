"""A monitor's collected feedback as a labelled file: what a recalibration from feedback submits as a calibration job.

The rows are the monitor's kept labelled rows (``service.monitoring.store``: the latest MONITOR_REMEMBERED_IDS),
each the feedback item in the labelled JSON Lines format (``artifact.labels``) under the judge and prompt family
that served it, its ``group`` the document. The calibration job then applies its own rules (enough items and
documents per cell, ``service.jobs.calibration_jobs``). The job's artifact takes the name of the artifact that owns the
cell now, so activating it replaces that artifact and the cell's calibration id changes (which clears the alarm);
a cell of the primary artifact cannot be replaced by an activation (the registry's ownership rule), so its job
gets a name of its own and the answer says how to serve it.

Whose rows. A monitor belongs to one tenant, so its rows are that tenant's labels. The calibration an activation
serves is every tenant's, so a monitor of a tenant other than the admin's is recalibrated only when the admin says
so (``for_every_tenant``): one tenant's labels never rewrite another tenant's answers by default. The answer says
whose rows they are and how many came in documents closed after the alarm.

Fit limit. When the rows pass the calibration job's per-cell limit (MAX_CALIBRATION_CELL_ROWS), whole documents are
drawn at random (``random.Random(seed)`` over the sorted document ids, seed 0) until the next one would pass it:
the job fits that subsample, documents kept whole, and the answer says so.
"""

from __future__ import annotations

import random

import msgspec

from service.artifacts.registry import PRIMARY
from service.artifacts.snapshot import CalibrationSnapshot
from service.errors import ConflictError, InvalidRequestError, NotFoundError
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
    tenant: str  # whose labels: "admin", "single tenant" (no API keys) or "tenant <digest prefix>"
    rows_after_alarm: int  # labels in documents closed after the alarm (0 without an alarm)
    kept_from: int  # the rows kept before subsampling to the fit limit (== rows when none was needed)


def _subsample(decoded: list[dict], rows: list[bytes], limit: int) -> tuple[list[dict], list[bytes]]:
    """Whole documents at random (module rule) until the next would pass ``limit`` rows."""
    if len(rows) <= limit:
        return decoded, rows
    by_group: dict[str, list[int]] = {}
    for index, row in enumerate(decoded):
        by_group.setdefault(str(row["group"]), []).append(index)
    groups = sorted(by_group)
    random.Random(0).shuffle(groups)
    chosen: list[int] = []
    for group in groups:
        if len(chosen) + len(by_group[group]) > limit:
            break
        chosen += by_group[group]
    chosen.sort()
    return [decoded[i] for i in chosen], [rows[i] for i in chosen]


def _whose(tenant: str, admin_tenant: str | None) -> str:
    if admin_tenant is None:
        return "single tenant"
    return "admin" if tenant == admin_tenant else f"tenant {tenant[:12]}"


async def feedback_file(
    monitors: Monitors,
    snapshot: CalibrationSnapshot | None,
    monitor_id: str,
    *,
    max_rows: int,
    for_every_tenant: bool = False,
) -> FeedbackFile:
    """The monitor's kept rows as JSON Lines (module rules); 404 for an unknown monitor, 409 for another tenant's
    rows without ``for_every_tenant``, 422 when it kept no row."""
    record = await monitors.store.load(monitor_id)
    if record is None:
        raise NotFoundError(f"no monitor {monitor_id!r}: GET /v1/monitor lists the monitor ids")
    tenant = record.key.cell.tenant
    whose = _whose(tenant, monitors.admin_tenant)
    if monitors.admin_tenant is not None and tenant != monitors.admin_tenant and not for_every_tenant:
        raise ConflictError(
            f"monitor {monitor_id} holds the labels of {whose}; an activated calibration serves every tenant, so "
            "one tenant's labels would change the others' answers: send for_every_tenant: true to fit on them "
            "anyway (the admin's choice), or collect the admin's own feedback for this cell"
        )
    every = await monitors.store.rows(monitor_id)
    if not every:
        raise InvalidRequestError(f"monitor {monitor_id} kept no labelled row to calibrate on")
    decoded, rows = _subsample([msgspec.json.decode(row) for row in every], every, max_rows)
    cell = record.key.cell
    served = (cell.judge, cell.prompt_family, cell.criterion)
    owner = None if snapshot is None else snapshot.artifacts.owners.get(served)
    alarm = record.state.alarm
    return FeedbackFile(
        record=record,
        body=b"\n".join(rows) + b"\n",
        rows=len(rows),
        documents=len({row["group"] for row in decoded}),
        scale=int(decoded[0]["scale_max"]),
        name=None if owner in (None, PRIMARY) else owner,
        tenant=whose,
        rows_after_alarm=0 if alarm is None else max(0, record.state.labels - alarm.label),
        kept_from=len(every),
    )
