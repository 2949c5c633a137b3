"""The API's operations as plans (see ``transport``): each builds its request, sends it with retries, reads the
answer into a typed result or raises ``ApiError``. Both clients run these same plans."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from .errors import JobTimeout, api_error
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
from .retry import RetryPolicy, parse_retry_after, send
from .transport import HttpRequest, Plan, Sleep

__all__ = ["PollPolicy", "Operations"]

Item = Mapping[str, Any]


@dataclass(frozen=True)
class PollPolicy:
    """How a followed job is polled: the first wait, the factor it grows by, and the longest wait."""

    initial_s: float = 0.5
    factor: float = 1.5
    max_s: float = 5.0
    page_size: int = 1000  # result lines read per request


def _ndjson(rows: Iterable[Item]) -> bytes:
    return b"".join(json.dumps(row, separators=(",", ":")).encode() + b"\n" for row in rows)


def _json(response: httpx.Response, ok: tuple[int, ...] = (200,)) -> Any:
    if response.status_code not in ok:
        raise api_error(response, parse_retry_after(response.headers.get("retry-after")))
    return response.json()


@dataclass(frozen=True)
class Operations:
    """The plans of every API operation under one retry policy and poll policy (no connection state)."""

    retry: RetryPolicy = RetryPolicy()
    poll: PollPolicy = PollPolicy()
    clock: Callable[[], float] = time.monotonic

    def _call(self, request: HttpRequest, ok: tuple[int, ...] = (200,)) -> Plan[Any]:
        response = yield from send(request, self.retry, self.clock)
        return _json(response, ok)

    # scoring -----------------------------------------------------------------------------------------------------
    def score(self, item: Item) -> Plan[ScoreResult]:
        """``POST /v1/score``."""
        return ScoreResult.from_json((yield from self._call(HttpRequest("POST", "/v1/score", json=dict(item)))))

    def score_batch(self, items: Iterable[Item]) -> Plan[BatchResult]:
        """``POST /v1/score/batch`` (up to 1,000 items; each fails alone)."""
        body = {"items": [dict(i) for i in items]}
        return BatchResult.from_json((yield from self._call(HttpRequest("POST", "/v1/score/batch", json=body))))

    def compare(self, body: Item) -> Plan[CompareResult]:
        """``POST /v1/compare``."""
        return CompareResult.from_json((yield from self._call(HttpRequest("POST", "/v1/compare", json=dict(body)))))

    # feedback monitors -------------------------------------------------------------------------------------------
    def feedback(self, items: Iterable[Item]) -> Plan[FeedbackResult]:
        """``POST /v1/feedback``: human labels of served verdicts (resending is safe: a repeated item_id is a
        duplicate, so the request is retried like an idempotent one)."""
        request = HttpRequest("POST", "/v1/feedback", json={"items": [dict(i) for i in items]}, idempotent=True)
        return FeedbackResult.from_json((yield from self._call(request)))

    def monitor(self) -> Plan[MonitorState]:
        """``GET /v1/monitor``."""
        return MonitorState.from_json((yield from self._call(HttpRequest("GET", "/v1/monitor", idempotent=True))))

    def reset_monitor(self, monitor_id: str, reason: str = "") -> Plan[dict[str, Any]]:
        """``POST /v1/monitor/reset`` (admin key): clear a monitor and its alarm."""
        body = {"monitor_id": monitor_id, "reason": reason}
        return (yield from self._call(HttpRequest("POST", "/v1/monitor/reset", json=body, idempotent=True)))

    def recalibrate_monitor(self, monitor_id: str, for_every_tenant: bool = False) -> Plan[dict[str, Any]]:
        """``POST /v1/monitor/recalibrate`` (admin key): a calibration job on the monitor's feedback;
        ``for_every_tenant``: a tenant's rows may change every tenant's answers (the service refuses it otherwise)."""
        body = {"monitor_id": monitor_id, "for_every_tenant": for_every_tenant}
        request = HttpRequest("POST", "/v1/monitor/recalibrate", json=body)
        return (yield from self._call(request, (200, 202)))

    # durable jobs ------------------------------------------------------------------------------------------------
    def submit_job(self, items: Iterable[Item], idempotency_key: str | None = None) -> Plan[JobAccepted]:
        """``POST /v1/jobs`` as JSON Lines, under an Idempotency-Key (a fresh one unless given): safe to resend."""
        key = idempotency_key or uuid.uuid4().hex
        request = HttpRequest(
            "POST",
            "/v1/jobs",
            content=_ndjson(items),
            idempotent=True,
            headers={"content-type": "application/x-ndjson", "idempotency-key": key},
        )
        response = yield from send(request, self.retry, self.clock)
        data = _json(response, (200, 202))
        return JobAccepted.from_json(data, replayed=response.headers.get("idempotent-replayed") == "true")

    def job_status(self, job_id: str) -> Plan[JobStatus]:
        """``GET /v1/jobs/{id}``."""
        return JobStatus.from_json((yield from self._call(HttpRequest("GET", f"/v1/jobs/{job_id}", idempotent=True))))

    def job_results(self, job_id: str, after: int = -1, limit: int | None = None) -> Plan[list[BatchItem]]:
        """``GET /v1/jobs/{id}/results``: the lines after index ``after`` (at most ``limit``)."""
        params: dict[str, Any] = {"after": after} | ({"limit": limit} if limit is not None else {})
        request = HttpRequest("GET", f"/v1/jobs/{job_id}/results", params=params, idempotent=True)
        response = yield from send(request, self.retry, self.clock)
        if response.status_code != 200:
            raise api_error(response, parse_retry_after(response.headers.get("retry-after")))
        return [BatchItem.from_json(json.loads(line)) for line in response.content.splitlines() if line.strip()]

    def cancel_job(self, job_id: str) -> Plan[JobStatus]:
        """``DELETE /v1/jobs/{id}``."""
        request = HttpRequest("DELETE", f"/v1/jobs/{job_id}", idempotent=True)
        return JobStatus.from_json((yield from self._call(request)))

    def follow_job(self, job_id: str, timeout_s: float | None = None) -> Plan[JobOutcome]:
        """Poll a job with growing waits, reading new result lines as they arrive, until it finishes."""
        deadline = None if timeout_s is None else self.clock() + timeout_s
        lines: list[BatchItem] = []
        wait = self.poll.initial_s
        while True:
            status = yield from self.job_status(job_id)
            if status.finished or status.n_done > len(lines):
                while True:  # page on from the last index received (the cursor) until a short page
                    cursor = lines[-1].index if lines else -1
                    page = yield from self.job_results(job_id, after=cursor, limit=self.poll.page_size)
                    lines.extend(page)
                    if len(page) < self.poll.page_size:
                        break
            if status.finished:
                return JobOutcome(status=status, results=tuple(lines))
            if deadline is not None and self.clock() + wait > deadline:
                raise JobTimeout(f"job {job_id} still {status.status} after {timeout_s} s", status)
            yield Sleep(wait)
            wait = min(wait * self.poll.factor, self.poll.max_s)

    def run_job(
        self, items: Iterable[Item], idempotency_key: str | None = None, timeout_s: float | None = None
    ) -> Plan[JobOutcome]:
        """Submit a job and follow it to its end."""
        accepted = yield from self.submit_job(items, idempotency_key)
        return (yield from self.follow_job(accepted.job_id, timeout_s))

    # calibrations ------------------------------------------------------------------------------------------------
    def submit_calibration(
        self, rows: Iterable[Item], scale: int | None = None, name: str | None = None
    ) -> Plan[CalibrationJob]:
        """``POST /v1/calibrations`` (admin key): labelled rows sent as JSON Lines."""
        params = {k: v for k, v in (("scale", scale), ("name", name)) if v is not None}
        request = HttpRequest(
            "POST",
            "/v1/calibrations",
            params=params,
            content=_ndjson(rows),
            headers={"content-type": "application/x-ndjson"},
        )
        return CalibrationJob.from_json((yield from self._call(request, (200, 202))))

    def calibration_job(self, job_id: str) -> Plan[CalibrationJob]:
        """``GET /v1/calibrations/{id}``."""
        request = HttpRequest("GET", f"/v1/calibrations/{job_id}", idempotent=True)
        return CalibrationJob.from_json((yield from self._call(request)))

    def wait_for_calibration(self, job_id: str, timeout_s: float | None = None) -> Plan[CalibrationJob]:
        """Poll a calibration job with growing waits until it is done or failed."""
        deadline = None if timeout_s is None else self.clock() + timeout_s
        wait = self.poll.initial_s
        while True:
            job = yield from self.calibration_job(job_id)
            if job.finished:
                return job
            if deadline is not None and self.clock() + wait > deadline:
                raise JobTimeout(f"calibration {job_id} still {job.status} after {timeout_s} s", job)
            yield Sleep(wait)
            wait = min(wait * self.poll.factor, self.poll.max_s)

    def activate_calibration(self, job_id: str) -> Plan[Activation]:
        """``POST /v1/calibrations/{id}/activate`` (admin key)."""
        request = HttpRequest("POST", f"/v1/calibrations/{job_id}/activate")
        return Activation.from_json((yield from self._call(request)))

    def delete_calibration(self, job_id: str) -> Plan[None]:
        """``DELETE /v1/calibrations/{id}`` (admin key)."""
        request = HttpRequest("DELETE", f"/v1/calibrations/{job_id}", idempotent=True)
        response = yield from send(request, self.retry, self.clock)
        if response.status_code not in (200, 204):
            raise api_error(response, parse_retry_after(response.headers.get("retry-after")))

    def calibration_info(self) -> Plan[dict[str, Any]]:
        """``GET /v1/calibration``: the loaded artifacts and entries, as JSON."""
        return (yield from self._call(HttpRequest("GET", "/v1/calibration", idempotent=True)))

    def judges(self, view: str | None = None) -> Plan[dict[str, Any]]:
        """``GET /v1/judges``: the judges, as JSON; ``view`` "full" for every cell's methods and levels (the
        server's default, "summary", when None)."""
        params = {"view": view} if view is not None else {}
        return (yield from self._call(HttpRequest("GET", "/v1/judges", params=params, idempotent=True)))

    # health ------------------------------------------------------------------------------------------------------
    def health(self) -> Plan[Health]:
        """``GET /healthz`` (liveness)."""
        return Health.from_json((yield from self._call(HttpRequest("GET", "/healthz", idempotent=True))))

    def readiness(self) -> Plan[Health]:
        """``GET /readyz``: ready with its checks, or not ready (503) with the checks that failed; never retried."""
        request = HttpRequest("GET", "/readyz", idempotent=True, answers=(503,))
        response = yield from send(request, self.retry, self.clock)
        data = _json(response, (200, 503))
        return Health.from_json(data, ready=response.status_code == 200)
