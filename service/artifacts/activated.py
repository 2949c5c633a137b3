"""Activated artifacts kept so they survive a restart: ``<ARTIFACTS_DIR>/<name>.json``, one artifact each, and in
Redis (a hash ``ARTIFACTS_REDIS_KEY``: name -> artifact JSON) when that and REDIS_URL are set, so replicas share them.

Neither set: activation lasts for the process only. A name is 1-64 characters of letters, digits, ``_``, ``-`` and
``.`` starting with a letter or digit, without ``..`` and not ending in ``.json``, so it is always a plain file name
inside the directory; a reserved name (``service.artifacts.registry.RESERVED_NAMES``: ``primary``, any case) is
refused, so a
file or hash entry of that name is never loaded as an activated artifact. Files are written
atomically (``artifact.thresholds.save_artifact``: temp file + rename). At start-up the directory's files and
the Redis hash are loaded in name order (a name in both: Redis's copy); Redis unreachable then is reported, not
fatal (the service works without Redis). A save writes Redis first, then the file (undoing Redis if the file
fails); any failure is a :class:`PersistError` (503 with Retry-After) and nothing is activated.

Every save and delete also increments ``<ARTIFACTS_REDIS_KEY>:version`` (in the same transaction as the hash);
:meth:`ActivatedStore.version` is that counter and the directory's listing (name, mtime, size per file), so a
process that only reads (a job worker) can tell cheaply whether anything changed (``CalibrationHolder.follow``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import cast

import redis
from redis.exceptions import RedisError

from artifact.thresholds import ThresholdsArtifact, decode_artifact, encode_artifact, load_artifact, save_artifact
from calibration.errors import ArtifactError
from service.artifacts.registry import RESERVED_NAMES
from service.errors import CalibrationUnavailableError

__all__ = ["NAME_PATTERN", "PERSIST_RETRY_AFTER_S", "ActivatedStore", "PersistError", "check_name"]

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
PERSIST_RETRY_AFTER_S = 5  # Redis or the disk may be back by then; the caller retries the same request


def check_name(name: str) -> str:
    """The name itself when it may name an activated artifact (module rule); ValueError otherwise."""
    if not NAME_PATTERN.match(name) or name.lower().endswith(".json") or ".." in name:
        raise ValueError(
            f"artifact name {name!r} must be 1-64 letters, digits, '_', '-' or '.' starting with a letter "
            "or digit (no '..', not ending in .json)"
        )
    if name.lower() in RESERVED_NAMES:
        raise ValueError(
            f"artifact name {name!r} is reserved for the artifact loaded from THRESHOLDS_PATH; choose another name"
        )
    return name


class PersistError(CalibrationUnavailableError):
    """ARTIFACTS_DIR or the Redis hash cannot be written (503 with Retry-After): the change is refused and nothing
    changes."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail, headers={"Retry-After": str(PERSIST_RETRY_AFTER_S)})


