"""The loop counters and histograms export exactly what prometheus_client's own would for the same events."""

from __future__ import annotations

import random

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from service.observability.metrics import _LATENCY_BUCKETS, ServiceMetrics


def _samples(text: bytes) -> dict[tuple[str, str], float]:
    """(sample name with labels, value) pairs of an exposition, without HELP/TYPE lines and _created samples."""
    found = {}
    for line in text.decode().splitlines():
        if line.startswith("#") or "_created" in line or not line.strip():
            continue
        name, _, value = line.rpartition(" ")
        found[(name, "")] = float(value)
    return found


def test_requests_and_latency_match_prometheus_client():
    rng = random.Random(7)
    ours = ServiceMetrics()
    registry = CollectorRegistry()
    requests = Counter("cj_http_requests", "x", ["method", "route", "status"], registry=registry)
    latency = Histogram(
        "cj_http_request_duration_seconds", "x", ["method", "route"], buckets=_LATENCY_BUCKETS, registry=registry
    )
    routes = ["/v1/score", "/v1/compare", "<unmatched>"]
    # bucket edges exactly, values between them, and beyond the last bound
    values = [*_LATENCY_BUCKETS, 0.0, 100.0] + [rng.uniform(0, 70) ** 3 / 5000 for _ in range(300)]
    for value in values:
        method, route, status = rng.choice(["GET", "POST"]), rng.choice(routes), rng.choice([200, 404, 422])
        ours.observe_request(method, route, status, value)
        requests.labels(method, route, str(status)).inc()
        latency.labels(method, route).observe(value)
    theirs = _samples(generate_latest(registry))
    mine = {
        key: value
        for key, value in _samples(ours.render()).items()
        if key[0].startswith("cj_http_requests") or key[0].startswith("cj_http_request_duration")
    }
    assert mine.keys() == theirs.keys()
    for key, value in theirs.items():
        assert abs(mine[key] - value) <= 1e-9 * max(1.0, abs(value)), key


def test_unknown_methods_share_one_label_and_counters_start_absent():
    metrics = ServiceMetrics()
    assert b"cj_decisions_total{" not in metrics.render()
    metrics.observe_request("BREW", "<unmatched>", 405, 0.001)
    metrics.count_decision("coherence", "review", True)
    metrics.count_decision("coherence", "review", True)
    metrics.count_problem(422, "urn:conformal-judge:problem:validation-error")
    text = metrics.render().decode()
    assert 'cj_http_requests_total{method="OTHER",route="<unmatched>",status="405"} 1.0' in text
    assert 'cj_decisions_total{calibrated="true",criterion="coherence",decision="review"} 2.0' in text
    assert 'cj_http_errors_total{status="422",type="validation-error"} 1.0' in text
