"""The settings table of docs/operations.md is the one tools/settings_table.py renders from the code."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest

from tools.settings_table import (
    DOC,
    documented_defaults,
    render_table,
    settings,
    settings_modules,
    settings_variables,
    updated_document,
)


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
    # a meaning never swallows the default column (misaligned docstring rows once did: "... unset: no cascade")
    assert [row.variable for row in settings() if "unset:" in row.meaning] == []


def test_a_changed_table_is_detected() -> None:
    text = DOC.read_text(encoding="utf-8")
    table = render_table(settings())
    assert updated_document(text, table.replace("`cj-jobs`", "`other`")) != text
    with pytest.raises(ValueError, match="markers"):
        updated_document("no markers here", table)


def _code_defaults() -> dict[str, object]:
    """{VARIABLE: the value Settings.from_env({}) gives its field}, nested structs expanded."""
    defaults = settings_modules()[0].Settings.from_env({})
    values: dict[str, object] = {}
    for row in settings():
        value: object = defaults
        for part in row.field.split("."):
            value = getattr(value, part)
        values[row.variable] = value
    return values


def test_every_variable_has_a_documented_default_and_it_is_the_codes() -> None:
    """The settings modules' docstring tables (what a reader of the code sees) state each variable's default; a
    ``literal`` there must equal the code's default, and "unset" (or prose without a literal) must mean None."""
    documented = documented_defaults()
    assert sorted(set(settings_variables()) - set(documented)) == [], "document these in a settings docstring"
    wrong = []
    for variable, value in _code_defaults().items():
        text = documented[variable]
        literals = re.findall(r"``([^`]*)``", text)
        if value is None or value == ():
            ok = not literals
        elif text.startswith("unset") or not literals:
            ok = False
        elif isinstance(value, Path):
            ok = value.as_posix().endswith(literals[0])
        elif isinstance(value, int | float) and not isinstance(value, bool):
            ok = float(literals[0]) == value
        else:
            ok = literals[0] == str(value)
        if not ok:
            wrong.append(f"{variable}: documented {text!r}, code default {value!r}")
    assert wrong == []


def test_a_wrong_documented_default_is_caught() -> None:
    """The docstring parser reads the default column (ACCESS_LOG's once said ``all`` while the code said errors)."""
    documented = documented_defaults()
    assert documented["ACCESS_LOG"] == "``errors``"
    assert (documented["HOST"], documented["PORT"]) == ("``127.0.0.1``", "``8000``")  # one row, two variables
    assert documented["THRESHOLDS_PATH"] == "``artifact/thresholds.json`` in the installed package"
    assert documented["LOG_FLUSH_MS"] == "``100``"


def test_the_struct_defaults_are_from_envs() -> None:
    """Settings built in code (tests, embedding) get the same defaults as an empty environment."""
    settings_module, limits, jobs = settings_modules()
    from_env = settings_module.Settings.from_env({})
    assert settings_module.Settings(thresholds_path=settings_module.default_thresholds_path()) == from_env
    assert limits.LimitSettings() == from_env.limits and jobs.JobSettings() == from_env.jobs
