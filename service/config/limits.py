"""Settings that bound what one request or connection may cost: one typed, frozen object, a field of ``Settings``.

================================== ========================================================= ===========================
variable                           meaning                                                   default
================================== ========================================================= ===========================
``MFAS_TIME_LIMIT_S``              wall-clock limit of the exact MFAS ranking of one compare  ``2.0``
                                   (past it: the heuristic order and ``exact: false``)
``MAX_JUDGE_CALLS``                most judge calls one request may cause (422 above it):     ``1200``
                                   pairs x repetitions x orders in /v1/compare
``RELOAD_DIR``                     the only directory reload reads artifacts from            THRESHOLDS_PATH's directory
``MAX_ARTIFACT_BYTES``             largest artifact file reload reads                        ``50000000``
``WORKERS``                        server processes of ``python -m service``                 ``1``
``HEADER_TIMEOUT_S``               a request's headers must arrive within this              ``10``
``BODY_TIMEOUT_S``                 a request's body must arrive within this after headers   ``30``
``KEEPALIVE_TIMEOUT_S``            an idle keep-alive connection is closed after this       ``5``
``MAX_CALIBRATION_CELL_ROWS``      most labelled rows of one cell (judge, prompt family,    ``20000``
                                   criterion) POST /v1/calibrations fits (422 above it)
``MIN_BODY_RATE``                  bytes a second a body must average past BODY_TIMEOUT_S:  ``50000``
                                   its deadline is BODY_TIMEOUT_S + bytes received / this
``SEND_TIMEOUT_S``                 longest a response may wait for a client that does not   ``30``
                                   read (its send buffer full); past it the connection drops
``MAX_ESTIMATE_VALUES``            most numbers (human labels + judge verdicts, every        ``200000``
                                   system) one POST /v1/estimates[/batch] reads (422 above)
``MAX_RANKING_BATTLES``            most battles one POST /v1/rankings reads (422 above it)  ``200000``
``MAX_RANKING_MODELS``             most distinct models one POST /v1/rankings ranks         ``100``
``MIN_LABELLED_BATTLES_PER_MODEL`` POST /v1/rankings: a model with fewer labelled            ``20``
                                   battles is unknown (rank set [1, k], never separable);
                                   a request's min_labelled_battles overrides it (0: off)
================================== ========================================================= ===========================
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from service.config.errors import SettingsError

__all__ = ["LimitSettings"]

T = TypeVar("T")

_VARIABLES = {
    "mfas_time_limit_s": "MFAS_TIME_LIMIT_S",
    "max_judge_calls": "MAX_JUDGE_CALLS",
    "max_artifact_bytes": "MAX_ARTIFACT_BYTES",
    "workers": "WORKERS",
    "header_timeout_s": "HEADER_TIMEOUT_S",
    "body_timeout_s": "BODY_TIMEOUT_S",
    "keepalive_timeout_s": "KEEPALIVE_TIMEOUT_S",
    "min_body_rate": "MIN_BODY_RATE",
    "send_timeout_s": "SEND_TIMEOUT_S",
    "max_calibration_cell_rows": "MAX_CALIBRATION_CELL_ROWS",
    "max_estimate_values": "MAX_ESTIMATE_VALUES",
    "max_ranking_battles": "MAX_RANKING_BATTLES",
    "max_ranking_models": "MAX_RANKING_MODELS",
    "min_labelled_battles_per_model": "MIN_LABELLED_BATTLES_PER_MODEL",
}


class LimitSettings(msgspec.Struct, frozen=True, kw_only=True):
    """Per-request cost bounds, reload confinement and server timeouts (see the module table)."""

    mfas_time_limit_s: float = 2.0
    max_judge_calls: int = 1200
    reload_dir: Path | None = None
    max_artifact_bytes: int = 50_000_000
    workers: int = 1
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    keepalive_timeout_s: float = 5.0
    min_body_rate: int = 50_000  # bytes/s (400 kbit/s): a 30 MB upload has ~10 min, a stalled one BODY_TIMEOUT_S
    send_timeout_s: float = 30.0
    max_calibration_cell_rows: int = 20_000  # a fit's memory grows with its cell (about 14 kB a row, measured)
    # the finite-sample interval bisects over every value: about 10 us a value (measured), so ~2 s at the default
    max_estimate_values: int = 200_000
    max_ranking_battles: int = 200_000  # win rates are bincounts: linear and cheap
    max_ranking_models: int = 100  # k x k covariance and separability matrices
    # below it a model's variance estimate is unreliable (docs/estimates.md; bench/bench_rank_guard.py)
    min_labelled_battles_per_model: int = 20

    def __post_init__(self) -> None:
        for field, minimum in (
            ("mfas_time_limit_s", 0.01),
            ("max_judge_calls", 1),
            ("max_artifact_bytes", 1024),
            ("workers", 1),
            ("header_timeout_s", 0.01),
            ("body_timeout_s", 0.01),
            ("keepalive_timeout_s", 0.01),
            ("min_body_rate", 1),
            ("send_timeout_s", 0.01),
            ("max_calibration_cell_rows", 8),
            ("max_estimate_values", 8),
            ("max_ranking_battles", 2),
            ("max_ranking_models", 2),
            ("min_labelled_battles_per_model", 0),
        ):
            value = getattr(self, field)
            if value < minimum:
                raise SettingsError(f"{_VARIABLES[field]}={value!r} must be >= {minimum}")

    @classmethod
    def from_env(cls, get: Callable[[str, Callable[[str], T], T], T]) -> LimitSettings:
        """Read the variables through ``Settings.from_env``'s ``get(name, parse, default)``."""
        defaults = cls()
        values: dict[str, Any] = {
            field: get(variable, type(getattr(defaults, field)), getattr(defaults, field))
            for field, variable in _VARIABLES.items()
        }
        values["reload_dir"] = get("RELOAD_DIR", Path, None)  # type: ignore[arg-type]
        return cls(**values)
