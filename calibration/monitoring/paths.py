"""Whole streams at once, for studies and simulations: the rules of :mod:`calibration.monitoring.monitor`,
vectorised over documents (and over many streams), giving the same values as feeding documents one at a time.

``e_process_path`` is one guarantee's e-process after each document (:mod:`calibration.monitoring.eprocess`);
``cell_alarm_index`` the first document at which the cell's weighted mean reaches 1/delta.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from calibration.monitoring.eprocess import GuaranteeSpec, bets, prior
from calibration.monitoring.monitor import CellSpec

__all__ = ["cell_alarm_index", "cell_e_path", "e_process_path"]


def e_process_path(spec: GuaranteeSpec, failures: np.ndarray, counted: np.ndarray) -> np.ndarray:
    """E after each document; the last axis indexes documents (any leading axes: streams). ValueError for counts
    outside 0 <= failures <= counted <= max_items."""
    f = np.asarray(failures, dtype=float)
    c = np.asarray(counted, dtype=float)
    if f.shape != c.shape or np.any(f < 0) or np.any(f > c) or np.any(c > spec.max_items):
        raise ValueError("per-document counts need matching shapes and 0 <= failures <= counted <= max_items")
    x = (f - spec.level * c) / spec.max_items
    logs = np.cumsum(np.log1p(x[..., None] * bets(spec)), axis=-2)  # (..., documents, bets)
    top = logs.max(axis=-1, keepdims=True)
    out: np.ndarray = np.exp(top[..., 0]) * np.sum(prior(spec) * np.exp(logs - top), axis=-1)
    return out


def cell_e_path(spec: CellSpec, failures: Sequence[np.ndarray], counted: Sequence[np.ndarray]) -> np.ndarray:
    """The cell's e-process after each document: the weighted mean of its guarantees' paths (spec order)."""
    if len(failures) != len(spec.guarantees) or len(counted) != len(spec.guarantees):
        raise ValueError("one failures and one counted array per guarantee")
    paths = [
        spec.weight(j) * e_process_path(g, f, c)
        for j, (g, f, c) in enumerate(zip(spec.guarantees, failures, counted, strict=True))
    ]
    total: np.ndarray = np.sum(paths, axis=0)
    return total


def cell_alarm_index(spec: CellSpec, path: np.ndarray) -> np.ndarray:
    """Per stream (last axis: documents), the 0-based document index of the first alarm, -1 when none."""
    hit = np.asarray(path) >= 1.0 / spec.delta
    first = np.argmax(hit, axis=-1)
    out: np.ndarray = np.where(hit.any(axis=-1), first, -1)
    return out
