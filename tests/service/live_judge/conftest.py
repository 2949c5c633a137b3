"""The real local judge for the end-to-end tests: llama.cpp's OpenAI-compatible server with SmolLM2-135M-Instruct
(``make local-judge-install`` puts it in ``.venv-judge``; ``LOCAL_JUDGE_PYTHON`` names another interpreter that has
it), started once per test process by ``tools/local_judge.py serve`` on a free loopback port, stopped at the end.

Without the server these tests skip on a laptop and fail under ``CI=true`` (``.ci/run`` installs it): a green CI
run never hides a missing judge. The service they drive serves a test calibration of the judge's cells
(``local_judge_thresholds``). The judge's config is ``examples/local-judge/judges.json`` with the port replaced, so
the shipped example is the one tested.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import pytest

from artifact.thresholds import FORMAT_VERSION, DefaultMethod, ThresholdsArtifact, save_artifact
from judges.config import JudgeConfig
from tests.service.conftest import _entries
from tests.service.servers import free_port, wait_until_ready

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "local-judge" / "judges.json"
JUDGE = "smollm2-135m"
SERVER_START_S = 180.0  # loading a 98 MB model is a second or two; a loaded CI machine gets room


@dataclass(frozen=True)
class LocalJudge:
    """The running server: its OpenAI base URL, its log, and the example config pointed at it."""

    base_url: str
    log: Path

    def config(self, **overrides: Any) -> JudgeConfig:
        """``examples/local-judge/judges.json``'s judge on this server; keywords override fields."""
        [entry] = json.loads(EXAMPLE.read_text())
        return msgspec.convert({**entry, "base_url": self.base_url, **overrides}, JudgeConfig)

    def judges_file(self, folder: Path, **overrides: Any) -> Path:
        """A JUDGES_FILE holding ``config(**overrides)`` in ``folder``."""
        path = folder / f"judges-{len(list(folder.glob('judges-*.json')))}.json"
        path.write_bytes(msgspec.json.encode([self.config(**overrides)]))
        return path


def _server_python() -> Path:
    return Path(os.environ.get("LOCAL_JUDGE_PYTHON") or ROOT / ".venv-judge" / "bin" / "python")


@pytest.fixture(scope="session")
def local_judge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalJudge]:
    """The server on 127.0.0.1:<free port> for the whole test process."""
    python = _server_python()
    installed = (
        python.exists()
        and subprocess.run(
            [str(python), str(ROOT / "tools" / "local_judge.py"), "model-path"], capture_output=True, check=False
        ).returncode
        == 0
    )
    if not installed:
        message = f"the local judge is not installed ({python}): run `make local-judge-install`"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    port = free_port()
    log = tmp_path_factory.mktemp("local-judge") / "server.log"
    with log.open("wb") as out:  # the child keeps its own descriptor
        process = subprocess.Popen(
            [str(python), str(ROOT / "tools" / "local_judge.py"), "serve", "--port", str(port), "--threads", "1"],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        if not wait_until_ready(url, path="/v1/models", process=process, bound_s=SERVER_START_S):
            pytest.fail(f"the local judge did not start; its log:\n{log.read_text()[-3000:]}")
        yield LocalJudge(base_url=f"{url}/v1", log=log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.fixture(scope="session")
def local_judge_thresholds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A test calibration for the judge's cells (``paper`` / coherence and relevance), fitted on the seeded
    synthetic verdicts of ``tests/service/conftest.py``: these tests check the live path (the real reply read,
    calibrated, decided), not the judge's calibration, which ``python -m offline local-judge`` fits on its recorded
    SummEval answers."""
    entries = [
        *_entries(JUDGE, "paper", "coherence", ("residual", "lac"), 400, 11),
        *_entries(JUDGE, "paper", "relevance", ("residual",), 400, 12),
    ]
    defaults = [
        DefaultMethod(judge=JUDGE, prompt_family="paper", criterion="coherence", method="residual", reason="test"),
        DefaultMethod(judge=JUDGE, prompt_family="paper", criterion="relevance", method="residual", reason="test"),
    ]
    artifact = ThresholdsArtifact(
        format_version=FORMAT_VERSION,
        created_at="2026-01-01T00:00:00+00:00",
        code_version="test",
        data_hash="synthetic-seeded",
        label_scale=[1, 2, 3, 4, 5],
        entries=entries,
        default_methods=defaults,
        source="tests/service/live_judge/conftest.py",
    )
    path = tmp_path_factory.mktemp("local-judge-calibration") / "thresholds.json"
    save_artifact(artifact, path)
    return path
