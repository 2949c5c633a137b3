"""Fixtures of the service tests: a small fitted artifact, apps built on it, and the judge stand-in wiring.

The artifact is fitted with ``calibration.conformal.fit_conformal`` on seeded synthetic verdicts (labels
uniform on 1..5; the judge agrees 70% of the time, is off by one 25% and by two 5%), so the tests can
compare the API's sets with ``calibration.conformal.prediction_set`` on the same fitted objects.

Cells (judge / prompt family / criterion -> methods at alpha 0.1 and 0.2):

* ``stand-in / paper / coherence``: every method; default ``lac`` (needs probabilities)
* ``stand-in / paper / relevance``: residual, mondrian_residual; default ``residual``
* ``stand-in / paper / fluency``: residual fitted on 5 items -> full scale at both levels (escalate)
* ``stand-in / factuality_direct / faithfulness`` and ``stand-in / factuality_qa / faithfulness``: residual
* ``recorded-judge / geval / coherence``: residual, lac (a judge that is calibrated but not configured)
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from litestar.testing import TestClient

from artifact.thresholds import (
    FORMAT_VERSION,
    DefaultMethod,
    ThresholdEntry,
    ThresholdsArtifact,
    save_artifact,
)
from calibration.conformal import METHODS, PROBABILITY_METHODS, fit_conformal
from service.config.settings import Settings
from service.http.app import create_app
from service.http.edge import Edge
from tests.fakes.judge_server import JudgeServer

ALPHAS = (0.1, 0.2)
STAND_IN = "stand-in"
RECORDED = "recorded-judge"


def synthetic_verdicts(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(labels, judge_scores, probabilities) of n synthetic items, reproducible from seed."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(1, 6, size=n)
    offsets = rng.choice([0, 1, -1, 2, -2], size=n, p=[0.7, 0.125, 0.125, 0.025, 0.025])
    scores = np.clip(labels + offsets, 1, 5)
    logits = -1.2 * np.abs(np.arange(1, 6)[None, :] - scores[:, None]) + rng.normal(0, 0.4, size=(n, 5))
    probabilities = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return labels, scores, probabilities


def _entries(
    judge: str, family: str, criterion: str, methods: tuple[str, ...], n: int, seed: int, delta: float | None = None
) -> list[ThresholdEntry]:
    labels, scores, probabilities = synthetic_verdicts(n, seed)
    entries = []
    for method in methods:
        for alpha in ALPHAS:
            fitted = fit_conformal(
                method,
                alpha,
                labels,
                judge_scores=scores,
                probabilities=probabilities if method in PROBABILITY_METHODS or method == "learned_lac" else None,
                rng=np.random.default_rng(seed),
                delta=delta,
            )
            entries.append(
                ThresholdEntry(
                    judge=judge,
                    prompt_family=family,
                    criterion=criterion,
                    method=method,
                    alpha=alpha,
                    fitted=fitted,
                    heldout_coverage=1 - alpha + 0.01,
                    heldout_coverage_std=0.01,
                    heldout_set_size=2.5,
                    n_splits=20,
                    input_kind="probabilities" if method in PROBABILITY_METHODS or method == "learned_lac" else "score",
                )
            )
    return entries


def build_artifact(*, code_version: str = "test") -> ThresholdsArtifact:
    """The test artifact described in the module docstring."""
    entries = (
        _entries(STAND_IN, "paper", "coherence", METHODS, 400, 1)
        + _entries(STAND_IN, "paper", "relevance", ("residual", "mondrian_residual"), 400, 2)
        + _entries(STAND_IN, "paper", "fluency", ("residual",), 5, 3)
        + _entries(STAND_IN, "factuality_direct", "faithfulness", ("residual",), 300, 4)
        + _entries(STAND_IN, "factuality_qa", "faithfulness", ("residual",), 300, 5)
        + _entries(RECORDED, "geval", "coherence", ("residual", "lac"), 300, 6)
    )
    defaults = [
        DefaultMethod(judge=STAND_IN, prompt_family="paper", criterion="coherence", method="lac", reason="test"),
        DefaultMethod(judge=STAND_IN, prompt_family="paper", criterion="relevance", method="residual", reason="test"),
        DefaultMethod(judge=RECORDED, prompt_family="geval", criterion="coherence", method="residual", reason="t"),
    ]
    return ThresholdsArtifact(
        format_version=FORMAT_VERSION,
        created_at="2026-01-01T00:00:00+00:00",
        code_version=code_version,
        data_hash="synthetic-seeded",
        label_scale=[1, 2, 3, 4, 5],
        entries=entries,
        default_methods=defaults,
        source="tests/service/conftest.py",
    )


@pytest.fixture(scope="session")
def artifact() -> ThresholdsArtifact:
    """The fitted test artifact (session-wide; it is immutable)."""
    return build_artifact()


@pytest.fixture(scope="session")
def artifact_path(artifact: ThresholdsArtifact, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test artifact saved with ``save_artifact``."""
    path = tmp_path_factory.mktemp("calibration") / "thresholds.json"
    save_artifact(artifact, path)
    return path


