"""Reading a thresholds artifact named by a reload request: confined, bounded, and silent about the file system.

Rule for a path an admin names in ``POST /v1/calibration/reload``:

* a relative path is taken inside RELOAD_DIR (default: THRESHOLDS_PATH's directory); an absolute one must lie
  inside it; symbolic links are resolved first, so a link cannot lead out of the directory;
* the file is opened without following a final link and without blocking (a FIFO cannot hang the reload), and
  must be a regular file of at most MAX_ARTIFACT_BYTES (``/dev/zero`` cannot exhaust memory); at most that many
  bytes plus one are read;
* any refusal (outside the directory, absent, not a regular file, unreadable, too large, a NUL in the name) is
  the same ``ReloadPathError`` (422) with the same detail, so the answer tells nothing about which files exist.

A file that passes is decoded by ``artifact.thresholds.decode_artifact``; its problems (malformed JSON, an
invalid artifact, nesting too deep) are reported as ``ArtifactError`` naming the path as the caller gave it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from artifact.thresholds import ThresholdsArtifact, decode_artifact
from calibration.errors import ArtifactError
from service.errors import ServiceProblem

__all__ = ["ReloadPathError", "decode_artifact_bytes", "read_artifact_file", "resolve_reload_path"]


class ReloadPathError(ServiceProblem):
    """The reload path cannot be used (422); the detail is the same whatever the reason."""

    status = 422
    slug = "reload-path-refused"
    title = "Reload path refused"


def _refusal(allowed_dir: Path, max_bytes: int) -> ReloadPathError:
    return ReloadPathError(
        f"path must name a readable regular file of at most MAX_ARTIFACT_BYTES={max_bytes} bytes inside RELOAD_DIR "
        f"({allowed_dir.name or allowed_dir}/); this path cannot be used"
    )


def resolve_reload_path(requested: str, allowed_dir: Path, max_bytes: int) -> Path:
    """The real path of ``requested`` inside ``allowed_dir``; ReloadPathError (same detail) otherwise."""
    if "\x00" in requested:
        raise _refusal(allowed_dir, max_bytes)
    base = os.path.realpath(allowed_dir)
    candidate = os.path.realpath(os.path.join(base, requested))  # an absolute ``requested`` replaces ``base``
    if os.path.commonpath([base, candidate]) != base or candidate == base:
        raise _refusal(allowed_dir, max_bytes)
    return Path(candidate)


def read_artifact_file(path: Path, allowed_dir: Path, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``, opened without blocking; ReloadPathError otherwise."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(path, flags)
    except (OSError, ValueError):
        raise _refusal(allowed_dir, max_bytes) from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            raise _refusal(allowed_dir, max_bytes)
        chunks: list[bytes] = []
        remaining = max_bytes + 1
        while remaining > 0:
            chunk = os.read(descriptor, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    except OSError:
        raise _refusal(allowed_dir, max_bytes) from None
    finally:
        os.close(descriptor)
    data = b"".join(chunks)
    if len(data) > max_bytes:  # the file grew after fstat
        raise _refusal(allowed_dir, max_bytes)
    return data


def decode_artifact_bytes(data: bytes, source: str) -> ThresholdsArtifact:
    """``decode_artifact`` with nesting too deep for the decoder reported as ArtifactError, not RecursionError."""
    try:
        return decode_artifact(data, source=source)
    except RecursionError:
        raise ArtifactError(f"{source}: malformed JSON: nested too deeply") from None
