"""The study's verdicts on itself, read from its rows: false alarms without a shift, the headline delay, harmful
shifts detected, harmless shifts left alone.

* **False alarms.** Every row whose population meets the watched guarantees (a calibration's own population,
  ``none`` and ``abstractive``, and every harmless shift: the null holds for them all) may alarm in at most the
  95% quantile of Binomial(streams, delta) streams: delta plus the Monte-Carlo error of ``streams`` streams
  (scipy's binomial quantile).
* **Headline.** The ``harsher`` row of :data:`offline.studies.monitoring.study.HEADLINE`: median labels to the
  alarm <= ``HEADLINE_TARGET``.
* **Harmful shifts.** Each is detected (alarm within the horizon) in >= 90% of streams, or listed with its
  information bound (:func:`offline.studies.monitoring.streams.information_labels`), which says whether any
  document-level test could have.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from scipy.stats import binom

from offline.studies.monitoring.study import HEADLINE, ScenarioRow

__all__ = ["DETECTION_TARGET", "HEADLINE_TARGET", "MissedShift", "StudyChecks", "study_checks"]

HEADLINE_TARGET = 800  # labels: a change detector whose mean time to a false alarm is horizon / delta documents
DETECTION_TARGET = 0.90


class MissedShift(msgspec.Struct, frozen=True, kw_only=True):
    """A harmful shift detected in fewer than 90% of streams, with what any document-level test would need."""

    kind: str
    judge: str
    criterion: str
    verdicts_of: str
    harms: list[str]
    alarm_rate: float
    information_labels: float | None


class StudyChecks(msgspec.Struct, frozen=True, kw_only=True):
    """Each check's figures and whether it passed."""

    null_rows: int
    null_max_alarm_rate: float
    null_alarm_limit: float  # the binomial 95% quantile over streams, as a rate
    false_alarms_ok: bool
    headline_median_labels: float | None
    headline_p90_labels: float | None
    headline_ok: bool
    harmful_rows: int
    harmful_detected: int
    missed: list[MissedShift]
    harmless_shifted_rows: int


def study_checks(rows: Sequence[ScenarioRow], *, delta: float, streams: int) -> StudyChecks:
    """The module's checks over the study's rows."""
    nulls = [r for r in rows if not r.harmful]
    limit = float(binom.ppf(0.95, streams, delta)) / streams
    worst = max((r.alarm_rate for r in nulls), default=0.0)
    headline = next(
        (r for r in rows if r.kind == "harsher" and (r.judge, r.criterion) == HEADLINE and r.calibration == "shipped"),
        None,
    )
    harmful = [r for r in rows if r.harmful]
    missed = [
        MissedShift(
            kind=r.kind,
            judge=r.judge,
            criterion=r.criterion,
            verdicts_of=r.verdicts_of,
            harms=r.harms,
            alarm_rate=r.alarm_rate,
            information_labels=r.information_labels,
        )
        for r in harmful
        if r.alarm_rate < DETECTION_TARGET
    ]
    median = None if headline is None else headline.median_labels
    return StudyChecks(
        null_rows=len(nulls),
        null_max_alarm_rate=worst,
        null_alarm_limit=limit,
        false_alarms_ok=worst <= limit,
        headline_median_labels=median,
        headline_p90_labels=None if headline is None else headline.p90_labels,
        headline_ok=median is not None and median <= HEADLINE_TARGET,
        harmful_rows=len(harmful),
        harmful_detected=len(harmful) - len(missed),
        missed=missed,
        harmless_shifted_rows=sum(1 for r in rows if not r.harmful and r.kind not in ("none", "abstractive")),
    )
