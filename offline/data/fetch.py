"""Build the data directory from its public sources: ``python -m offline data`` (manifest: ``sources.json``).

Every file of the manifest is fetched to ``<name>.part`` beside its final place, checked against the manifest's
size and sha256 (those of the copy the project was developed on), then renamed into place (``os.replace``, atomic
on one file system). A file already present with the right digest is skipped; a ``.part`` left by an interrupted
run is resumed with an HTTP range request. Server errors (5xx, 429), dropped connections and timeouts are retried
a bounded number of times; any other HTTP error, or a digest that differs, stops the run naming the file.

Sources: ``url`` (a byte-identical upstream file pinned to a commit), ``raw`` + ``convert`` (a pinned upstream
file converted here, the result checked against the same digest), or neither (mirror-only: only a mirror of the
data directory, ``--mirror`` / ``$DATA_MIRROR_URL``, has it). With a mirror every file comes from the mirror.
While a run is under way the directory holds ``.download-incomplete``; the default directory (``$DATA_DIR``, else
``../shared/data``) is used as is, with nothing downloaded, when it exists without that marker.
"""

from __future__ import annotations

import hashlib
import json
import os
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, TypedDict

from offline.data.download import NoProgress, Progress, download, is_complete
from offline.data.errors import DataError
from offline.data.paths import DATA_DIR_ENV, default_data_dir

__all__ = [
    "INCOMPLETE_MARKER",
    "MANIFEST",
    "MIRROR_ENV",
    "DataFile",
    "FetchReport",
    "RawSource",
    "build_data_dir",
    "convert_finesure",
    "fetch_data",
    "load_manifest",
    "mirror_url",
    "target_dir",
]

MANIFEST = Path(__file__).with_name("sources.json")
MIRROR_ENV = "DATA_MIRROR_URL"
INCOMPLETE_MARKER = ".download-incomplete"


@dataclass(frozen=True)
class RawSource:
    """A pinned upstream file that a converter turns into a data file."""

    url: str
    sha256: str
    size: int


@dataclass(frozen=True)
class DataFile:
    """One file of the data directory: its relative path, digest, and where it can be had."""

    path: str
    sha256: str
    size: int
    url: str | None
    raw: RawSource | None = None
    convert: str | None = None
    note: str | None = None
    licence: str | None = None

    @property
    def mirror_only(self) -> bool:
        """True when no pinned public source is named: only a mirror of the data directory has it."""
        return self.url is None and self.raw is None


@dataclass(frozen=True)
class FetchReport:
    """What a run did: the directory, the files fetched now, the files already present, and whether the
    existing directory was used as is (nothing checked, nothing downloaded)."""

    target: Path
    fetched: tuple[str, ...]
    present: tuple[str, ...]
    used_as_is: bool = False


def _safe_path(path: str) -> str:
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts or path != str(pure):
        raise DataError(MANIFEST, None, f"manifest path {path!r} is not a plain relative path")
    return path


