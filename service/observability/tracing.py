"""Traces of one app: off (``Tracing``, every method a no-op) unless OTEL_EXPORTER_OTLP_ENDPOINT is set.

The app gets its tracing from ``service.observability.traces.make_tracing``; with the endpoint set that is
``service.observability.otel.OtelTracing``, which implements the same methods.

======================================================  ===================================================
call                                                    effect
======================================================  ===================================================
``tracing.wrap(asgi_app)``                              the app, or it inside a server span per request
``tracing.name_request(method, route)``                 names the request's server span by its route
``with tracing.judge_call(judge, model, kind) as call``  a span around one live judge call;
``call.finish(outcome, ...)``                           its outcome, tokens and the reply's model
``tracing.evaluation(criterion=..., point=..., ...)``   span event ``gen_ai.evaluation.result`` per verdict
``trace_evaluation(tracing, answer)``                   the same event for one ``ScoreResponse`` (API and
                                                        job worker alike)
``with tracing.job_chunk(job_id, chunk, attempt) as c``  a span around one job chunk in a worker;
``c.finish(outcome, n_items=..., n_failed=...)``        its outcome and counts
``tracing.shutdown()``                                  flushes and stops the exporter (lifespan finally,
                                                        the worker's exit)
======================================================  ===================================================
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from service.wire.score import Guarantee, ScoreResponse

__all__ = ["JobChunkRecord", "JudgeCallRecord", "Tracing", "guarantee_name", "trace_evaluation"]


class JudgeCallRecord:
    """What one judge call reports to its span; this one records nothing."""

    def finish(
        self,
        outcome: str,
        *,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        reply_model: str | None = None,
    ) -> None:
        """The call's outcome (``ok`` or the error's type), its token usage and the model the reply named."""


class JobChunkRecord:
    """What one job chunk reports to its span; this one records nothing."""

    def finish(self, outcome: str, *, n_items: int, n_failed: int) -> None:
        """The chunk's outcome (written, duplicate, abandoned, or why it was skipped) and its item counts."""


_NO_RECORD = JudgeCallRecord()
_NO_CHUNK_RECORD = JobChunkRecord()


class Tracing:
    """No tracing: what the service runs with unless OTEL_EXPORTER_OTLP_ENDPOINT is set."""

    enabled = False

    def wrap(self, app: Any) -> Any:
        """The ASGI ``app`` as it is."""
        return app

    def name_request(self, method: str, route: str) -> None:
        """Nothing to name."""

    @contextmanager
    def judge_call(self, judge: str, model: str, kind: str) -> Iterator[JudgeCallRecord]:
        """No span."""
        yield _NO_RECORD

    def evaluation(
        self,
        *,
        criterion: str,
        judge: str,
        point: int,
        prediction_set: Sequence[int],
        decision: str,
        alpha: float,
        calibrated: bool,
        guarantees: Sequence[str] = (),
        mode: str | None = None,
        explanation: str = "",
    ) -> None:
        """No event."""

    @contextmanager
    def job_chunk(self, job_id: str, chunk: int, attempt: int) -> Iterator[JobChunkRecord]:
        """No span."""
        yield _NO_CHUNK_RECORD

    def shutdown(self) -> None:
        """Nothing to flush."""


def trace_evaluation(tracing: Tracing, answer: ScoreResponse) -> None:
    """The answer's ``gen_ai.evaluation.result`` event on the current span (service.observability.otel)."""
    tracing.evaluation(
        criterion=answer.criterion,
        judge=answer.judge,
        point=answer.point,
        prediction_set=answer.prediction_set,
        decision=answer.decision,
        alpha=answer.alpha,
        calibrated=answer.calibrated,
        guarantees=[guarantee_name(g) for g in answer.guarantees],
        mode=answer.guarantees[0].mode if answer.guarantees else None,
        explanation=answer.reason,
    )


def guarantee_name(guarantee: Guarantee) -> str:
    """One guarantee in a span attribute's words: ``kind:mode:alpha`` and, where it has one, ``:tolerance=t``,
    ``:pass_threshold=p`` and ``:bound=b`` (e.g. ``accept_error:pac:0.1:tolerance=2:bound=0.083``)."""
    parts = [guarantee.kind, guarantee.mode, f"{guarantee.alpha:g}"]
    if guarantee.tolerance is not None:
        parts.append(f"tolerance={guarantee.tolerance}")
    if guarantee.pass_threshold is not None:
        parts.append(f"pass_threshold={guarantee.pass_threshold}")
    if guarantee.bound is not None:
        parts.append(f"bound={guarantee.bound:.4g}")
    return ":".join(parts)
