"""A durable job as its answers show it: ``JobStatus`` (GET and DELETE /v1/jobs/{id}: counts, times, rate, ETA) and
``JobAccepted`` (the 202 of POST /v1/jobs), with where to poll and read its results."""

from __future__ import annotations

from datetime import UTC, datetime

from service.jobs.job_record import ACTIVE_STATUSES, JobRecord
from service.wire.jobs import JobAccepted, JobStatus

__all__ = ["job_accepted_view", "job_status_view"]


def _iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def job_status_view(record: JobRecord, now: float) -> JobStatus:
    rate = eta = None
    if record.started_at is not None:
        elapsed = (record.finished_at or now) - record.started_at
        if elapsed > 0 and record.n_done > 0:
            rate = record.n_done / elapsed
    if record.status in ACTIVE_STATUSES and rate:
        eta = (record.n_items - record.n_done) / rate
    elif record.status in ("succeeded", "failed"):
        eta = 0.0
    return JobStatus(
        job_id=record.job_id,
        status=record.status,  # type: ignore[arg-type]
        n_items=record.n_items,
        n_done=record.n_done,
        n_failed=record.n_failed,
        created_at=_iso(record.created_at) or "",
        started_at=_iso(record.started_at),
        finished_at=_iso(record.finished_at),
        items_per_second=None if rate is None else round(rate, 3),
        eta_s=None if eta is None else round(eta, 3),
        status_url=f"/v1/jobs/{record.job_id}",
        results_url=f"/v1/jobs/{record.job_id}/results",
    )


def job_accepted_view(record: JobRecord) -> JobAccepted:
    return JobAccepted(
        job_id=record.job_id,
        status=record.status,  # type: ignore[arg-type]
        n_items=record.n_items,
        status_url=f"/v1/jobs/{record.job_id}",
        results_url=f"/v1/jobs/{record.job_id}/results",
    )
