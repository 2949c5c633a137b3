"""One chunk of a job, scored: each input line -> one result line, by the same ``score_item`` as /v1/score.

``run_chunk`` is what the worker's SAQ task calls; it needs no SAQ object (the heartbeat is a callback), so
tests can run chunks in-process. Rules, in order:

1. ``store.start_chunk`` marks the job running. A chunk whose results exist already (a re-run after its
   worker was lost after writing) or whose job is cancelled, finished or gone is skipped: nothing is judged.
2. Attempt > JOB_CHUNK_ATTEMPTS (every earlier worker died on it): each item gets a ``chunk-abandoned``
   error, no judge call, so a poison chunk ends instead of killing workers forever.
3. Otherwise each line is decoded and converted to ``ScoreRequest`` exactly as the batch endpoint does (its
   ``item_id``, a string, is echoed in the line and in the result as /v1/score does), and ``score_item`` is
   called: inline for the caller's own verdicts, concurrently within WORKER_CONCURRENCY slots for live items. Any
   failure becomes that item's problem (as in /v1/score/batch). A line not started when the job is cancelled
   gets a ``job-cancelled`` error.
4. The result lines are written at once with ``store.finish_chunk`` (atomic, first writer wins).

While the chunk runs a side task calls ``heartbeat()`` every JOB_HEARTBEAT_S / 3 seconds and checks once a
second whether the job was cancelled.

Traces (``tracing``, no-op unless OTEL_EXPORTER_OTLP_ENDPOINT is set): one span per chunk, its outcome and counts
on it; the judge calls' spans (``service.judging.pool``) are its children, and each verdict scored adds the
``gen_ai.evaluation.result`` event to it, as /v1/score does to its request span.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import msgspec

from service.config.jobs import JobSettings
from service.errors import BadRequestError, ChunkAbandonedError, JobCancelledError, problem_from_exception
from service.jobs.metrics import JobMetrics
from service.jobs.store import JobStore
from service.observability.logging import EventLogger
from service.observability.tracing import Tracing, trace_evaluation
from service.scoring.context import ScoringContext
from service.scoring.monitor_alarm import AlarmedCell, AlarmNote
from service.scoring.score import score_item
from service.wire.decoding import decode_wire_json
from service.wire.jobs import JobItemResult
from service.wire.score import ScoreRequest

__all__ = ["ChunkRunner", "item_id_of"]

_ENCODER = msgspec.json.Encoder()
_LINE_DECODER = msgspec.json.Decoder(ScoreRequest)


def item_id_of(raw: object) -> str | None:
    """The ``item_id`` of a decoded line when it is a string (the batch endpoint's rule), else None."""
    if isinstance(raw, dict):
        value = raw.get("item_id")
        if isinstance(value, str):
            return value
    return None


@dataclass(frozen=True, kw_only=True)
class ChunkRunner:
    """What a worker process needs to run chunks: the store, a scoring context per chunk, its slots, metrics,
    and the traces (none unless configured)."""

    store: JobStore
    settings: JobSettings
    context: Callable[[], ScoringContext]
    slots: asyncio.Semaphore
    metrics: JobMetrics
    logger: EventLogger
    tracing: Tracing = field(default_factory=Tracing)
    # the feedback monitors' alarms that apply to a job's tenant (service.monitoring.board), None: no monitors
    alarms: Callable[[str], Awaitable[dict[AlarmedCell, AlarmNote]]] | None = None

    async def run_chunk(
        self, job_id: str, chunk: int, *, attempt: int = 1, heartbeat: Callable[[], Awaitable[None]] | None = None
    ) -> str:
        """Run one chunk (module rules) inside its span; returns the outcome: written, duplicate, abandoned, or why
        skipped."""
        with self.tracing.job_chunk(job_id, chunk, attempt) as span:
            outcome, n_items, n_failed = await self._run_chunk(job_id, chunk, attempt, heartbeat)
            span.finish(outcome, n_items=n_items, n_failed=n_failed)
        return outcome

    async def _run_chunk(
        self, job_id: str, chunk: int, attempt: int, heartbeat: Callable[[], Awaitable[None]] | None
    ) -> tuple[str, int, int]:
        """(outcome, items, failed items) of one chunk (module rules)."""
        status = await self.store.start_chunk(job_id, chunk)
        if status != "running":
            outcome = "duplicate" if status == "chunk_done" else "gone" if status == "missing" else status
            return self._skipped(job_id, chunk, attempt, outcome), 0, 0
        lines = await self.store.chunk_input(job_id, chunk)
        if lines is None:
            return self._skipped(job_id, chunk, attempt, "gone"), 0, 0
        record = await self.store.get(job_id)
        first, _ = record.chunk_bounds(chunk)
        if attempt > 1:
            self.metrics.chunk_retries.inc()
        cancelled, done = asyncio.Event(), asyncio.Event()
        watcher = asyncio.create_task(self._watch(job_id, cancelled, done, heartbeat))
        try:
            if attempt > self.settings.chunk_attempts:
                results = [self._abandoned(job_id, first + offset, line, attempt) for offset, line in enumerate(lines)]
            else:
                results = await self._score_lines(job_id, first, lines, cancelled, record.tenant)
        finally:
            done.set()  # the watcher ends at its next wake-up, even if a Redis call absorbed a cancellation
            watcher.cancel()
        n_failed = sum(1 for result in results if not result.ok)
        written = await self.store.finish_chunk(
            job_id, chunk, _ENCODER.encode_lines(results)[:-1], n_failed,  # one encode call for the whole chunk
            abandoned=attempt > self.settings.chunk_attempts,
        )  # fmt: skip
        outcome = ("abandoned" if attempt > self.settings.chunk_attempts else "written") if written else "duplicate"
        self.metrics.chunks.inc(outcome)
        if written:
            self.metrics.items.add(len(results) - n_failed, "ok")
            self.metrics.items.add(n_failed, "failed")
        self.logger.info(
            "job.chunk", job_id=job_id, chunk=chunk, attempt=attempt, outcome=outcome, n_items=len(results),
            n_failed=n_failed,
        )  # fmt: skip
        return outcome, len(results), n_failed

    def _skipped(self, job_id: str, chunk: int, attempt: int, outcome: str) -> str:
        self.metrics.chunks.inc(outcome)
        if attempt > 1:
            self.metrics.chunk_retries.inc()
        self.logger.info("job.chunk", job_id=job_id, chunk=chunk, attempt=attempt, outcome=outcome, n_items=0)
        return outcome

    async def _watch(
        self,
        job_id: str,
        cancelled: asyncio.Event,
        done: asyncio.Event,
        heartbeat: Callable[[], Awaitable[None]] | None,
    ) -> None:
        beat_every = self.settings.heartbeat_s / 3
        last_beat = time.monotonic()
        while not done.is_set():
            await asyncio.sleep(min(1.0, beat_every))
            if done.is_set():
                return
            try:
                if await self.store.status(job_id) == "cancelled":
                    cancelled.set()
                if heartbeat is not None and time.monotonic() - last_beat >= beat_every:
                    await heartbeat()
                    last_beat = time.monotonic()
                    self.metrics.heartbeats.inc()
            except Exception as error:  # noqa: BLE001 - a failed beat is retried next round; the sweep judges
                self.logger.warning("job.heartbeat_failed", job_id=job_id, error=type(error).__name__)

    def _abandoned(self, job_id: str, index: int, line: bytes, attempt: int) -> JobItemResult:
        try:
            item_id = item_id_of(msgspec.json.decode(line))
        except msgspec.DecodeError:
            item_id = None
        error = ChunkAbandonedError(
            f"the workers running this item's chunk were lost {attempt - 1} times (JOB_CHUNK_ATTEMPTS="
            f"{self.settings.chunk_attempts}); it was not judged again"
        )
        problem, _ = problem_from_exception(error, instance=f"/v1/jobs/{job_id}#/items/{index}")
        return JobItemResult(index=index, item_id=item_id, ok=False, error=problem)

    async def _score_lines(
        self, job_id: str, first: int, lines: list[bytes], cancelled: asyncio.Event, tenant: str = ""
    ) -> list[JobItemResult]:
        """Every line's result, in order: the caller's own verdicts inline (they never wait on anything, so a
        task each would only add overhead), live items concurrently within the worker's slots."""
        context = self.context()
        if self.alarms is not None:  # an alarmed cell escalates in jobs too (service.scoring.monitor_alarm)
            context = msgspec.structs.replace(context, alarms=await self.alarms(tenant))
        results: list[JobItemResult | None] = [None] * len(lines)
        live: list[tuple[int, str | None, ScoreRequest]] = []
        for offset, line in enumerate(lines):
            item_id, item = self._decode(line, first + offset)
            if isinstance(item, ScoreRequest) and item.judge_score is None and item.judge_logprobs is None:
                live.append((offset, item_id, item))
            else:
                results[offset] = await self._score(context, job_id, first + offset, item_id, item, cancelled)

        async def in_slot(offset: int, item_id: str | None, item: ScoreRequest) -> None:
            async with self.slots:
                results[offset] = await self._score(context, job_id, first + offset, item_id, item, cancelled)

        await asyncio.gather(*(in_slot(offset, item_id, item) for offset, item_id, item in live))
        return [result for result in results if result is not None]

    @staticmethod
    def _decode(line: bytes, index: int) -> tuple[str | None, ScoreRequest | Exception]:
        """(item_id, the item as ScoreRequest) or (item_id, the exception that makes it this item's error)."""
        try:
            item = decode_wire_json(_LINE_DECODER, line)  # /v1/score's decoding; item_id is a ScoreRequest field
            return item.item_id, item
        except msgspec.ValidationError as error:  # a bad item fails alone, still echoing a string item_id
            try:
                return item_id_of(msgspec.json.decode(line)), error
            except (msgspec.DecodeError, RecursionError):
                return None, error
        except msgspec.DecodeError as error:
            return None, BadRequestError(f"item {index} is not JSON: {error}")
        except RecursionError:
            return None, BadRequestError(f"item {index} is nested too deeply")

    async def _score(
        self,
        context: ScoringContext,
        job_id: str,
        index: int,
        item_id: str | None,
        item: ScoreRequest | Exception,
        cancelled: asyncio.Event,
    ) -> JobItemResult:
        try:
            if cancelled.is_set():
                raise JobCancelledError("the job was cancelled before this item was started; it was not judged")
            if isinstance(item, Exception):
                raise item
            result = await score_item(context, item)
            if self.tracing.enabled:
                trace_evaluation(self.tracing, result)  # on the chunk's span, as /v1/score on its request's
            if item_id is not None:  # as /v1/score answers: a copy, the memoised answers stay shared
                result = msgspec.structs.replace(result, item_id=item_id)
        except Exception as error:  # every failure stays with its item, shaped as in /v1/score/batch
            problem, _ = problem_from_exception(error, instance=f"/v1/jobs/{job_id}#/items/{index}")
            context.metrics.count_problem(problem.status, problem.type)
            if problem.type.endswith("internal-error"):
                self.logger.error("job.item_failed", job_id=job_id, index=index, exc_info=error)
            return JobItemResult(index=index, item_id=item_id, ok=False, error=problem)
        return JobItemResult(index=index, item_id=item_id, ok=True, result=result)
