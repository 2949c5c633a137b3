"""Where the real data lives: an explicit path, else ``$DATA_DIR``, else ``../shared/data`` beside the checkout when it
exists, else ``.data`` in the checkout (where ``make data`` builds it by default)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from offline.build.inputs.errors import DataError

__all__ = ["BUILT_DATA_DIR", "DATA_DIR_ENV", "REPO_ROOT", "SHARED_DATA_DIR", "default_data_dir", "resolve_data_dir"]

DATA_DIR_ENV = "DATA_DIR"
# offline/data/paths.py -> the repository root is three levels up.
REPO_ROOT = Path(__file__).resolve().parents[2]
# The data directory beside the checkout (development: the shared copy) and the one `make data` builds otherwise.
SHARED_DATA_DIR = REPO_ROOT.parent / "shared" / "data"
BUILT_DATA_DIR = REPO_ROOT / ".data"


def default_data_dir() -> Path:
    """The data directory when none is named: ``../shared/data`` beside the checkout when it exists, else the
    checkout's ``.data`` (``make data``'s default target; it may not exist yet)."""
    return SHARED_DATA_DIR if SHARED_DATA_DIR.is_dir() else BUILT_DATA_DIR


def resolve_data_dir(explicit: Path | str | None = None, *, env: Mapping[str, str] | None = None) -> Path:
    """Return the data directory: ``explicit``, else ``env["DATA_DIR"]`` (``os.environ`` by default), else
    ``../shared/data`` beside the repository when it exists, else the checkout's ``.data`` when it exists.

    Raises:
        DataError: the chosen directory does not exist, or no candidate exists; the message says what to set.
    """
    environ = os.environ if env is None else env
    if explicit is not None:
        path = Path(explicit).expanduser()
        if not path.is_dir():
            raise DataError(path, None, "the data directory given explicitly does not exist or is not a directory")
        return path
    configured = environ.get(DATA_DIR_ENV)
    if configured:
        path = Path(configured).expanduser()
        if not path.is_dir():
            raise DataError(
                path,
                None,
                f"${DATA_DIR_ENV} points to a directory that does not exist: set {DATA_DIR_ENV} to "
                "the shared data directory (the one holding summeval/, judges/, pairwise/, frank/)",
            )
        return path
    fallback = default_data_dir()
    if fallback.is_dir():
        return fallback
    raise DataError(
        None,
        None,
        f"no data directory found: set the environment variable {DATA_DIR_ENV} to the shared data "
        f"directory (the one holding summeval/, judges/, pairwise/, frank/), pass it explicitly, or build it with "
        f"`make data` (into {BUILT_DATA_DIR})",
    )
