"""A deepeval metric scored by the Conformal Judge service: ``ConformalJudgeMetric``.

Each test case is one ``POST /v1/score``: ``actual_output`` is the text judged (``summary``) and the test case's
``input`` (or its ``context`` / ``retrieval_context``, joined) the document it is judged against. The metric sets

* ``score``: the calibrated point label (on the calibration's label scale, e.g. 1..5, not 0..1);
* ``success``: the service's certified decision is ``accept`` **and** the point is at least ``threshold``.
  deepeval needs a threshold on every metric; the default is ``spec.pass_threshold`` when set, else 1 (the lowest
  label), so by default success is exactly the decision. ``threshold=4`` also fails an accepted point 3. With
  ``pass_threshold`` set the service decides with its quality gate, so ``accept`` means a certified pass (point
  >= ``pass_threshold`` in a bin the calibration certifies); a point at or above it that the calibration does not
  certify escalates and is not a success;
* ``reason``: the point, the prediction set, the decision and the service's own reason;
* ``score_breakdown``: ``verdict_metadata`` (prediction set, decision, confidence, guarantees ...), and
  ``verdict``: the whole ``ScoreResult``.

A failure is never a score: the service's problem (``ApiError``, e.g. a 502 when the judge call failed) or no
answer (``TransportError``) is recorded in ``error``, ``success`` is False, and the exception is raised, so
``deepeval.evaluate`` reports the case as errored (or goes on past it with ``ErrorConfig(ignore_errors=True)``,
still unsuccessful).

Needs deepeval: ``pip install './client[deepeval]'``.
"""

from __future__ import annotations

from typing import Any, Literal

from ..errors import ConformalJudgeError
from ..results import ScoreResult
from .verdicts import ScoreSpec, ServiceConnection, explain, verdict_metadata

try:
    from deepeval.metrics import BaseMetric
    from deepeval.test_case import LLMTestCase
except ImportError as missing:  # pragma: no cover - the message is the point
    raise ImportError(
        "conformal_judge_client.integrations.deepeval needs deepeval: pip install 'conformal-judge-client[deepeval]'"
    ) from missing

__all__ = ["ConformalJudgeMetric"]

DocumentField = Literal["input", "context", "retrieval_context"]


class ConformalJudgeMetric(BaseMetric):
    """Scores a test case with the service's judge and calibrated verdict (see the module docstring)."""

    def __init__(
        self,
        connection: ServiceConnection,
        spec: ScoreSpec,
        *,
        threshold: float | None = None,
        document_from: DocumentField = "input",
        async_mode: bool = True,
        verbose_mode: bool = False,
    ) -> None:
        self.connection = connection
        self.spec = spec
        self.document_from = document_from
        self.threshold = threshold if threshold is not None else (spec.pass_threshold or 1)
        self.async_mode = async_mode
        self.verbose_mode = verbose_mode
        self.include_reason = True
        self.evaluation_model = f"conformal-judge ({spec.judge or 'default judge'})"
        self.verdict: ScoreResult | None = None

    @property
    def __name__(self) -> str:  # deepeval names a metric by this property
        return f"Conformal Judge [{self.spec.criterion}]"

    def request_body(self, test_case: LLMTestCase) -> dict[str, Any]:
        """The score request for ``test_case`` (``ValueError`` when it has no ``actual_output`` to judge)."""
        if not test_case.actual_output:
            raise ValueError("the test case has no actual_output to judge")
        document: str | None
        if self.document_from == "input":
            document = test_case.input
        else:
            parts = getattr(test_case, self.document_from) or []
            document = "\n\n".join(part if isinstance(part, str) else str(part) for part in parts) or None
        return self.spec.body(document=document, summary=test_case.actual_output, item_id=test_case.name)

    def measure(self, test_case: LLMTestCase, *args: Any, **kwargs: Any) -> float:
        """Score the test case (synchronous); raises ``ConformalJudgeError`` when the service gives no verdict."""
        body = self._start(test_case)
        try:
            with self.connection.client() as client:
                result = client.score(body)
        except ConformalJudgeError as error:
            self._fail(error)
            raise
        return self._record(result)

    async def a_measure(self, test_case: LLMTestCase, *args: Any, **kwargs: Any) -> float:
        """Score the test case (asynchronous); raises ``ConformalJudgeError`` when the service gives no verdict."""
        body = self._start(test_case)
        try:
            async with self.connection.async_client() as client:
                result = await client.score(body)
        except ConformalJudgeError as error:
            self._fail(error)
            raise
        return self._record(result)

    def is_successful(self) -> bool:
        """The service's certified decision was ``accept`` and the point reached ``threshold`` (False after an error
        or before a measure)."""
        verdict, threshold = self.verdict, self.threshold if self.threshold is not None else 1
        accepted = verdict is not None and verdict.decision == "accept" and verdict.point >= threshold
        self.success = self.error is None and accepted
        return self.success

    def _start(self, test_case: LLMTestCase) -> dict[str, Any]:
        self.error, self.verdict, self.score, self.success, self.reason = None, None, None, False, None
        return self.request_body(test_case)

    def _record(self, result: ScoreResult) -> float:
        self.verdict = result
        self.score = float(result.point)
        self.score_breakdown = verdict_metadata(result)
        self.reason = explain(result)
        self.is_successful()
        if self.verbose_mode:
            self.verbose_logs = self.reason
        return self.score

    def _fail(self, error: ConformalJudgeError) -> None:
        self.error = f"{type(error).__name__}: {error}"
        self.success = False
