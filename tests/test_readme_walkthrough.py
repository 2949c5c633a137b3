"""The bring-your-own-judge walk-through (docs/bring-your-own-judge.md), run as written in a copy of the repository.

The block between ``<!-- walkthrough:start -->`` and ``<!-- walkthrough:end -->`` is executed by bash (``set -e``)
in a fresh copy of the checkout's files (tracked and not ignored; the project's ``.venv`` linked in, as after
``make install``), and its answers are checked: the user's judge is calibrated on its 1..7 scale, the shipped judge
still is, and the HTTP job activates.
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

ROOT = Path(__file__).resolve().parents[1]


def walkthrough() -> str:
    """The shell block of the bring-your-own-judge walk-through (docs/bring-your-own-judge.md)."""
    text = (ROOT / "docs" / "bring-your-own-judge.md").read_text()
    block = text.split("<!-- walkthrough:start -->", 1)[1].split("<!-- walkthrough:end -->", 1)[0]
    return block.strip().removeprefix("```sh").removesuffix("```").strip()


def _copy_checkout(target: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for raw in listed:
        if not raw:
            continue
        source = ROOT / raw.decode()
        if source.is_file():
            destination = target / raw.decode()
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination)
    (target / ".venv").symlink_to(ROOT / ".venv")


@pytest.mark.skipif(shutil.which("curl") is None, reason="the walk-through uses curl")
def test_readme_walkthrough_runs_as_written(tmp_path: Path) -> None:
    copy = tmp_path / "checkout"
    _copy_checkout(copy)
    script = "set -e\n" + walkthrough() + "\n"
    environment = {
        k: v
        for k, v in os.environ.items()
        if k
        not in ("THRESHOLDS_PATH", "ARTIFACTS_DIR", "JUDGES_FILE", "API_KEYS", "ADMIN_API_KEY", "PORT", "REDIS_URL")
    }  # no worker runs here
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
        out, err = process.communicate(timeout=300)
    finally:
        try:
            os.killpg(process.pid, signal.SIGTERM)  # any server the script left behind
        except ProcessLookupError:
            pass
    server_log = copy / "server.log"
    server_text = (
        server_log.read_text(errors="replace") if server_log.exists() else "(no server.log: a step failed first)"
    )
    assert process.returncode == 0, f"{out}\n{err}\n{server_text}"
    answers = [json.loads(line) for line in re.findall(r"^\{.*\}$", out, flags=re.MULTILINE)]
    scores = [a for a in answers if "prediction_set" in a]
    mine = [a for a in scores if a["judge"] == "my-judge"]
    assert len(mine) == 5 and all(a["calibrated"] and set(a["prediction_set"]) <= set(range(1, 8)) for a in mine)
    # step 3b, as the page states: accepted at accept_alpha 0.20 in the expected mode (point 6), escalated in pac
    expected_answer, pac_answer, top = mine[1], mine[2], mine[3]
    assert (expected_answer["decision"], expected_answer["point"]) == ("accept", 6)
    assert [g["mode"] for g in expected_answer["guarantees"]] == ["expected", "expected"]
    assert pac_answer["decision"] == "escalate" and {g["mode"] for g in pac_answer["guarantees"]} == {"pac"}
    # the default guarantee: score 6 escalates at the defaults, score 7 is accepted with set {5, 6, 7} and point 6
    assert mine[0]["decision"] == "escalate" and {g["mode"] for g in mine[0]["guarantees"]} == {"per_label"}
    assert (top["decision"], top["point"], top["prediction_set"]) == ("accept", 6, [5, 6, 7])
    shipped = [a for a in scores if a["judge"] == "gpt-4o-mini-2024-07-18"]
    assert len(shipped) == 1 and shipped[0]["calibrated"] is True
    activated = [a for a in answers if "cells_added" in a]
    assert len(activated) == 1 and activated[0]["cells_added"] == 1
    assert (copy / "reports" / "labels" / "index.md").read_text().startswith("# Calibration report")
