"""One file downloaded to its ``.part`` until its size and sha256 match (``python -m offline data``'s transfer).

A ``.part`` left by an interrupted attempt is resumed with an HTTP range request (kept only when the server answers
``206`` from that offset). Server errors (5xx, 429), dropped connections (fewer bytes than the response's
``Content-Length``) and timeouts are retried a bounded number of times with exponential backoff; any other HTTP
error, a complete response that is shorter than the pinned size (the served file is truncated), or a digest that
differs, deletes the ``.part`` and stops with a :class:`~offline.build.inputs.errors.DataError` naming the file
(a resumed download that ends wrong is started over once, within the same bounded attempts).
"""

from __future__ import annotations

import hashlib
import http.client
import os
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from offline.build.inputs.errors import DataError

__all__ = ["CHUNK", "TRANSIENT_STATUS", "NoProgress", "Progress", "download", "is_complete"]

CHUNK = 1 << 16
TRANSIENT_STATUS = frozenset({429, 500, 502, 503, 504})


class Progress(Protocol):
    """The part of a tqdm bar the downloader uses."""

    def update(self, n: int) -> Any:
        """Advance by ``n`` bytes."""

    def close(self) -> Any:
        """Finish the bar."""


class NoProgress:
    """A progress bar that shows nothing."""

    def update(self, n: int) -> None:
        """Ignore progress."""

    def close(self) -> None:
        """Nothing to close."""


class _Refused(Exception):
    """A download that completed but does not match the manifest (not retried unless it was a resumed one)."""


def _digest(path: Path) -> tuple[int, str]:
    sha = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            sha.update(chunk)
    return path.stat().st_size, sha.hexdigest()


def is_complete(path: Path, size: int, sha256: str) -> bool:
    return path.is_file() and path.stat().st_size == size and _digest(path) == (size, sha256)


def _open(url: str, offset: int, timeout: float) -> Any:
    request = urllib.request.Request(url, headers={"User-Agent": "conformal-judge-data/1"})
    if offset:
        request.add_header("Range", f"bytes={offset}-")
    return urllib.request.urlopen(request, timeout=timeout)  # noqa: S310 - the scheme is checked by mirror_url


def _copy(response: Any, fh: BinaryIO, limit: int, bar: Progress) -> None:
    written = fh.tell()
    while chunk := response.read(CHUNK):
        written += len(chunk)
        if written > limit:
            raise _Refused(f"the server sent more than the expected {limit} bytes")
        fh.write(chunk)
        bar.update(len(chunk))
    fh.flush()
    os.fsync(fh.fileno())


def _download_once(url: str, part: Path, size: int, sha256: str, timeout: float, bar: Progress) -> bool:
    """One attempt; returns whether it resumed a ``.part``. Raises _Refused on a size or digest mismatch."""
    offset = part.stat().st_size if part.exists() else 0
    if offset >= size:
        part.unlink()
        offset = 0
    with _open(url, offset, timeout) as response:
        resumed = (
            bool(offset)
            and response.status == 206
            and str(response.headers.get("Content-Range", "")).startswith(f"bytes {offset}-")
        )
        declared = response.headers.get("Content-Length")
        with part.open("ab" if resumed else "wb") as fh:
            start = fh.tell()
            _copy(response, fh, size, bar)
            sent = fh.tell() - start
    received = part.stat().st_size
    if received < size:
        if declared is not None and sent < int(declared):
            # http.client's read(n) ends quietly at a premature close: a transient failure, resumed
            raise ConnectionError(f"the transfer stopped after {received} of {size} bytes")
        part.unlink()
        raise _Refused(f"the server's file is truncated: it sent all it has, {received} of the expected {size} bytes")
    got = _digest(part)
    if got != (size, sha256):
        part.unlink()
        raise _Refused(
            f"got {got[0]} bytes with sha256 {got[1]}, expected {size} bytes with sha256 {sha256} "
            "(the digest of the copy the project was developed on)"
        )
    return resumed


def download(
    url: str,
    part: Path,
    label: str,
    size: int,
    sha256: str,
    *,
    retries: int,
    backoff: float,
    timeout: float,
    bar: Progress,
) -> None:
    """Download ``url`` into ``part`` until its size and digest match, retrying transient failures."""
    last = ""
    for attempt in range(1, retries + 1):
        resuming = part.exists() and part.stat().st_size > 0
        try:
            _download_once(url, part, size, sha256, timeout, bar)
            return
        except _Refused as exc:
            part.unlink(missing_ok=True)
            if not resuming:
                raise DataError(label, None, f"refused the download from {url}: {exc}") from None
            last = f"resumed download refused ({exc}); starting over"
        except urllib.error.HTTPError as exc:
            exc.close()  # it holds the response's socket
            if exc.code not in TRANSIENT_STATUS:
                part.unlink(missing_ok=True)
                raise DataError(label, None, f"HTTP {exc.code} {exc.reason} from {url}") from None
            last = f"HTTP {exc.code} {exc.reason}"
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            last = f"{type(exc).__name__}: {exc}"
        if attempt < retries:
            time.sleep(backoff * 2 ** (attempt - 1))
    raise DataError(label, None, f"could not download {url} after {retries} attempts: {last}")