class ActivatedStore:
    """The directory (and Redis hash) of activated artifacts; nothing is kept when neither is given."""

    def __init__(
        self, directory: str | Path | None, *, redis_url: str | None = None, redis_key: str | None = None
    ) -> None:
        self.directory = None if directory is None else Path(directory)
        self.redis_key = redis_key if redis_url and redis_key else None
        self._redis = (
            redis.Redis.from_url(redis_url, socket_timeout=2.0, socket_connect_timeout=2.0)
            if self.redis_key is not None and redis_url
            else None
        )
        self.unavailable: list[str] = []  # what load_all could not reach

    @property
    def persistent(self) -> bool:
        """True when an activated artifact is kept beyond this process (ARTIFACTS_DIR, or the Redis hash)."""
        return self.directory is not None or self._redis is not None

    def not_kept(self, name: str) -> list[str]:
        """The warning an activation of ``name`` answers with when nothing keeps it (module rule); else none."""
        if self.persistent:
            return []
        return [
            f"artifact {name!r} is active in this process only: neither ARTIFACTS_DIR nor ARTIFACTS_REDIS_KEY "
            "(with REDIS_URL) is set, so a restart forgets it and other replicas never see it"
        ]

    def _from_redis(self) -> dict[str, tuple[str, ThresholdsArtifact | ArtifactError]]:
        if self._redis is None or self.redis_key is None:
            return {}
        try:
            # a client without decode_responses answers bytes
            stored = cast(dict[bytes, bytes], self._redis.hgetall(self.redis_key))
        except RedisError as error:
            self.unavailable.append(
                f"Redis {self.redis_key}: unreachable ({type(error).__name__}); the artifacts "
                "activated there were not loaded"
            )
            return {}
        found: dict[str, tuple[str, ThresholdsArtifact | ArtifactError]] = {}
        for raw_name, data in stored.items():
            name = raw_name.decode("utf-8", "replace")
            source = f"redis:{self.redis_key}/{name}"
            try:
                found[check_name(name)] = (source, decode_artifact(data, source=source))
            except ArtifactError as error:
                found[name] = (source, error)
            except ValueError as error:
                found[name] = (source, ArtifactError(f"{source}: {error}"))
        return found

    def _version_key(self) -> str:
        return f"{self.redis_key}:version"

    def version(self) -> tuple[object, ...] | None:
        """A token that changes whenever an artifact is saved or deleted (module rules); None when the store cannot
        be read now (Redis down), so the caller keeps what it has."""
        parts: list[object] = []
        if self._redis is not None and self.redis_key is not None:
            try:
                parts.append(self._redis.get(self._version_key()))
            except RedisError:
                return None
        if self.directory is not None:
            try:
                with os.scandir(self.directory) as listing:
                    files = [
                        (e.name, e.stat().st_mtime_ns, e.stat().st_size)
                        for e in listing
                        if e.name.endswith(".json") and e.is_file()
                    ]
            except FileNotFoundError:
                files = []
            except OSError:
                return None
            parts.append(tuple(sorted(files)))
        return tuple(parts)

    def path(self, name: str) -> Path | None:
        """Where artifact ``name`` is kept (None without a directory)."""
        return None if self.directory is None else self.directory / f"{check_name(name)}.json"

    def load_all(self) -> list[tuple[str, str, ThresholdsArtifact | ArtifactError]]:
        """Every ``*.json`` in the directory and every artifact in the Redis hash, in name order (a name in both:
        Redis's copy): (name, where, artifact or the error reading it)."""
        found: dict[str, tuple[str, ThresholdsArtifact | ArtifactError]] = {}
        if self.directory is not None and self.directory.is_dir():
            for path in sorted(self.directory.glob("*.json")):
                try:
                    found[check_name(path.stem)] = (str(path), load_artifact(path))
                except ArtifactError as error:
                    found[path.stem] = (str(path), error)
                except ValueError as error:  # a file name that is not an artifact name
                    found[path.stem] = (str(path), ArtifactError(f"{path}: {error}"))
        found.update(self._from_redis())
        return [(name, where, outcome) for name, (where, outcome) in sorted(found.items())]

    def save(self, name: str, artifact: ThresholdsArtifact) -> None:
        """Write the artifact atomically (no-op without a directory); PersistError when the disk refuses, so the
        caller publishes nothing (never half-activated)."""
        if self._redis is not None and self.redis_key is not None:
            try:
                with self._redis.pipeline(transaction=True) as pipe:
                    pipe.hset(self.redis_key, check_name(name), encode_artifact(artifact))
                    pipe.incr(self._version_key())
                    pipe.execute()
            except RedisError as error:
                raise PersistError(
                    f"cannot keep the artifact in Redis ({self.redis_key}): {type(error).__name__}; "
                    "nothing was activated"
                ) from None
        path = self.path(name)
        if path is not None:
            try:
                save_artifact(artifact, path)
            except OSError as error:
                if self._redis is not None:
                    try:
                        self._redis.hdel(self.redis_key, name)  # type: ignore[arg-type]
                    except RedisError:
                        pass
                raise PersistError(
                    f"cannot keep the artifact in ARTIFACTS_DIR ({path}): {error.strerror or error}; "
                    "nothing was activated"
                ) from None

    def delete(self, name: str) -> None:
        """Remove the persisted copies, if any; PersistError when Redis cannot be reached (nothing is removed)."""
        if self._redis is not None and self.redis_key is not None:
            try:
                with self._redis.pipeline(transaction=True) as pipe:
                    pipe.hdel(self.redis_key, check_name(name))
                    pipe.incr(self._version_key())
                    pipe.execute()
            except RedisError as error:
                raise PersistError(
                    f"cannot remove the artifact from Redis ({self.redis_key}): {type(error).__name__}"
                ) from None
        path = self.path(name)
        if path is not None:
            path.unlink(missing_ok=True)

    def close(self) -> None:
        """Close the Redis connection pool, if any."""
        if self._redis is not None:
            self._redis.close()
