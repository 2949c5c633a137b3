"""The raw upstream files the converters read (``upstream.json``): pinned by repository, commit, path, sha256, size.

Every raw file is named by its key ``OWNER/REPO/COMMIT/PATH``, the path under which
``https://raw.githubusercontent.com`` serves it. ``$DATA_SOURCE_BASE`` (or ``--source-base``) replaces that host
prefix, in these keys' URLs and in every pinned ``url`` of ``sources.json``, so a loopback copy of the raw files
(laid out ``OWNER/REPO/COMMIT/PATH``) or a company mirror serves the same paths.
"""

from __future__ import annotations

import fnmatch
import json
import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from offline.build.inputs.errors import DataError

__all__ = [
    "GITHUB_RAW",
    "SOURCE_BASE_ENV",
    "UPSTREAM",
    "Repository",
    "Upstream",
    "UpstreamFile",
    "load_upstream",
    "source_base",
    "source_url",
]

UPSTREAM = Path(__file__).with_name("upstream.json")
GITHUB_RAW = "https://raw.githubusercontent.com"
SOURCE_BASE_ENV = "DATA_SOURCE_BASE"


@dataclass(frozen=True)
class UpstreamFile:
    """One raw upstream file: ``key`` = ``OWNER/REPO/COMMIT/PATH``, with the digest of the pinned copy."""

    key: str
    sha256: str
    size: int

    @property
    def url(self) -> str:
        """Its address on raw.githubusercontent.com (before any ``DATA_SOURCE_BASE`` substitution)."""
        return f"{GITHUB_RAW}/{urllib.parse.quote(self.key)}"


@dataclass(frozen=True)
class Repository:
    """A pinned repository snapshot and the licence the repository itself states."""

    repo: str
    commit: str
    licence: str
    note: str


@dataclass(frozen=True)
class Upstream:
    """Every pinned raw file by key, and the repositories they come from."""

    files: Mapping[str, UpstreamFile]
    repositories: tuple[Repository, ...]

    def matching(self, pattern: str) -> tuple[UpstreamFile, ...]:
        """The files whose key matches the shell pattern (``*`` crosses ``/``), in key order.

        Raises:
            DataError: nothing matches (a manifest naming a file that is not pinned).
        """
        found = tuple(self.files[k] for k in sorted(self.files) if fnmatch.fnmatchcase(k, pattern))
        if not found:
            raise DataError(UPSTREAM, None, f"no pinned upstream file matches {pattern!r}")
        return found

    def repository_of(self, url_or_key: str) -> Repository | None:
        """The pinned repository a key or a raw.githubusercontent.com URL belongs to, if any."""
        key = url_or_key.removeprefix(GITHUB_RAW + "/")
        for repository in self.repositories:
            if key.startswith(f"{repository.repo}/{repository.commit}/"):
                return repository
        return None


def _safe_key(key: str) -> str:
    pure = PurePosixPath(key)
    if pure.is_absolute() or ".." in pure.parts or len(pure.parts) < 4 or key != str(pure):
        raise DataError(UPSTREAM, None, f"upstream key {key!r} is not OWNER/REPO/COMMIT/PATH")
    return key


def load_upstream(path: Path = UPSTREAM) -> Upstream:
    """Read ``upstream.json`` (``{"repositories": [{"repo", "commit", "licence", "note", "files": {path: [sha256,
    size]}}]}``).

    Raises:
        DataError: the file is missing or malformed, a commit is not 40 hex digits, or a key is unsafe.
    """
    try:
        document = json.loads(path.read_bytes())
        files: dict[str, UpstreamFile] = {}
        repositories = []
        for entry in document["repositories"]:
            commit = str(entry["commit"])
            if len(commit) != 40 or any(c not in "0123456789abcdef" for c in commit):
                raise DataError(path, None, f"{entry['repo']}: commit {commit!r} is not 40 hex digits")
            repositories.append(Repository(str(entry["repo"]), commit, str(entry["licence"]), str(entry["note"])))
            for rel, (sha256, size) in entry["files"].items():
                key = _safe_key(f"{entry['repo']}/{commit}/{rel}")
                files[key] = UpstreamFile(key, str(sha256), int(size))
    except OSError as exc:
        raise DataError(path, None, f"cannot read the upstream list: {exc}") from None
    except (ValueError, KeyError, TypeError) as exc:
        if isinstance(exc, DataError):
            raise
        raise DataError(path, None, f"malformed upstream list: {exc!r}") from None
    return Upstream(files=files, repositories=tuple(repositories))


def source_base(explicit: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """The base replacing ``https://raw.githubusercontent.com`` (``explicit``, else ``$DATA_SOURCE_BASE``), without a
    trailing ``/``; None when neither is set.

    Raises:
        DataError: the base is not an http(s) or file URL.
    """
    environ = os.environ if env is None else env
    base = explicit or environ.get(SOURCE_BASE_ENV) or None
    if base is None:
        return None
    if urllib.parse.urlsplit(base).scheme not in ("http", "https", "file"):
        raise DataError(None, None, f"{SOURCE_BASE_ENV} / --source-base must be an http(s) or file URL, got {base!r}")
    return base.rstrip("/")


def source_url(url: str, base: str | None) -> str:
    """``url`` with its ``https://raw.githubusercontent.com`` prefix replaced by ``base`` (unchanged without one)."""
    if base is None or not url.startswith(GITHUB_RAW + "/"):
        return url
    return base + url[len(GITHUB_RAW) :]
