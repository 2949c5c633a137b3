"""A tiny OTLP/HTTP trace collector in a thread, for the tracing tests of the API and of the job worker.

``with OtlpCollector() as collector:`` serves ``collector.endpoint`` (set OTEL_EXPORTER_OTLP_ENDPOINT to it);
every ExportTraceServiceRequest POSTed (gzip or not) is kept in ``collector.requests``, its path in
``collector.paths``; ``collector.spans()`` flattens them, ``otlp_attributes(span.attributes)`` reads a KeyValue
list as a dict. The ``otlp_collector`` fixture (``tests/fakes/fixtures.py``) skips without the otel extra.
"""

from __future__ import annotations

import gzip
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["OtlpCollector", "otlp_attributes"]


class OtlpCollector:
    """Records every ExportTraceServiceRequest POSTed to it (the otel extra's protobuf classes decode them)."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
            ExportTraceServiceResponse,
        )

        self.requests: list[Any] = []
        self.paths: list[str] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
                return

            def do_POST(self) -> None:  # noqa: N802 - stdlib naming
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    raw = gzip.decompress(raw)
                collector.paths.append(self.path)
                message = ExportTraceServiceRequest()
                message.ParseFromString(raw)
                collector.requests.append(message)
                body = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def spans(self) -> list[Any]:
        return [
            span
            for request in list(self.requests)
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]

    def resources(self) -> list[dict[str, Any]]:
        """The resource attributes of every batch received."""
        return [otlp_attributes(r.resource.attributes) for q in list(self.requests) for r in q.resource_spans]

    def wait_for_spans(self, done: Any, timeout_s: float) -> list[Any]:
        """The spans once ``done(spans)`` holds, or when ``timeout_s`` has passed (the caller asserts on them)."""
        deadline = time.monotonic() + timeout_s
        while not done(self.spans()) and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.spans()

    def __enter__(self) -> OtlpCollector:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def otlp_attributes(items: Any) -> dict[str, Any]:
    """OTLP KeyValue list -> {key: python value} (arrays as lists)."""
    found: dict[str, Any] = {}
    for item in items:
        value = item.value
        kind = value.WhichOneof("value")
        if kind == "array_value":
            found[item.key] = [getattr(v, v.WhichOneof("value")) for v in value.array_value.values]
        else:
            found[item.key] = getattr(value, kind)
    return found