def load_manifest(path: Path = MANIFEST) -> tuple[DataFile, ...]:
    """Read the manifest (``{"files": [...]}``) into :class:`DataFile` entries.

    Raises:
        DataError: the manifest is missing, malformed, or an entry lacks a field or has an unsafe path.
    """
    try:
        document = json.loads(path.read_bytes())
        entries = document["files"]
        files = tuple(
            DataFile(
                path=_safe_path(e["path"]),
                sha256=str(e["sha256"]),
                size=int(e["size"]),
                url=e.get("url"),
                raw=RawSource(e["raw"]["url"], e["raw"]["sha256"], int(e["raw"]["size"])) if e.get("raw") else None,
                convert=e.get("convert"),
                note=e.get("note"),
                licence=e.get("licence"),
            )
            for e in entries
        )
    except OSError as exc:
        raise DataError(path, None, f"cannot read the manifest: {exc}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise DataError(path, None, f"malformed manifest: {exc!r}") from None
    for f in files:
        if f.raw is not None and f.convert is None:
            raise DataError(path, None, f"{f.path}: a raw source needs a convert step")
        if f.convert is not None:
            _converter(f.convert)
    return files


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


def convert_finesure(raw: bytes) -> bytes:
    """FineSurE's fact-checking output (JSON Lines, one FRANK summary per row) to ``frank/llm/finesure`` rows.

    Raises:
        ValueError: a line is not JSON or lacks a field (the line named).
    """
    out = []
    for number, line in enumerate(raw.decode("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            out.append(
                {
                    "hash": row["doc_id"],
                    "model_name": row["model"],
                    "dataset": row["source"],
                    "split": row["split"],
                    "sentences": row["sentences"],
                    "response": row["llm_output"],
                    "pred_error": row["pred_faithfulness_labels"],
                    "pred_error_type": row["pred_faithfulness_error_type"],
                    "human_sentence_annotations": row["raw_annotations"],
                }
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"line {number}: FineSurE row not understood: {exc!r}") from None
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in out).encode("utf-8")


def _converter(name: str) -> Callable[[bytes], bytes]:
    if name == "finesure":
        return convert_finesure
    raise DataError(MANIFEST, None, f"unknown convert step {name!r}")


class _DownloadOptions(TypedDict):
    retries: int
    backoff: float
    timeout: float
    bar: Progress


def _fetch_one(
    entry: DataFile, out: Path, mirror: str | None, *, retries: int, backoff: float, timeout: float, bar: Progress
) -> None:
    dest = out / entry.path
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    common = _DownloadOptions(retries=retries, backoff=backoff, timeout=timeout, bar=bar)
    url = urllib.parse.urljoin(mirror, urllib.parse.quote(entry.path)) if mirror is not None else entry.url
    if url is not None:
        download(url, part, entry.path, entry.size, entry.sha256, **common)
        os.replace(part, dest)
        return
    if entry.raw is None or entry.convert is None:
        raise DataError(entry.path, None, f"no source: {entry.note or 'no public source is pinned'}")
    raw_part = dest.with_name(dest.name + ".raw.part")
    download(entry.raw.url, raw_part, entry.path, entry.raw.size, entry.raw.sha256, **common)
    try:
        converted = _converter(entry.convert)(raw_part.read_bytes())
    except ValueError as exc:
        raise DataError(entry.path, None, f"converting {entry.raw.url}: {exc}") from None
    finally:
        raw_part.unlink(missing_ok=True)
    got = (len(converted), hashlib.sha256(converted).hexdigest())
    if got != (entry.size, entry.sha256):
        raise DataError(
            entry.path,
            None,
            f"the conversion of {entry.raw.url} gave {got[0]} bytes with sha256 "
            f"{got[1]}, expected {entry.size} bytes with sha256 {entry.sha256}: refused",
        )
    with part.open("wb") as fh:
        fh.write(converted)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(part, dest)


def fetch_data(
    out: Path,
    files: Iterable[DataFile],
    *,
    mirror: str | None = None,
    retries: int = 4,
    backoff: float = 0.5,
    timeout: float = 60.0,
    progress: Callable[[int], Progress] | None = None,
) -> FetchReport:
    """Make ``out`` hold every manifest file with its digest: skip the ones present, fetch the rest.

    ``mirror``: base URL of a copy of the data directory (every file is then fetched from it). ``progress``:
    a factory of a byte progress bar given the total (e.g. ``tqdm``); None shows none.

    Raises:
        DataError: a file has no source without a mirror (all such files named, before anything is fetched), a
            download fails or is refused (the file named), or a conversion does not give the manifest's digest.
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
                f"{len(unavailable)} file(s) have no pinned public source and can only come "
                f"from a mirror of the data directory: set {MIRROR_ENV} (or --mirror) to its base URL, "
                f"or set {DATA_DIR_ENV} to an existing copy.\n{lines}",
            )
    out.mkdir(parents=True, exist_ok=True)
    marker = out / INCOMPLETE_MARKER
    marker.touch()
    total = sum(e.size if (mirror is not None or e.raw is None) else e.raw.size for e in todo)
    bar = progress(total) if progress is not None and todo else NoProgress()
    try:
        for entry in todo:
            _fetch_one(entry, out, mirror, retries=retries, backoff=backoff, timeout=timeout, bar=bar)
    finally:
        bar.close()
    marker.unlink()
    return FetchReport(target=out, fetched=tuple(e.path for e in todo), present=present)


def build_data_dir(
    explicit: Path | None,
    *,
    mirror: str | None,
    manifest: Path = MANIFEST,
    env: Mapping[str, str] | None = None,
    **options: Any,
) -> FetchReport:
    """``python -m offline data``: an explicit ``--out`` is completed; the default directory (``$DATA_DIR``, else
    ``../shared/data``) is used as is when it exists without the in-progress marker, else built."""
    target, given = target_dir(explicit, env)
    if not given and target.is_dir() and not (target / INCOMPLETE_MARKER).exists():
        return FetchReport(target=target, fetched=(), present=(), used_as_is=True)
    return fetch_data(target, load_manifest(manifest), mirror=mirror, **options)
