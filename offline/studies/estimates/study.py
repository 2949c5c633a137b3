"""System-level estimates and rankings with valid intervals: SummEval means and Arena rank sets.

Two studies of :mod:`calibration.estimates.system` and :mod:`calibration.estimates.rank_sets` on the shared data:

* **SummEval** (``summeval_cells``, ``run_summeval_study``). One cell per (judge, criterion, system): the
  population is the system's items (100; 99 where the judge's verdict is missing), ``Y`` the all-expert mean of an
  item, ``f`` the judge's expected score ``sum_k k p_k`` from its renormalised log-probs (the two judges with
  log-probs). The truth is the mean of ``Y`` over the population. Each resample draws ``n`` labelled items **with
  replacement** from the population (so n = 200 > 100 is possible: the population is the superpopulation's
  empirical distribution) and takes the judge's verdicts on all the system's items as the unlabelled sample
  (the whole run the pipeline scored). Methods: classical, PPI++, betting, and the served one (the switching rule
  of :mod:`calibration.estimates.system`). The betting interval is computed on the first ``betting_resamples`` resamples
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

The SummEval study lives in :mod:`offline.studies.estimates.summeval`, the Arena study in
:mod:`offline.studies.estimates.arena`, their rows in :mod:`offline.studies.estimates.results`. Writes
(:mod:`offline.studies.estimates.report`) ``estimates/estimates.json``, ``estimates/estimates.md`` and PNG
figures in ``estimates/``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from calibration.estimates.betting import ALPHA_JUDGE_SHARE
from calibration.estimates.system import SWITCH_RULE
from offline.studies.estimates.arena import ARENA_ALPHAS, ARENA_NS, load_arena, run_arena_study
from offline.studies.estimates.results import ArenaIntervalRow, ArenaRow, EstimatesStudy, SummEvalRow
from offline.studies.estimates.summeval import SUMMEVAL_NS, run_summeval_study, summeval_cells

__all__ = [
    "JSON_FILE",
    "MARKDOWN_FILE",
    "RULES",
    "run_estimates_study",
]

JSON_FILE = "estimates/estimates.json"
MARKDOWN_FILE = "estimates/estimates.md"
Progress = Callable[[Iterable], Iterable] | None

RULES = {
    "switching": SWITCH_RULE,
    "summeval_design": "per (judge, criterion, system): n labelled items drawn with replacement from the system's "
    "items, judge verdicts on all its items unlabelled; truth = all-expert mean over the system's items; "
    "judge = expected score from renormalised log-probs",
    "betting": f"WSR hedged capital on Y - lambda_t (f - mu), predictable lambda_t, mixed 1:1 with the human-only "
    f"capital; judge-mean interval at {ALPHA_JUDGE_SHARE} alpha (calibration.estimates.system)",
    "effective_sample_gain_summeval": "(mean classical width / mean PPI++ width)^2 per system, averaged over "
    "systems (= ratio of the CLT variances)",
    "arena_design": "n battles uniformly without replacement among the paper's 12 models, judge verdicts on all "
    "other battles unlabelled; truth = win rates from all human votes; a tie counts 0 for both models",
    "rank_sets": "ellipsoid: chi2_k joint region (the paper's); bonferroni: per-model z_{1-alpha/2k} intervals; "
    "coverage = every model's true rank inside its rank set (joint)",
    "effective_sample_gain_arena": "mean over models of Var(human-only win rate) / Var(PPR win rate), per iteration, "
    "averaged",
}


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
