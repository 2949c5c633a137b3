"""Submitting a durable job: admit it, store its items in chunks, bind its Idempotency-Key, queue its chunks.

``submit_job(upload, intake)`` is POST /v1/jobs without HTTP: the route turns the request into an ``Upload``
(the streamed body, its Content-Type, the Idempotency-Key, the caller's tenant) and the answer into JSON.

Order (each step refuses before the next one costs anything):

1. the byte budget (JOB_STORE_MAX_BYTES, 503 ``job-store-full``) for one more job and the queued items bound
   (MAX_QUEUED_ITEMS, 429) for one more item;
2. the body streamed into the job's input chunks (``service.jobs.intake``: items and bytes per chunk, 413 for an
   item past MAX_JOB_LINE_BYTES, a JSON ``{"items": [...]}`` body bounded by MAX_BODY_BYTES), with its SHA-256;
3. the Idempotency-Key (per tenant, ``service.jobs.tenancy``): bound to an earlier job, the earlier job is the
   answer (same body) or 409 (another body), and the stored input is discarded;
4. admission for the job's real size (queued items, then stored bytes plus JOB_RESULT_ITEM_BYTES per item), the
   job record (binding the key atomically: a concurrent request may win it, step 3 again), its chunks queued.

A failure at any step discards the stored input; a Redis that does not answer is 503 with Retry-After. The
``cj_jobs_submitted_total`` counter records accepted, replayed and refused submissions.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator

import msgspec
from redis.exceptions import RedisError

from service.config.jobs import JobSettings
from service.errors import IdempotencyConflictError, JobTooLargeError, store_unavailable
from service.jobs.intake import BodyDigest, ChunkLimits, json_items_chunks, media_kind, ndjson_chunks
from service.jobs.job_record import JobRecord
from service.jobs.metrics import JobMetrics
from service.jobs.queue import JobQueue
from service.judging.admission import Admission
from service.observability.logging import EventLogger

__all__ = ["JobIntake", "Submitted", "Upload", "submit_job"]


class Upload(msgspec.Struct, frozen=True, kw_only=True):
    """One submission as received: the body (streamed), its Content-Type, Idempotency-Key and tenant."""

    body: AsyncIterator[bytes]
    content_type: str | None
    idempotency_key: str | None
    tenant: str


class JobIntake(msgspec.Struct, frozen=True, kw_only=True):
    """What submitting needs from the app: the queue, its bounds and counters, the JSON body limit, the logger."""

    jobs: JobQueue
    settings: JobSettings
    admission: Admission
    metrics: JobMetrics
    max_json_body_bytes: int  # MAX_BODY_BYTES: a JSON {"items": [...]} body is parsed whole
    logger: EventLogger


class Submitted(msgspec.Struct, frozen=True, kw_only=True):
    """The job that answers a submission: a new one, or the earlier job of the same Idempotency-Key (replayed)."""

    record: JobRecord
    replayed: bool = False


class _StoredBody:
    """What ``_store_body`` wrote: the chunks' first item indices, the items, the input bytes, the digest."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.n_items = 0
        self.n_bytes = 0
        self.digest = ""

    async def put(self, jobs: JobQueue, job_id: str, lines: list[bytes]) -> None:
        """Store one chunk of item lines as the job's next input chunk."""
        self.n_bytes += await jobs.store.put_chunk(job_id, len(self.starts), lines)
        self.starts.append(self.n_items)
        self.n_items += len(lines)


async def submit_job(upload: Upload, intake: JobIntake) -> Submitted:
    """Store, admit and queue one job, or answer the earlier job of its Idempotency-Key (module docstring)."""
    job_id = uuid.uuid4().hex
    try:
        submitted = await _admit_and_store(upload, intake, job_id)
    except (RedisError, OSError) as error:
        intake.metrics.submitted.inc("refused")
        raise store_unavailable(error, intake.settings.retry_after_s) from error
    except Exception:
        intake.metrics.submitted.inc("refused")
        raise
    if submitted.replayed:
        intake.metrics.submitted.inc("replayed")
    else:
        intake.metrics.submitted.inc("accepted")
        record = submitted.record
        intake.logger.info("job.submitted", job_id=job_id, n_items=record.n_items, n_chunks=record.n_chunks)
    return submitted


