"""Whole streams at once, for studies and simulations: the rules of :mod:`calibration.monitoring.monitor`,
vectorised over many streams (the recursion runs over documents), giving the same values as feeding documents one
at a time.

``detector_path`` is one guarantee's statistic after each document of streams whose counted items were all served
at the spec's level (:mod:`calibration.monitoring.detector`), ``excess_path`` the same from documents' excesses
(items at any levels); ``cell_e_path`` the cell's weighted mean;
``cell_alarm_index`` the first document at which the cell's statistic reaches horizon / delta.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from calibration.monitoring.detector import GuaranteeSpec, bets, prior, scaled_excess
from calibration.monitoring.monitor import CellSpec

__all__ = ["cell_alarm_index", "cell_e_path", "detector_path", "excess_path"]


def detector_path(spec: GuaranteeSpec, failures: np.ndarray, counted: np.ndarray) -> np.ndarray:
    """R after each document of streams served at the spec's level; the last axis indexes documents (any leading
    axes: streams). ValueError for counts outside 0 <= failures <= counted <= max_items."""
    f = np.asarray(failures, dtype=float)
    c = np.asarray(counted, dtype=float)
    if f.shape != c.shape or np.any(f < 0) or np.any(f > c) or np.any(c > spec.max_items):
        raise ValueError("per-document counts need matching shapes and 0 <= failures <= counted <= max_items")
    return excess_path(spec, f / spec.level - c, counted=c)


def excess_path(spec: GuaranteeSpec, excess: np.ndarray, *, counted: np.ndarray | None = None) -> np.ndarray:
    """R after each document from the documents' excesses (items at any levels, :mod:`calibration.monitoring.tally`)
    and, for a spec of unit "document", their counted items; the last axis indexes documents. ValueError for an
    excess below -max_items (below -counted), or a document-unit spec without ``counted``."""
    e = np.asarray(excess, dtype=float)
    if np.any(e < -spec.max_items - 1e-9):
        raise ValueError("a document's excess is at least -max_items")
    if spec.unit == "document":
        if counted is None or np.shape(counted) != e.shape:
            raise ValueError("a guarantee watched per document needs each document's counted items")
        if np.any(e < -np.asarray(counted, dtype=float) - 1e-9):
            raise ValueError("a document's excess is at least -counted")
    growth = np.log1p(scaled_excess(spec, e, counted)[..., None] * bets(spec))  # (..., documents, bets)
    logs = np.zeros(growth.shape[:-2] + growth.shape[-1:])
    out = np.empty(e.shape)
    weights = prior(spec)
    for d in range(e.shape[-1]):
        logs = np.logaddexp(logs + growth[..., d, :], 0.0)
        out[..., d] = np.sum(weights * np.expm1(np.minimum(logs, 700.0)), axis=-1)
    return out


def cell_e_path(spec: CellSpec, failures: Sequence[np.ndarray], counted: Sequence[np.ndarray]) -> np.ndarray:
    """The cell's statistic after each document: the weighted mean of its guarantees' paths (spec order)."""
    if len(failures) != len(spec.guarantees) or len(counted) != len(spec.guarantees):
        raise ValueError("one failures and one counted array per guarantee")
    paths = [
        spec.weight(j) * detector_path(g, f, c)
        for j, (g, f, c) in enumerate(zip(spec.guarantees, failures, counted, strict=True))
    ]
    total: np.ndarray = np.sum(paths, axis=0)
    return total


def cell_alarm_index(spec: CellSpec, path: np.ndarray) -> np.ndarray:
    """Per stream (last axis: documents), the 0-based document index of the first alarm, -1 when none."""
    hit = np.asarray(path) >= spec.threshold
    first = np.argmax(hit, axis=-1)
    out: np.ndarray = np.where(hit.any(axis=-1), first, -1)
    return out
