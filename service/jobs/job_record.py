"""One job's metadata as the store holds it (``JobRecord``), read back from its Redis hash, and the byte total."""

from __future__ import annotations

import msgspec

__all__ = ["ACTIVE_STATUSES", "JobRecord", "StoredBytes", "record_from_hash"]

ACTIVE_STATUSES = frozenset({"queued", "running"})


class JobRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One job's metadata as stored (times are Unix seconds; None before they happen)."""

    job_id: str
    status: str
    n_items: int
    n_chunks: int
    chunk_size: int
    n_done: int
    n_failed: int
    chunks_done: int
    created_at: float
    started_at: float | None
    finished_at: float | None
    digest: str
    tenant: str = ""
    starts: tuple[int, ...] | None = None  # first item index of each chunk, when chunks differ in length
    out_bytes: int = 0

    def chunk_starts(self) -> tuple[int, ...]:
        """The first item index of every chunk (stored, or ``c * chunk_size`` for equal chunks)."""
        if self.starts is not None:
            return self.starts
        return tuple(range(0, self.n_chunks * self.chunk_size, self.chunk_size))

    def chunk_bounds(self, chunk: int) -> tuple[int, int]:
        """(first item index, number of items) of chunk ``chunk``."""
        starts = self.chunk_starts()
        end = starts[chunk + 1] if chunk + 1 < len(starts) else self.n_items
        return starts[chunk], end - starts[chunk]


class StoredBytes(msgspec.Struct, frozen=True):
    """What the jobs kept in Redis hold or have reserved, in bytes, and when the earliest of them expires."""

    total: int
    earliest_expiry: float | None


def record_from_hash(job_id: str, raw: dict[bytes, bytes]) -> JobRecord:
    """The JobRecord of a job's metadata hash as Redis returns it (bytes fields; absent ones defaulted)."""

    def text(name: str) -> str | None:
        value = raw.get(name.encode())
        return None if value is None else value.decode()

    def number(name: str) -> float | None:
        value = text(name)
        return None if value is None or value == "" else float(value)

    return JobRecord(
        job_id=job_id,
        status=text("status") or "queued",
        n_items=int(number("n_items") or 0),
        n_chunks=int(number("n_chunks") or 0),
        chunk_size=int(number("chunk_size") or 1),
        n_done=int(number("n_done") or 0),
        n_failed=int(number("n_failed") or 0),
        chunks_done=int(number("chunks_done") or 0),
        created_at=number("created_at") or 0.0,
        started_at=number("started_at"),
        finished_at=number("finished_at"),
        digest=text("digest") or "",
        tenant=text("tenant") or "",
        starts=None if b"starts" not in raw else tuple(msgspec.msgpack.decode(raw[b"starts"], type=list[int])),
        out_bytes=int(number("out_bytes") or 0),
    )
