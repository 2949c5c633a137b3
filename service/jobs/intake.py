"""A POST /v1/jobs body -> chunks of raw item lines, streamed: at most one chunk is held at a time.

Formats (by ``Content-Type``):

* ``application/x-ndjson`` (or ``application/jsonl``): one JSON object per line, each a ``/v1/score`` body
  that may add ``item_id``. Blank lines are skipped (they are not items). The first item line must be JSON,
  otherwise the body is not JSON Lines (400); a later line that is not JSON or not a valid item becomes that
  item's error in the results, never a failed or shortened job.
* ``application/json``: ``{"items": [...]}`` up to MAX_BODY_BYTES (a JSON document is parsed whole); each
  item is kept as its JSON text (``msgspec.Raw``) re-encoded compactly, so a pretty-printed item is still one
  stored line with the same content.

Chunks close at JOB_CHUNK_SIZE items or JOB_CHUNK_BYTES bytes, whichever comes first; an item longer than
MAX_JOB_LINE_BYTES is refused with 413 naming its line (or index), before the job is created.

The SHA-256 of the raw body is computed on the way (the Idempotency-Key's "same body" test).
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from typing import Any

import msgspec

from service.errors import BadRequestError, JobTooLargeError, UnsupportedMediaTypeError

__all__ = ["NDJSON_TYPES", "BodyDigest", "ChunkLimits", "json_items_chunks", "media_kind", "ndjson_chunks"]

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


class ChunkLimits(msgspec.Struct, frozen=True, kw_only=True):
    """The bounds a body is cut by: items and bytes per chunk, items per job, bytes per body and per item."""

    chunk_size: int
    chunk_bytes: int
    max_items: int
    max_bytes: int
    max_line_bytes: int


class _Chunker:
    """Collects item lines into chunks closed at ``chunk_size`` items or ``chunk_bytes`` bytes, whichever first.

    Counting bytes as well as items bounds what the API, Redis and a worker hold for one chunk whatever the
    items' sizes (500 items of 1 MB made one 500 MB chunk); a line never exceeds ``max_line_bytes`` <=
    ``chunk_bytes``, so every chunk holds at least one item.
    """

    def __init__(self, limits: ChunkLimits) -> None:
        self.limits = limits
        self.lines: list[bytes] = []
        self.n_bytes = 0
        self.n_items = 0

    def add(self, line: bytes) -> list[bytes] | None:
        """Add one item line; the chunk it closes, if any (the line then starts the next one)."""
        self.n_items += 1
        if self.n_items > self.limits.max_items:
            raise JobTooLargeError(f"the job has more than MAX_JOB_ITEMS={self.limits.max_items} items")
        full = None
        size = len(line) + 1  # the separator it is stored with
        if len(self.lines) >= self.limits.chunk_size or (self.lines and self.n_bytes + size > self.limits.chunk_bytes):
            full, self.lines, self.n_bytes = self.lines, [], 0
        self.lines.append(line)
        self.n_bytes += size
        return full

    def rest(self) -> list[bytes] | None:
        """The last, partly filled chunk (None when empty)."""
        rest, self.lines, self.n_bytes = self.lines, [], 0
        return rest or None


def _line_too_long(where: str, n_bytes: int, limit: int) -> JobTooLargeError:
    return JobTooLargeError(
        f"{where} is {n_bytes} bytes or more; an item is limited to MAX_JOB_LINE_BYTES={limit} (send long "
        "documents as their own /v1/score requests, or raise the setting)"
    )


async def ndjson_chunks(
    stream: AsyncIterator[bytes], digest: BodyDigest, limits: ChunkLimits
) -> AsyncIterator[list[bytes]]:
    """The body's item lines in chunks (``_Chunker``'s bounds); see the module rules.

    A line is cut at ``\n`` and stripped of surrounding whitespace (so CRLF bodies read the same); a line longer
    than ``max_line_bytes`` is refused (413 naming its 1-based line number) as soon as it passes the limit, so
    no more than one line is ever buffered.
    """
    buffer = bytearray()
    chunker = _Chunker(limits)
    line_number = 0
    first_checked = False

    def accept(raw: bytearray) -> list[bytes] | None:
        nonlocal first_checked
        line = bytes(raw).strip()
        if not line:
            return None
        if not first_checked:
            try:
                msgspec.json.decode(line)
            except msgspec.DecodeError:
                raise BadRequestError(
                    "the body is not JSON Lines: its first line is not JSON (send one /v1/score body per line)"
                ) from None
            except RecursionError:
                raise BadRequestError("the first line is nested too deeply to be a /v1/score body") from None
            first_checked = True
        return chunker.add(line)

    async for piece in stream:
        digest.update(piece)
        if digest.n_bytes > limits.max_bytes:
            raise JobTooLargeError(f"the body exceeds MAX_JOB_BODY_BYTES={limits.max_bytes}")
        view = memoryview(piece)
        start = 0
        while True:
            end = piece.find(b"\n", start)
            buffer += view[start : len(piece) if end < 0 else end]
            if len(buffer) > limits.max_line_bytes:
                raise _line_too_long(f"line {line_number + 1}", len(buffer), limits.max_line_bytes)
            if end < 0:
                break
            line_number += 1
            full = accept(buffer)
            buffer.clear()
            if full is not None:
                yield full
            start = end + 1
    full = accept(buffer)
    if full is not None:
        yield full
    rest = chunker.rest()
    if rest is not None:
        yield rest
    if chunker.n_items == 0:
        raise BadRequestError("the body holds no item: send one /v1/score body per line")


def json_items_chunks(body: bytes, limits: ChunkLimits) -> list[list[bytes]]:
    """``{"items": [...]}`` -> chunks of the items' JSON texts, each re-encoded compactly; 400 when it is not
    that shape, 413 past MAX_JOB_ITEMS or for an item past MAX_JOB_LINE_BYTES (named by its index).

    Compact re-encoding removes the whitespace (newlines included) a pretty-printed body puts inside an item,
    so every stored item is one line whatever the sender's formatting; strings are kept exactly (a newline in
    a string is the escape ``\n`` in JSON, never a raw newline).
    """
    try:
        parsed: Any = _ITEMS_DECODER.decode(body)
    except msgspec.DecodeError as error:
        raise BadRequestError(f'the body is not {{"items": [...]}}: {error}') from None
    except RecursionError:
        raise BadRequestError('the body is nested too deeply to be {"items": [...]} of /v1/score bodies') from None
    if not parsed.items:
        raise BadRequestError('"items" is empty: send at least one /v1/score body')
    if len(parsed.items) > limits.max_items:
        raise JobTooLargeError(f"the job has {len(parsed.items)} items; the limit is MAX_JOB_ITEMS={limits.max_items}")
    chunker = _Chunker(limits)
    chunks: list[list[bytes]] = []
    for index, raw in enumerate(parsed.items):
        item = msgspec.json.format(bytes(raw), indent=-1)
        if len(item) > limits.max_line_bytes:
            raise _line_too_long(f"item {index} (0-based)", len(item), limits.max_line_bytes)
        full = chunker.add(item)
        if full is not None:
            chunks.append(full)
    rest = chunker.rest()
    if rest is not None:
        chunks.append(rest)
    return chunks
