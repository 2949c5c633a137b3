"""A POST /v1/jobs body -> chunks of raw item lines, streamed: at most one chunk is held at a time.

Formats (by ``Content-Type``):

* ``application/x-ndjson`` (or ``application/jsonl``): one JSON object per line, each a ``/v1/score`` body
  that may add ``item_id``. Blank lines are skipped (they are not items). The first item line must be JSON,
  otherwise the body is not JSON Lines (400); a later line that is not JSON or not a valid item becomes that
  item's error in the results, never a failed or shortened job.
* ``application/json``: ``{"items": [...]}`` up to MAX_BODY_BYTES (a JSON document is parsed whole); each
  item is kept as its raw JSON text (``msgspec.Raw``), so it is stored as sent.

The SHA-256 of the raw body is computed on the way (the Idempotency-Key's "same body" test).
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from typing import Any

import msgspec

from service.jobs.errors import JobTooLargeError
from service.problems import BadRequestError, UnsupportedMediaTypeError

__all__ = ["NDJSON_TYPES", "BodyDigest", "json_items_chunks", "media_kind", "ndjson_chunks"]

NDJSON_TYPES = ("application/x-ndjson", "application/jsonl", "application/json-lines")


class _ItemsBody(msgspec.Struct, forbid_unknown_fields=True):
    items: list[msgspec.Raw]


_ITEMS_DECODER = msgspec.json.Decoder(_ItemsBody)


class BodyDigest:
    """The running SHA-256 and byte count of a body read in pieces."""

    def __init__(self) -> None:
        self._sha = hashlib.sha256()
        self.n_bytes = 0

    def update(self, piece: bytes) -> None:
        """Add the next piece of the body."""
        self._sha.update(piece)
        self.n_bytes += len(piece)

    def hexdigest(self) -> str:
        """The digest of everything added so far."""
        return self._sha.hexdigest()


def media_kind(content_type: str | None) -> str:
    """``ndjson`` or ``json`` for a Content-Type header; 415 for anything else."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media in NDJSON_TYPES:
        return "ndjson"
    if media == "application/json":
        return "json"
    raise UnsupportedMediaTypeError(
        f"Content-Type {media or '(none)'!r} is not accepted: send JSON Lines as application/x-ndjson "
        '(one /v1/score body per line) or {"items": [...]} as application/json'
    )


async def ndjson_chunks(
    stream: AsyncIterator[bytes],
    digest: BodyDigest,
    *,
    chunk_size: int,
    max_items: int,
    max_bytes: int,
    max_line_bytes: int,
) -> AsyncIterator[list[bytes]]:
    """The body's item lines in lists of ``chunk_size`` (the last may be shorter); see the module rules."""
    buffer = b""
    chunk: list[bytes] = []
    n_items = 0
    first_checked = False

    def accept(line: bytes) -> list[bytes] | None:
        nonlocal chunk, n_items, first_checked
        line = line.strip()
        if not line:
            return None
        if not first_checked:
            try:
                msgspec.json.decode(line)
            except msgspec.DecodeError:
                raise BadRequestError(
                    "the body is not JSON Lines: its first line is not JSON (send one /v1/score body per line)"
                ) from None
            first_checked = True
        n_items += 1
        if n_items > max_items:
            raise JobTooLargeError(f"the job has more than MAX_JOB_ITEMS={max_items} items")
        chunk.append(line)
        if len(chunk) == chunk_size:
            full, chunk = chunk, []
            return full
        return None

    async for piece in stream:
        digest.update(piece)
        if digest.n_bytes > max_bytes:
            raise JobTooLargeError(f"the body exceeds MAX_JOB_BODY_BYTES={max_bytes}")
        buffer += piece
        if b"\n" not in piece:
            if len(buffer) > max_line_bytes:
                raise JobTooLargeError(f"a line is longer than MAX_BODY_BYTES={max_line_bytes}")
            continue
        *lines, buffer = buffer.split(b"\n")
        if len(buffer) > max_line_bytes:
            raise JobTooLargeError(f"a line is longer than MAX_BODY_BYTES={max_line_bytes}")
        for line in lines:
            full = accept(line)
            if full is not None:
                yield full
    full = accept(buffer)
    if full is not None:
        yield full
    if chunk:
        yield chunk
    if n_items == 0:
        raise BadRequestError("the body holds no item: send one /v1/score body per line")


def json_items_chunks(body: bytes, *, chunk_size: int, max_items: int) -> list[list[bytes]]:
    """``{"items": [...]}`` -> chunks of the items' raw JSON texts; 400 when it is not that shape."""
    try:
        parsed: Any = _ITEMS_DECODER.decode(body)
    except msgspec.DecodeError as error:
        raise BadRequestError(f'the body is not {{"items": [...]}}: {error}') from None
    items = [bytes(item) for item in parsed.items]
    if not items:
        raise BadRequestError('"items" is empty: send at least one /v1/score body')
    if len(items) > max_items:
        raise JobTooLargeError(f"the job has {len(items)} items; the limit is MAX_JOB_ITEMS={max_items}")
    return [items[start : start + chunk_size] for start in range(0, len(items), chunk_size)]
