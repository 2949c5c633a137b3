"""Admission control of one API process: past a bound, work is refused with 429 + Retry-After, never slowed.

* ``/v1/score/batch``: at most MAX_INFLIGHT_ITEMS items being scored at once in this process (each item is at
  most one judge call); a batch that would pass the bound is refused whole. A batch larger than the bound is
  still admitted when nothing else is in flight, so a bound below MAX_BATCH_ITEMS cannot refuse everything.
* ``/v1/jobs``: at most MAX_QUEUED_ITEMS items waiting in queued and running jobs (counted in Redis, so the
  bound holds across API processes); checked by the jobs route with ``check_queued``.

Counted from the event loop's thread only, so no lock.
"""

from __future__ import annotations

from service.jobs.errors import OverloadedError
from service.metrics import LoopCounter

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
