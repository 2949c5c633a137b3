"""One false-alarm budget per cell, by simulation on null streams at the boundary (seeded): every monitor that can
escalate one caller's cell (its tenant's monitor and the admin's, each at half of delta, each pooling every level
and both guarantees the cell is served at) together alarm in at most delta (+ Monte-Carlo slack) of the streams
within the horizon."""

from __future__ import annotations

import math

import numpy as np

from calibration.monitoring import CellSpec, GuaranteeSpec, cell_alarm_index, excess_path

DELTA = 0.05
M = 16
HORIZON = 100
STREAMS = 2000
LEVELS = np.array([0.05, 0.10, 0.20])  # the levels the cell is served at (a caller picks one per document)
MC_SLACK = 3 * math.sqrt(DELTA * (1 - DELTA) / STREAMS)


def _monitor_path(rng: np.random.Generator, delta: float) -> tuple[CellSpec, np.ndarray]:
    """One monitor (coverage and accept error pooled over levels) on its own null stream at the boundary: each
    document's items are served at one level drawn independently of the outcome, and fail all together with
    probability equal to that level (the strongest dependence the null allows)."""
    coverage = GuaranteeSpec(guarantee="coverage", level=0.1, max_items=M)
    accept = GuaranteeSpec(guarantee="accept_error", level=0.1, tolerance=2, max_items=M)
    spec = CellSpec(guarantees=[coverage, accept], delta=delta, horizon=HORIZON)
    paths = []
    for counted in (np.full((STREAMS, HORIZON), M), rng.integers(4, M + 1, size=(STREAMS, HORIZON))):
        level = LEVELS[rng.integers(0, LEVELS.size, size=(STREAMS, HORIZON))]
        fails = rng.random((STREAMS, HORIZON)) < level
        excess = counted * (np.where(fails, 1.0 / level, 0.0) - 1.0)
        paths.append(excess_path(coverage, excess))
    return spec, 0.5 * paths[0] + 0.5 * paths[1]


def _union_rate(delta_each: float, seed: int) -> float:
    rng = np.random.default_rng(seed)
    alarmed = np.zeros(STREAMS, dtype=bool)
    for _ in ("tenant", "admin"):
        spec, path = _monitor_path(rng, delta_each)
        alarmed |= cell_alarm_index(spec, path) >= 0
    return float(alarmed.mean())


def test_every_monitor_escalating_a_cell_together_keeps_false_alarms_at_delta() -> None:
    rate = _union_rate(DELTA / 2, seed=20261207)
    assert rate <= DELTA + MC_SLACK, rate


def test_mixed_levels_enter_by_their_own_level_and_keep_each_monitor_valid() -> None:
    rng = np.random.default_rng(3)
    spec, path = _monitor_path(rng, DELTA)
    assert float(np.mean(cell_alarm_index(spec, path) >= 0)) <= DELTA + MC_SLACK
    # the same streams read at the smallest level (0.05) are far from null: the items served at 0.2 fail more
    level = LEVELS[rng.integers(0, LEVELS.size, size=(STREAMS, HORIZON))]
    fails = rng.random((STREAMS, HORIZON)) < level
    wrong = excess_path(spec.guarantees[0], M * (np.where(fails, 1.0 / 0.05, 0.0) - 1.0))
    assert float(np.mean(cell_alarm_index(spec, wrong) >= 0)) > 6 * DELTA
