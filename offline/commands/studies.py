"""The subcommands that run one study each: panels, certified decisions (direct and pairwise), estimates."""

from __future__ import annotations

import argparse
from typing import Any

from offline.build.inputs.errors import DataError
from offline.data.paths import resolve_data_dir

__all__ = [
    "run_decisions",
    "run_estimates",
    "run_pairwise_decisions",
    "run_panels",
]


def run_panels(args: argparse.Namespace, log: Any) -> int:
    """``python -m offline panels``: every panel of 2-6 recorded judges against its best member."""
    from tqdm import tqdm

    from offline.studies.panels.report import write_panel_study
    from offline.studies.panels.study import headline, run_panel_study
    from offline.validation.artifact import recorded_datasets

    if args.splits < 2 or not 0 < args.alpha < 1 or args.max_size < 2:
        raise DataError(None, None, "--splits must be >= 2, --alpha in (0, 1), --max-size >= 2")
    data_dir = resolve_data_dir(args.data_dir)
    study = run_panel_study(
        recorded_datasets(data_dir),
        alpha=args.alpha,
        n_splits=args.splits,
        seed=args.seed,
        max_size=args.max_size,
        progress=None if args.no_progress else (lambda t: tqdm(t, desc="panels", leave=False)),
    )
    paths = write_panel_study(study, args.out)
    log.info("panels finished", rows=len(study.rows), out=str(args.out))
    for row in headline(study):
        print(
            f"{row.criterion:12s} served coverage {row.served_coverage:.3f}  set size {row.served_set_size:.2f}  "
            f"best member {row.best_member} {row.best_member_set_size:.2f}  ratio {row.ratio_to_best_member:.3f}"
        )
    for path in paths:
        print(f"written:     {path}")
    return 0


def run_decisions(args: argparse.Namespace, log: Any) -> int:
    """``python -m offline decisions``: the certified-decisions study or its docs."""
    from tqdm import tqdm

    from offline.studies.decisions.report import write_decision_study
    from offline.studies.decisions.study import run_decision_study
    from offline.validation.artifact import recorded_datasets

    if args.splits < 1:
        raise DataError(None, None, "--splits must be >= 1")
    if args.docs is not None:
        from offline.studies.decisions.docs import write_docs

        for path in write_docs(args.out, args.docs):
            print(f"written:     {path}")
        return 0
    datasets = recorded_datasets(resolve_data_dir(args.data_dir))
    bar = None if args.no_progress else (lambda t: tqdm(t, desc="decisions", leave=False))
    study = run_decision_study(datasets, n_splits=args.splits, seed=args.seed, progress=bar)
    paths = write_decision_study(study, datasets, args.out)
    log.info("decisions finished", rows=len(study.rows), out=str(args.out))
    for h in study.headlines:
        if h.cal_fraction == 0.5 and h.accept_alpha in (0.05, 0.1, 0.2):
            print(
                f"{h.bound:22s} tol {h.tolerance} alpha {h.accept_alpha:.2f}: accept share log-prob "
                f"{h.logprob_mean_accept_share:.3f}, all {h.all_mean_accept_share:.3f}; mean error <= alpha in "
                f"{h.cells_mean_error_ok}/{h.n_cells}, share_ok >= 0.95 in {h.cells_share_ok}/{h.n_cells}"
            )
    for bound in dict.fromkeys(r.bound for r in study.resampling):
        rows = [r for r in study.resampling if r.bound == bound]
        print(
            f"{bound:22s} document resampling: worst failure rate {max(r.failure_rate for r in rows):.3f} "
            f"(limit {rows[0].mc_limit:.3f}) over {len(rows)} (cell, alpha)"
        )
    for path in paths:
        print(f"written:     {path}")
    return 0


def run_pairwise_decisions(args: argparse.Namespace, log: Any) -> int:
    """``python -m offline pairwise-decisions``: the pairwise certified-decisions study."""
    from tqdm import tqdm

    from offline.build.pairwise_tables import load_tables
    from offline.studies.pairwise_decisions.report import print_lines, write_pairwise_decisions
    from offline.studies.pairwise_decisions.study import run_pairwise_decisions

    if args.splits < 1 or args.draws < 0 or not 0 < args.delta < 1:
        raise DataError(None, None, "--splits must be >= 1, --draws >= 0 and --delta in (0, 1)")
    tables = load_tables(resolve_data_dir(args.data_dir))
    study = run_pairwise_decisions(
        tables,
        n_splits=args.splits,
        seed=args.seed,
        delta=args.delta,
        n_draws=args.draws,
        progress=(lambda t: t) if args.no_progress else (lambda t: tqdm(list(t), desc="pairwise", leave=False)),
    )
    paths = write_pairwise_decisions(study, args.out)
    log.info("pairwise-decisions finished", rows=len(study.rows), out=str(args.out))
    for line in print_lines(study):
        print(line)
    for path in paths:
        print(f"written:     {path}")
    return 0


def run_estimates(args: argparse.Namespace, log: Any) -> int:
    """``python -m offline estimates``: system means and rank sets with valid intervals."""
    from tqdm import tqdm

    from offline.studies.estimates.report import write_estimates_study
    from offline.studies.estimates.study import run_estimates_study

    if min(args.resamples, args.iterations) < 1 or args.betting_resamples < 0:
        raise DataError(None, None, "--resamples and --iterations must be >= 1, --betting-resamples >= 0")
    parts = ("summeval", "arena") if args.part == "all" else (args.part,)
    study = run_estimates_study(
        resolve_data_dir(args.data_dir),
        parts=parts,
        resamples=args.resamples,
        betting_resamples=args.betting_resamples,
        iterations=args.iterations,
        seed=args.seed,
        progress=None if args.no_progress else (lambda desc: lambda t: tqdm(t, desc=desc, leave=False)),
    )
    paths = write_estimates_study(study, args.out)
    log.info("estimates finished", summeval_rows=len(study.summeval), arena_rows=len(study.arena))
    for path in paths:
        print(f"written:     {path}")
    return 0
