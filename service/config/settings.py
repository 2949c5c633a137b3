"""The service's settings: one typed, frozen object read from environment variables once, in ``create_app``.

Each setting is declared once, as a field annotated with its ``Env`` (service/config/declared.py): the variable, the
meaning, the bounds; the field's default is the only default. The reader, the checks and the settings table of
docs/operations.md (``make settings-table``) derive from these declarations. Cost bounds and timeouts live in
``limits`` (service/config/limits.py), durable jobs and workers in ``jobs`` (service/config/jobs.py).

A malformed value raises ``SettingsError`` naming the variable, so a bad deployment fails at start-up.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit, urlunsplit

import msgspec

from service.config.declared import DeclaredSettings, Env
from service.config.errors import SettingsError
from service.config.jobs import JobSettings
from service.config.limits import LimitSettings

__all__ = ["HARD_MAX_BATCH_ITEMS", "HARD_MAX_CANDIDATES", "Settings", "SettingsError", "default_thresholds_path"]

# The wire types carry these caps (and the OpenAPI spec shows them); settings may only lower them.
HARD_MAX_BATCH_ITEMS = 1000
HARD_MAX_CANDIDATES = 20


def default_thresholds_path() -> Path:
    """The artifact shipped inside the ``artifact`` package (written by ``make calibrate``)."""
    import artifact  # the package's location only: the settings import nothing else of the artifact layer

    return Path(artifact.__file__).resolve().parent / "thresholds.json"


def _http_url(url: str) -> bool:
    return urlsplit(url).scheme in ("http", "https")


def _not_blank(text: str) -> bool:
    return bool(text.strip())


class Settings(DeclaredSettings, frozen=True, kw_only=True):
    """Everything the service reads from its environment, typed; build it with ``Settings.from_env()``."""

    thresholds_path: Annotated[Path, Env("THRESHOLDS_PATH", "the thresholds artifact loaded at start-up")] = (
        msgspec.field(default_factory=default_thresholds_path)
    )
    judges_file: Annotated[
        Path | None, Env("JUDGES_FILE", "JSON file of live judges (see judges.example.json)", unset="no live judge")
    ] = None
    rubrics_file: Annotated[
        Path | None,
        Env("RUBRICS_FILE", "JSON file of your criteria (service/judging/rubrics.py)", unset="SummEval's four"),
    ] = None
    panels_file: Annotated[
        Path | None,
        Env("PANELS_FILE", "JSON file of judge panels (service/scoring/panels.py)", unset="no named panel"),
    ] = None
    cascades_file: Annotated[
        Path | None,
        Env("CASCADES_FILE", "JSON file of judge cascades (service/scoring/cascades.py)", unset="no cascade"),
    ] = None
    artifacts_dir: Annotated[
        Path | None,
        Env("ARTIFACTS_DIR", "activated calibrations persist here, one file each (service/artifacts/activated.py)",
            unset="kept until restart"),
    ] = None  # fmt: skip
    artifacts_redis_key: Annotated[
        str | None,
        Env("ARTIFACTS_REDIS_KEY", "... and in this Redis hash (with REDIS_URL), shared by replicas",
            unset="not in Redis"),
    ] = None  # fmt: skip
    default_judge: Annotated[
        str | None,
        Env("DEFAULT_JUDGE", "judge used when a request names none", unset="the first judge of JUDGES_FILE"),
    ] = None
    default_alpha: Annotated[
        float, Env("DEFAULT_ALPHA", "miscoverage level when a request names none", gt=0.0, lt=1.0)
    ] = 0.10
    accept_max_set_size: Annotated[
        int,
        Env("ACCEPT_MAX_SET_SIZE", "set-size shares in calibration jobs' held-out figures (not /v1/score: it "
            "decides by the certified rule)", ge=1),
    ] = 2  # fmt: skip
    escalate_min_set_size: Annotated[
        int,
        Env("ESCALATE_MIN_SET_SIZE", "set-size shares in calibration jobs' held-out figures (as above)",
            gt="accept_max_set_size"),
    ] = 5  # fmt: skip
    flag_min_cycles: Annotated[
        int, Env("FLAG_MIN_CYCLES", "/v1/compare flags a tournament with >= this 3-cycles", ge=1)
    ] = 1
    api_keys: Annotated[
        tuple[str, ...],
        Env("API_KEYS", "comma-separated bearer keys for /v1/*", check=all, must="free of empty keys", unset="no auth",
            secret=True),
    ] = ()  # fmt: skip
    admin_api_key: Annotated[
        str | None,
        Env("ADMIN_API_KEY", "bearer key for POST /v1/calibration/reload", unset="reload refused", secret=True),
    ] = None
    max_body_bytes: Annotated[int, Env("MAX_BODY_BYTES", "largest request body (413 above it)", ge=1024)] = 10_000_000
    max_document_chars: Annotated[int, Env("MAX_DOCUMENT_CHARS", "longest `document` (422 above it)", ge=1)] = 100_000
    max_summary_chars: Annotated[
        int, Env("MAX_SUMMARY_CHARS", "longest `summary` / candidate text (422 above it)", ge=1)
    ] = 20_000
    max_batch_items: Annotated[
        int, Env("MAX_BATCH_ITEMS", "most items in /v1/score/batch", ge=1, le=HARD_MAX_BATCH_ITEMS)
    ] = HARD_MAX_BATCH_ITEMS
    max_candidates: Annotated[
        int, Env("MAX_CANDIDATES", "most candidates in /v1/compare", ge=3, le=HARD_MAX_CANDIDATES)
    ] = HARD_MAX_CANDIDATES
    redis_url: Annotated[str | None, Env("REDIS_URL", "Redis for the judge-answer cache", unset="in-process LRU")] = (
        None
    )
    cache_ttl_s: Annotated[int, Env("CACHE_TTL_S", "how long a judge answer stays cached, seconds", ge=1)] = 86_400
    cache_max_entries: Annotated[int, Env("CACHE_MAX_ENTRIES", "size of the in-process LRU", ge=1)] = 10_000
    judge_max_reply_bytes: Annotated[
        int,
        Env("JUDGE_MAX_REPLY_BYTES", "largest judge reply body read, enforced while it streams in (502 above it, "
            "per item)", ge=1024),
    ] = 256 * 1024  # fmt: skip
    breaker_probe_wait_s: Annotated[
        float, Env("BREAKER_PROBE_WAIT_S", "calls wait this long for a half-open breaker's probe", gt=0)
    ] = 30.0
    otel_exporter_otlp_endpoint: Annotated[
        str | None,
        Env("OTEL_EXPORTER_OTLP_ENDPOINT", "OTLP/HTTP collector base URL: traces on (otel extra; observability/)",
            check=_http_url, must="an http:// or https:// URL (the collector's base URL; traces go to <it>/v1/traces)",
            unset="no traces"),
    ] = None  # fmt: skip
    otel_service_name: Annotated[
        str, Env("OTEL_SERVICE_NAME", "`service.name` of the exported traces", check=_not_blank, must="not blank")
    ] = "conformal-judge"
    log_level: Annotated[
        str,
        Env("LOG_LEVEL", "structlog level", choices=("DEBUG", "INFO", "WARNING", "ERROR"), normalise=str.upper),
    ] = "INFO"
    access_log: Annotated[
        str,
        Env("ACCESS_LOG", "request log lines: all, errors (>= 400) or off", choices=("all", "errors", "off"),
            normalise=str.lower),
    ] = "errors"  # fmt: skip
    log_flush_ms: Annotated[
        int,
        Env("LOG_FLUSH_MS", "DEBUG and INFO log lines wait up to this many ms to leave in one write (0: each at "
            "once); WARNING, ERROR at once", ge=0, le=10_000),
    ] = 100  # fmt: skip
    host: Annotated[str, Env("HOST", "where `python -m service` listens")] = "127.0.0.1"
    port: Annotated[int, Env("PORT", "where `python -m service` listens", ge=1, le=65535)] = 8000
    monitor_delta: Annotated[
        float,
        Env("MONITOR_DELTA", "feedback monitors' false-alarm level per cell (over MONITOR_HORIZON documents); "
            "docs/monitoring.md", gt=0.0, lt=1.0),
    ] = 0.05  # fmt: skip
    monitor_horizon: Annotated[
        int, Env("MONITOR_HORIZON", "documents over which MONITOR_DELTA bounds false alarms", ge=1)
    ] = 1000
    monitor_max_items: Annotated[
        int, Env("MONITOR_MAX_ITEMS", "most labels of one document (more are refused)", ge=1)
    ] = 16
    monitor_max_open_groups: Annotated[
        int, Env("MONITOR_MAX_OPEN_GROUPS", "most open documents per monitor (more are refused)", ge=1)
    ] = 1_000
    monitor_max_per_tenant: Annotated[
        int, Env("MONITOR_MAX_PER_TENANT", "most monitors of one tenant (a new one past it: 429)", ge=1)
    ] = 20
    monitor_tenant_max_bytes: Annotated[
        int, Env("MONITOR_TENANT_MAX_BYTES", "bytes of kept feedback labels per tenant (past it: 429)", ge=1)
    ] = 50_000_000
    monitor_ttl_s: Annotated[
        int, Env("MONITOR_TTL_S", "a monitor's keys expire this long after its last label", ge=1)
    ] = 2_592_000
    monitor_remembered_ids: Annotated[
        int, Env("MONITOR_REMEMBERED_IDS", "item ids and closed documents a monitor remembers", ge=1)
    ] = 100_000
    monitor_refresh_s: Annotated[
        float, Env("MONITOR_REFRESH_S", "answers re-read the raised alarms at most this often", ge=0)
    ] = 1.0
    monitor_read_timeout_s: Annotated[
        float, Env("MONITOR_READ_TIMEOUT_S", "that read's bound (the last copy is kept past it)", gt=0)
    ] = 0.5
    limits: LimitSettings = msgspec.field(default_factory=LimitSettings)  # service/config/limits.py
    jobs: JobSettings = msgspec.field(default_factory=JobSettings)  # durable jobs: service/config/jobs.py

    def __repr__(self) -> str:
        """The settings with API keys, the admin key and a Redis password masked: a logged repr leaks none."""
        masked = {
            "api_keys": f"<{len(self.api_keys)} keys>",
            "admin_api_key": "None" if self.admin_api_key is None else "<set>",
            "redis_url": repr(_without_password(self.redis_url)),
        }
        parts = (f"{name}={masked.get(name, repr(getattr(self, name)))}" for name in self.__struct_fields__)
        return f"Settings({', '.join(parts)})"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read the settings from ``environ`` (default ``os.environ``); SettingsError names a bad variable."""
        return super().from_env(os.environ if environ is None else environ)


def _without_password(url: str | None) -> str | None:
    """The URL with any password replaced by ``***`` (for logs and reprs)."""
    if not url or "@" not in url:
        return url
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))