async def _admit_and_store(upload: Upload, intake: JobIntake, job_id: str) -> Submitted:
    """Steps 1 to 4 of the module docstring; the stored input is discarded unless a new job was queued."""
    jobs = intake.jobs
    # The byte count first: reading it forgets expired jobs, also from the waiting items counted next.
    await _check_store_bytes(intake, 1)  # a full budget refuses before the body is stored
    queued = await jobs.store.queued_items()
    intake.metrics.queued_items.set(queued)
    intake.admission.check_queued(queued, 1)
    try:
        body = await _store_body(upload, intake, job_id)
        key = upload.idempotency_key
        earlier = await jobs.store.idempotency_binding(key, upload.tenant) if key else None  # replays skip admission
        if earlier is None:
            created = await _create(upload, intake, job_id, body)
            if isinstance(created, JobRecord):
                await jobs.enqueue_chunks(job_id, len(body.starts))
                return Submitted(record=created)
            earlier = created  # another request won the key
        await jobs.store.discard_input(job_id)
        return await _replay(intake, key or "", earlier, body.digest)
    except BaseException:
        await jobs.store.discard_input(job_id)
        raise


async def _create(upload: Upload, intake: JobIntake, job_id: str, body: _StoredBody) -> JobRecord | tuple[str, str]:
    """Admit the job at its real size and write its record; the earlier (job id, digest) when its key was taken."""
    settings = intake.settings
    intake.admission.check_queued(await intake.jobs.store.queued_items(), body.n_items)
    reserved = body.n_bytes + body.n_items * settings.result_item_bytes
    await _check_store_bytes(intake, reserved)
    return await intake.jobs.store.create(
        job_id, n_items=body.n_items, chunk_size=settings.chunk_size, digest=body.digest,
        idempotency_key=upload.idempotency_key, tenant=upload.tenant, starts=body.starts, reserved_bytes=reserved,
    )  # fmt: skip


async def _replay(intake: JobIntake, key: str, earlier: tuple[str, str], digest: str) -> Submitted:
    """The earlier job of an Idempotency-Key already bound, or 409 when it was bound for another body."""
    earlier_job, earlier_digest = earlier
    if earlier_digest != digest:
        raise IdempotencyConflictError(
            f"Idempotency-Key {key[:100]!r} was used for job {earlier_job} with another body; use a new key for a "
            "new job"
        )
    return Submitted(record=await intake.jobs.store.get(earlier_job), replayed=True)


async def _store_body(upload: Upload, intake: JobIntake, job_id: str) -> _StoredBody:
    """Stream the body into the job's input chunks (cut by items and bytes, ``service.jobs.intake``)."""
    settings = intake.settings
    limits = ChunkLimits(
        chunk_size=settings.chunk_size, chunk_bytes=settings.chunk_bytes, max_items=settings.max_job_items,
        max_bytes=settings.max_job_body_bytes, max_line_bytes=settings.max_job_line_bytes,
    )  # fmt: skip
    digest = BodyDigest()
    stored = _StoredBody()
    if media_kind(upload.content_type) == "ndjson":
        async for lines in ndjson_chunks(upload.body, digest, limits):
            await stored.put(intake.jobs, job_id, lines)
    else:
        body = await _read_json_body(upload.body, intake.max_json_body_bytes)
        digest.update(body)
        for lines in json_items_chunks(body, limits):
            await stored.put(intake.jobs, job_id, lines)
    stored.digest = digest.hexdigest()
    return stored


async def _read_json_body(pieces: AsyncIterator[bytes], limit: int) -> bytes:
    """The whole JSON body, refused (413) past ``limit`` bytes."""
    body = bytearray()
    async for piece in pieces:
        body += piece
        if len(body) > limit:
            raise JobTooLargeError(
                f'a JSON {{"items": [...]}} body is limited to MAX_BODY_BYTES={limit}; send larger jobs as '
                "JSON Lines (application/x-ndjson), which is streamed"
            )
    return bytes(body)


async def _check_store_bytes(intake: JobIntake, n_new: int) -> None:
    """Admission's byte budget (JOB_STORE_MAX_BYTES) for a job of about ``n_new`` bytes."""
    stored = await intake.jobs.store.stored_bytes()
    intake.metrics.store_bytes.set(stored.total)
    expires_in = None if stored.earliest_expiry is None else stored.earliest_expiry - time.time()
    intake.admission.check_store_bytes(
        stored.total, n_new, max_bytes=intake.settings.max_store_bytes, earliest_expiry_in_s=expires_in
    )
