"""The stand-in's command line: its options reach the server, a bad option is refused, and the process serves on
the given port until SIGTERM (the user guide's walk-through runs it too: tests/docs/test_live_walkthrough.py)."""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.fakes.judge_standin import build_server, parse_args

ROOT = Path(__file__).resolve().parents[2]


def _ask(base_url: str, logprobs: bool = True) -> tuple[int, dict[str, object]]:
    body = {"model": "m", "messages": [{"role": "user", "content": "rate"}], "logprobs": logprobs, "top_logprobs": 5}
    request = urllib.request.Request(
        f"{base_url}/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _top(answer: dict[str, object]) -> dict[str, float]:
    content = answer["choices"][0]["logprobs"]["content"]  # type: ignore[index]
    digit = next(t for t in content if t["token"].strip().isdigit())
    return {t["token"]: t["logprob"] for t in digit["top_logprobs"]}


def test_scores_in_turn_reply_text_faults_and_explicit_logprobs() -> None:
    args = parse_args(
        [
            "--port",
            "0",
            "--score",
            "4,2",
            "--reply",
            "Score: {score}",
            "--fault",
            "error_500:1",
            "--logprobs",
            "3=-0.1,4=-2.5",
        ]
    )
    with build_server(args) as server:
        assert _ask(server.base_url)[0] == 500
        status, first = _ask(server.base_url)
        assert status == 200 and first["choices"][0]["message"]["content"] == "Score: 4"  # type: ignore[index]
        assert _top(first) == {"3": -0.1, "4": -2.5}
        second = _ask(server.base_url)[1]
        assert second["choices"][0]["message"]["content"] == "Score: 2"  # type: ignore[index]
        assert [r.fault for r in server.requests] == ["error_500", None, None]


def test_peaked_logprobs_follow_the_sharpness_and_refusal_is_a_400() -> None:
    with build_server(parse_args(["--port", "0", "--score", "3", "--sharpness", "2"])) as server:
        top = _top(_ask(server.base_url)[1])
        assert math.isclose(top["3"] - top["2"], 2.0) and math.isclose(top["3"] - top["5"], 4.0)
    with build_server(parse_args(["--port", "0", "--refuse-logprobs"])) as server:
        status, answer = _ask(server.base_url)
        assert status == 400 and answer["error"]["param"] == "logprobs"  # type: ignore[index]
        assert _ask(server.base_url, logprobs=False)[0] == 200


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--fault", "explode"], "unknown fault 'explode'"),
        (["--score", "four"], "--score takes integers"),
        (["--logprobs", "3:-1"], "--logprobs takes peaked, none or TOKEN=LOGPROB"),
        (["--latency", "-1"], "--latency must be >= 0"),
        (["--reply", "fine"], "--reply needs {score}"),
    ],
)
def test_bad_options_are_refused(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_args(argv)
    assert exited.value.code == 2 and message in capsys.readouterr().err


def test_the_command_serves_the_given_port_until_sigterm() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.judge_standin", "--port", str(port), "--score", "5", "--log"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'client'}"},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        banner = process.stdout.readline()
        assert (
            banner.strip()
            == f"judge stand-in (a test double: scripted replies, not a model) on http://127.0.0.1:{port}/v1"
        )
        status, answer = _ask(f"http://127.0.0.1:{port}/v1")
        assert status == 200 and answer["choices"][0]["message"]["content"] == "5"  # type: ignore[index]
        assert json.loads(process.stdout.readline()) == {
            "n": 1,
            "path": "/v1/chat/completions",
            "model": "m",
            "fault": None,
        }
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
    assert process.returncode == 0
