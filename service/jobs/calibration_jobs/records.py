"""Calibration jobs (POST /v1/calibrations) on the job queue: their records in Redis and the worker's SAQ task.

With Redis configured a calibration runs on the same SAQ queue as scoring chunks: the API validates the body,
stores it and the job's record here, and queues one ``run_calibration`` task; any worker
(``python -m service.worker``) runs it with :func:`service.jobs.calibration_jobs.fitting.run_calibration`, the same code
as the in-process path, writing its progress and finally its artifact here; the API reads the record on every GET.

Keys (``p`` = ``cj:<JOB_QUEUE>:``), both expiring JOB_RESULTS_TTL_S after submission:

====================== ====== ================================================================================
key                    type   content
====================== ====== ================================================================================
``p cal:<id>``         hash   ``plan`` (msgpack: name, times, rows, cells, levels, warnings, scale), ``status``,
                              ``done``, ``total``, ``error``, ``finished_at``, ``results``, ``artifact``,
                              ``report_cards`` and ``run_warnings`` (msgpack, once done: the warnings the run
                              added to the plan's), ``activated`` (0/1, written by the API only)
``p cal:<id>:body``    string the labelled JSON Lines as submitted; removed when the job ends
====================== ====== ================================================================================

A worker writes a record only while it exists (a Lua check), so a job deleted while it runs is not brought
back. A worker lost mid-fit (kill -9) leaves the task's heartbeat to expire; SAQ's sweep re-queues it and
another worker fits the job again from its stored body (the fits are seeded: the same artifact).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from artifact.input_kinds import FitKey
from artifact.thresholds import ThresholdsArtifact
from calibration.input_kinds.fit import InputKindFit
from calibration.report_card.card import ReportCard

__all__ = ["CALIBRATION_TASK", "CalibrationPlan", "CalibrationRecords", "beating"]

CALIBRATION_TASK = "run_calibration"

# KEYS: the record. ARGV: field, value, ... Writes only while the record exists.
_UPDATE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1
"""


class CalibrationPlan(msgspec.Struct, frozen=True, kw_only=True):
    """What submission decided (never changes afterwards)."""

    id: str
    name: str
    created_at: str
    n_rows: int
    cells_planned: list[tuple[str, str, str, int, int]]
    levels: tuple[float, ...]
    warnings: list[str]
    scale: int


_RESULTS = msgspec.msgpack.Decoder(list[tuple[tuple[str, str, str, str], int, InputKindFit]])
_ARTIFACT = msgspec.msgpack.Decoder(ThresholdsArtifact)
_PLAN = msgspec.msgpack.Decoder(CalibrationPlan)
_CARDS = msgspec.msgpack.Decoder(list[ReportCard])
_WARNINGS = msgspec.msgpack.Decoder(list[str])


class CalibrationRecords:
    """Calibration job records on one Redis client (bytes replies) under one queue's key prefix."""

    def __init__(self, redis: Any, prefix: str, *, ttl_s: int) -> None:
        self.redis = redis
        self.prefix = prefix
        self.ttl_s = ttl_s
        self._update = redis.register_script(_UPDATE)

    def _key(self, job_id: str) -> str:
        return f"{self.prefix}cal:{job_id}"

    async def put(self, plan: CalibrationPlan, body: bytes) -> None:
        """Store a new job (status queued) and its body."""
        key = self._key(plan.id)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping={"plan": msgspec.msgpack.encode(plan), "status": "queued", "done": 0, "total": 0,
                                    "activated": 0})  # fmt: skip
            pipe.expire(key, self.ttl_s)
            pipe.set(key + ":body", body, ex=self.ttl_s)
            await pipe.execute()

    async def body(self, job_id: str) -> bytes | None:
        """The submitted labelled body, or None once the job ended (or expired)."""
        value: bytes | None = await self.redis.get(self._key(job_id) + ":body")
        return value

    async def load(self, job_id: str) -> tuple[CalibrationPlan, dict[str, Any]] | None:
        """(plan, the state fields decoded) or None when there is no such job."""
        raw = await self.redis.hgetall(self._key(job_id))
        if not raw or b"plan" not in raw:
            return None

        def text(name: str) -> str | None:
            value = raw.get(name.encode())
            return None if value is None or value == b"" else value.decode()

        state: dict[str, Any] = {
            "status": text("status") or "queued",
            "done": int(text("done") or 0),
            "total": int(text("total") or 0),
            "error": text("error"),
            "finished_at": text("finished_at"),
            "activated": text("activated") == "1",
            "results": _RESULTS.decode(raw[b"results"]) if b"results" in raw else [],
            "artifact": _ARTIFACT.decode(raw[b"artifact"]) if b"artifact" in raw else None,
            "report_cards": _CARDS.decode(raw[b"report_cards"]) if b"report_cards" in raw else [],
            "run_warnings": _WARNINGS.decode(raw[b"run_warnings"]) if b"run_warnings" in raw else [],
        }
        return _PLAN.decode(raw[b"plan"]), state

    async def save(
        self,
        job_id: str,
        *,
        status: str,
        done: int,
        total: int,
        error: str | None = None,
        finished_at: str | None = None,
        results: list[tuple[FitKey, int, InputKindFit]] | None = None,
        artifact: ThresholdsArtifact | None = None,
        report_cards: list[ReportCard] | None = None,
        warnings: list[str] | None = None,
    ) -> bool:
        """Write a worker's progress (and, at the end, results, artifact, report cards and the warnings the run
        added); False when the job is gone."""
        fields: list[Any] = ["status", status, "done", done, "total", total, "error", error or "",
                             "finished_at", finished_at or ""]  # fmt: skip
        if results is not None:
            fields += ["results", msgspec.msgpack.encode(results)]
        if artifact is not None:
            fields += ["artifact", msgspec.msgpack.encode(artifact)]
        if report_cards is not None:
            fields += ["report_cards", msgspec.msgpack.encode(report_cards)]
        if warnings is not None:
            fields += ["run_warnings", msgspec.msgpack.encode(warnings)]
        written = await self._update(keys=[self._key(job_id)], args=fields)
        if status in ("done", "failed"):
            await self.redis.delete(self._key(job_id) + ":body")
        return int(written) == 1

    async def mark_activated(self, job_id: str) -> bool:
        """Record that the API activated the job's artifact; False when the job is gone (deleted meanwhile)."""
        return int(await self._update(keys=[self._key(job_id)], args=["activated", 1])) == 1

    async def delete(self, job_id: str) -> bool:
        """Remove the job's record and body; False when there was none."""
        return int(await self.redis.delete(self._key(job_id), self._key(job_id) + ":body")) > 0


async def beating(work: Awaitable[Any], heartbeat: Callable[[], Awaitable[Any]] | None, every_s: float) -> Any:
    """Await ``work`` while calling ``heartbeat()`` every ``every_s`` seconds (a failed beat is tried again at
    the next one: SAQ's sweep, not this loop, decides when a task is lost)."""
    task = asyncio.ensure_future(work)
    if heartbeat is None:
        return await task
    try:
        while True:
            done, _ = await asyncio.wait([task], timeout=every_s)
            if done:
                return task.result()
            try:
                await heartbeat()
            except Exception:  # noqa: BLE001, S110 - see the docstring
                pass
    except asyncio.CancelledError:
        task.cancel()
        raise
