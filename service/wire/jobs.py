"""/v1/jobs: durable scoring jobs, their states and result lines."""

from __future__ import annotations

from typing import Literal

import msgspec

from service.wire.common import RESPONSE_STRUCT, Problem
from service.wire.score import ScoreResponse

__all__ = ["JobAccepted", "JobItemResult", "JobState", "JobStatus"]


# --------------------------------------------------------------------------------------------- /v1/jobs

JobState = Literal["queued", "running", "succeeded", "failed", "cancelled"]


class JobAccepted(msgspec.Struct, **RESPONSE_STRUCT):
    """A job taken: where to poll its status and read its results."""

    job_id: str
    status: JobState
    n_items: int
    status_url: str
    results_url: str


class JobStatus(msgspec.Struct, **RESPONSE_STRUCT):
    """A job's progress: ``n_done`` items have a result line (``n_failed`` of them an error)."""

    job_id: str
    status: JobState
    n_items: int
    n_done: int
    n_failed: int
    created_at: str
    started_at: str | None
    finished_at: str | None
    items_per_second: float | None
    eta_s: float | None
    status_url: str
    results_url: str


class JobItemResult(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One line of a job's results: the batch endpoint's item, with ``item_id`` always present (null if none)."""

    index: int
    item_id: str | None
    ok: bool
    result: ScoreResponse | None = None
    error: Problem | None = None
