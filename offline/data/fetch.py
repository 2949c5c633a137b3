"""Build the data directory from its pinned sources: ``python -m offline data`` (``make data``).

Every file of the manifest (``sources.json``, see :mod:`offline.data.manifest`) comes from its own source: a
pinned upstream URL (downloaded as is), pinned raw upstream files run through the converter written for that file,
or a file of this repository. ``$DATA_SOURCE_BASE`` replaces the ``https://raw.githubusercontent.com`` prefix of
every pinned URL; ``$DATA_MIRROR_URL`` instead fetches every (non-project) file whole from a copy of the data
directory. Every file, downloaded or converted, is checked against the manifest's size and sha256 before it is put
in place.

Nothing half-written ever sits at a data file's path: transfers go to ``<dir>/.download/`` (``files/<path>.part``
for a downloaded file, ``upstream/<OWNER/REPO/COMMIT/PATH>`` for a raw input, ``.part`` while in transit), and a
file reaches its place only complete and verified, by ``os.replace`` (atomic on one file system). A download that
completes with the wrong size or digest is deleted and the run stops naming the file; a dropped transfer keeps its
``.part``, and the next run resumes it with an HTTP range request, as it reuses the raw inputs already verified.
``.download/`` is removed when a run completes. While a run is under way the directory holds
``.download-incomplete``; the default directory (``$DATA_DIR``, else ``../shared/data``) is used as is, nothing
downloaded, when it exists without that marker.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from offline.build.inputs.errors import DataError
from offline.data.convert.registry import Inputs, converter
from offline.data.download import NoProgress, Progress, download, is_complete
from offline.data.manifest import MANIFEST, DataFile, load_manifest
from offline.data.paths import DATA_DIR_ENV, default_data_dir
from offline.data.upstream import UpstreamFile, source_url

__all__ = [
    "INCOMPLETE_MARKER",
    "MIRROR_ENV",
    "STAGING",
    "FetchReport",
    "build_data_dir",
    "fetch_data",
    "mirror_url",
    "target_dir",
]

MIRROR_ENV = "DATA_MIRROR_URL"
INCOMPLETE_MARKER = ".download-incomplete"
STAGING = ".download"


@dataclass(frozen=True)
class FetchReport:
    """What a run did: the directory, the files fetched now, the files already present, and whether the
    existing directory was used as is (nothing checked, nothing downloaded)."""

    target: Path
    fetched: tuple[str, ...]
    present: tuple[str, ...]
    used_as_is: bool = False


def target_dir(explicit: Path | None, env: Mapping[str, str] | None = None) -> tuple[Path, bool]:
    """The directory to build and whether it was given explicitly: ``explicit``, else ``$DATA_DIR``, else
    ``../shared/data`` beside the checkout."""
    environ = os.environ if env is None else env
    if explicit is not None:
        return Path(explicit).expanduser(), True
    configured = environ.get(DATA_DIR_ENV)
    return (Path(configured).expanduser() if configured else default_data_dir()), False


def mirror_url(explicit: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """The mirror base URL (``explicit``, else ``$DATA_MIRROR_URL``), ending in ``/``; None when neither is set.

    Raises:
        DataError: the URL is not http(s) or file.
    """
    environ = os.environ if env is None else env
    url = explicit or environ.get(MIRROR_ENV) or None
    if url is None:
        return None
    if urllib.parse.urlsplit(url).scheme not in ("http", "https", "file"):
        raise DataError(None, None, f"{MIRROR_ENV} / --mirror must be an http(s) or file URL, got {url!r}")
    return url if url.endswith("/") else url + "/"


class _Transfer(TypedDict):
    retries: int
    backoff: float
    timeout: float
    bar: Progress


def _write_atomically(dest: Path, content: bytes) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    try:
        with part.open("wb") as fh:
            fh.write(content)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(part, dest)
    finally:
        part.unlink(missing_ok=True)


def _check(entry: DataFile, content: bytes, origin: str) -> None:
    got = (len(content), hashlib.sha256(content).hexdigest())
    if got != (entry.size, entry.sha256):
        raise DataError(
            entry.path,
            None,
            f"{origin} gave {got[0]} bytes with sha256 {got[1]}, expected {entry.size} bytes with sha256 "
            f"{entry.sha256}: refused",
        )


def _raw_input(raw: UpstreamFile, staging: Path, label: str, base: str | None, transfer: _Transfer) -> Path:
    """The verified local copy of one raw input, downloaded (or resumed) unless already there."""
    local = staging / "upstream" / raw.key
    if is_complete(local, raw.size, raw.sha256):
        return local
    local.parent.mkdir(parents=True, exist_ok=True)
    part = local.with_name(local.name + ".part")
    download(source_url(raw.url, base), part, f"{label} (input {raw.key})", raw.size, raw.sha256, **transfer)
    os.replace(part, local)
    return local


def _fetch_one(entry: DataFile, out: Path, mirror: str | None, base: str | None, transfer: _Transfer) -> None:
    dest = out / entry.path
    staging = out / STAGING
    if entry.project_path is not None:
        try:
            content = entry.project_path.read_bytes()
        except OSError as exc:
            raise DataError(entry.path, None, f"cannot read the project's file {entry.project}: {exc}") from None
        _check(entry, content, f"the project's file {entry.project}")
        _write_atomically(dest, content)
        return
    url = urllib.parse.urljoin(mirror, urllib.parse.quote(entry.path)) if mirror is not None else entry.url
    if url is not None:
        part = staging / "files" / (entry.path + ".part")
        part.parent.mkdir(parents=True, exist_ok=True)
        download(source_url(url, base), part, entry.path, entry.size, entry.sha256, **transfer)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(part, dest)
        return
    if entry.convert is None:
        raise DataError(entry.path, None, f"no source: {entry.note or 'no public source is pinned'}")
    local = {raw.key: _raw_input(raw, staging, entry.path, base, transfer) for raw in entry.inputs}
    try:
        content = converter(entry.convert)(Inputs(local), entry.options)
    except (ValueError, KeyError, TypeError) as exc:
        raise DataError(entry.path, None, f"the {entry.convert} conversion failed: {exc}") from None
    _check(entry, content, f"the {entry.convert} conversion of {len(local)} pinned input(s)")
    _write_atomically(dest, content)


def _transfer_total(todo: list[DataFile], out: Path, mirror: str | None) -> int:
    if mirror is not None:
        return sum(e.size for e in todo if e.project is None)
    total = sum(e.size for e in todo if e.url is not None)
    raw = {i.key: i for e in todo for i in e.inputs}
    staging = out / STAGING / "upstream"
    return total + sum(i.size for k, i in raw.items() if not (staging / k).is_file())


def fetch_data(
    out: Path,
    files: Iterable[DataFile],
    *,
    mirror: str | None = None,
    source_base: str | None = None,
    retries: int = 4,
    backoff: float = 0.5,
    timeout: float = 60.0,
    progress: Callable[[int], Progress] | None = None,
) -> FetchReport:
    """Make ``out`` hold every manifest file with its digest: skip the ones present, fetch or build the rest.

    ``mirror``: base URL of a copy of the data directory (every file but the project's own is then fetched from
    it). ``source_base``: replaces ``https://raw.githubusercontent.com`` in every pinned URL. ``progress``: a factory
    of a byte progress bar given the total (e.g. ``tqdm``); None shows none.

    Raises:
        DataError: a file has no source without a mirror (all such files named, before anything is fetched), a
            download fails or is refused, or a conversion fails or does not give the manifest's digest (the data
            file, and the raw input when one is at fault, named).
    """
    entries = tuple(files)
    present = tuple(e.path for e in entries if is_complete(out / e.path, e.size, e.sha256))
    todo = [e for e in entries if e.path not in present]
    if mirror is None:
        unavailable = [e for e in todo if e.mirror_only]
        if unavailable:
            lines = "\n".join(f"  {e.path}: {e.note or 'no public source is pinned'}" for e in unavailable)
            raise DataError(
                out,
                None,
                f"{len(unavailable)} file(s) have no pinned source and can only come from a mirror of the data "
                f"directory: set {MIRROR_ENV} (or --mirror) to its base URL, or set {DATA_DIR_ENV} to an existing "
                f"copy.\n{lines}",
            )
    out.mkdir(parents=True, exist_ok=True)
    marker = out / INCOMPLETE_MARKER
    marker.touch()
    bar = progress(_transfer_total(todo, out, mirror)) if progress is not None and todo else NoProgress()
    transfer = _Transfer(retries=retries, backoff=backoff, timeout=timeout, bar=bar)
    try:
        for entry in todo:
            _fetch_one(entry, out, mirror, source_base, transfer)
    finally:
        bar.close()
    shutil.rmtree(out / STAGING, ignore_errors=True)
    marker.unlink()
    return FetchReport(target=out, fetched=tuple(e.path for e in todo), present=present)


def build_data_dir(
    explicit: Path | None,
    *,
    mirror: str | None,
    source_base: str | None = None,
    manifest: Path = MANIFEST,
    env: Mapping[str, str] | None = None,
    **options: Any,
) -> FetchReport:
    """``python -m offline data``: an explicit ``--out`` is completed; the default directory (``$DATA_DIR``, else
    ``../shared/data``) is used as is when it exists without the in-progress marker, else built."""
    target, given = target_dir(explicit, env)
    if not given and target.is_dir() and not (target / INCOMPLETE_MARKER).exists():
        return FetchReport(target=target, fetched=(), present=(), used_as_is=True)
    return fetch_data(target, load_manifest(manifest), mirror=mirror, source_base=source_base, **options)
