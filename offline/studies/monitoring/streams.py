"""Seeded streams of whole documents and the labels each monitor needs before its alarm.

Rules. A population's items are grouped by document; a stream is a sequence of passes, each a fresh random order of
all the documents (``numpy.random.default_rng(seed)``, one permutation per pass, streams drawn one after the
other), long enough to reach ``horizon`` labels; the documents arrive whole. The monitor
(:mod:`calibration.monitoring`) reads one finished document per step. The delay of a stream is the number of labels
seen when the alarm rises (the alarm document's labels included); a stream without an alarm by ``horizon`` labels
counts as not detected (its delay is +inf, so medians and 90th percentiles over all streams are +inf when fewer than
half / 90% of the streams alarmed). The "plain" comparison is a document-level betting test with the certification
side's bets: aGRAPA plug-in (one pseudo-document at 0 with variance 0.01), clipped to [0, 0.95 / (1 - level)].

The information bound of a population (``information_labels``): with x_d the document's excess in units of the
level (:mod:`calibration.monitoring.detector`), KL_inf = max over 0 <= lambda < 1 / level of E[log(1 + lambda x_d)]
(the population's distance to the null "E[x_d] <= 0" of bounded variables: Honda and Takemura 2010; Agrawal, Juneja
and Koolen 2021), and log(1/delta) / KL_inf documents is, for small delta, the least expected number of documents
any level-delta sequential test with documents as the unit needs (Lai's bound); the study passes the detector's
threshold as 1/delta (horizon / delta: what a detector with that mean time to a false alarm must reach); times the
mean labels of a document it is the number of labels reported. It is also what the best constant bet chosen in
hindsight would need: the benchmark the monitor's delays are read against. None when the population meets the null
(E[x_d] <= 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibration.monitoring import CellSpec, cell_alarm_index, cell_e_path, detector_path
from offline.studies.monitoring.served import ServedOutcomes

__all__ = [
    "DocumentCounts",
    "StreamRun",
    "document_counts",
    "information_labels",
    "plain_delays",
    "run_streams",
    "stream_orders",
]

PLAIN_CAP = 0.95
PLAIN_PRIOR_VARIANCE = 0.01


@dataclass(frozen=True)
class DocumentCounts:
    """Per document (sorted ids): labels, misses of the set, accepted items and errors among them."""

    documents: np.ndarray
    labels: np.ndarray
    misses: np.ndarray
    accepted: np.ndarray
    errors: np.ndarray


@dataclass(frozen=True)
class StreamRun:
    """Per stream: labels at the alarm (+inf: none within the horizon) and the guarantee it named ("" none)."""

    delays: np.ndarray
    named: np.ndarray


def document_counts(outcomes: ServedOutcomes) -> DocumentCounts:
    """The outcomes summed per document."""
    documents, index = np.unique(outcomes.groups, return_inverse=True)

    def total(values: np.ndarray) -> np.ndarray:
        return np.bincount(index, weights=values.astype(float), minlength=documents.size).astype(np.int64)

    return DocumentCounts(
        documents=documents,
        labels=total(np.ones_like(outcomes.covered)),
        misses=total(~outcomes.covered),
        accepted=total(outcomes.accepted),
        errors=total(outcomes.errors),
    )


def stream_orders(labels: np.ndarray, *, streams: int, horizon: int, seed: int) -> np.ndarray:
    """(streams, steps) document indices: passes of fresh permutations reaching ``horizon`` labels (module rules)."""
    passes = max(1, int(np.ceil(horizon / max(1, int(labels.sum())))))
    rng = np.random.default_rng(seed)
    out = np.empty((streams, passes * labels.size), dtype=np.int64)
    for stream in range(streams):
        out[stream] = np.concatenate([rng.permutation(labels.size) for _ in range(passes)])
    return out


def _delays(path_index: np.ndarray, seen: np.ndarray, horizon: int) -> np.ndarray:
    rows = np.arange(seen.shape[0])
    at = np.where(path_index >= 0, seen[rows, np.maximum(path_index, 0)], np.inf).astype(float)
    return np.where(at <= horizon, at, np.inf)


def run_streams(spec: CellSpec, counts: DocumentCounts, orders: np.ndarray, horizon: int) -> StreamRun:
    """Every stream through the cell's monitor (guarantees in ``spec`` order: coverage, then accept error)."""
    failures, counted = [], []
    for guarantee in spec.guarantees:
        if guarantee.guarantee == "coverage":
            failures.append(counts.misses[orders])
            counted.append(counts.labels[orders])
        else:
            failures.append(counts.errors[orders])
            counted.append(counts.accepted[orders])
    path = cell_e_path(spec, failures, counted)
    first = cell_alarm_index(spec, path)
    seen = np.cumsum(counts.labels[orders], axis=1)
    delays = _delays(first, seen, horizon)
    named = np.full(orders.shape[0], "", dtype=object)
    for stream in np.flatnonzero(np.isfinite(delays)):
        values = [
            detector_path(g, f[stream], c[stream])[first[stream]]
            for g, f, c in zip(spec.guarantees, failures, counted, strict=True)
        ]
        named[stream] = spec.guarantees[int(np.argmax(values))].guarantee
    return StreamRun(delays=delays, named=named)


def plain_delays(
    counts: DocumentCounts, orders: np.ndarray, *, level: float, max_items: int, delta: float, horizon: int
) -> np.ndarray:
    """The plain test's labels to alarm on accept error, stream by stream (module rules)."""
    x = (counts.errors[orders] - level * counts.accepted[orders]) / max_items
    steps = x.shape[1]
    n = np.arange(1, steps + 1, dtype=float)  # the pseudo-document and the earlier documents
    before = np.concatenate([np.zeros((x.shape[0], 1)), np.cumsum(x, axis=1)[:, :-1]], axis=1)
    before_sq = np.concatenate([np.zeros((x.shape[0], 1)), np.cumsum(x * x, axis=1)[:, :-1]], axis=1)
    mean = before / n
    variance = np.maximum((PLAIN_PRIOR_VARIANCE + before_sq - n * mean * mean) / n, 1e-12)
    bets = np.clip(mean / (variance + mean * mean), 0.0, PLAIN_CAP / (1.0 - level))
    logs = np.cumsum(np.log1p(bets * x), axis=1)
    hit = logs >= np.log(1.0 / delta)
    first = np.where(hit.any(axis=1), np.argmax(hit, axis=1), -1)
    return _delays(first, np.cumsum(counts.labels[orders], axis=1), horizon)


def information_labels(
    failures: np.ndarray, counted: np.ndarray, labels: np.ndarray, *, level: float, max_items: int, delta: float
) -> float | None:
    """log(1/delta) / KL_inf documents, in labels (module rules); KL_inf by a 2,000-point scan of lambda."""
    x = (np.asarray(failures, dtype=float) - level * np.asarray(counted, dtype=float)) / max_items
    if x.mean() <= 0:
        return None
    bets = np.linspace(0.0, 1.0 / level, 2001)[1:-1]
    growth = np.mean(np.log1p(np.outer(bets, x)), axis=1).max()
    return float(np.log(1.0 / delta) / growth * np.mean(labels)) if growth > 0 else None
