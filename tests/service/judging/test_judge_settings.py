"""The judge-call settings: JUDGE_MAX_REPLY_BYTES (the reply cap the pool's clients enforce) and
BREAKER_PROBE_WAIT_S (how long calls wait for a half-open breaker's probe)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgspec
import pytest

from judges.errors import JudgeReplyTooLarge
from service.config.settings import Settings, SettingsError
from service.judging.pool import JudgePool
from service.observability.logging import make_logs
from service.observability.metrics import ServiceMetrics
from tests.fakes.judge_server import JudgeServer


def test_the_variables_are_read_and_checked(artifact_path: Path) -> None:
    env = {"THRESHOLDS_PATH": str(artifact_path)}
    defaults = Settings.from_env(env)
    assert defaults.judge_max_reply_bytes == 262_144 and defaults.breaker_probe_wait_s == 30.0
    chosen = Settings.from_env({**env, "JUDGE_MAX_REPLY_BYTES": "65536", "BREAKER_PROBE_WAIT_S": "2.5"})
    assert chosen.judge_max_reply_bytes == 65_536 and chosen.breaker_probe_wait_s == 2.5
    with pytest.raises(SettingsError, match="JUDGE_MAX_REPLY_BYTES"):
        Settings.from_env({**env, "JUDGE_MAX_REPLY_BYTES": "100"})
    with pytest.raises(SettingsError, match="BREAKER_PROBE_WAIT_S"):
        Settings.from_env({**env, "BREAKER_PROBE_WAIT_S": "0"})


def test_the_pools_clients_enforce_the_configured_cap(
    judge_server: JudgeServer, tmp_path: Path, artifact_path: Path
) -> None:
    judges_file = tmp_path / "judges.json"
    judges_file.write_bytes(msgspec.json.encode([judge_server.judge_config(name="stand-in")]))
    settings = Settings(thresholds_path=artifact_path, judges_file=judges_file, judge_max_reply_bytes=2048)
    judge_server.responder = lambda body: "4" + " " * 4000

    async def main() -> None:
        pool = JudgePool(settings, ServiceMetrics(), make_logs("ERROR").logger)
        await pool.start()
        try:
            with pytest.raises(JudgeReplyTooLarge, match="larger than 2048 bytes"):
                await pool.direct("stand-in", "coherence", "doc", "sum")
        finally:
            await pool.aclose()

    asyncio.run(main())
