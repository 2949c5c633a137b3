"""JobSettings: read through Settings.from_env, defaults as documented, bad values named."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.jobs.settings import JobSettings
from service.settings import Settings, SettingsError


def test_job_settings_are_read_from_the_environment() -> None:
    settings = Settings.from_env(
        {"THRESHOLDS_PATH": "t.json", "JOB_CHUNK_SIZE": "250", "JOB_QUEUE": "nightly", "BREAKER_COOLDOWN_S": "2.5",
         "MAX_QUEUED_ITEMS": "99"}
    )  # fmt: skip
    assert settings.jobs == JobSettings(chunk_size=250, queue="nightly", breaker_cooldown_s=2.5, max_queued_items=99)
    defaults = Settings(thresholds_path=Path("t.json")).jobs
    assert (defaults.max_job_items, defaults.results_ttl_s, defaults.worker_shutdown_s) == (1_000_000, 604_800, 25)


@pytest.mark.parametrize(
    ("variable", "value"),
    [("JOB_CHUNK_SIZE", "0"), ("JOB_CHUNK_SIZE", "many"), ("BREAKER_COOLDOWN_S", "0"), ("JOB_QUEUE", "a b")],
)
def test_a_bad_job_setting_is_refused_by_name(variable: str, value: str) -> None:
    with pytest.raises(SettingsError, match=variable):
        Settings.from_env({"THRESHOLDS_PATH": "t.json", variable: value})
