"""``python -m research.panels``: the four research commands, dispatched, with usage and data errors as exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from research.panels.__main__ import build_parser, main

ROOT = Path(__file__).resolve().parents[2]


def test_the_parser_offers_the_four_research_commands() -> None:
    (commands,) = [action for action in build_parser()._actions if action.dest == "command"]  # noqa: SLF001
    assert sorted(commands.choices) == ["cascades", "nested", "rule-cascades", "why-missed"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nested", "--splits", "0"], "--splits and --repeats must be >= 1"),
        (["rule-cascades", "--alpha", "1.5"], "--alpha in (0, 1)"),
        (["cascades", "--splits", "1"], "--splits must be >= 2"),
        (["why-missed", "--splits", "1"], "--splits must be >= 2"),
        (["why-missed", "--alpha", "0"], "--alpha in (0, 1)"),
    ],
)
def test_bad_options_exit_2_with_the_reason(argv: list[str], message: str, capsys: pytest.CaptureFixture) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("command", ["nested", "cascades", "rule-cascades", "why-missed"])
def test_a_missing_data_directory_exits_2(command: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main([command, "--data-dir", str(tmp_path / "absent"), "--out", str(tmp_path)]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_python_dash_m_runs_it() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "research.panels", "--help"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert run.returncode == 0 and "rule-cascades" in run.stdout and "why-missed" in run.stdout
