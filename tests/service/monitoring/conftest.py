"""Fixtures of the monitor tests: the job tests' Redis queue of their own (the monitors live under its prefix, so its
keys are removed afterwards) and helpers to send feedback."""

from __future__ import annotations

from typing import Any

from tests.service.jobs.conftest import jobs_settings, queue_name

__all__ = ["feedback_item", "jobs_settings", "queue_name"]


def feedback_item(item_id: str, human: float, *, judge_score: int = 3, **extra: Any) -> dict[str, Any]:
    """A feedback item on the test artifact's stand-in / paper / relevance cell (its default method: residual)."""
    return {
        "criterion": "relevance",
        "judge": "stand-in",
        "prompt_family": "paper",
        "judge_score": judge_score,
        "human": human,
        "item_id": item_id,
        **extra,
    }
