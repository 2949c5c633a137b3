"""The live-judge walk-through of docs/user-guide.md, run as written in a copy of the repository.

The block between ``<!-- walkthrough:start -->`` and ``<!-- walkthrough:end -->`` of the user guide is executed by
bash (``set -e``) in a fresh copy of the checkout's files (the project's ``.venv`` linked in): it starts the judge
stand-in from its documented command line, the service with a ``JUDGES_FILE`` pointing at it, and sends the
documented request. Checked: the live verdict is calibrated, came from the judge (its reply, one verdict), and the
stand-in's log shows the two injected faults and the answered call.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.test_readme_walkthrough import _copy_checkout

ROOT = Path(__file__).resolve().parents[2]


def walkthrough() -> str:
    """The shell block of the live-judge walk-through (docs/user-guide.md)."""
    text = (ROOT / "docs" / "user-guide.md").read_text()
    block = text.split("<!-- walkthrough:start -->", 1)[1].split("<!-- walkthrough:end -->", 1)[0]
    return block.strip().removeprefix("```sh").removesuffix("```").strip()


def test_the_walkthrough_starts_the_stand_in_from_its_documented_command_line() -> None:
    script = walkthrough()
    assert ".venv/bin/python -m tests.fakes.judge_standin --port 8021" in script
    assert "JUDGES_FILE=standin-judges.json" in script and "localhost:8022/v1/score" in script


@pytest.mark.skipif(shutil.which("curl") is None, reason="the walk-through uses curl")
def test_live_walkthrough_runs_as_written(tmp_path: Path) -> None:
    copy = tmp_path / "checkout"
    _copy_checkout(copy)
    script = "set -e\n" + walkthrough() + "\n"
    environment = {
        k: v
        for k, v in os.environ.items()
        if k
        not in ("THRESHOLDS_PATH", "ARTIFACTS_DIR", "JUDGES_FILE", "API_KEYS", "ADMIN_API_KEY", "PORT", "REDIS_URL")
    }
    process = subprocess.Popen(
        ["bash", "-c", script],
        cwd=copy,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=240)
    finally:
        try:
            os.killpg(process.pid, signal.SIGTERM)  # the stand-in or server if a step failed
        except ProcessLookupError:
            pass
    logs = "\n".join(
        f"--- {name}\n" + ((copy / name).read_text(errors="replace") if (copy / name).exists() else "(none)")
        for name in ("server.log", "standin.log")
    )
    assert process.returncode == 0, f"{out}\n{err}\n{logs}"
    answers = [json.loads(line) for line in re.findall(r"^\{.*\}$", out, flags=re.MULTILINE)]
    (verdict,) = [a for a in answers if "prediction_set" in a]
    assert verdict["judge"] == "qwen2.5-72b-instruct" and verdict["source"] == "judge"
    assert verdict["calibrated"] is True and verdict["input_kind"] == "probabilities"
    assert (
        verdict["judge_score"] == 4
        and verdict["raw_reply"] == "4"
        and set(verdict["prediction_set"]) <= {1, 2, 3, 4, 5}
    )
    assert verdict["decision"] in ("accept", "escalate", "second_opinion")
    calls = [a for a in answers if "path" in a]
    assert [c["fault"] for c in calls] == ["error_500", "error_500", None], logs
    assert all(c["path"] == "/v1/chat/completions" and c["model"] == "Qwen/Qwen2.5-72B-Instruct" for c in calls)
    assert "judge stand-in (a test double" in out
