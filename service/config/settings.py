"""The service's settings: one typed, frozen object read from environment variables once, in ``create_app``.

=============================== ========================================================= ============================
variable                        meaning                                                   default
=============================== ========================================================= ============================
``THRESHOLDS_PATH``             the thresholds artifact loaded at start-up                ``artifact/thresholds.json``
                                                                                          in the installed package
``JUDGES_FILE``                 JSON file of live judges (see judges.example.json)        unset: no live judge
``RUBRICS_FILE``                JSON file of your criteria (service/judging/rubrics.py)   unset: SummEval's four
``PANELS_FILE``                 JSON file of judge panels (service/scoring/panels.py)     unset: no named panel
``CASCADES_FILE``               JSON file of judge cascades (service/scoring/cascades.py) unset: no cascade
``ARTIFACTS_DIR``               activated calibrations persist here (one file each)       unset: until restart
``ARTIFACTS_REDIS_KEY``         ... and in this Redis hash, shared by replicas            unset: not in Redis
``DEFAULT_JUDGE``               judge used when a request names none                      first judge of JUDGES_FILE
``DEFAULT_ALPHA``               miscoverage level when a request names none               ``0.10``
``ACCEPT_MAX_SET_SIZE``         set-size shares in calibration jobs' held-out figures     ``2``
``ESCALATE_MIN_SET_SIZE``       (not /v1/score: it decides by the certified rule)         ``5``
``FLAG_MIN_CYCLES``             /v1/compare flags a tournament with >= this 3-cycles      ``1``
``API_KEYS``                    comma-separated bearer keys for /v1/*                     unset: no auth
``ADMIN_API_KEY``               bearer key for POST /v1/calibration/reload                unset: reload refused
``MAX_BODY_BYTES``              largest request body (413 above it)                       ``10000000``
``MAX_DOCUMENT_CHARS``          longest ``document`` (422 above it)                       ``100000``
``MAX_SUMMARY_CHARS``           longest ``summary`` / candidate text (422 above it)       ``20000``
``MAX_BATCH_ITEMS``             most items in /v1/score/batch (hard cap 1000)             ``1000``
``MAX_CANDIDATES``              most candidates in /v1/compare (hard cap 20)              ``20``
``REDIS_URL``                   Redis for the judge-answer cache                          unset: in-process LRU
``CACHE_TTL_S``                 how long a judge answer stays cached, seconds             ``86400``
``CACHE_MAX_ENTRIES``           size of the in-process LRU                                ``10000``
``JUDGE_MAX_REPLY_BYTES``       largest judge reply body read (502 above it, per item)    ``262144``
``BREAKER_PROBE_WAIT_S``        calls wait this long for a half-open breaker's probe      ``30``
``OTEL_EXPORTER_OTLP_ENDPOINT`` OTLP/HTTP collector base URL: traces on (otel extra)      unset: no traces
``OTEL_SERVICE_NAME``           ``service.name`` of the exported traces                   ``conformal-judge``
``LOG_LEVEL``                   structlog level (DEBUG, INFO, WARNING, ERROR)             ``INFO``
``ACCESS_LOG``                  request log lines: all, errors (>= 400) or off            ``errors``
``LOG_FLUSH_MS``                DEBUG and INFO log lines wait up to this many ms to leave ``100``
                                in one write (0: each at once); WARNING, ERROR at once
``HOST`` / ``PORT``             where ``python -m service`` listens                       ``127.0.0.1`` / ``8000``
``MONITOR_DELTA``               feedback monitors' false-alarm level per cell (over       ``0.05``
                                MONITOR_HORIZON documents); docs/monitoring.md
``MONITOR_HORIZON``             documents over which MONITOR_DELTA bounds false alarms    ``1000``
``MONITOR_MAX_ITEMS``           most labels of one document (more are refused)            ``16``
``MONITOR_MAX_OPEN_GROUPS``     most open documents per monitor (more are refused)        ``1000``
``MONITOR_MAX_PER_TENANT``      most monitors of one tenant (a new one past it: 429)      ``20``
``MONITOR_TENANT_MAX_BYTES``    bytes of kept feedback labels per tenant (past it: 429)   ``50000000``
``MONITOR_TTL_S``               a monitor's keys expire this long after its last label    ``2592000``
``MONITOR_REMEMBERED_IDS``      item ids and closed documents a monitor remembers         ``100000``
``MONITOR_REFRESH_S``           answers re-read the raised alarms at most this often      ``1.0``
``MONITOR_READ_TIMEOUT_S``      that read's bound (the last copy is kept past it)         ``0.5``
(cost bounds, timeouts)         ``limits``: ``service/config/limits.py`` lists them       see there
(jobs, workers, admission)      ``jobs``: ``service/config/jobs.py`` lists them           see there
=============================== ========================================================= ============================

A malformed value raises ``SettingsError`` naming the variable, so a bad deployment fails at start-up.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit, urlunsplit

import msgspec

from service.config.errors import SettingsError
from service.config.jobs import JobSettings
from service.config.limits import LimitSettings

__all__ = ["HARD_MAX_BATCH_ITEMS", "HARD_MAX_CANDIDATES", "Settings", "SettingsError", "default_thresholds_path"]

# The wire types carry these caps (and the OpenAPI spec shows them); settings may only lower them.
HARD_MAX_BATCH_ITEMS = 1000
HARD_MAX_CANDIDATES = 20
_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
_ACCESS_LOG_MODES = ("all", "errors", "off")

T = TypeVar("T")


def default_thresholds_path() -> Path:
    """The artifact shipped inside the ``artifact`` package (written by ``make calibrate``)."""
    import artifact  # the package's location only: the settings import nothing else of the artifact layer

    return Path(artifact.__file__).resolve().parent / "thresholds.json"


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the service reads from its environment, typed; build it with ``Settings.from_env()``."""

    thresholds_path: Path
    judges_file: Path | None = None
    rubrics_file: Path | None = None  # RUBRICS_FILE: your criteria (service/judging/rubrics.py)
    panels_file: Path | None = None  # PANELS_FILE: named judge panels (service/scoring/panels.py)
    cascades_file: Path | None = None  # CASCADES_FILE: named judge cascades (service/scoring/cascades.py)
    artifacts_dir: Path | None = None  # ARTIFACTS_DIR: activated artifacts persist here
    # (service/artifacts/activated.py)
    artifacts_redis_key: str | None = None  # ARTIFACTS_REDIS_KEY: ... and in this Redis hash (with REDIS_URL)
    default_judge: str | None = None
    default_alpha: float = 0.10
    accept_max_set_size: int = 2
    escalate_min_set_size: int = 5
    flag_min_cycles: int = 1
    api_keys: tuple[str, ...] = ()
    admin_api_key: str | None = None
    max_body_bytes: int = 10_000_000
    max_document_chars: int = 100_000
    max_summary_chars: int = 20_000
    max_batch_items: int = HARD_MAX_BATCH_ITEMS
    max_candidates: int = HARD_MAX_CANDIDATES
    redis_url: str | None = None
    cache_ttl_s: int = 86_400
    cache_max_entries: int = 10_000
    judge_max_reply_bytes: int = 256 * 1024  # JUDGE_MAX_REPLY_BYTES: enforced while the reply streams in
    breaker_probe_wait_s: float = 30.0  # BREAKER_PROBE_WAIT_S: bounded wait for a half-open breaker's probe
    otel_exporter_otlp_endpoint: str | None = None  # OTEL_EXPORTER_OTLP_ENDPOINT: traces on (observability/otel.py)
    otel_service_name: str = "conformal-judge"  # OTEL_SERVICE_NAME
    log_level: str = "INFO"
    access_log: str = "errors"
    log_flush_ms: int = 100
    host: str = "127.0.0.1"
    port: int = 8000
    monitor_delta: float = 0.05  # MONITOR_DELTA (service/monitoring/)
    monitor_horizon: int = 1000
    monitor_max_items: int = 16
    monitor_max_open_groups: int = 1_000
    monitor_max_per_tenant: int = 20
    monitor_tenant_max_bytes: int = 50_000_000
    monitor_ttl_s: int = 2_592_000
    monitor_remembered_ids: int = 100_000
    monitor_refresh_s: float = 1.0
    monitor_read_timeout_s: float = 0.5
    limits: LimitSettings = msgspec.field(default_factory=LimitSettings)  # service/config/limits.py
    jobs: JobSettings = msgspec.field(default_factory=JobSettings)  # durable jobs: service/config/jobs.py

    def __post_init__(self) -> None:
        _check(0.0 < self.default_alpha < 1.0, "DEFAULT_ALPHA", self.default_alpha, "must lie in (0, 1)")
        _check(self.accept_max_set_size >= 1, "ACCEPT_MAX_SET_SIZE", self.accept_max_set_size, "must be >= 1")
        _check(
            self.escalate_min_set_size > self.accept_max_set_size,
            "ESCALATE_MIN_SET_SIZE",
            self.escalate_min_set_size,
            f"must exceed ACCEPT_MAX_SET_SIZE={self.accept_max_set_size}",
        )
        _check(self.flag_min_cycles >= 1, "FLAG_MIN_CYCLES", self.flag_min_cycles, "must be >= 1")
        _check(self.max_body_bytes >= 1024, "MAX_BODY_BYTES", self.max_body_bytes, "must be >= 1024")
        _check(self.max_document_chars >= 1, "MAX_DOCUMENT_CHARS", self.max_document_chars, "must be >= 1")
        _check(self.max_summary_chars >= 1, "MAX_SUMMARY_CHARS", self.max_summary_chars, "must be >= 1")
        _check(
            1 <= self.max_batch_items <= HARD_MAX_BATCH_ITEMS,
            "MAX_BATCH_ITEMS",
            self.max_batch_items,
            f"must lie in 1..{HARD_MAX_BATCH_ITEMS}",
        )
        _check(
            3 <= self.max_candidates <= HARD_MAX_CANDIDATES,
            "MAX_CANDIDATES",
            self.max_candidates,
            f"must lie in 3..{HARD_MAX_CANDIDATES}",
        )
        _check(self.cache_ttl_s >= 1, "CACHE_TTL_S", self.cache_ttl_s, "must be >= 1")
        _check(self.cache_max_entries >= 1, "CACHE_MAX_ENTRIES", self.cache_max_entries, "must be >= 1")
        _check(
            self.judge_max_reply_bytes >= 1024, "JUDGE_MAX_REPLY_BYTES", self.judge_max_reply_bytes, "must be >= 1024"
        )
        _check(self.breaker_probe_wait_s > 0, "BREAKER_PROBE_WAIT_S", self.breaker_probe_wait_s, "must be > 0")
        _check(
            self.otel_exporter_otlp_endpoint is None
            or urlsplit(self.otel_exporter_otlp_endpoint).scheme in ("http", "https"),
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            self.otel_exporter_otlp_endpoint,
            "must be an http:// or https:// URL (the collector's base URL; traces go to <it>/v1/traces)",
        )
        _check(bool(self.otel_service_name.strip()), "OTEL_SERVICE_NAME", self.otel_service_name, "must not be blank")
        _check(self.log_level in _LOG_LEVELS, "LOG_LEVEL", self.log_level, f"must be one of {_LOG_LEVELS}")
        _check(
            self.access_log in _ACCESS_LOG_MODES, "ACCESS_LOG", self.access_log, f"must be one of {_ACCESS_LOG_MODES}"
        )
        _check(0 <= self.log_flush_ms <= 10_000, "LOG_FLUSH_MS", self.log_flush_ms, "must lie in 0..10000")
        _check(1 <= self.port <= 65535, "PORT", self.port, "must lie in 1..65535")
        _check(all(self.api_keys), "API_KEYS", "<hidden>", "must not contain empty keys")
        _check(0.0 < self.monitor_delta < 1.0, "MONITOR_DELTA", self.monitor_delta, "must lie in (0, 1)")
        for name, value in (
            ("MONITOR_HORIZON", self.monitor_horizon),
            ("MONITOR_MAX_ITEMS", self.monitor_max_items),
            ("MONITOR_MAX_OPEN_GROUPS", self.monitor_max_open_groups),
            ("MONITOR_MAX_PER_TENANT", self.monitor_max_per_tenant),
            ("MONITOR_TENANT_MAX_BYTES", self.monitor_tenant_max_bytes),
            ("MONITOR_TTL_S", self.monitor_ttl_s),
            ("MONITOR_REMEMBERED_IDS", self.monitor_remembered_ids),
        ):
            _check(value >= 1, name, value, "must be >= 1")
        _check(self.monitor_refresh_s >= 0, "MONITOR_REFRESH_S", self.monitor_refresh_s, "must be >= 0")
        _check(self.monitor_read_timeout_s > 0, "MONITOR_READ_TIMEOUT_S", self.monitor_read_timeout_s, "must be > 0")

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
        env = os.environ if environ is None else environ

        def get(name: str, parse: Callable[[str], T], default: T) -> T:
            raw = env.get(name, "").strip()
            if not raw:
                return default
            try:
                return parse(raw)
            except ValueError as error:
                raise SettingsError(f"{name}={raw!r} is not valid: {error}") from None

        keys = tuple(key.strip() for key in env.get("API_KEYS", "").split(",") if key.strip())
        return cls(
            thresholds_path=get("THRESHOLDS_PATH", Path, default_thresholds_path()),
            judges_file=get("JUDGES_FILE", Path, None),
            rubrics_file=get("RUBRICS_FILE", Path, None),
            panels_file=get("PANELS_FILE", Path, None),
            cascades_file=get("CASCADES_FILE", Path, None),
            artifacts_dir=get("ARTIFACTS_DIR", Path, None),
            artifacts_redis_key=get("ARTIFACTS_REDIS_KEY", str, None),
            default_judge=get("DEFAULT_JUDGE", str, None),
            default_alpha=get("DEFAULT_ALPHA", float, 0.10),
            accept_max_set_size=get("ACCEPT_MAX_SET_SIZE", int, 2),
            escalate_min_set_size=get("ESCALATE_MIN_SET_SIZE", int, 5),
            flag_min_cycles=get("FLAG_MIN_CYCLES", int, 1),
            api_keys=keys,
            admin_api_key=get("ADMIN_API_KEY", str, None),
            max_body_bytes=get("MAX_BODY_BYTES", int, 10_000_000),
            max_document_chars=get("MAX_DOCUMENT_CHARS", int, 100_000),
            max_summary_chars=get("MAX_SUMMARY_CHARS", int, 20_000),
            max_batch_items=get("MAX_BATCH_ITEMS", int, HARD_MAX_BATCH_ITEMS),
            max_candidates=get("MAX_CANDIDATES", int, HARD_MAX_CANDIDATES),
            redis_url=get("REDIS_URL", str, None),
            cache_ttl_s=get("CACHE_TTL_S", int, 86_400),
            cache_max_entries=get("CACHE_MAX_ENTRIES", int, 10_000),
            judge_max_reply_bytes=get("JUDGE_MAX_REPLY_BYTES", int, 256 * 1024),
            breaker_probe_wait_s=get("BREAKER_PROBE_WAIT_S", float, 30.0),
            otel_exporter_otlp_endpoint=get("OTEL_EXPORTER_OTLP_ENDPOINT", str, None),
            otel_service_name=get("OTEL_SERVICE_NAME", str, "conformal-judge"),
            log_level=get("LOG_LEVEL", str.upper, "INFO"),
            access_log=get("ACCESS_LOG", str.lower, "errors"),
            log_flush_ms=get("LOG_FLUSH_MS", int, 100),
            host=get("HOST", str, "127.0.0.1"),
            port=get("PORT", int, 8000),
            monitor_delta=get("MONITOR_DELTA", float, 0.05),
            monitor_horizon=get("MONITOR_HORIZON", int, 1000),
            monitor_max_items=get("MONITOR_MAX_ITEMS", int, 16),
            monitor_max_open_groups=get("MONITOR_MAX_OPEN_GROUPS", int, 1_000),
            monitor_max_per_tenant=get("MONITOR_MAX_PER_TENANT", int, 20),
            monitor_tenant_max_bytes=get("MONITOR_TENANT_MAX_BYTES", int, 50_000_000),
            monitor_ttl_s=get("MONITOR_TTL_S", int, 2_592_000),
            monitor_remembered_ids=get("MONITOR_REMEMBERED_IDS", int, 100_000),
            monitor_refresh_s=get("MONITOR_REFRESH_S", float, 1.0),
            monitor_read_timeout_s=get("MONITOR_READ_TIMEOUT_S", float, 0.5),
            limits=LimitSettings.from_env(get),
            jobs=JobSettings.from_env(get),
        )


def _without_password(url: str | None) -> str | None:
    """The URL with any password replaced by ``***`` (for logs and reprs)."""
    if not url or "@" not in url:
        return url
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def _check(condition: bool, name: str, value: object, rule: str) -> None:
    if not condition:
        raise SettingsError(f"{name}={value!r} {rule}")
