"""The settings table of docs/operations.md is the one tools/settings_table.py renders from the code."""

from __future__ import annotations

import msgspec
import pytest

from tools.settings_table import DOC, render_table, settings, settings_modules, settings_variables, updated_document


def test_committed_settings_table_is_current() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert updated_document(text, render_table(settings())) == text, "run `make settings-table` and commit the doc"


def test_every_variable_from_env_reads_has_one_row_and_every_field_one_variable() -> None:
    rows = settings()
    assert [row.variable for row in rows] == settings_variables()
    settings_class = settings_modules()[0].Settings
    leaves = []
    for field in msgspec.structs.fields(settings_class):
        nested = field.type if isinstance(field.type, type) and issubclass(field.type, msgspec.Struct) else None
        leaves += [f"{field.name}.{name}" for name in nested.__struct_fields__] if nested else [field.name]
    assert sorted(row.field for row in rows) == sorted(leaves)


def test_rows_carry_the_code_defaults_and_variables() -> None:
    """Spot checks against values read directly from the settings classes (not from the tool)."""
    by_variable = {row.variable: row for row in settings()}
    _, limits, jobs = settings_modules()
    assert by_variable["WORKERS"].field == "limits.workers"
    assert by_variable["WORKERS"].default == f"`{limits.LimitSettings().workers!r}`"
    assert by_variable["JOB_STORE_MAX_BYTES"].field == "jobs.max_store_bytes"
    assert by_variable["JOB_QUEUE"].default == f"`{jobs.JobSettings().queue}`"
    assert by_variable["REDIS_URL"].default == "unset"
    assert by_variable["ACCESS_LOG"].default == f"`{settings_modules()[0].Settings.from_env({}).access_log}`"
    assert by_variable["JUDGE_MAX_REPLY_BYTES"].meaning.startswith("largest judge reply body read")
    assert "``" not in render_table(settings())


def test_a_changed_table_is_detected() -> None:
    text = DOC.read_text(encoding="utf-8")
    table = render_table(settings())
    assert updated_document(text, table.replace("`cj-jobs`", "`other`")) != text
    with pytest.raises(ValueError, match="markers"):
        updated_document("no markers here", table)
