"""Prometheus metrics of one app, in its own ``CollectorRegistry`` (never the global one).

========================================== ========= =============================================
metric                                     type      labels
========================================== ========= =============================================
``cj_http_requests_total``                 counter   method, route (path template), status
``cj_http_request_duration_seconds``       histogram method, route
``cj_http_errors_total``                   counter   status, type (problem slug)
``cj_judge_calls_total``                   counter   judge, kind (score/prefer/faithfulness_*), outcome
``cj_judge_call_duration_seconds``         histogram judge, kind
``cj_cache_requests_total``                counter   result (hit/miss)
``cj_decisions_total``                     counter   criterion, decision, calibrated
``cj_calibration_reloads_total``           counter   outcome (ok/refused)
``cj_calibration_entries``                 gauge     (none)
========================================== ========= =============================================
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

__all__ = ["CONTENT_TYPE", "ServiceMetrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class ServiceMetrics:
    """The app's collectors; build one per app and keep it on ``app.state``."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "cj_http_requests", "HTTP requests answered", ["method", "route", "status"], registry=r
        )
        self.latency = Histogram(
            "cj_http_request_duration_seconds",
            "HTTP request latency",
            ["method", "route"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.errors = Counter("cj_http_errors", "Problem responses (4xx/5xx)", ["status", "type"], registry=r)
        self.judge_calls = Counter(
            "cj_judge_calls", "Judge calls made (cache misses only)", ["judge", "kind", "outcome"], registry=r
        )
        self.judge_latency = Histogram(
            "cj_judge_call_duration_seconds", "Judge call latency", ["judge", "kind"], buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.cache = Counter("cj_cache_requests", "Judge-answer cache look-ups", ["result"], registry=r)
        self.decisions = Counter(
            "cj_decisions", "Score decisions", ["criterion", "decision", "calibrated"], registry=r
        )
        self.reloads = Counter("cj_calibration_reloads", "Calibration reloads", ["outcome"], registry=r)
        self.calibration_entries = Gauge("cj_calibration_entries", "Entries in the loaded artifact", registry=r)
        # labels() takes a lock and builds a key per call; the hot path reuses the children it made.
        self._request_children: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}
        self._decision_children: dict[tuple[str, str, bool], Counter] = {}
        self._children: dict[tuple[int, tuple[str, ...]], Counter | Histogram] = {}

    def child(self, metric: Counter | Histogram, *values: str) -> Counter | Histogram:
        """``metric.labels(*values)``, made once per label tuple and reused (labels() locks on every call)."""
        key = (id(metric), values)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*values)
        return found

    def observe_request(self, method: str, route: str, status: int, elapsed_s: float | None) -> None:
        """Count one answered request and, when its start is known, observe its latency."""
        method = method if method in _METHODS else "OTHER"  # a client cannot grow the label set
        key = (method, route, status)
        children = self._request_children.get(key)
        if children is None:
            children = (self.requests.labels(method, route, str(status)), self.latency.labels(method, route))
            self._request_children[key] = children
        children[0].inc()
        if elapsed_s is not None:
            children[1].observe(elapsed_s)

    def count_problem(self, status: int, problem_type: str) -> None:
        """Count one problem response by status and the last segment of its type URI (the slug)."""
        self.child(self.errors, str(status), problem_type.rsplit(":", 1)[-1]).inc()

    def count_decision(self, criterion: str, decision: str, calibrated: bool) -> None:
        """Count one score decision."""
        key = (criterion, decision, calibrated)
        child = self._decision_children.get(key)
        if child is None:
            child = self._decision_children[key] = self.decisions.labels(criterion, decision, str(calibrated).lower())
        child.inc()

    def render(self) -> bytes:
        """The registry in Prometheus text exposition format."""
        return generate_latest(self.registry)
