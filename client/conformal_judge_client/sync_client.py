"""The blocking client: every method runs the shared plan of ``calls.Operations`` on an ``httpx.Client``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any, TypeVar

import httpx

from .calls import Operations, PollPolicy
from .monitoring import FeedbackResult, MonitorState
from .results import (
    Activation,
    BatchItem,
    BatchResult,
    CalibrationJob,
    CompareResult,
    Health,
    JobAccepted,
    JobOutcome,
    JobStatus,
    ScoreResult,
)
from .retry import RetryPolicy
from .transport import Plan, client_headers, drive_sync

__all__ = ["Client"]

T = TypeVar("T")
Item = Mapping[str, Any]


class Client:
    """A Conformal Judge client over one ``httpx.Client`` (connection pool); use it as a context manager.

    ``api_key`` is sent as ``Authorization: Bearer <key>``; ``timeout`` bounds each HTTP request (seconds);
    ``retry`` and ``poll`` set the retry and job-polling policies; ``transport`` is passed to httpx.
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        poll: PollPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._operations = Operations(retry=retry or RetryPolicy(), poll=poll or PollPolicy())
        self._http = httpx.Client(
            base_url=base_url, headers=client_headers(api_key), timeout=timeout, transport=transport
        )

    def _run(self, plan: Plan[T]) -> T:
        return drive_sync(self._http, plan)

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def score(self, item: Item) -> ScoreResult:
        """Score one verdict (``POST /v1/score``), e.g. ``{"criterion": ..., "judge": ..., "judge_score": 4}``."""
        return self._run(self._operations.score(item))

    def score_batch(self, items: Iterable[Item]) -> BatchResult:
        """Score up to 1,000 items at once (``POST /v1/score/batch``); a bad item fails alone, in its result."""
        return self._run(self._operations.score_batch(items))

    def compare(self, body: Item) -> CompareResult:
        """Rank candidates from pairwise verdicts (``POST /v1/compare``): ``preferences`` or ``candidates``."""
        return self._run(self._operations.compare(body))

    def feedback(self, items: Iterable[Item]) -> FeedbackResult:
        """Send human labels of served verdicts (``POST /v1/feedback``): each item the ``/v1/score`` body with
        ``human``, ``item_id`` and optionally ``group`` and ``done`` (which closes the document)."""
        return self._run(self._operations.feedback(items))

    def monitor(self) -> MonitorState:
        """The feedback monitors (``GET /v1/monitor``): status, labels, e-values, alarms."""
        return self._run(self._operations.monitor())

    def reset_monitor(self, monitor_id: str, *, reason: str = "") -> dict[str, Any]:
        """Reset a monitor and clear its alarm (``POST /v1/monitor/reset``, admin key)."""
        return self._run(self._operations.reset_monitor(monitor_id, reason))

    def recalibrate_monitor(self, monitor_id: str, *, for_every_tenant: bool = False) -> dict[str, Any]:
        """Start a calibration job on a monitor's feedback (``POST /v1/monitor/recalibrate``, admin key); poll
        ``calibration_job(answer["job_id"])`` for what the new rule accepts, then activate it. ``for_every_tenant``:
        fit on another tenant's rows for every tenant (refused without it: one tenant's labels never rewrite
        another's answers by default)."""
        return self._run(self._operations.recalibrate_monitor(monitor_id, for_every_tenant))

    def submit_job(self, items: Iterable[Item], *, idempotency_key: str | None = None) -> JobAccepted:
        """Submit a durable job (``POST /v1/jobs``); a fresh Idempotency-Key is used unless one is given."""
        return self._run(self._operations.submit_job(items, idempotency_key))

    def job_status(self, job_id: str) -> JobStatus:
        """A job's status and progress."""
        return self._run(self._operations.job_status(job_id))

    def job_results(self, job_id: str, *, after: int = -1, limit: int | None = None) -> list[BatchItem]:
        """A job's result lines after index ``after``, in input order."""
        return self._run(self._operations.job_results(job_id, after, limit))

    def cancel_job(self, job_id: str) -> JobStatus:
        """Cancel a job: items not yet started are not judged."""
        return self._run(self._operations.cancel_job(job_id))

    def follow_job(self, job_id: str, *, timeout_s: float | None = None) -> JobOutcome:
        """Poll a job until it ends, collecting its result lines; ``JobTimeout`` past ``timeout_s``."""
        return self._run(self._operations.follow_job(job_id, timeout_s))

    def run_job(
        self, items: Iterable[Item], *, idempotency_key: str | None = None, timeout_s: float | None = None
    ) -> JobOutcome:
        """Submit a job and follow it to its end."""
        return self._run(self._operations.run_job(items, idempotency_key, timeout_s))

    def submit_calibration(
        self, rows: Iterable[Item], *, scale: int | None = None, name: str | None = None
    ) -> CalibrationJob:
        """Upload labelled rows to calibrate your own judge (``POST /v1/calibrations``, admin key)."""
        return self._run(self._operations.submit_calibration(rows, scale, name))

    def calibration_job(self, job_id: str) -> CalibrationJob:
        """A calibration job's progress and, when done, its cells."""
        return self._run(self._operations.calibration_job(job_id))

    def wait_for_calibration(self, job_id: str, *, timeout_s: float | None = None) -> CalibrationJob:
        """Poll a calibration job until it is done or failed."""
        return self._run(self._operations.wait_for_calibration(job_id, timeout_s))

    def activate_calibration(self, job_id: str) -> Activation:
        """Make a finished calibration live beside the other artifacts (admin key)."""
        return self._run(self._operations.activate_calibration(job_id))

    def delete_calibration(self, job_id: str) -> None:
        """Delete a calibration job and, if it was activated, its artifact (admin key)."""
        return self._run(self._operations.delete_calibration(job_id))

    def calibration_info(self) -> dict[str, Any]:
        """What calibration is loaded (``GET /v1/calibration``), as JSON."""
        return self._run(self._operations.calibration_info())

    def judges(self, *, view: str | None = None) -> dict[str, Any]:
        """The judges (``GET /v1/judges``), as JSON: in short by default; ``view="full"`` adds every calibrated
        cell's methods, levels and default method."""
        return self._run(self._operations.judges(view))

    def health(self) -> Health:
        """Liveness (``GET /healthz``)."""
        return self._run(self._operations.health())

    def readiness(self) -> Health:
        """Readiness (``GET /readyz``): ``ready`` False with the failed checks when the service answers 503."""
        return self._run(self._operations.readiness())
