"""JobSettings: read through Settings.from_env, defaults as documented, bad values named."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.config.jobs import JobSettings
from service.config.settings import Settings, SettingsError


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


def test_byte_settings_are_read_and_a_chunk_must_hold_one_line() -> None:
    settings = Settings.from_env(
        {"THRESHOLDS_PATH": "t.json", "MAX_JOB_LINE_BYTES": "2000", "JOB_CHUNK_BYTES": "5000",
         "JOB_STORE_MAX_BYTES": "123456", "JOB_RESULT_ITEM_BYTES": "900"}
    )  # fmt: skip
    jobs = settings.jobs
    assert (jobs.max_job_line_bytes, jobs.chunk_bytes, jobs.max_store_bytes, jobs.result_item_bytes) == (
        2000, 5000, 123456, 900
    )  # fmt: skip
    with pytest.raises(SettingsError, match="JOB_CHUNK_BYTES"):
        Settings.from_env({"THRESHOLDS_PATH": "t.json", "MAX_JOB_LINE_BYTES": "6000", "JOB_CHUNK_BYTES": "5000"})
