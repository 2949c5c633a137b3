"""Admission control of one API process: past a bound, work is refused with 429 + Retry-After, never slowed.

* ``/v1/score/batch``: at most MAX_INFLIGHT_ITEMS items being scored at once in this process (each item is at
  most one judge call); a batch that would pass the bound is refused whole. A batch larger than the bound is
  still admitted when nothing else is in flight, so a bound below MAX_BATCH_ITEMS cannot refuse everything.
* ``/v1/jobs``: at most MAX_QUEUED_ITEMS items waiting in queued and running jobs (counted in Redis, so the
  bound holds across API processes); checked by the jobs route with ``check_queued``.
* ``/v1/jobs``, bytes: the jobs kept in Redis (inputs, results, and the results reserved for items not yet
  done) stay within JOB_STORE_MAX_BYTES: a job whose estimate would pass it is refused with 503 + Retry-After
  (413 when it alone is larger than the budget); checked with ``check_store_bytes``. Results are kept for
  JOB_RESULTS_TTL_S after a job ends, so finished jobs count until they expire (docs/jobs-sizing.md).

Counted from the event loop's thread only, so no lock.
"""

from __future__ import annotations

import math

from service.errors import JobStoreFullError, JobTooLargeError, OverloadedError
from service.observability.metrics import LoopCounter

__all__ = ["Admission"]


class Admission:
    """The in-flight item count of one process and the bounds (see the module rules)."""

    def __init__(
        self, *, max_inflight_items: int, max_queued_items: int, retry_after_s: int, refused: LoopCounter
    ) -> None:
        self.max_inflight_items = max_inflight_items
        self.max_queued_items = max_queued_items
        self.retry_after_s = retry_after_s
        self.inflight_items = 0
        self._refused = refused  # cj_admission_refused_total, by route

    def admit(self, n_items: int) -> None:
        """Take ``n_items`` in-flight slots (give them back with ``release``); 429 when they do not fit."""
        if self.inflight_items and self.inflight_items + n_items > self.max_inflight_items:
            self._refused.inc("/v1/score/batch")
            raise OverloadedError(
                f"{self.inflight_items} items are being scored in this process; {n_items} more would pass "
                f"MAX_INFLIGHT_ITEMS={self.max_inflight_items}: retry after {self.retry_after_s} s",
                retry_after_s=self.retry_after_s,
            )
        self.inflight_items += n_items

    def release(self, n_items: int) -> None:
        """Give back slots taken by ``admit``."""
        self.inflight_items -= n_items

    def check_queued(self, queued_items: int, n_new: int) -> None:
        """Refuse (429) ``n_new`` more job items when ``queued_items`` are waiting and the sum passes the bound."""
        if queued_items + n_new > self.max_queued_items:
            self._refused.inc("/v1/jobs")
            raise OverloadedError(
                f"{queued_items} job items are waiting; {n_new} more would pass MAX_QUEUED_ITEMS="
                f"{self.max_queued_items}: retry after {self.retry_after_s} s",
                retry_after_s=self.retry_after_s,
            )

    def check_store_bytes(
        self, stored: int, n_new: int, *, max_bytes: int, earliest_expiry_in_s: float | None = None
    ) -> None:
        """Refuse a job estimated at ``n_new`` bytes when ``stored`` bytes are kept and the sum passes
        ``max_bytes`` (JOB_STORE_MAX_BYTES): 413 when it alone does, else 503 with Retry-After = the seconds
        until the earliest kept job expires (at least RETRY_AFTER_S)."""
        if n_new > max_bytes:
            self._refused.inc("/v1/jobs")
            raise JobTooLargeError(
                f"the job needs about {n_new} bytes of job storage (its input + JOB_RESULT_ITEM_BYTES per item); "
                f"the whole budget is JOB_STORE_MAX_BYTES={max_bytes}: split it into smaller jobs"
            )
        if stored + n_new > max_bytes:
            self._refused.inc("/v1/jobs")
            wait = self.retry_after_s
            if earliest_expiry_in_s is not None:
                wait = max(wait, math.ceil(earliest_expiry_in_s))
            raise JobStoreFullError(
                f"the jobs kept hold {stored} bytes; this job's about {n_new} more would pass "
                f"JOB_STORE_MAX_BYTES={max_bytes} (results are kept JOB_RESULTS_TTL_S after a job ends): retry "
                f"after {wait} s, or read and let older results expire",
                retry_after_s=wait,
            )
