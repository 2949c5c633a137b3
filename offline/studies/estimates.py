"""System-level estimates and rankings with valid intervals: SummEval means and Arena rank sets.

Two studies of :mod:`calibration.estimates` and :mod:`calibration.rank_sets` on the shared data:

* **SummEval** (``summeval_cells``, ``run_summeval_study``). One cell per (judge, criterion, system): the
  population is the system's items (100; 99 where the judge's verdict is missing), ``Y`` the all-expert mean of an
  item, ``f`` the judge's expected score ``sum_k k p_k`` from its renormalised log-probs (the two judges with
  log-probs). The truth is the mean of ``Y`` over the population. Each resample draws ``n`` labelled items **with
  replacement** from the population (so n = 200 > 100 is possible: the population is the superpopulation's
  empirical distribution) and takes the judge's verdicts on all the system's items as the unlabelled sample
  (the whole run the pipeline scored). Methods: classical, PPI++, betting, and the served one (the switching rule
  of :mod:`calibration.estimates`). The betting interval is computed on the first ``betting_resamples`` resamples
  (it costs ~100x the CLT intervals) plus every resample where the served rule falls back to it, so the served
  coverage always uses all resamples.
* **Arena PPR** (``load_arena``, ``run_arena_study``). Chatzi et al.'s experiment on their 12 models (their
  ``scripts/config.json``). The population is every battle among those models; the truth is the win rate of each
  model over all human votes and the ranking it induces. Each iteration draws ``n`` battles uniformly **without
  replacement** as the labelled set (human vote and judge verdict) and takes the judge's verdicts on every other
  battle as unlabelled. (The paper subsamples the same number of battles per pair; we sample uniformly so that
  the i.i.d. assumption of the intervals holds on the population.) A tie counts 0 for both models (the paper's
  convention). Per (judge, n, alpha): joint coverage of the true ranking by the rank sets and the mean rank-set
  size, for PPR and the human-only baseline on the same labelled battles; marginal win-rate intervals' coverage
  at alpha = 0.05 and the effective sample gain (mean over models of Var_human-only / Var_PPR).

Writes (:mod:`offline.studies.estimates_report`) ``estimates/estimates.json``, ``estimates/estimates.md`` and PNG
figures in ``estimates/``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import msgspec
import numpy as np

from calibration.betting import ALPHA_JUDGE_SHARE, betting_intervals, judge_mean_bounds
from calibration.conformal.inputs import probabilities_from_logprobs
from calibration.estimates import SWITCH_RULE, served_uses_clt
from calibration.intervals import classical_intervals, ppi_intervals
from calibration.rank_sets import Battles, Construction, ppr_win_rates, rank_sets_grid, true_ranks, win_rates
from offline.data.errors import DataError

__all__ = [
    "ARENA_ALPHAS",
    "ARENA_MODELS",
    "ARENA_NS",
    "JUDGES",
    "SUMMEVAL_NS",
    "ArenaData",
    "ArenaRow",
    "EstimatesStudy",
    "MeanCell",
    "SummEvalRow",
    "load_arena",
    "run_arena_study",
    "run_summeval_study",
    "summeval_cells",
]

JUDGES: tuple[str, ...] = ("gpt-4o-mini-2024-07-18", "qwen2.5-72b-instruct")
SUMMEVAL_NS: tuple[int, ...] = (10, 20, 50, 100, 200)
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
METHODS: tuple[str, ...] = ("classical", "ppi++", "betting", "served")
SCALE = (1.0, 5.0)
JSON_FILE = "estimates/estimates.json"
MARKDOWN_FILE = "estimates/estimates.md"
Progress = Callable[[Iterable], Iterable] | None


class MeanCell(msgspec.Struct, frozen=True, kw_only=True):
    """One (judge, criterion, system) population: expert means and judge expected scores per item."""

    judge: str
    criterion: str
    system: str
    human: np.ndarray
    judge_score: np.ndarray


class SummEvalRow(msgspec.Struct, frozen=True, kw_only=True):
    """Coverage and mean width of one method in one (judge, criterion, system, n)."""

    judge: str
    criterion: str
    system: str
    n: int
    method: str
    resamples: int
    coverage: float
    mean_width: float
    zero_variance_share: float  # resamples whose human labels are all equal


class ArenaRow(msgspec.Struct, frozen=True, kw_only=True):
    """Rank-set coverage and size of one method (``ppr`` with a judge, or ``human only``) at one (n, alpha)."""

    judge: str
    method: str
    construction: str
    n: int
    alpha: float
    iterations: int
    coverage: float
    mean_set_size: float


class ArenaIntervalRow(msgspec.Struct, frozen=True, kw_only=True):
    """Marginal win-rate intervals at INTERVAL_ALPHA: coverage (mean over models) and the effective gain."""

    judge: str
    n: int
    iterations: int
    ppr_coverage: float
    human_coverage: float
    ppr_mean_width: float
    human_mean_width: float
    effective_sample_gain: float
    mean_lambda: float


class EstimatesStudy(msgspec.Struct, frozen=True, kw_only=True):
    """Both studies, their settings and rules."""

    seed: int
    alpha: float
    rules: dict[str, str]
    summeval: list[SummEvalRow]
    summeval_resamples: int
    betting_resamples: int
    arena: list[ArenaRow]
    arena_intervals: list[ArenaIntervalRow]
    arena_iterations: int
    arena_truth: dict[str, float]


RULES = {
    "switching": SWITCH_RULE,
    "summeval_design": "per (judge, criterion, system): n labelled items drawn with replacement from the system's "
    "items, judge verdicts on all its items unlabelled; truth = all-expert mean over the system's items; "
    "judge = expected score from renormalised log-probs",
    "betting": f"WSR hedged capital on Y - lambda_t (f - mu), predictable lambda_t, mixed 1:1 with the human-only "
    f"capital; judge-mean interval at {ALPHA_JUDGE_SHARE} alpha (calibration.estimates)",
    "effective_sample_gain_summeval": "(mean classical width / mean PPI++ width)^2 per system, averaged over "
    "systems (= ratio of the CLT variances)",
    "arena_design": "n battles uniformly without replacement among the paper's 12 models, judge verdicts on all "
    "other battles unlabelled; truth = win rates from all human votes; a tie counts 0 for both models",
    "rank_sets": "ellipsoid: chi2_k joint region (the paper's); bonferroni: per-model z_{1-alpha/2k} intervals; "
    "coverage = every model's true rank inside its rank set (joint)",
    "effective_sample_gain_arena": "mean over models of Var(human-only win rate) / Var(PPR win rate), per iteration, "
    "averaged",
}


def _expected_score(logprobs: dict[str, float]) -> float | None:
    values = [logprobs.get(str(k), -np.inf) for k in range(1, 6)]
    if all(np.isinf(v) for v in values):
        return None
    probabilities = probabilities_from_logprobs(np.asarray(values, dtype=float))
    return float(probabilities @ np.arange(1, 6))


def summeval_cells(data_dir: Path, judges: Sequence[str] = JUDGES) -> list[MeanCell]:
    """One :class:`MeanCell` per (judge, criterion, system) of the judges with log-probs, sorted by those keys."""
    from offline.data.judges import load_recorded_judges
    from offline.data.summeval import load_summeval

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


def run_estimates_study(
    data_dir: Path,
    *,
    parts: Sequence[str] = ("summeval", "arena"),
    resamples: int = 1000,
    betting_resamples: int = 200,
    iterations: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
    summeval_ns: Sequence[int] = SUMMEVAL_NS,
    arena_ns: Sequence[int] = ARENA_NS,
    arena_alphas: Sequence[float] = ARENA_ALPHAS,
    progress: Callable[[str], Progress] | None = None,
) -> EstimatesStudy:
    """Run the chosen parts on ``data_dir``; ``progress(desc)`` wraps an iterable with a progress bar."""
    rows: list[SummEvalRow] = []
    arena_rows: list[ArenaRow] = []
    interval_rows: list[ArenaIntervalRow] = []
    truth: dict[str, float] = {}
    if "summeval" in parts:
        rows = run_summeval_study(
            summeval_cells(data_dir),
            ns=summeval_ns,
            resamples=resamples,
            betting_resamples=betting_resamples,
            alpha=alpha,
            seed=seed,
            progress=progress("summeval") if progress else None,
        )
    if "arena" in parts:
        arena_rows, interval_rows, truth = run_arena_study(
            load_arena(data_dir),
            ns=arena_ns,
            alphas=arena_alphas,
            iterations=iterations,
            seed=seed,
            progress=progress("arena") if progress else None,
        )
    return EstimatesStudy(
        seed=seed,
        alpha=alpha,
        rules=dict(RULES),
        summeval=rows,
        summeval_resamples=resamples,
        betting_resamples=betting_resamples,
        arena=arena_rows,
        arena_intervals=interval_rows,
        arena_iterations=iterations,
        arena_truth=truth,
    )
