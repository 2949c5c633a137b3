"""Prometheus metrics of one app, in its own ``CollectorRegistry`` (never the global one).

========================================== ========= =============================================
metric                                     type      labels
========================================== ========= =============================================
``cj_http_requests_total``                 counter   method, route (path template), status
``cj_http_request_duration_seconds``       histogram method, route
``cj_http_errors_total``                   counter   status, type (problem slug)
``cj_judge_calls_total``                   counter   judge, kind (score/prefer/faithfulness_*), outcome
``cj_judge_call_duration_seconds``         histogram judge, kind
``cj_judge_input_tokens_total``            counter   judge, kind (prompt tokens from the replies' ``usage``)
``cj_judge_output_tokens_total``           counter   judge, kind (completion tokens, likewise)
``cj_judge_cost_usd_total``                counter   judge, kind (only judges with prices in JUDGES_FILE)
``cj_judge_model_mismatch_total``          counter   judge, model (verdicts whose reply named another model)
``cj_cache_requests_total``                counter   result (hit/miss)
``cj_decisions_total``                     counter   criterion, decision, calibrated
``cj_calibration_reloads_total``           counter   outcome (ok/refused)
``cj_calibration_entries``                 gauge     (none)
========================================== ========= =============================================

Counters and histograms are plain per-label dictionaries (``LoopCounter``, ``LoopHistogram``) that a
collector turns into Prometheus families when ``/metrics`` is scraped. prometheus_client's own counter and
histogram take a lock on every update, which cost about 16,000 CPU instructions a request (counted with
callgrind) for work these do in about 2,000. They are updated from the event loop's thread only (every
handler, hook and judge call of the service is a coroutine), so they need no lock.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Gauge, generate_latest
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

__all__ = ["CONTENT_TYPE", "LoopCounter", "LoopHistogram", "RequestStats", "ServiceMetrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class LoopCounter:
    """A labelled counter (Prometheus name without ``_total``); label values may be any str()-able value."""

    def __init__(self, name: str, documentation: str, labelnames: tuple[str, ...]) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = labelnames
        self.counts: dict[tuple[object, ...], float] = {}

    def inc(self, *labels: object) -> None:
        """Add one to the count of this label tuple."""
        self.counts[labels] = self.counts.get(labels, 0) + 1

    def add(self, amount: float, *labels: object) -> None:
        """Add ``amount`` to the count of this label tuple (nothing for 0: no series appears for it)."""
        if amount:
            self.counts[labels] = self.counts.get(labels, 0) + amount

    def family(self) -> CounterMetricFamily:
        """The counter as a Prometheus metric family (label values as strings)."""
        family = CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for labels, count in list(self.counts.items()):
            family.add_metric([str(value) for value in labels], count)
        return family


class LoopHistogram:
    """A labelled histogram with fixed upper bounds (``le``, inclusive, as Prometheus defines buckets)."""

    def __init__(self, name: str, documentation: str, labelnames: tuple[str, ...], buckets: tuple[float, ...]) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = labelnames
        self.bounds = tuple(sorted(buckets))
        # per label tuple: [count in bucket 0, ..., count above the last bound, sum of observations]
        self.cells: dict[tuple[object, ...], list[float]] = {}

    def observe(self, value: float, *labels: object) -> None:
        """Record one observation for this label tuple."""
        cell = self.cells.get(labels)
        if cell is None:
            cell = self.cells[labels] = [0] * (len(self.bounds) + 1) + [0.0]
        cell[bisect_left(self.bounds, value)] += 1
        cell[-1] += value

    def family(self) -> HistogramMetricFamily:
        """The histogram as a Prometheus family with cumulative buckets, +Inf, count and sum."""
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for labels, cell in list(self.cells.items()):
            cumulative, buckets = 0, []
            for bound, count in zip((*self.bounds, float("inf")), cell[:-1], strict=True):
                cumulative += int(count)
                buckets.append(("+Inf" if bound == float("inf") else repr(float(bound)), cumulative))
            family.add_metric([str(value) for value in labels], buckets, sum_value=cell[-1])
        return family


class RequestStats:
    """``cj_http_requests_total`` and ``cj_http_request_duration_seconds`` from one cell per (method, route,
    status): a request costs one look-up; the histogram (by method and route) sums the statuses at scrape time.
    """

    def __init__(self, buckets: tuple[float, ...]) -> None:
        self.bounds = tuple(sorted(buckets))
        self.cells: dict[tuple[str, str, int], list[float]] = {}

    def observe(self, method: str, route: str, status: int, elapsed_s: float) -> None:
        """Count one request and its latency in seconds."""
        key = (method, route, status)
        cell = self.cells.get(key)
        if cell is None:
            cell = self.cells[key] = [0] * (len(self.bounds) + 1) + [0.0]
        cell[bisect_left(self.bounds, elapsed_s)] += 1
        cell[-1] += elapsed_s

    def families(self) -> tuple[CounterMetricFamily, HistogramMetricFamily]:
        """The request counter and the latency histogram as Prometheus families."""
        labels = ("method", "route", "status")
        requests = CounterMetricFamily("cj_http_requests", "HTTP requests answered", labels=labels)
        latency = LoopHistogram(
            "cj_http_request_duration_seconds", "HTTP request latency", ("method", "route"), self.bounds
        )
        for (method, route, status), cell in list(self.cells.items()):
            requests.add_metric([method, route, str(status)], sum(int(count) for count in cell[:-1]))
            merged = latency.cells.setdefault((method, route), [0] * (len(self.bounds) + 1) + [0.0])
            for position, value in enumerate(cell):
                merged[position] += value
        return requests, latency.family()


class _LoopCollector(Collector):
    """Hands the loop counters and histograms to the registry at scrape time."""

    def __init__(self, requests: RequestStats, metrics: tuple[LoopCounter | LoopHistogram, ...]) -> None:
        self._requests = requests
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        yield from self._requests.families()
        for metric in self._metrics:
            yield metric.family()


class ServiceMetrics:
    """The app's collectors; build one per app and keep it on ``app.state``."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = RequestStats(_LATENCY_BUCKETS)
        self.errors = LoopCounter("cj_http_errors", "Problem responses (4xx/5xx)", ("status", "type"))
        self.judge_calls = LoopCounter(
            "cj_judge_calls", "Judge calls made (cache misses only)", ("judge", "kind", "outcome")
        )
        self.judge_latency = LoopHistogram(
            "cj_judge_call_duration_seconds", "Judge call latency", ("judge", "kind"), _LATENCY_BUCKETS
        )
        self.judge_input_tokens = LoopCounter(
            "cj_judge_input_tokens", "Prompt tokens of live judge calls (the replies' usage)", ("judge", "kind")
        )
        self.judge_output_tokens = LoopCounter(
            "cj_judge_output_tokens", "Completion tokens of live judge calls (the replies' usage)", ("judge", "kind")
        )
        self.judge_cost = LoopCounter(
            "cj_judge_cost_usd",
            "Estimated cost of live judge calls in US dollars (judges with price_in/out_per_mtok only)",
            ("judge", "kind"),
        )
        self.model_mismatches = LoopCounter(
            "cj_judge_model_mismatch",
            "Judge verdicts whose reply named another model than the judge's configured one",
            ("judge", "model"),
        )
        self.cache = LoopCounter("cj_cache_requests", "Judge-answer cache look-ups", ("result",))
        self.format_retries = LoopCounter(
            "cj_judge_format_retries",
            "Unreadable judge replies asked once more with a format reminder (not counted as retries)",
            ("judge", "kind"),
        )
        self.decisions = LoopCounter("cj_decisions", "Score decisions", ("criterion", "decision", "calibrated"))
        self.reloads = LoopCounter("cj_calibration_reloads", "Calibration reloads", ("outcome",))
        self.registry.register(
            _LoopCollector(
                self.requests,
                (
                    self.errors,
                    self.judge_calls,
                    self.judge_latency,
                    self.judge_input_tokens,
                    self.judge_output_tokens,
                    self.judge_cost,
                    self.model_mismatches,
                    self.cache,
                    self.format_retries,
                    self.decisions,
                    self.reloads,
                ),
            )
        )
        self.calibration_entries = Gauge(
            "cj_calibration_entries", "Entries in the loaded artifact", registry=self.registry
        )
        self.degraded = Gauge(
            "cj_dependency_degraded",
            "1 while a soft dependency is down (redis; judge:<name> with an open breaker), as of the last /readyz",
            ("dependency",),
            registry=self.registry,
        )

    def observe_request(self, method: str, route: str, status: int, elapsed_s: float) -> None:
        """Count one answered request and observe its latency in seconds."""
        self.requests.observe(method if method in _METHODS else "OTHER", route, status, elapsed_s)

    def count_problem(self, status: int, problem_type: str) -> None:
        """Count one problem response by status and the last segment of its type URI (the slug)."""
        self.errors.inc(status, problem_type.rsplit(":", 1)[-1])

    def count_decision(self, criterion: str, decision: str, calibrated: bool) -> None:
        """Count one score decision (``calibrated`` exported as ``true`` / ``false``)."""
        self.decisions.inc(criterion, decision, "true" if calibrated else "false")

    def render(self) -> bytes:
        """The registry in Prometheus text exposition format."""
        return generate_latest(self.registry)
