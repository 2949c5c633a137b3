"""Settings that bound what one request or connection may cost: one typed, frozen object, a field of ``Settings``.

Each setting is declared once (service/config/declared.py); docs/operations.md's table is generated from them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from service.config.declared import DeclaredSettings, Env

__all__ = ["LimitSettings"]


class LimitSettings(DeclaredSettings, frozen=True, kw_only=True):
    """Per-request cost bounds, reload confinement and server timeouts."""

    mfas_time_limit_s: Annotated[
        float,
        Env("MFAS_TIME_LIMIT_S", "wall-clock limit of the exact MFAS ranking of one compare (past it: the heuristic "
            "order and `exact: false`)", ge=0.01),
    ] = 2.0  # fmt: skip
    max_judge_calls: Annotated[
        int,
        Env("MAX_JUDGE_CALLS", "most judge calls one request may cause (422 above it): pairs x repetitions x orders "
            "in /v1/compare", ge=1),
    ] = 1200  # fmt: skip
    reload_dir: Annotated[
        Path | None,
        Env("RELOAD_DIR", "the only directory reload reads artifacts from", unset="THRESHOLDS_PATH's directory"),
    ] = None
    max_artifact_bytes: Annotated[int, Env("MAX_ARTIFACT_BYTES", "largest artifact file reload reads", ge=1024)] = (
        50_000_000
    )
    workers: Annotated[int, Env("WORKERS", "server processes of `python -m service`", ge=1)] = 1
    header_timeout_s: Annotated[
        float, Env("HEADER_TIMEOUT_S", "a request's headers must arrive within this", ge=0.01)
    ] = 10.0
    body_timeout_s: Annotated[
        float, Env("BODY_TIMEOUT_S", "a request's body must arrive within this after headers", ge=0.01)
    ] = 30.0
    keepalive_timeout_s: Annotated[
        float, Env("KEEPALIVE_TIMEOUT_S", "an idle keep-alive connection is closed after this", ge=0.01)
    ] = 5.0
    # 50 kB/s (400 kbit/s): a 30 MB upload has about 10 min, a stalled one BODY_TIMEOUT_S
    min_body_rate: Annotated[
        int,
        Env("MIN_BODY_RATE", "bytes a second a body must average past BODY_TIMEOUT_S: its deadline is "
            "BODY_TIMEOUT_S + bytes received / this", ge=1),
    ] = 50_000  # fmt: skip
    send_timeout_s: Annotated[
        float,
        Env("SEND_TIMEOUT_S", "longest a response may wait for a client that does not read (its send buffer full); "
            "past it the connection drops", ge=0.01),
    ] = 30.0  # fmt: skip
    # a fit's memory grows with its cell (about 14 kB a row, measured)
    max_calibration_cell_rows: Annotated[
        int,
        Env("MAX_CALIBRATION_CELL_ROWS", "most labelled rows of one cell (judge, prompt family, criterion) "
            "POST /v1/calibrations fits (422 above it)", ge=8),
    ] = 20_000  # fmt: skip
    # the finite-sample interval bisects over every value: about 10 us a value (measured), so ~2 s at the default
    max_estimate_values: Annotated[
        int,
        Env("MAX_ESTIMATE_VALUES", "most numbers (human labels + judge verdicts, every system) one "
            "POST /v1/estimates[/batch] reads (422 above it)", ge=8),
    ] = 200_000  # fmt: skip
    # win rates are bincounts: linear and cheap
    max_ranking_battles: Annotated[
        int, Env("MAX_RANKING_BATTLES", "most battles one POST /v1/rankings reads (422 above it)", ge=2)
    ] = 200_000
    # k x k covariance and separability matrices
    max_ranking_models: Annotated[
        int, Env("MAX_RANKING_MODELS", "most distinct models one POST /v1/rankings ranks", ge=2)
    ] = 100
    # below it a model's variance estimate is unreliable (docs/estimates.md; bench/bench_rank_guard.py)
    min_labelled_battles_per_model: Annotated[
        int,
        Env("MIN_LABELLED_BATTLES_PER_MODEL", "POST /v1/rankings: a model with fewer labelled battles is unknown "
            "(rank set [1, k], never separable); a request's min_labelled_battles overrides it (0: off)", ge=0),
    ] = 20  # fmt: skip
