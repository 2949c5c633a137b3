"""What the adapters share: the scoring request they send and how they word and summarise the verdict.

A test case of an eval tool becomes one ``POST /v1/score`` request: its text to judge as ``summary``, its source
(the prompt, article or context) as ``document``, and the criterion, judge and decision settings of a
``ScoreSpec``. The answer is a ``ScoreResult``; ``explain`` words it and ``verdict_metadata`` is the plain-JSON
summary every adapter attaches (prediction set, decision, confidence, guarantees).

A failure is never a verdict: the service's problem (a 4xx, or a 502 when the judge call failed) arrives as
``ApiError`` and no answer at all as ``TransportError``; the adapters raise them (deepeval, Langfuse) or turn them
into an error the tool reports (Inspect), and never score the case.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..async_client import AsyncClient
from ..results import ScoreResult
from ..retry import RetryPolicy
from ..sync_client import Client

__all__ = ["ScoreSpec", "ServiceConnection", "explain", "verdict_metadata"]


@dataclass(frozen=True)
class ServiceConnection:
    """Where the service is: the base URL, the API key (sent as ``Authorization: Bearer``), the per-request
    timeout and the retry policy of the client (``RetryPolicy``; ``None`` is the client's default)."""

    base_url: str
    api_key: str | None = field(default=None, repr=False)  # never printed with the connection
    timeout: float = 60.0
    retry: RetryPolicy | None = None

    def client(self) -> Client:
        """A synchronous client (use it as a context manager)."""
        return Client(self.base_url, api_key=self.api_key, timeout=self.timeout, retry=self.retry)

    def async_client(self) -> AsyncClient:
        """An asynchronous client (use it as an async context manager)."""
        return AsyncClient(self.base_url, api_key=self.api_key, timeout=self.timeout, retry=self.retry)


@dataclass(frozen=True)
class ScoreSpec:
    """How a test case is scored: the criterion, the judge (``None``: the service's default), the prediction set's
    ``alpha``, the certified decision's ``tolerance`` / ``accept_alpha`` or its quality gate ``pass_threshold``,
    the ``guarantee`` mode (``"expected"``, the service's default, or ``"pac"``) and its ``confidence`` (pac only),
    and any other field of the score request in ``extra`` (``prompt_family``, ``method``, ``panel`` ...).
    ``None`` leaves a setting to the service's default."""

    criterion: str
    judge: str | None = None
    alpha: float | None = None
    tolerance: int | None = None
    accept_alpha: float | None = None
    pass_threshold: int | None = None
    guarantee: str | None = None
    confidence: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def body(self, *, document: str | None, summary: str, item_id: str | None = None) -> dict[str, Any]:
        """The ``POST /v1/score`` body that asks the service's judge to score ``summary`` against ``document``."""
        settings = {
            "judge": self.judge,
            "alpha": self.alpha,
            "tolerance": self.tolerance,
            "accept_alpha": self.accept_alpha,
            "pass_threshold": self.pass_threshold,
            "guarantee": self.guarantee,
            "confidence": self.confidence,
            "document": document,
            "item_id": item_id,
        }
        body: dict[str, Any] = {**dict(self.extra), "criterion": self.criterion, "summary": summary}
        body.update({name: value for name, value in settings.items() if value is not None})
        return body


def _label_set(labels: tuple[int, ...]) -> str:
    return "{" + ", ".join(str(label) for label in labels) + "}"


def explain(result: ScoreResult) -> str:
    """One sentence a reader of the eval report understands: the point, the set, the decision and its reason."""
    level = round(100 * result.coverage_target)
    return (
        f"{result.criterion}: point {result.point}, {level}% prediction set {_label_set(result.prediction_set)}, "
        f"decision {result.decision}. {result.reason}"
    )


def verdict_metadata(result: ScoreResult) -> dict[str, Any]:
    """The verdict as plain JSON: ``point``, ``prediction_set``, ``set_size``, ``decision``, ``confidence`` (the
    prediction set's coverage level, 1 - alpha), ``alpha``, ``rule_failed``, ``guarantees`` (as the service sent
    them), ``criterion``, ``judge``, ``prompt_family``, ``input_kind``, ``judge_score``, ``item_id`` and
    ``calibration_id`` (what a feedback item needs to name the verdict again:
    ``integrations.langfuse_feedback``)."""
    return {
        "point": result.point,
        "prediction_set": list(result.prediction_set),
        "set_size": result.set_size,
        "decision": result.decision,
        "confidence": result.coverage_target,
        "alpha": result.alpha,
        "rule_failed": result.rule_failed,
        "guarantees": [dict(guarantee.raw) for guarantee in result.guarantees],
        "criterion": result.criterion,
        "judge": result.judge,
        "prompt_family": result.raw.get("prompt_family"),
        "input_kind": result.input_kind,
        "judge_score": result.judge_score,
        "item_id": result.item_id,
        "calibration_id": result.calibration_id,
    }
