"""Rankings with valid intervals on Chatbot Arena battles (Chatzi et al.'s PPR experiment): rank sets and win-rate
intervals, PPR against the human-only baseline.

The design is stated in :mod:`offline.studies.estimates.study` (``load_arena``, ``run_arena_study``); the rows are
:class:`offline.studies.estimates.results.ArenaRow` and :class:`~offline.studies.estimates.results.ArenaIntervalRow`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import msgspec
import numpy as np

from calibration.estimates.rank_sets import Battles, Construction, ppr_win_rates, rank_sets_grid, true_ranks, win_rates
from offline.build.inputs.errors import DataError
from offline.studies.estimates.results import ArenaIntervalRow, ArenaRow

__all__ = [
    "ARENA_ALPHAS",
    "ARENA_MODELS",
    "ARENA_NS",
    "INTERVAL_ALPHA",
    "ArenaData",
    "load_arena",
    "run_arena_study",
]

# Chatzi et al.'s scripts/config.json (commit af645218): n, alpha and the 12 models ranked.
ARENA_NS: tuple[int, ...] = (100, 150, 200, 500, 1000, 1500, 2000, 2500, 3000)
ARENA_ALPHAS: tuple[float, ...] = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4)
ARENA_MODELS: tuple[str, ...] = (
    "vicuna-13b",
    "koala-13b",
    "gpt-3.5-turbo",
    "gpt-4",
    "oasst-pythia-12b",
    "alpaca-13b",
    "claude-v1",
    "RWKV-4-Raven-14B",
    "chatglm-6b",
    "fastchat-t5-3b",
    "palm-2",
    "claude-instant-v1",
)
ARENA_JUDGES: tuple[str, ...] = ("gpt-4-0125-preview", "claude-3-opus-20240229", "gpt-3.5-turbo")
INTERVAL_ALPHA = 0.05
Progress = Callable[[Iterable], Iterable] | None


class ArenaData(msgspec.Struct, frozen=True, kw_only=True):
    """Battles among ``models`` with the human outcome and each judge's outcome (same battles, same order)."""

    models: tuple[str, ...]
    human: Battles
    judges: dict[str, Battles]


def _outcomes(winner: str) -> tuple[float, float]:
    return (1.0, 0.0) if winner == "model_a" else (0.0, 1.0) if winner == "model_b" else (0.0, 0.0)


def load_arena(data_dir: Path, models: Sequence[str] = ARENA_MODELS, judges: Sequence[str] = ARENA_JUDGES) -> ArenaData:
    """Read ``pairwise/arena_ppr``: battles between two of ``models`` where the human and every judge answered."""
    folder = Path(data_dir) / "pairwise" / "arena_ppr"
    index = {model: i for i, model in enumerate(models)}

    def read(name: str) -> dict[int, tuple[str, str, str]]:
        path = folder / f"{name}.jsonl"
        if not path.is_file():
            raise DataError(path, None, "file not found")
        rows = {}
        with path.open() as handle:
            for line_no, line in enumerate(handle, 1):
                try:
                    row = json.loads(line)
                    rows[int(row["num"])] = (row["model_a"], row["model_b"], row["winner"])
                except (ValueError, KeyError, TypeError) as error:
                    raise DataError(path, line_no, f"bad row: {error}") from error
        return rows

    human = read("human")
    verdicts = {name: read(name) for name in judges}
    nums = sorted(
        num
        for num, (a, b, _) in human.items()
        if a in index and b in index and a != b and all(num in v and v[num][:2] == (a, b) for v in verdicts.values())
    )

    def battles(rows: dict[int, tuple[str, str, str]]) -> Battles:
        outcomes = np.array([_outcomes(rows[num][2]) for num in nums])
        return Battles(
            model_a=np.array([index[rows[num][0]] for num in nums]),
            model_b=np.array([index[rows[num][1]] for num in nums]),
            win_a=outcomes[:, 0],
            win_b=outcomes[:, 1],
        )

    return ArenaData(models=tuple(models), human=battles(human), judges={n: battles(v) for n, v in verdicts.items()})


