"""The job records in Redis: one job's metadata, its input chunks and its result chunks, changed by Lua scripts.

The queue library (SAQ, ``service.jobs.queue``) moves chunk *tasks* between workers; this module holds the
*data* those tasks read and write, so that a chunk's results are written once, atomically, whatever the queue
does (a chunk re-run after its worker was lost finds its results already there and writes nothing). The Lua
scripts are in ``service.jobs.store_scripts``, the record type in ``service.jobs.job_record``.

Keys (``p`` = ``cj:<JOB_QUEUE>:``):

===================== ====== ===========================================================================
key                   type   content
===================== ====== ===========================================================================
``p job:<id>``        hash   n_items, n_chunks, chunk_size, status, created_at, started_at, finished_at,
                             n_done, n_failed, chunks_done, chunks_abandoned, digest, tenant, out_bytes,
                             starts (only when chunks differ in length: msgpack list of first indices)
``p job:<id>:in``     hash   chunk number -> that chunk's input lines (JSON Lines), removed once written
``p job:<id>:out``    hash   chunk number -> that chunk's result lines (JSON Lines, one per item, in order)
``p open``            hash   job id -> items not yet done, for every queued or running job (admission)
``p idem:<sha256>``   string ``<job id> <body sha256>`` for an Idempotency-Key (hashed with the tenant)
``p bytes``           hash   job id -> bytes the job holds or has reserved in Redis (admission's budget)
``p expiry``          zset   job id -> Unix time its keys expire (entries of ``bytes``/``open`` pruned then)
===================== ====== ===========================================================================

Chunks are cut by items and by bytes (``service.jobs.intake``), so they may differ in length; ``starts`` then
maps chunk numbers to item indices (absent: chunk ``c`` starts at ``c * chunk_size``). An input line never holds
a newline (the store refuses one), so a chunk splits back into exactly the lines it was given.

Tenancy: ``tenant`` is a one-way digest of the API key that created the job (empty without API_KEYS); reads,
results and cancel given a tenant see only that tenant's jobs (others get the same 404 as a missing job), and
Idempotency-Keys are bound per tenant. ``tenant=None`` (the admin key, workers) sees every job.

Byte accounting: creating a job reserves its input bytes + n_items x JOB_RESULT_ITEM_BYTES in ``bytes``; each
chunk written replaces its share of that estimate with the real result size (and frees its input); a finished
or cancelled job holds exactly its results' bytes until it expires.

Status rule: ``queued`` until a worker starts a chunk, then ``running``; when every chunk has its results,
``succeeded`` if no item's line is an error, else ``failed`` (some items failed: a judge that did not answer, an
item refused, a chunk abandoned after JOB_CHUNK_ATTEMPTS lost workers, whose items carry ``chunk-abandoned``).
A failed job's results are complete and readable like a succeeded one's; ``n_failed`` says how many are errors.
``cancelled`` by DELETE. ``n_done`` counts items with a result line (errors
included), ``n_failed`` those whose line is an error. A finished job's keys expire after JOB_RESULTS_TTL_S;
unfinished ones after the same time counted from submission (a job nobody works on is not kept forever).
"""

from __future__ import annotations

import bisect
import hashlib
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import msgspec

from service.errors import JobNotFoundError
from service.jobs import store_scripts
from service.jobs.job_record import ACTIVE_STATUSES, JobRecord, StoredBytes, record_from_hash

__all__ = ["JobStore", "key_prefix"]


def key_prefix(queue: str) -> str:
    """The prefix of every key of the jobs on queue ``queue``."""
    return f"cj:{queue}:"