@pytest.fixture
def make_settings(artifact_path: Path) -> Callable[..., Settings]:
    """Settings on the test artifact, no judges, no auth; keyword overrides replace fields."""

    def make(**overrides: Any) -> Settings:
        return Settings(thresholds_path=artifact_path, **overrides)

    return make


class AppHarness:
    """A running app (lifespan entered) with its TestClient and captured JSON log lines."""

    def __init__(self, app: Edge, client: TestClient, logs: io.StringIO) -> None:
        self.app = app
        self.client = client
        self._logs = logs

    @property
    def services(self) -> Any:
        """The app's Services."""
        return self.app.services

    def log_lines(self, *, flush: bool = True) -> list[dict[str, Any]]:
        """Every JSON log line written so far (after flushing the app's log buffer, unless ``flush=False``)."""
        if flush:
            self.services.logs.flush()
        return [msgspec.json.decode(line) for line in self._logs.getvalue().splitlines() if line.strip()]


@pytest.fixture
def start_app() -> Iterator[Callable[[Settings], AppHarness]]:
    """Start apps for given settings; every app is shut down (lifespan exited) at teardown."""
    stack: list[TestClient] = []

    def start(settings: Settings) -> AppHarness:
        logs = io.StringIO()
        app = create_app(settings, log_stream=logs)
        client = TestClient(app, raise_server_exceptions=False)
        client.__enter__()
        stack.append(client)
        return AppHarness(app, client, logs)

    yield start
    for client in reversed(stack):
        client.__exit__(None, None, None)


@pytest.fixture
def app(start_app: Callable[[Settings], AppHarness], make_settings: Callable[..., Settings]) -> AppHarness:
    """An app on the test artifact with no judge configured."""
    return start_app(make_settings())


@pytest.fixture
def stand_in(judge_server: JudgeServer) -> JudgeServer:
    """The judge stand-in (``tests/fakes``): a real OpenAI-compatible HTTP server on 127.0.0.1, score 4."""
    judge_server.default_score = 4
    return judge_server


@pytest.fixture
def judges_file(stand_in: JudgeServer, tmp_path: Path) -> Path:
    """A JUDGES_FILE with one judge, ``stand-in`` (prompt family ``paper``), pointing at the stand-in."""
    path = tmp_path / "judges.json"
    path.write_bytes(msgspec.json.encode([stand_in.judge_config(name=STAND_IN, max_retries=1)]))
    return path


@pytest.fixture
def judge_app(
    start_app: Callable[[Settings], AppHarness], make_settings: Callable[..., Settings], judges_file: Path
) -> AppHarness:
    """An app on the test artifact whose judge ``stand-in`` is the stand-in server."""
    return start_app(make_settings(judges_file=judges_file))
