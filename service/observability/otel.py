"""OpenTelemetry traces over OTLP/HTTP (the ``otel`` extra); imported only when OTEL_EXPORTER_OTLP_ENDPOINT is set.

One ``TracerProvider`` per app (never the global one), batching spans to ``<endpoint>/v1/traces``; the exporter
reads the standard OTEL_EXPORTER_OTLP_HEADERS / _TIMEOUT variables itself. What a trace holds:

* **server span** per HTTP request: OpenTelemetry's ASGI middleware (``opentelemetry-instrumentation-asgi``, the
  middleware Litestar's own OpenTelemetry plugin wraps) around the whole edge (``service.http.edge``), so refused
  and unrouted requests get one too; no per-message receive/send spans. Named ``METHOD /route/{template}`` once
  routed, with ``http.route``. The middleware is used directly rather than through ``litestar.plugins``: this
  module is reached from the judge pool, which the worker process shares, and the worker never imports Litestar.
* **judge-call span** (client) per live judge call (``service.judging.pool``; cache hits make none), named
  ``chat <model>``: ``cj.judge``, ``cj.judge_call.kind``, ``cj.judge_call.outcome`` (``ok`` or the error's
  type), ``gen_ai.operation.name`` ``chat``, ``gen_ai.request.model``, ``gen_ai.response.model`` (the reply's),
  ``gen_ai.usage.input_tokens`` / ``output_tokens``; a failed call has status ERROR.
* **job-chunk span** (consumer) per chunk a job worker runs (``service.jobs.runner``), named ``job.chunk``:
  ``cj.job_id``, ``cj.job.chunk``, ``cj.job.attempt``, and when it ends ``cj.job.outcome`` (``written``,
  ``duplicate``, ``abandoned`` or why it was skipped), ``cj.job.n_items``, ``cj.job.n_failed``; the chunk's
  judge-call spans are its children.
* **event** ``gen_ai.evaluation.result`` on the current span (the server span of /v1/score, each batch item too;
  the chunk span in a worker) per verdict: ``gen_ai.evaluation.name`` (the criterion),
  ``gen_ai.evaluation.score.value`` (the calibrated point), ``gen_ai.evaluation.score.label`` (the decision),
  ``gen_ai.evaluation.explanation`` (the answer's reason), ``cj.prediction_set``, ``cj.alpha``, ``cj.judge``,
  ``cj.calibrated``, ``cj.guarantees`` (each guarantee behind the answer as ``kind:mode:alpha[:tolerance=t]
  [:pass_threshold=p][:bound=b]``) and ``cj.guarantee.mode``; for a calibrated verdict the served set's interval as
  the proposed score-interval attributes (semantic-conventions-genai issue 43, not yet in the conventions):
  ``gen_ai.evaluation.score.ci.lower`` / ``.upper`` (the set's smallest and largest label) and ``.ci.level``
  (1 - alpha, the set's coverage target; a prediction interval for this item's human label, not a confidence
  interval of a mean). The SDK keeps at most OTEL_SPAN_EVENT_COUNT_LIMIT events a span (default 128) and counts
  the rest as dropped.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode

from service.observability.tracing import JobChunkRecord, JudgeCallRecord, Tracing

__all__ = ["EVALUATION_EVENT", "OtelTracing"]

EVALUATION_EVENT = "gen_ai.evaluation.result"


class _SpanRecord(JudgeCallRecord):
    """Writes one judge call's outcome onto its span."""

    def __init__(self, span: trace.Span) -> None:
        self._span = span

    def finish(
        self,
        outcome: str,
        *,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        reply_model: str | None = None,
    ) -> None:
        """Outcome, tokens and the reply's model as attributes; an outcome other than ``ok`` sets status ERROR."""
        attributes: dict[str, Any] = {"cj.judge_call.outcome": outcome}
        if prompt_tokens is not None:
            attributes["gen_ai.usage.input_tokens"] = prompt_tokens
        if completion_tokens is not None:
            attributes["gen_ai.usage.output_tokens"] = completion_tokens
        if reply_model is not None:
            attributes["gen_ai.response.model"] = reply_model
        self._span.set_attributes(attributes)
        if outcome != "ok":
            self._span.set_status(Status(StatusCode.ERROR, outcome))


