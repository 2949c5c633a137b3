"""The data directory's manifest (``sources.json``): every file, its digest, and where it comes from.

Each entry has ``path``, ``sha256``, ``size`` (those of the copy the project was developed on) and ``licence``
(what the source repository states), and exactly one source:

- ``url``: a byte-identical upstream file pinned to a commit (``https://raw.githubusercontent.com/...``);
- ``convert`` + ``inputs`` (+ ``options``): pinned raw upstream files (``upstream.json``; each input a shell pattern
  over ``OWNER/REPO/COMMIT/PATH`` keys) turned into the file by the named converter (``converters.py``);
- ``project``: a file of this repository (e.g. the recorded judges' description) written into the directory.

An entry with none of these can only come from a mirror of the data directory (none does today).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from offline.build.inputs.errors import DataError
from offline.data.convert.registry import converter_names
from offline.data.paths import REPO_ROOT
from offline.data.upstream import UPSTREAM, Upstream, UpstreamFile, load_upstream

__all__ = ["MANIFEST", "DataFile", "SourceLicence", "licences", "load_manifest"]

MANIFEST = Path(__file__).with_name("sources.json")


@dataclass(frozen=True)
class DataFile:
    """One file of the data directory: its relative path, digest, licence, and its one source."""

    path: str
    sha256: str
    size: int
    url: str | None = None
    convert: str | None = None
    inputs: tuple[UpstreamFile, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict)
    project: str | None = None
    licence: str | None = None
    note: str | None = None

    @property
    def mirror_only(self) -> bool:
        """True when no source is named: only a mirror of the data directory has it."""
        return self.url is None and self.convert is None and self.project is None

    @property
    def project_path(self) -> Path | None:
        """The repository file a ``project`` entry copies."""
        return None if self.project is None else REPO_ROOT / self.project

    @property
    def download_size(self) -> int:
        """Bytes to transfer for it from its own sources (its inputs' sizes for a converted file)."""
        if self.convert is not None:
            return sum(i.size for i in self.inputs)
        return 0 if self.project is not None else self.size


@dataclass(frozen=True)
class SourceLicence:
    """What one source repository states about its licence, and the data files it feeds."""

    repo: str
    commit: str
    licence: str
    files: tuple[str, ...]


def _safe_path(manifest: Path, path: str) -> str:
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts or path != str(pure):
        raise DataError(manifest, None, f"manifest path {path!r} is not a plain relative path")
    return path


def _entry(manifest: Path, e: Mapping[str, Any], upstream: Upstream) -> DataFile:
    inputs: dict[str, UpstreamFile] = {}
    for pattern in e.get("inputs", ()):
        for found in upstream.matching(str(pattern)):
            inputs.setdefault(found.key, found)
    entry = DataFile(
        path=_safe_path(manifest, str(e["path"])),
        sha256=str(e["sha256"]),
        size=int(e["size"]),
        url=e.get("url"),
        convert=e.get("convert"),
        inputs=tuple(inputs.values()),
        options=dict(e.get("options", {})),
        project=e.get("project"),
        licence=e.get("licence"),
        note=e.get("note"),
    )
    sources = [s for s in (entry.url, entry.convert, entry.project) if s is not None]
    if len(sources) > 1:
        raise DataError(manifest, None, f"{entry.path}: give one of url, convert, project")
    if entry.convert is not None:
        if entry.convert not in converter_names():
            raise DataError(manifest, None, f"{entry.path}: unknown convert step {entry.convert!r}")
        if not entry.inputs:
            raise DataError(manifest, None, f"{entry.path}: a convert step needs inputs")
    if entry.project is not None:
        _safe_path(manifest, entry.project)
    return entry


def load_manifest(path: Path = MANIFEST, upstream_path: Path = UPSTREAM) -> tuple[DataFile, ...]:
    """Read the manifest (``{"files": [...]}``) into :class:`DataFile` entries, inputs resolved.

    Raises:
        DataError: the manifest or the upstream list is missing or malformed, an entry lacks a field, has an unsafe
            path, several sources, an unknown converter, or an input pattern that matches no pinned file.
    """
    upstream = load_upstream(upstream_path)
    try:
        document = json.loads(path.read_bytes())
        return tuple(_entry(path, e, upstream) for e in document["files"])
    except OSError as exc:
        raise DataError(path, None, f"cannot read the manifest: {exc}") from None
    except (ValueError, KeyError, TypeError) as exc:
        if isinstance(exc, DataError):
            raise
        raise DataError(path, None, f"malformed manifest: {exc!r}") from None


def licences(files: tuple[DataFile, ...], upstream: Upstream | None = None) -> tuple[SourceLicence, ...]:
    """Per source repository (commit), the licence it states and the data files it feeds, in repository order;
    the project's own files are not listed."""
    pinned = load_upstream() if upstream is None else upstream
    feeds: dict[tuple[str, str], list[str]] = {}
    for f in files:
        keys = [f.url] if f.url is not None else [i.key for i in f.inputs]
        for key in keys:
            repository = pinned.repository_of(key)
            if repository is not None:
                paths = feeds.setdefault((repository.repo, repository.commit), [])
                if f.path not in paths:
                    paths.append(f.path)
    return tuple(
        SourceLicence(r.repo, r.commit, r.licence, tuple(feeds[(r.repo, r.commit)]))
        for r in pinned.repositories
        if (r.repo, r.commit) in feeds
    )
