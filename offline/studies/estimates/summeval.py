"""System-level means with valid intervals on SummEval: one population per (judge, criterion, system), resampled.

The design and the methods are stated in :mod:`offline.studies.estimates.study` (``summeval_cells``,
``run_summeval_study``); the rows are :class:`offline.studies.estimates.results.SummEvalRow`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import msgspec
import numpy as np

from calibration.conformal.inputs import probabilities_from_logprobs
from calibration.estimates.betting import ALPHA_JUDGE_SHARE, betting_intervals, judge_mean_bounds
from calibration.estimates.intervals import classical_intervals, ppi_intervals
from calibration.estimates.system import served_uses_clt
from offline.build.inputs.errors import DataError
from offline.studies.estimates.results import SummEvalRow

__all__ = [
    "JUDGES",
    "METHODS",
    "SUMMEVAL_NS",
    "MeanCell",
    "run_summeval_study",
    "summeval_cells",
]

JUDGES: tuple[str, ...] = ("gpt-4o-mini-2024-07-18", "qwen2.5-72b-instruct")
SUMMEVAL_NS: tuple[int, ...] = (10, 20, 50, 100, 200)
METHODS: tuple[str, ...] = ("classical", "ppi++", "betting", "served")
SCALE = (1.0, 5.0)
Progress = Callable[[Iterable], Iterable] | None


class MeanCell(msgspec.Struct, frozen=True, kw_only=True):
    """One (judge, criterion, system) population: expert means and judge expected scores per item."""

    judge: str
    criterion: str
    system: str
    human: np.ndarray
    judge_score: np.ndarray


def _expected_score(logprobs: dict[str, float]) -> float | None:
    values = [logprobs.get(str(k), -np.inf) for k in range(1, 6)]
    if all(np.isinf(v) for v in values):
        return None
    probabilities = probabilities_from_logprobs(np.asarray(values, dtype=float))
    return float(probabilities @ np.arange(1, 6))


def summeval_cells(data_dir: Path, judges: Sequence[str] = JUDGES) -> list[MeanCell]:
    """One :class:`MeanCell` per (judge, criterion, system) of the judges with log-probs, sorted by those keys."""
    from offline.build.inputs.judges import load_recorded_judges
    from offline.build.inputs.summeval import load_summeval

    summeval = load_summeval(data_dir)
    items = {item.item_id: item for item in summeval.items}
    recorded = {judge.name: judge for judge in load_recorded_judges(data_dir, summeval.items)}
    cells = []
    for name in judges:
        if name not in recorded:
            raise DataError(Path(data_dir) / "judges" / "summeval", None, f"no recorded judge named {name}")
        groups: dict[tuple[str, str], tuple[list[float], list[float]]] = {}
        for row in recorded[name].rows:
            item = items[row.item_id]
            score = _expected_score(row.logprobs) if row.logprobs is not None else None
            if score is None or row.criterion not in item.expert_mean:
                continue
            human, judge = groups.setdefault((row.criterion, item.system_id), ([], []))
            human.append(item.expert_mean[row.criterion])
            judge.append(score)
        cells += [
            MeanCell(judge=name, criterion=criterion, system=system, human=np.asarray(h), judge_score=np.asarray(f))
            for (criterion, system), (h, f) in sorted(groups.items())
        ]
    return cells


def _summeval_cell(
    cell: MeanCell, ns: Sequence[int], resamples: int, betting_resamples: int, alpha: float, rng: np.random.Generator
) -> list[SummEvalRow]:
    truth = float(cell.human.mean())
    lo, hi = SCALE
    bounds = judge_mean_bounds(cell.judge_score, lo, hi, ALPHA_JUDGE_SHARE * alpha)
    rows = []
    for n in ns:
        index = rng.integers(0, cell.human.size, size=(resamples, n))
        y, f = cell.human[index], cell.judge_score[index]
        classical = classical_intervals(y, alpha)
        ppi = ppi_intervals(y, f, cell.judge_score, alpha)
        clt = served_uses_clt(y, f, ppi.lam)
        bet_rows = np.union1d(np.arange(min(betting_resamples, resamples)), np.flatnonzero(~clt))
        bet_low = np.full(resamples, np.nan)
        bet_high = np.full(resamples, np.nan)
        if bet_rows.size:
            bet = betting_intervals(y[bet_rows], f[bet_rows], cell.judge_score, lo, hi, alpha, judge_bounds=bounds)
            bet_low[bet_rows], bet_high[bet_rows] = bet.low, bet.high
        served_low = np.where(clt, ppi.low, bet_low)
        served_high = np.where(clt, ppi.high, bet_high)
        zero_share = float(np.mean(y.std(axis=1) == 0))
        first = np.arange(min(betting_resamples, resamples))
        for method, low, high, use in (
            ("classical", classical.low, classical.high, slice(None)),
            ("ppi++", ppi.low, ppi.high, slice(None)),
            ("betting", bet_low, bet_high, first),
            ("served", served_low, served_high, slice(None)),
        ):
            lw, hg = low[use], high[use]
            if lw.size == 0:
                continue
            rows.append(
                SummEvalRow(
                    judge=cell.judge,
                    criterion=cell.criterion,
                    system=cell.system,
                    n=n,
                    method=method,
                    resamples=int(lw.size),
                    coverage=float(np.mean((lw <= truth) & (truth <= hg))),
                    mean_width=float(np.mean(hg - lw)),
                    zero_variance_share=zero_share,
                )
            )
    return rows


def run_summeval_study(
    cells: Sequence[MeanCell],
    *,
    ns: Sequence[int] = SUMMEVAL_NS,
    resamples: int = 1000,
    betting_resamples: int = 200,
    alpha: float = 0.05,
    seed: int = 0,
    progress: Progress = None,
) -> list[SummEvalRow]:
    """Coverage and width per (cell, n, method); cell i draws from ``default_rng([seed, i])``."""
    indexed = list(enumerate(cells))
    rows: list[SummEvalRow] = []
    for i, cell in progress(indexed) if progress is not None else indexed:
        rows += _summeval_cell(cell, ns, resamples, betting_resamples, alpha, np.random.default_rng([seed, i]))
    return rows