class _ChunkSpanRecord(JobChunkRecord):
    """Writes one job chunk's outcome onto its span."""

    def __init__(self, span: trace.Span) -> None:
        self._span = span

    def finish(self, outcome: str, *, n_items: int, n_failed: int) -> None:
        """Outcome and counts as attributes."""
        self._span.set_attributes({"cj.job.outcome": outcome, "cj.job.n_items": n_items, "cj.job.n_failed": n_failed})


class OtelTracing(Tracing):
    """Traces exported over OTLP/HTTP to ``endpoint`` (the module docstring lists what they hold)."""

    enabled = True

    def __init__(self, *, endpoint: str, service_name: str) -> None:
        self.provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
        self.provider.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces"))
        )
        self._tracer = self.provider.get_tracer("conformal_judge")

    def wrap(self, app: Any) -> Any:
        """``app`` (HTTP calls only) inside OpenTelemetry's ASGI middleware: one server span per request, no
        receive/send spans, no OpenTelemetry metrics (the service's are Prometheus')."""
        return OpenTelemetryMiddleware(
            app, tracer_provider=self.provider, meter_provider=NoOpMeterProvider(), exclude_spans=["receive", "send"]
        )

    def name_request(self, method: str, route: str) -> None:
        """Name the current server span by its route template (set once the router has matched)."""
        span = trace.get_current_span()
        if route.startswith("/"):
            span.update_name(f"{method} {route}")
            span.set_attribute("http.route", route)
        else:
            span.update_name(method)

    @contextmanager
    def judge_call(self, judge: str, model: str, kind: str) -> Iterator[JudgeCallRecord]:
        """A client span around one live judge call (current while it runs)."""
        attributes = {
            "cj.judge": judge,
            "cj.judge_call.kind": kind,
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
        }
        with self._tracer.start_as_current_span(
            f"chat {model}",
            kind=SpanKind.CLIENT,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            yield _SpanRecord(span)

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
        """One ``gen_ai.evaluation.result`` event on the current (server) span (module docstring)."""
        attributes: dict[str, Any] = {
            "gen_ai.evaluation.name": criterion,
            "gen_ai.evaluation.score.value": float(point),
            "gen_ai.evaluation.score.label": decision,
            "cj.prediction_set": list(prediction_set),
            "cj.alpha": alpha,
            "cj.judge": judge,
            "cj.calibrated": calibrated,
            "cj.guarantees": list(guarantees),
        }
        if explanation:
            attributes["gen_ai.evaluation.explanation"] = explanation
        if mode is not None:
            attributes["cj.guarantee.mode"] = mode
        if calibrated and prediction_set:
            attributes["gen_ai.evaluation.score.ci.lower"] = float(min(prediction_set))
            attributes["gen_ai.evaluation.score.ci.upper"] = float(max(prediction_set))
            attributes["gen_ai.evaluation.score.ci.level"] = 1.0 - alpha
        trace.get_current_span().add_event(EVALUATION_EVENT, attributes)

    @contextmanager
    def job_chunk(self, job_id: str, chunk: int, attempt: int) -> Iterator[JobChunkRecord]:
        """A consumer span around one job chunk (current while it runs, so its judge calls are its children)."""
        attributes: dict[str, str | int] = {"cj.job_id": job_id, "cj.job.chunk": chunk, "cj.job.attempt": attempt}
        with self._tracer.start_as_current_span("job.chunk", kind=SpanKind.CONSUMER, attributes=attributes) as span:
            yield _ChunkSpanRecord(span)

    def shutdown(self) -> None:
        """Export what is buffered and stop the exporter."""
        self.provider.shutdown()