def run_arena_study(
    data: ArenaData,
    *,
    ns: Sequence[int] = ARENA_NS,
    alphas: Sequence[float] = ARENA_ALPHAS,
    iterations: int = 1000,
    seed: int = 0,
    progress: Progress = None,
) -> tuple[list[ArenaRow], list[ArenaIntervalRow], dict[str, float]]:
    """Rank-set coverage and size per (judge, construction, n, alpha), PPR vs human-only; iteration j of n draws
    from ``default_rng([seed, n, j])``; the labelled battles are shared by every judge and the baseline."""
    k = len(data.models)
    truth = win_rates(data.human, k).theta
    ranks = true_ranks(truth)
    total = len(data.human)
    constructions: tuple[Construction, ...] = ("ellipsoid", "bonferroni")
    hits: dict[tuple[str, str, int, float], list[float]] = {}
    sizes: dict[tuple[str, str, int, float], list[float]] = {}
    marginal: dict[tuple[str, int], list[tuple[float, float, float, float, float, float]]] = {}
    tasks = [(n, j) for n in ns for j in range(iterations)]
    for n, j in progress(tasks) if progress is not None else tasks:
        rng = np.random.default_rng([seed, n, j])
        order = rng.permutation(total)
        labelled, unlabelled = order[:n], order[n:]
        human = win_rates(data.human.take(labelled), k)
        estimates = {"human only": human}
        for name, judge in data.judges.items():
            estimates[name] = ppr_win_rates(data.human.take(labelled), judge.take(labelled), judge.take(unlabelled), k)
        h_low, h_high = human.intervals(INTERVAL_ALPHA)
        h_var = np.diag(human.sigma)
        for name, estimate in estimates.items():
            for construction in constructions:
                for alpha, sets in zip(alphas, rank_sets_grid(estimate, alphas, construction), strict=True):
                    key = (name, construction, n, alpha)
                    hits.setdefault(key, []).append(float(sets.covers(ranks).all()))
                    sizes.setdefault(key, []).append(float(sets.size.mean()))
            if name == "human only":
                continue
            low, high = estimate.intervals(INTERVAL_ALPHA)
            p_var = np.diag(estimate.sigma)
            ok = np.isfinite(h_var) & np.isfinite(p_var) & (p_var > 0)
            marginal.setdefault((name, n), []).append(
                (
                    float(np.mean((low <= truth) & (truth <= high))),
                    float(np.mean((h_low <= truth) & (truth <= h_high))),
                    float(np.nanmean(high - low)),
                    float(np.nanmean(h_high - h_low)),
                    float(np.mean(h_var[ok] / p_var[ok])),
                    float(estimate.lam or 0.0),
                )
            )
    rows = [
        ArenaRow(
            judge="-" if name == "human only" else name,
            method="human only" if name == "human only" else "ppr",
            construction=construction,
            n=n,
            alpha=alpha,
            iterations=len(values),
            coverage=float(np.mean(values)),
            mean_set_size=float(np.mean(sizes[(name, construction, n, alpha)])),
        )
        for (name, construction, n, alpha), values in hits.items()
    ]
    interval_rows = [
        ArenaIntervalRow(
            judge=name,
            n=n,
            iterations=len(values),
            **dict(
                zip(
                    (
                        "ppr_coverage",
                        "human_coverage",
                        "ppr_mean_width",
                        "human_mean_width",
                        "effective_sample_gain",
                        "mean_lambda",
                    ),
                    np.mean(np.asarray(values), axis=0).tolist(),
                    strict=True,
                )
            ),
        )
        for (name, n), values in marginal.items()
    ]
    return rows, interval_rows, {model: float(t) for model, t in zip(data.models, truth, strict=True)}
