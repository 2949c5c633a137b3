"""The research commands' handlers: each runs one study on the recorded judges and writes its report."""

from __future__ import annotations

import argparse
from typing import Any

from offline.build.inputs.errors import DataError
from offline.data.paths import resolve_data_dir

__all__ = ["run_cascades", "run_nested", "run_rule_cascades", "run_why_missed"]


def run_nested(args: argparse.Namespace, log: Any) -> int:
    """``python -m research.panels nested``: the four-judge panel against its members, nested."""
    from tqdm import tqdm

    from offline.validation.artifact import recorded_datasets
    from research.panels.nested_study import run_nested_study, write_nested_study

    if args.splits < 1 or args.repeats < 1 or not 0 < args.alpha < 1 or not 0 < args.cal_fraction < 1:
        raise DataError(None, None, "--splits and --repeats must be >= 1, --alpha and --cal-fraction in (0, 1)")
    study = run_nested_study(
        recorded_datasets(resolve_data_dir(args.data_dir)),
        alpha=args.alpha,
        outer_seeds=args.seeds,
        n_splits=args.splits,
        repeats=args.repeats,
        cal_fraction=args.cal_fraction,
        progress=None if args.no_progress else (lambda t: tqdm(t, desc="nested", leave=False)),
    )
    paths = write_nested_study(study, args.out)
    log.info("nested finished", rows=len(study.rows), out=str(args.out))
    for row in study.rows:
        p = row.panel
        print(
            f"{row.menu:4s} {row.criterion:12s} panel {p.set_size:.2f} (coverage {p.coverage:.3f}, min label "
            f"{p.min_label_coverage:.3f}, rule {'met' if p.meets_rule else 'not met'})  best member "
            f"{row.best_member} {min(m.set_size for m in row.members):.2f}  ratio {row.ratio:.3f}"
        )
    for menu in dict.fromkeys(r.menu for r in study.rows):
        rows = [r for r in study.rows if r.menu == menu]
        valid = [r.ratio_to_valid for r in rows if r.ratio_to_valid is not None]
        bounds = [r.panel_bound_ratio for r in rows if r.panel_bound_ratio is not None]
        print(
            f"{menu:4s} mean ratio {sum(r.ratio for r in rows) / len(rows):.3f}"
            + (f"; vs members meeting the rule {sum(valid) / len(valid):.3f}" if len(valid) == len(rows) else "")
            + (
                f"; panel's after-the-fact bound / best member {sum(bounds) / len(bounds):.3f}"
                if len(bounds) == len(rows)
                else ""
            )
        )
    for path in paths:
        print(f"written:     {path}")
    return 0


def run_rule_cascades(args: argparse.Namespace, log: Any) -> int:
    """``python -m research.panels rule-cascades``: two-judge cascades of the panel members, stage methods
    chosen by the validity rule."""
    from tqdm import tqdm

    from offline.validation.artifact import recorded_datasets
    from research.panels.rule_cascades import run_rule_cascades, write_rule_cascades

    if args.splits < 1 or args.repeats < 1 or not 0 < args.alpha < 1:
        raise DataError(None, None, "--splits and --repeats must be >= 1 and --alpha in (0, 1)")
    study = run_rule_cascades(
        recorded_datasets(resolve_data_dir(args.data_dir)),
        alpha=args.alpha,
        n_splits=args.splits,
        seed=args.seed,
        repeats=args.repeats,
        progress=None if args.no_progress else (lambda t: tqdm(t, desc="cascades", leave=False)),
    )
    paths = write_rule_cascades(study, args.out)
    met = sum(bool(g["met"]) for g in study.goal)
    used = sum(bool(g["met"]) and bool(g["judge_2_used"]) for g in study.goal)
    log.info("rule-cascades finished", points=len(study.points), met=met)
    print(f"goal met:    {met} of {len(study.goal)} (pair, criterion); judge 2 asked in {used} of them")
    for path in paths:
        print(f"written:     {path}")
    return 0


def run_cascades(args: argparse.Namespace, log: Any) -> int:
    """``python -m research.panels cascades``: the two-judge cascade study (fixed stage methods)."""
    from tqdm import tqdm

    from offline.validation.artifact import recorded_datasets
    from research.panels.cascades import run_cascade_study, write_cascade_study

    if args.splits < 2 or not 0 < args.alpha < 1:
        raise DataError(None, None, "--splits must be >= 2 and --alpha in (0, 1)")
    study = run_cascade_study(
        recorded_datasets(resolve_data_dir(args.data_dir)),
        alpha=args.alpha,
        n_splits=args.splits,
        seed=args.seed,
        progress=None if args.no_progress else (lambda t: tqdm(t, desc="cascades", leave=False)),
    )
    paths = write_cascade_study(study, args.out)
    met = sum(bool(g["met"]) for g in study.goal)
    log.info("cascades finished", points=len(study.points), met=met, checked=len(study.goal))
    print(f"goal met:    {met} of {len(study.goal)} (pair, criterion)")
    for path in paths:
        print(f"written:     {path}")
    return 0


def run_why_missed(args: argparse.Namespace, log: Any) -> int:
    """``python -m research.panels why-missed``: the exported panel's gap, candidate and learned model."""
    from offline.validation.artifact import recorded_datasets
    from research.panels.why_missed import run_why_missed as run_study
    from research.panels.why_missed_report import gap_table, write_why_missed

    if args.splits < 2 or not 0 < args.alpha < 1:
        raise DataError(None, None, "--splits must be >= 2 and --alpha in (0, 1)")
    study = run_study(
        recorded_datasets(resolve_data_dir(args.data_dir)), alpha=args.alpha, n_splits=args.splits, seed=args.seed
    )
    paths = write_why_missed(study, args.out)
    log.info("why-missed finished", gap=len(study.gap), candidate=len(study.candidate), learned=len(study.learned))
    print("ratio to the best member (same items), one validity rule at a time:")
    for line in gap_table(study):
        print(line)
    for path in paths:
        print(f"written:     {path}")
    return 0
