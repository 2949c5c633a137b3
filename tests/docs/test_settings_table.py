"""The settings table of docs/operations.md is the one tools/settings_table.py renders from the declarations, and
every setting is declared once: one variable, one default, read and checked from that declaration alone."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import msgspec
import pytest

from service.config.errors import SettingsError
from tools.settings_table import (
    DOC,
    ROOT,
    render_table,
    settings,
    settings_modules,
    settings_variables,
    updated_document,
)

CONFIG = ROOT / "service" / "config"


def test_committed_settings_table_is_current() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert updated_document(text, render_table(settings())) == text, "run `make settings-table` and commit the doc"


def test_every_field_has_one_row_and_every_variable_one_field() -> None:
    rows = settings()
    variables = [row.variable for row in rows]
    assert len(variables) == len(set(variables)) and variables == settings_variables()
    settings_class = settings_modules()[0].Settings
    leaves = []
    for field in msgspec.structs.fields(settings_class):
        nested = field.type if isinstance(field.type, type) and issubclass(field.type, msgspec.Struct) else None
        leaves += [f"{field.name}.{name}" for name in nested.__struct_fields__] if nested else [field.name]
    assert sorted(row.field for row in rows) == sorted(leaves)


def test_rows_carry_the_code_defaults_bounds_and_variables() -> None:
    """Spot checks against values read directly from the settings classes (not from the tool)."""
    by_variable = {row.variable: row for row in settings()}
    _, limits, jobs = settings_modules()
    assert by_variable["WORKERS"].field == "limits.workers"
    assert by_variable["WORKERS"].default == f"`{limits.LimitSettings().workers!r}`"
    assert by_variable["JOB_STORE_MAX_BYTES"].field == "jobs.max_store_bytes"
    assert by_variable["JOB_QUEUE"].default == f"`{jobs.JobSettings().queue}`"
    assert by_variable["REDIS_URL"].default == "unset: in-process LRU"
    assert by_variable["THRESHOLDS_PATH"].default == "`artifact/thresholds.json` (installed package)"
    assert by_variable["ACCESS_LOG"].default == f"`{settings_modules()[0].Settings.from_env({}).access_log}`"
    assert by_variable["JUDGE_MAX_REPLY_BYTES"].meaning.startswith("largest judge reply body read")
    assert (by_variable["PORT"].bounds, by_variable["DEFAULT_ALPHA"].bounds) == ("in 1..65535", "in (0, 1)")
    assert by_variable["ESCALATE_MIN_SET_SIZE"].bounds == "> ACCEPT_MAX_SET_SIZE"
    assert by_variable["JOB_CHUNK_BYTES"].bounds == ">= MAX_JOB_LINE_BYTES"
    assert by_variable["LOG_LEVEL"].bounds == "one of DEBUG, INFO, WARNING, ERROR"
    assert by_variable["API_KEYS"].type == "tuple[str, ...]" and by_variable["JUDGES_FILE"].type == "Path | None"
    assert "``" not in render_table(settings())


def test_a_changed_table_is_detected() -> None:
    text = DOC.read_text(encoding="utf-8")
    table = render_table(settings())
    assert updated_document(text, table.replace("`cj-jobs`", "`other`")) != text
    with pytest.raises(ValueError, match="markers"):
        updated_document("no markers here", table)


def _strings(path: Path) -> list[str]:
    """Every string constant in the module's code (its docstrings excluded)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_each_variable_is_named_once_in_the_settings_code() -> None:
    """No second list of names (a reader's, a check's, a hand table's) restates a variable."""
    named: list[str] = []
    for path in sorted(CONFIG.glob("*.py")):
        named += [text for text in _strings(path) if text in set(settings_variables())]
    assert sorted(named) == sorted(settings_variables())
    for module in settings_modules():  # the hand-written tables of defaults are gone from the docstrings
        assert "=====" not in (module.__doc__ or "")


def _another_valid_text(variable: str) -> str:
    """A text for ``variable`` that parses to a value other than its default and passes its checks."""
    settings_class = settings_modules()[0].Settings
    defaults = settings_class()
    candidates = ["7", "3", "0.05", "0.5", "2048", "20000", "3000000000", "ERROR", "off", "x", "http://x", "a,b"]
    for text in candidates:
        try:
            changed = _flatten(settings_class.from_env({variable: text}))
        except SettingsError:
            continue
        if changed != _flatten(defaults):
            return text
    raise AssertionError(f"no candidate changes {variable}")


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    leaves: dict[str, Any] = {}
    for name in value.__struct_fields__:
        field = getattr(value, name)
        if isinstance(field, msgspec.Struct):
            leaves.update(_flatten(field, f"{prefix}{name}."))
        else:
            leaves[f"{prefix}{name}"] = field
    return leaves


def test_the_reader_has_no_defaults_of_its_own_and_each_variable_sets_its_field() -> None:
    """An empty environment gives the struct's defaults; a variable set alone changes its own field and no other."""
    settings_class = settings_modules()[0].Settings
    defaults = _flatten(settings_class())
    assert _flatten(settings_class.from_env({})) == defaults
    assert _flatten(settings_class.from_env({row.variable: "  " for row in settings()})) == defaults  # blank: unset
    for row in settings():
        changed = _flatten(settings_class.from_env({row.variable: _another_valid_text(row.variable)}))
        assert [name for name, value in changed.items() if value != defaults[name]] == [row.field], row.variable


def test_the_checks_run_on_construction_in_code_too() -> None:
    """Settings built in code (tests, embedding) get the declared checks, not only those read from the environment."""
    settings_module, limits, jobs = settings_modules()
    with pytest.raises(SettingsError, match=r"PORT=0 must be in 1\.\.65535"):
        settings_module.Settings(port=0)
    with pytest.raises(SettingsError, match=r"ESCALATE_MIN_SET_SIZE=2 must be > ACCEPT_MAX_SET_SIZE \(.*=2\)"):
        settings_module.Settings(escalate_min_set_size=2)
    with pytest.raises(SettingsError, match="API_KEYS=<hidden> must be free of empty keys"):
        settings_module.Settings(api_keys=("k", ""))
    with pytest.raises(SettingsError, match="MFAS_TIME_LIMIT_S"):
        limits.LimitSettings(mfas_time_limit_s=0.0)
    with pytest.raises(SettingsError, match="JOB_QUEUE"):
        jobs.JobSettings(queue="a b")


def test_a_secret_never_appears_in_an_error() -> None:
    settings_class = settings_modules()[0].Settings
    with pytest.raises(SettingsError) as caught:
        settings_class(api_keys=("hunter2", ""))
    assert "hunter2" not in str(caught.value)


def test_a_malformed_number_names_its_variable() -> None:
    settings_class = settings_modules()[0].Settings
    with pytest.raises(SettingsError, match=r"WORKERS='many' is not valid"):
        settings_class.from_env({"WORKERS": "many"})
    assert settings_class.from_env({"LOG_LEVEL": "debug", "ACCESS_LOG": "ALL"}).log_level == "DEBUG"
