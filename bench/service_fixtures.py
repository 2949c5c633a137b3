"""What the service benchmark serves and sends: a thresholds artifact and a judges file for its stand-in judge,
the request bodies, and the judge stand-in (tests/fakes/judge_server.py: scripted answers, not a model)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "ALPHA",
    "CRITERION",
    "DOCUMENT",
    "JUDGE_NAME",
    "judge_calls",
    "judge_stand_in",
    "judge_url",
    "judged_body",
    "own_score_body",
    "write_artifact",
    "write_judges",
]

JUDGE_NAME = "bench-judge"
CRITERION = "coherence"
PROMPT_FAMILY = "paper"
ALPHA = 0.1
DOCUMENT = (
    "The city council approved a new budget on Tuesday after a long debate. The plan raises spending on "
    "schools and roads while cutting administrative costs, and it takes effect next month."
)


def write_artifact(path: Path) -> None:
    """A thresholds artifact for the bench judge (residual and lac at alpha 0.1), fitted on synthetic scores
    (seed 0)."""
    from artifact.thresholds import FORMAT_VERSION, DefaultMethod, ThresholdEntry, ThresholdsArtifact, save_artifact
    from calibration.conformal import fit_conformal

    rng = np.random.default_rng(0)
    labels = rng.integers(1, 6, 1000)
    judge_scores = np.clip(labels + rng.integers(-1, 2, 1000), 1, 5)
    probabilities = rng.dirichlet(np.ones(5), 1000)
    entries = [
        ThresholdEntry(
            judge=JUDGE_NAME,
            prompt_family=PROMPT_FAMILY,
            criterion=CRITERION,
            method=method,
            alpha=ALPHA,
            fitted=fit_conformal(method, ALPHA, labels, judge_scores=judge_scores, probabilities=probabilities),
        )
        for method in ("residual", "lac")
    ]
    artifact = ThresholdsArtifact(
        format_version=FORMAT_VERSION,
        created_at="bench",
        code_version="bench",
        data_hash="bench",
        label_scale=[1, 2, 3, 4, 5],
        entries=entries,
        default_methods=[
            DefaultMethod(
                judge=JUDGE_NAME, prompt_family=PROMPT_FAMILY, criterion=CRITERION, method="residual", reason="bench"
            )
        ],
    )
    save_artifact(artifact, path)


def write_judges(path: Path, base_url: str, max_concurrency: int) -> None:
    """A JUDGES_FILE naming the bench judge at ``base_url``."""
    judge = {
        "name": JUDGE_NAME,
        "model": "bench-model",
        "base_url": base_url,
        "api_key_env": None,
        "prompt_family": PROMPT_FAMILY,
        "temperature": 0.0,
        "logprobs": True,
        "max_concurrency": max_concurrency,
        "timeout_s": 30.0,
        "max_retries": 0,
    }
    path.write_text(json.dumps([judge]))


def own_score_body() -> dict:
    """A /v1/score body carrying the caller's own judge score (no judge call)."""
    return {
        "criterion": CRITERION,
        "judge": JUDGE_NAME,
        "prompt_family": PROMPT_FAMILY,
        "alpha": ALPHA,
        "judge_score": 3,
    }


def judged_body(i: int, tag: str) -> dict:
    """A /v1/score body the judge must score (a distinct summary for each ``i`` and ``tag``)."""
    return {
        "criterion": CRITERION,
        "judge": JUDGE_NAME,
        "alpha": ALPHA,
        "document": DOCUMENT,
        "summary": f"The council approved a budget ({tag} #{i}) raising school and road spending.",
    }


@contextmanager
def judge_stand_in(latency_s: float) -> Iterator[Any]:
    """The OpenAI-compatible stand-in from tests/fakes/judge_server.py, answering "3" after latency_s."""
    from tests.fakes.judge_server import JudgeServer

    with JudgeServer(default_score=3, latency_s=latency_s) as server:
        yield server


def judge_url(judge: Any) -> str:
    """The stand-in's OpenAI base URL."""
    return str(judge.base_url)


def judge_calls(judge: Any) -> int:
    """Chat-completion requests the stand-in has served so far."""
    return int(judge.call_count)
