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
``tracing.shutdown()``                                  flushes and stops the exporter (lifespan finally)
======================================================  ===================================================
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

__all__ = ["JudgeCallRecord", "Tracing"]


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


_NO_RECORD = JudgeCallRecord()


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
    ) -> None:
        """No event."""

    def shutdown(self) -> None:
        """Nothing to flush."""