class JobStore:
    """Job records on one Redis client (``redis.asyncio.Redis``, bytes replies) under one queue's prefix."""

    def __init__(
        self, redis: Any, queue: str, *, results_ttl_s: int, result_item_bytes: int = 1_000, clock: Any = time.time
    ) -> None:
        self.redis = redis
        self.prefix = key_prefix(queue)
        self.results_ttl_s = results_ttl_s
        self.result_item_bytes = result_item_bytes  # the per-item result estimate reserved at creation
        self._clock = clock
        self._start = redis.register_script(store_scripts.START_CHUNK)
        self._finish = redis.register_script(store_scripts.FINISH_CHUNK)
        self._cancel = redis.register_script(store_scripts.CANCEL)
        self._create = redis.register_script(store_scripts.CREATE)
        self._stored_bytes = redis.register_script(store_scripts.STORED_BYTES)

    def _meta(self, job_id: str) -> str:
        return f"{self.prefix}job:{job_id}"

    def _in(self, job_id: str) -> str:
        return f"{self.prefix}job:{job_id}:in"

    def _out(self, job_id: str) -> str:
        return f"{self.prefix}job:{job_id}:out"

    @property
    def _open(self) -> str:
        return f"{self.prefix}open"

    @property
    def _bytes(self) -> str:
        return f"{self.prefix}bytes"

    @property
    def _expiry(self) -> str:
        return f"{self.prefix}expiry"

    # --- intake -----------------------------------------------------------------------------------------
    async def put_chunk(self, job_id: str, chunk: int, lines: Sequence[bytes]) -> int:
        """Store one chunk's input lines (the key expires with the job if it is never finished); the bytes stored.

        ``ValueError`` for a line holding a newline: lines are stored joined by newlines, so such a line would
        come back as several items (the intake re-encodes items so that this cannot happen).
        """
        if any(b"\n" in line for line in lines):
            raise ValueError("a job input line must not contain a newline")
        key = self._in(job_id)
        blob = b"\n".join(lines)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hset(key, str(chunk), blob)
            pipe.expire(key, self.results_ttl_s)
            await pipe.execute()
        return len(blob)

    async def discard_input(self, job_id: str) -> None:
        """Drop the input of a job that was not created (refused or replayed after its body was read)."""
        await self.redis.delete(self._in(job_id))

    def _idempotency(self, key: str, tenant: str) -> str:
        # The tenant is part of the name: one client's key never finds (or blocks) another client's job.
        name = hashlib.sha256(tenant.encode() + b"\x00" + key.encode()).hexdigest()
        return f"{self.prefix}idem:{name}"

    async def create(
        self,
        job_id: str,
        *,
        n_items: int,
        chunk_size: int,
        digest: str,
        idempotency_key: str | None = None,
        tenant: str = "",
        starts: Sequence[int] | None = None,
        reserved_bytes: int = 0,
    ) -> JobRecord | tuple[str, str]:
        """Write the job's metadata (status queued), count its items as open and reserve ``reserved_bytes`` of
        the byte budget; returns the record.

        ``starts``: the first item index of each chunk (None: equal chunks of ``chunk_size``); kept only when
        the chunks differ in length. ``tenant``: the creator's digest (``service.jobs.tenancy``).

        With ``idempotency_key``: bound to (job_id, digest) for this tenant in the same atomic step (one Lua
        script), unless it is bound already to a job that still exists; then nothing is created and the
        earlier ``(job id, digest)`` is returned. A binding whose job has expired is replaced.
        """
        now = self._clock()
        n_chunks = len(starts) if starts is not None else -(-n_items // chunk_size)
        regular = starts is None or list(starts) == list(range(0, n_chunks * chunk_size, chunk_size))
        fields: dict[str, Any] = {
            "status": "queued",
            "n_items": n_items,
            "n_chunks": n_chunks,
            "chunk_size": chunk_size,
            "n_done": 0,
            "n_failed": 0,
            "chunks_done": 0,
            "chunks_abandoned": 0,
            "created_at": repr(now),
            "digest": digest,
            "tenant": tenant,
            "out_bytes": 0,
        }
        if not regular:
            fields["starts"] = msgspec.msgpack.encode(list(starts or ()))
        meta = self._meta(job_id)
        idem = self._idempotency(idempotency_key, tenant) if idempotency_key else meta
        flat = [part for pair in fields.items() for part in pair]
        earlier = await self._create(
            keys=[meta, self._open, idem, self._bytes, self._expiry],
            args=[job_id, n_items, self.results_ttl_s, digest, 1 if idempotency_key else 0, f"{self.prefix}job:",
                  reserved_bytes, repr(now + self.results_ttl_s), *flat],
        )  # fmt: skip
        if earlier is not None:
            earlier_job, earlier_digest = earlier.decode().split(" ", 1)
            return earlier_job, earlier_digest
        return JobRecord(
            job_id=job_id, status="queued", n_items=n_items, n_chunks=n_chunks, chunk_size=chunk_size, n_done=0,
            n_failed=0, chunks_done=0, created_at=now, started_at=None, finished_at=None, digest=digest,
            tenant=tenant, starts=None if regular else tuple(starts or ()),
        )  # fmt: skip

    async def idempotency_binding(self, key: str, tenant: str = "") -> tuple[str, str] | None:
        """The (job id, digest) ``key`` is bound to for ``tenant`` when that job still exists, else None (a read
        only: the binding itself is made by ``create``)."""
        bound = await self.redis.get(self._idempotency(key, tenant))
        if bound is None:
            return None
        earlier_job, earlier_digest = bound.decode().split(" ", 1)
        if await self.redis.exists(self._meta(earlier_job)):
            return earlier_job, earlier_digest
        return None

    async def queued_items(self) -> int:
        """Items of queued and running jobs not yet done (the admission bound's measure)."""
        return sum(int(value) for value in await self.redis.hvals(self._open))

    async def stored_bytes(self) -> StoredBytes:
        """Bytes the unexpired jobs hold or have reserved (the byte budget's measure); forgets expired jobs."""
        total, earliest = await self._stored_bytes(
            keys=[self._bytes, self._expiry, self._open], args=[repr(self._clock())]
        )
        return StoredBytes(int(float(total)), None if earliest is None else float(earliest))

    # --- reads ------------------------------------------------------------------------------------------
    async def get(self, job_id: str, tenant: str | None = None) -> JobRecord:
        """The job's record; ``JobNotFoundError`` when it does not exist (or expired), or when ``tenant`` is
        given and the job is another tenant's (the same answer, so ids of other tenants' jobs tell nothing)."""
        raw = await self.redis.hgetall(self._meta(job_id))
        if not raw or (tenant is not None and raw.get(b"tenant", b"").decode() != tenant):
            raise JobNotFoundError(f"no job {job_id!r}: it was never created, or its results expired")
        return record_from_hash(job_id, raw)

    async def result_lines(
        self, record: JobRecord, *, after: int, limit: int | None, window: int = 8
    ) -> AsyncIterator[bytes]:
        """Result lines of items ``after+1, after+2, ...`` in input order, at most ``limit``, in blocks of whole
        lines (each ending in a newline; at most one block per chunk, so the HTTP stream sends few pieces).

        While the job is active the lines stop at the first chunk without results (so the index of the last
        line received is a cursor to resume from); for a finished job, chunks without results (never run,
        because the job was cancelled) are skipped. Reads ``window`` chunks per round trip.
        """
        first = after + 1
        if first >= record.n_items or record.n_chunks == 0:
            return
        starts = record.chunk_starts()
        ends = (*starts[1:], record.n_items)
        chunk = bisect.bisect_right(starts, first) - 1
        skip = first - starts[chunk]
        remaining = limit
        while chunk < record.n_chunks and (remaining is None or remaining > 0):
            numbers = [str(n) for n in range(chunk, min(chunk + window, record.n_chunks))]
            blobs = await self.redis.hmget(self._out(record.job_id), numbers)
            for blob in blobs:
                length = ends[chunk] - starts[chunk]
                chunk += 1
                if blob is None:
                    if record.status in ACTIVE_STATUSES:
                        return
                    skip = 0
                    continue
                if skip == 0 and (remaining is None or remaining >= length):
                    block = blob  # the whole chunk as stored: no split, one piece to send
                    if remaining is not None:
                        remaining -= blob.count(b"\n") + 1
                else:
                    lines = blob.split(b"\n")[skip:]
                    if remaining is not None:
                        lines = lines[:remaining]
                        remaining -= len(lines)
                    block = b"\n".join(lines)
                skip = 0
                if block:
                    yield block + b"\n"
                if remaining == 0:
                    return

    # --- worker side ------------------------------------------------------------------------------------
    async def start_chunk(self, job_id: str, chunk: int) -> str:
        """Mark the job running; the job's status, ``chunk_done`` when the chunk has results, or ``missing``."""
        status = await self._start(keys=[self._meta(job_id), self._out(job_id)], args=[chunk, repr(self._clock())])
        return status.decode() if isinstance(status, bytes) else str(status)

    async def chunk_input(self, job_id: str, chunk: int) -> list[bytes] | None:
        """The chunk's input lines, or None when they are gone (job cancelled, finished or expired)."""
        blob = await self.redis.hget(self._in(job_id), str(chunk))
        return None if blob is None else blob.split(b"\n")

    async def finish_chunk(
        self, job_id: str, chunk: int, lines: Sequence[bytes] | bytes, n_failed: int, *, abandoned: bool = False
    ) -> bool:
        """Write the chunk's result lines (a list, or already joined by newlines) once, atomically with the
        counters; False when already written."""
        blob = lines if isinstance(lines, bytes) else b"\n".join(lines)
        n_lines = blob.count(b"\n") + 1 if isinstance(lines, bytes) else len(lines)
        written = await self._finish(
            keys=[self._meta(job_id), self._out(job_id), self._in(job_id), self._open, self._bytes, self._expiry],
            args=[
                chunk, blob, n_lines, n_failed, repr(self._clock()), self.results_ttl_s, job_id, 1 if abandoned else 0,
                self.result_item_bytes,
            ],
        )  # fmt: skip
        return int(written) == 1

    async def cancel(self, job_id: str, tenant: str | None = None) -> str:
        """Cancel a queued or running job (its unstarted chunks are never judged); the status afterwards.
        ``JobNotFoundError`` when there is no such job, or it is another tenant's (``tenant`` given)."""
        status = await self._cancel(
            keys=[self._meta(job_id), self._in(job_id), self._out(job_id), self._open, self._bytes, self._expiry],
            args=[repr(self._clock()), self.results_ttl_s, job_id, 0 if tenant is None else 1, tenant or ""],
        )
        if status is None:
            raise JobNotFoundError(f"no job {job_id!r}: it was never created, or its results expired")
        return status.decode() if isinstance(status, bytes) else str(status)

    async def status(self, job_id: str) -> str | None:
        """The job's status field alone (None when the job does not exist)."""
        value = await self.redis.hget(self._meta(job_id), "status")
        return None if value is None else value.decode()
