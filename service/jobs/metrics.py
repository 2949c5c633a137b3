"""Prometheus metrics of durable jobs, registered into an app's or a worker's ``ServiceMetrics`` registry.

=================================== ========= ==============================================================
metric                              type      labels / meaning
=================================== ========= ==============================================================
``cj_job_items_total``              counter   outcome (ok / failed): items given a result line (rate: per s)
``cj_job_chunks_total``             counter   outcome (written / duplicate / abandoned / cancelled / gone)
``cj_job_chunk_retries_total``      counter   chunks started again after a lost or stopped worker
``cj_worker_heartbeats_total``      counter   heartbeats this worker wrote for its running chunks
``cj_job_queue_chunks``             gauge     state (queued / active): chunk tasks in the queue
``cj_job_queued_items``             gauge     items of queued and running jobs not yet done
``cj_job_store_bytes``              gauge     bytes the kept jobs hold or reserve in Redis (JOB_STORE_MAX_BYTES)
``cj_jobs_submitted_total``         counter   outcome (accepted / replayed / refused)
``cj_admission_refused_total``      counter   route: 429 answers of admission control
=================================== ========= ==============================================================

The gauges are refreshed by whoever reads the queue: a worker every JOB_SWEEP_S (the first two), the API on
each POST (``cj_job_queued_items``, ``cj_job_store_bytes``).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import Gauge
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from service.observability.metrics import LoopCounter, ServiceMetrics

__all__ = ["JobMetrics"]


class JobMetrics:
    """The job counters and gauges, registered in ``metrics.registry``."""

    def __init__(self, metrics: ServiceMetrics) -> None:
        self.items = LoopCounter("cj_job_items", "Job items given a result line", ("outcome",))
        self.chunks = LoopCounter("cj_job_chunks", "Job chunks finished by this process", ("outcome",))
        self.chunk_retries = LoopCounter("cj_job_chunk_retries", "Chunks started again after a lost worker", ())
        self.heartbeats = LoopCounter("cj_worker_heartbeats", "Heartbeats written for running chunks", ())
        self.submitted = LoopCounter("cj_jobs_submitted", "POST /v1/jobs outcomes", ("outcome",))
        self.refused = LoopCounter("cj_admission_refused", "429 answers of admission control", ("route",))
        metrics.registry.register(
            _Counters((self.items, self.chunks, self.chunk_retries, self.heartbeats, self.submitted, self.refused))
        )
        self.queue_chunks = Gauge(
            "cj_job_queue_chunks", "Chunk tasks in the queue", ("state",), registry=metrics.registry
        )
        self.queued_items = Gauge(
            "cj_job_queued_items", "Items of queued and running jobs not yet done", registry=metrics.registry
        )
        self.store_bytes = Gauge(
            "cj_job_store_bytes", "Bytes the kept jobs hold or reserve in Redis", registry=metrics.registry
        )


class _Counters(Collector):
    """Hands the loop counters to the registry at scrape time."""

    def __init__(self, counters: tuple[LoopCounter, ...]) -> None:
        self._counters = counters

    def collect(self) -> Iterator[Metric]:
        for counter in self._counters:
            yield counter.family()
