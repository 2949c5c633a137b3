"""The command line: ``python -m offline calibrate | collect | report``.

================================================================  ===============================================
command                                                           does
================================================================  ===============================================
``calibrate [--data-dir D] [--out reports] [--thresholds P]``     ingest -> studies -> report -> thresholds
``          [--store S] [--splits 20] [--seed 0] [--no-progress]``
``collect --judges-file F --judge J --task T [--repetitions R]``  a live judge's answers into the answer store
``        [--both-orders] [--limit N] [--split S] [--seed 0]``
``        [--store S]``
``report --out reports``                                          rebuild tables/figures/index from summaries
``validate --thresholds F [--data-dir D] [--out reports/validate]``  a fixed artifact on labelled data, served as
``         [--labels FILE ...]``                                   the service serves (offline.validate); --labels:
                                                                  your own held-out labelled files
``halves [--data-dir D] [--out reports] [--splits 20]``           fit on half the documents, validate on the
                                                                  other half, both ways (offline.halves); exit 1
                                                                  when a validity check fails
``panels [--data-dir D] [--out reports] [--alpha 0.1]``           every panel of 2-6 recorded judges vs its best
``       [--splits 20] [--max-size 6]``                           member (offline.studies.panels)
``cascades [--data-dir D] [--out reports] [--alpha 0.1]``         two-judge cascades: calls vs set size vs
                                                                  coverage (offline.studies.cascades)
``panels-nested [--data-dir D] [--out reports] [--alpha 0.1]``    the issue's panel vs its members, each choosing
``       [--seeds 0 1 2] [--splits 10] [--repeats 5]``            from the same menu inside the calibration
                                                                  documents (offline.studies.panel_nested)
``panels-cascades [--data-dir D] [--out reports] [--splits 10]``  two-judge cascades of the issue's panel members,
                                                                  stage methods chosen by the validity rule
                                                                  (offline.studies.panel_cascades)
``decisions [--data-dir D] [--out reports] [--splits 20]``        certified accept/escalate on unseen documents
``          [--write-rules ARTIFACT] [--docs [DOCS]]``             (offline.studies.decisions); --write-rules:
                                                                  only the artifact's decision_rules, fitted on all
                                                                  data; --docs: the operating curve (figure, table) from
                                                                  <out>/decisions/decisions.json into DOCS (default
                                                                  docs/; offline.studies.decisions_docs)
``pairwise-decisions [--data-dir D] [--out reports]``             certified accept/abstain of pairwise verdicts
``       [--splits 20] [--seed 0] [--delta 0.1] [--draws 300]``   on human votes (offline.studies.
``       [--export FILE]``                                          pairwise_decisions); --export: the served
                                                                  certificates (artifact.pairwise)
``estimates [--data-dir D] [--out reports] [--part all]``         system means and rank sets with valid intervals
                                                                  from few human labels + judge verdicts
                                                                  (offline.studies.estimates)
``data [--out D] [--mirror URL] [--no-progress]``                 build the data directory from its pinned public
                                                                  sources (offline.data.fetch, sources.json);
                                                                  the default one is used as is when it exists
================================================================  ===============================================

Collect items: ``direct``/``pairwise`` run on the paper's SummEval subset (``--limit N``: its first N items);
``factuality_direct``/``factuality_qa`` on FRANK items of ``--split valid|test|all`` (default all) with
their articles (``frank/articles.jsonl``), ``--limit N`` = a seeded sample of N of them
(``offline.collect.frank_targets``: the first N of ``numpy.random.default_rng(--seed).permutation``, in file
order; a larger N with the same seed extends a smaller one). ``--repetitions`` defaults to 3 for
direct/pairwise and 1 for the factuality tasks (one verdict per summary, as in the paper; the studies read
repetition 0).

Data directory: ``--data-dir``, else ``$DATA_DIR``, else ``../shared/data`` beside the checkout
(``offline.data.paths.resolve_data_dir``); otherwise the command stops with a message saying what to set.
Logs: structlog JSON lines on stderr (configured here only); progress bars on stderr; stdout says where
things were written. Exit status 0 on success, 2 on a usage or data error.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import structlog

from offline.data.errors import DataError
from offline.data.paths import resolve_data_dir

__all__ = ["build_parser", "configure_logging", "main"]

TASKS = ("direct", "pairwise", "factuality_direct", "factuality_qa")


def configure_logging(level: int = logging.INFO) -> None:
    """structlog: JSON lines with ISO UTC timestamps and log level, written to stderr."""
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        # Resolve sys.stderr at each logger creation, not once: a caller that swaps stderr (pytest's capture,
        # a redirecting wrapper) must not leave loggers writing to a closed stream.
        logger_factory=lambda *_: structlog.PrintLogger(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of the three subcommands."""
    parser = argparse.ArgumentParser(prog="python -m offline", description="Conformal Judge offline module")
    commands = parser.add_subparsers(dest="command", required=True)

    cal = commands.add_parser("calibrate", help="ingest recorded answers, run the studies, write report and thresholds")
    cal.add_argument("--data-dir", type=Path, default=None, help="shared data directory (default: $DATA_DIR, "
                     "else ../shared/data)")
    cal.add_argument("--out", type=Path, default=None,
                     help="report folder (default: reports/; with --labels: reports/labels/)")
    cal.add_argument("--thresholds", type=Path, default=None,
                     help="thresholds artifact to write (default: artifact/thresholds.json; with --labels: "
                     "<out>/thresholds.json, holding only the labelled cells)")
    cal.add_argument("--labels", type=Path, action="append", default=None, metavar="FILE",
                     help="your own labelled JSON Lines file (repeatable; format: artifact/labels.py): calibrate "
                     "these judges' cells only, instead of the shipped data")
    cal.add_argument("--scale", type=int, default=5, metavar="K",
                     help="with --labels: the scale 1..K of rows without a scale_max field (default 5)")
    cal.add_argument("--store", type=Path, default=None, help="SQLite answer store (default: <out>/answers.sqlite)")
    cal.add_argument("--splits", type=int, default=20, help="random calibration/test splits per cell (default 20)")
    cal.add_argument("--seed", type=int, default=0, help="seed of splits, fits and simulation (default 0)")
    cal.add_argument("--no-progress", action="store_true", help="hide the progress bars")

    col = commands.add_parser("collect", help="collect a live judge's answers into the answer store")
    col.add_argument("--judges-file", type=Path, required=True, help="JSON file of judge configurations")
    col.add_argument("--judge", required=True, help="name of the judge in the judges file")
    col.add_argument("--task", choices=TASKS, default="direct")
    col.add_argument("--repetitions", type=int, default=None,
                     help="answers per item (default 3; 1 for the factuality tasks)")
    col.add_argument("--both-orders", action="store_true", help="pairwise: also ask in the swapped order")
    col.add_argument("--limit", type=int, default=None,
                     help="SummEval: the first N items of the subset; FRANK: a seeded sample of N items")
    col.add_argument("--split", choices=("valid", "test", "all"), default="all",
                     help="factuality tasks: FRANK split to judge (default all)")
    col.add_argument("--seed", type=int, default=0, help="factuality tasks: seed of the --limit sample (default 0)")
    col.add_argument("--store", type=Path, default=Path("reports/answers.sqlite"))
    col.add_argument("--data-dir", type=Path, default=None)
    col.add_argument("--concurrency", type=int, default=8)
    col.add_argument("--no-progress", action="store_true")
    col.add_argument("--labels", type=Path, default=None, metavar="FILE",
                     help="judge the rows of your labelled file that have texts but no verdict "
                     "(offline.collect_labels) and write a labelled file for calibrate --labels")
    col.add_argument("--rubrics", type=Path, default=None, help="with --labels: RUBRICS_FILE of your criteria")
    col.add_argument("--out", type=Path, default=None, help="with --labels: output file (default <FILE stem>.<judge>"
                     ".jsonl)")
    col.add_argument("--scale", type=int, default=5, metavar="K", help="with --labels: K of rows without scale_max")

    rep = commands.add_parser("report", help="rebuild the report from the saved summary JSONs")
    rep.add_argument("--out", type=Path, default=Path("reports"))

    val = commands.add_parser("validate", help="score labelled items with a fixed artifact exactly as the service "
                              "would; coverage, set sizes and decisions per cell")
    val.add_argument("--thresholds", type=Path, required=True, help="the artifact to validate")
    val.add_argument("--data-dir", type=Path, default=None, help="labelled data (default: $DATA_DIR, else "
                     "../shared/data): its recorded SummEval judges")
    val.add_argument("--labels", type=Path, action="append", default=None, metavar="FILE",
                     help="your own held-out labelled JSON Lines file (repeatable; format: artifact/labels.py) "
                     "instead of the recorded SummEval judges")
    val.add_argument("--scale", type=int, default=5, metavar="K",
                     help="with --labels: the scale 1..K of rows without a scale_max field (default 5)")
    val.add_argument("--out", type=Path, default=Path("reports/validate"))

    hal = commands.add_parser("halves", help="fit on half of the documents, validate on the other half, both ways; "
                              "print the validity checks")
    hal.add_argument("--data-dir", type=Path, default=None)
    hal.add_argument("--out", type=Path, default=Path("reports"))
    hal.add_argument("--splits", type=int, default=20, help="splits by document inside each fit (default 20)")
    hal.add_argument("--seed", type=int, default=0)
    hal.add_argument("--no-progress", action="store_true")

    pan = commands.add_parser("panels", help="judge panels: every panel of 2-6 recorded judges calibrated as one "
                              "mean verdict, against its best member (offline.studies.panels)")
    pan.add_argument("--data-dir", type=Path, default=None)
    pan.add_argument("--out", type=Path, default=Path("reports"))
    pan.add_argument("--splits", type=int, default=20, help="splits by document per fit (default 20)")
    pan.add_argument("--seed", type=int, default=0)
    pan.add_argument("--alpha", type=float, default=0.10, help="level of the study (default 0.10)")
    pan.add_argument("--max-size", type=int, default=6, help="largest panel (default 6)")
    pan.add_argument("--no-progress", action="store_true")

    nes = commands.add_parser("panels-nested", help="the issue's panel against its members, nested: every side "
                              "chooses from the same menu inside the calibration documents (offline.studies."
                              "panel_nested)")
    nes.add_argument("--data-dir", type=Path, default=None)
    nes.add_argument("--out", type=Path, default=Path("reports"))
    nes.add_argument("--alpha", type=float, default=0.10)
    nes.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="outer seeds (default 0 1 2)")
    nes.add_argument("--splits", type=int, default=10, help="outer splits by document per seed (default 10)")
    nes.add_argument("--repeats", type=int, default=5, help="2-fold cross-fitting repeats of the choice (default 5)")
    nes.add_argument("--cal-fraction", type=float, default=0.5, help="share of documents that calibrate in each "
                     "outer split (default 0.5)")
    nes.add_argument("--no-progress", action="store_true")

    pca = commands.add_parser("panels-cascades", help="two-judge cascades of the issue's panel members with each "
                              "stage's method chosen by the validity rule (offline.studies.panel_cascades)")
    pca.add_argument("--data-dir", type=Path, default=None)
    pca.add_argument("--out", type=Path, default=Path("reports"))
    pca.add_argument("--alpha", type=float, default=0.10)
    pca.add_argument("--seed", type=int, default=0)
    pca.add_argument("--splits", type=int, default=10)
    pca.add_argument("--repeats", type=int, default=1, help="2-fold cross-fitting repeats of each stage's choice")
    pca.add_argument("--no-progress", action="store_true")

    cas = commands.add_parser("cascades", help="two-judge cascades: ask the second judge only when the first's set "
                              "is wide; calls vs set size vs coverage (offline.studies.cascades)")
    cas.add_argument("--data-dir", type=Path, default=None)
    cas.add_argument("--out", type=Path, default=Path("reports"))
    cas.add_argument("--splits", type=int, default=20)
    cas.add_argument("--seed", type=int, default=0)
    cas.add_argument("--alpha", type=float, default=0.10)
    cas.add_argument("--no-progress", action="store_true")
    dec = commands.add_parser("decisions", help="certified decisions: fit on calibration documents, serve unseen "
                              "ones with decide(); accept share and error among accepted per cell (offline.studies."
                              "decisions); --write-rules puts rules fitted on all data into an artifact")
    dec.add_argument("--data-dir", type=Path, default=None)
    dec.add_argument("--out", type=Path, default=Path("reports"))
    dec.add_argument("--splits", type=int, default=20)
    dec.add_argument("--seed", type=int, default=0)
    dec.add_argument("--write-rules", type=Path, default=None, metavar="ARTIFACT",
                     help="replace only the decision_rules of this artifact with rules fitted on all shipped data "
                     "(no study is run)")
    dec.add_argument("--docs", type=Path, nargs="?", const=Path("docs"), default=None, metavar="DOCS",
                     help="write the operating curve (figure, table) from <out>/decisions/decisions.json into the "
                     "docs folder DOCS (default docs/): figures/ and the generated region of certified-decisions.md "
                     "(no study is run)")
    dec.add_argument("--no-progress", action="store_true")
    pwd = commands.add_parser("pairwise-decisions", help="certified accept/abstain of pairwise verdicts on Vicuna80 "
                              "and Arena PPR human votes (offline.studies.pairwise_decisions)")
    pwd.add_argument("--data-dir", type=Path, default=None)
    pwd.add_argument("--out", type=Path, default=Path("reports"))
    pwd.add_argument("--splits", type=int, default=20, help="splits by question/battle (default 20)")
    pwd.add_argument("--seed", type=int, default=0)
    pwd.add_argument("--delta", type=float, default=0.10, help="1 - confidence of the certificate (default 0.10)")
    pwd.add_argument("--draws", type=int, default=300, help="group-resampling draws of the validity check (0: skip)")
    pwd.add_argument("--export", type=Path, default=None, metavar="FILE",
                     help="also write the certificates fitted on all groups (e.g. artifact/pairwise_decisions.json)")
    pwd.add_argument("--no-progress", action="store_true")

    est = commands.add_parser("estimates", help="system means and rank sets with valid intervals from a few human "
                              "labels plus judge verdicts: SummEval and Arena PPR (offline.studies.estimates)")
    est.add_argument("--data-dir", type=Path, default=None)
    est.add_argument("--out", type=Path, default=Path("reports"))
    est.add_argument("--part", choices=("all", "summeval", "arena"), default="all")
    est.add_argument("--resamples", type=int, default=1000, help="SummEval resamples per (system, n) (default 1000)")
    est.add_argument("--betting-resamples", type=int, default=200,
                     help="resamples on which the (slow) betting interval is reported (default 200)")
    est.add_argument("--iterations", type=int, default=1000, help="Arena iterations per n (default 1000)")
    est.add_argument("--seed", type=int, default=0)
    est.add_argument("--no-progress", action="store_true")

    dat = commands.add_parser("data", help="build the data directory from its pinned public sources or a mirror "
                              "(offline.data.fetch); an existing $DATA_DIR or ../shared/data is used as is")
    dat.add_argument("--out", type=Path, default=None, help="directory to build or complete (default: $DATA_DIR, "
                     "else ../shared/data, used as is when it exists)")
    dat.add_argument("--mirror", default=None, metavar="URL",
                     help="base URL of a copy of the data directory (default: $DATA_MIRROR_URL)")
    dat.add_argument("--manifest", type=Path, default=None, help="the file list (default: offline/data/sources.json)")
    dat.add_argument("--retries", type=int, default=4, help="attempts per file on transient errors (default 4)")
    dat.add_argument("--no-progress", action="store_true")
    return parser


def _data(args: argparse.Namespace, log: Any) -> int:
    from tqdm import tqdm

    from offline.data.fetch import MANIFEST, build_data_dir, mirror_url

    if args.retries < 1:
        raise DataError(None, None, "--retries must be >= 1")
    report = build_data_dir(
        args.out, mirror=mirror_url(args.mirror), manifest=args.manifest or MANIFEST, retries=args.retries,
        progress=None if args.no_progress else
        (lambda total: tqdm(total=total, unit="B", unit_scale=True, desc="data", file=sys.stderr)))
    log.info("data ready", target=str(report.target), fetched=len(report.fetched), present=len(report.present),
             used_as_is=report.used_as_is)
    if report.used_as_is:
        print(f"data:        {report.target} exists; used as is, nothing downloaded")
        return 0
    print(f"data:        {report.target} ({len(report.fetched)} fetched, {len(report.present)} already present)")
    return 0


def _decisions(args: argparse.Namespace, log: Any) -> int:
    from tqdm import tqdm

    from offline.studies.decisions import export_rules, run_decision_study, write_decision_study
    from offline.validate import recorded_datasets

    if args.splits < 1:
        raise DataError(None, None, "--splits must be >= 1")
    if args.docs is not None:
        from offline.studies.decisions_docs import write_docs

        for path in write_docs(args.out, args.docs):
            print(f"written:     {path}")
        return 0
    datasets = recorded_datasets(resolve_data_dir(args.data_dir))
    bar = None if args.no_progress else (lambda t: tqdm(t, desc="decisions", leave=False))
    if args.write_rules is not None:
        from offline.export import replace_decision_rules

        rules = replace_decision_rules(args.write_rules, export_rules(datasets, seed=args.seed, progress=bar))
        log.info("decision rules written", artifact=str(args.write_rules), rules=rules)
        print(f"written:     {args.write_rules} ({rules} decision rules)")
        return 0
    study = run_decision_study(datasets, n_splits=args.splits, seed=args.seed, progress=bar)
    paths = write_decision_study(study, datasets, args.out)
    log.info("decisions finished", rows=len(study.rows), out=str(args.out))
    for h in study.headlines:
        if h.cal_fraction == 0.5 and h.accept_alpha in (0.05, 0.1, 0.2):
            print(f"{h.bound:22s} tol {h.tolerance} alpha {h.accept_alpha:.2f}: accept share log-prob "
                  f"{h.logprob_mean_accept_share:.3f}, all {h.all_mean_accept_share:.3f}; mean error <= alpha in "
                  f"{h.cells_mean_error_ok}/{h.n_cells}, share_ok >= 0.95 in {h.cells_share_ok}/{h.n_cells}")
    for bound in dict.fromkeys(r.bound for r in study.resampling):
        rows = [r for r in study.resampling if r.bound == bound]
        print(f"{bound:22s} document resampling: worst failure rate {max(r.failure_rate for r in rows):.3f} "
              f"(limit {rows[0].mc_limit:.3f}) over {len(rows)} (cell, alpha)")
    for path in paths:
        print(f"written:     {path}")
    return 0


def _pairwise_decisions(args: argparse.Namespace, log: Any) -> int:
    from tqdm import tqdm

    from offline.studies.pairwise_decisions import (
        export_pairwise_artifact,
        load_tables,
        print_lines,
        run_pairwise_decisions,
        write_pairwise_decisions,
    )

    if args.splits < 1 or args.draws < 0 or not 0 < args.delta < 1:
        raise DataError(None, None, "--splits must be >= 1, --draws >= 0 and --delta in (0, 1)")
    tables = load_tables(resolve_data_dir(args.data_dir))
    study = run_pairwise_decisions(
        tables, n_splits=args.splits, seed=args.seed, delta=args.delta,
        n_draws=args.draws,
        progress=(lambda t: t) if args.no_progress else (lambda t: tqdm(list(t), desc="pairwise", leave=False)))
    paths = write_pairwise_decisions(study, args.out)
    if args.export is not None:
        from artifact.pairwise import encode_pairwise_artifact

        args.export.parent.mkdir(parents=True, exist_ok=True)
        args.export.write_bytes(encode_pairwise_artifact(export_pairwise_artifact(tables, delta=args.delta)))
        paths.append(args.export)
    log.info("pairwise-decisions finished", rows=len(study.rows), out=str(args.out))
    for line in print_lines(study):
        print(line)
    for path in paths:
        print(f"written:     {path}")
    return 0




def _estimates(args: argparse.Namespace, log: Any) -> int:
    from tqdm import tqdm

    from offline.studies.estimates import run_estimates_study, write_estimates_study

    if min(args.resamples, args.iterations) < 1 or args.betting_resamples < 0:
        raise DataError(None, None, "--resamples and --iterations must be >= 1, --betting-resamples >= 0")
    parts = ("summeval", "arena") if args.part == "all" else (args.part,)
    study = run_estimates_study(resolve_data_dir(args.data_dir), parts=parts, resamples=args.resamples,
                                betting_resamples=args.betting_resamples, iterations=args.iterations, seed=args.seed,
                                progress=None if args.no_progress else
                                (lambda desc: (lambda t: tqdm(t, desc=desc, leave=False))))
    paths = write_estimates_study(study, args.out)
    log.info("estimates finished", summeval_rows=len(study.summeval), arena_rows=len(study.arena))
    for path in paths:
        print(f"written:     {path}")
    return 0


def _cascades(args: argparse.Namespace, log: Any) -> int:
    from tqdm import tqdm

    from offline.studies.cascades import run_cascade_study, write_cascade_study
    from offline.validate import recorded_datasets

    if args.splits < 2 or not 0 < args.alpha < 1:
        raise DataError(None, None, "--splits must be >= 2 and --alpha in (0, 1)")
    study = run_cascade_study(recorded_datasets(resolve_data_dir(args.data_dir)), alpha=args.alpha,
                              n_splits=args.splits, seed=args.seed,
                              progress=None if args.no_progress else (lambda t: tqdm(t, desc="cascades", leave=False)))
    paths = write_cascade_study(study, args.out)
    met = sum(bool(g["met"]) for g in study.goal)
    log.info("cascades finished", points=len(study.points), met=met, checked=len(study.goal))
    print(f"goal met:    {met} of {len(study.goal)} (pair, criterion)")
    for path in paths:
        print(f"written:     {path}")
    return 0


def _panels_nested(args: argparse.Namespace, log: Any) -> int:
    from tqdm import tqdm

    from offline.studies.panel_nested import run_nested_study, write_nested_study
    from offline.validate import recorded_datasets

    if args.splits < 1 or args.repeats < 1 or not 0 < args.alpha < 1 or not 0 < args.cal_fraction < 1:
        raise DataError(None, None, "--splits and --repeats must be >= 1, --alpha and --cal-fraction in (0, 1)")
    study = run_nested_study(recorded_datasets(resolve_data_dir(args.data_dir)), alpha=args.alpha,
                             outer_seeds=args.seeds, n_splits=args.splits, repeats=args.repeats,
                             cal_fraction=args.cal_fraction,
                             progress=None if args.no_progress else (lambda t: tqdm(t, desc="nested", leave=False)))
    paths = write_nested_study(study, args.out)
    log.info("panels-nested finished", rows=len(study.rows), out=str(args.out))
    for row in study.rows:
        p = row.panel
        print(f"{row.menu:4s} {row.criterion:12s} panel {p.set_size:.2f} (coverage {p.coverage:.3f}, min label "
              f"{p.min_label_coverage:.3f}, rule {'met' if p.meets_rule else 'not met'})  best member "
              f"{row.best_member} {min(m.set_size for m in row.members):.2f}  ratio {row.ratio:.3f}")
    for menu in dict.fromkeys(r.menu for r in study.rows):
        rows = [r for r in study.rows if r.menu == menu]
        valid = [r.ratio_to_valid for r in rows if r.ratio_to_valid is not None]
        bounds = [r.panel_bound_ratio for r in rows if r.panel_bound_ratio is not None]
        print(f"{menu:4s} mean ratio {sum(r.ratio for r in rows) / len(rows):.3f}"
              + (f"; vs members meeting the rule {sum(valid) / len(valid):.3f}" if len(valid) == len(rows) else "")
              + (f"; panel's after-the-fact bound / best member {sum(bounds) / len(bounds):.3f}"
                 if len(bounds) == len(rows) else ""))
    for path in paths:
        print(f"written:     {path}")
    return 0


def _panels_cascades(args: argparse.Namespace, log: Any) -> int:
    from tqdm import tqdm

    from offline.studies.panel_cascades import run_rule_cascades, write_rule_cascades
    from offline.validate import recorded_datasets

    if args.splits < 1 or args.repeats < 1 or not 0 < args.alpha < 1:
        raise DataError(None, None, "--splits and --repeats must be >= 1 and --alpha in (0, 1)")
    study = run_rule_cascades(recorded_datasets(resolve_data_dir(args.data_dir)), alpha=args.alpha,
                              n_splits=args.splits, seed=args.seed, repeats=args.repeats,
                              progress=None if args.no_progress else (lambda t: tqdm(t, desc="cascades", leave=False)))
    paths = write_rule_cascades(study, args.out)
    met = sum(bool(g["met"]) for g in study.goal)
    used = sum(bool(g["met"]) and bool(g["judge_2_used"]) for g in study.goal)
    log.info("panels-cascades finished", points=len(study.points), met=met)
    print(f"goal met:    {met} of {len(study.goal)} (pair, criterion); judge 2 asked in {used} of them")
    for path in paths:
        print(f"written:     {path}")
    return 0


def _panels(args: argparse.Namespace, log: Any) -> int:
    from tqdm import tqdm

    from offline.studies.panels import gap_table, headline, run_panel_study, write_panel_study
    from offline.validate import recorded_datasets

    if args.splits < 2 or not 0 < args.alpha < 1 or args.max_size < 2:
        raise DataError(None, None, "--splits must be >= 2, --alpha in (0, 1), --max-size >= 2")
    data_dir = resolve_data_dir(args.data_dir)
    study = run_panel_study(recorded_datasets(data_dir), alpha=args.alpha, n_splits=args.splits, seed=args.seed,
                            max_size=args.max_size,
                            progress=None if args.no_progress else (lambda t: tqdm(t, desc="panels", leave=False)))
    paths = write_panel_study(study, args.out)
    log.info("panels finished", rows=len(study.rows), out=str(args.out))
    for row in headline(study):
        print(f"{row.criterion:12s} served coverage {row.served_coverage:.3f}  set size {row.served_set_size:.2f}  "
              f"best member {row.best_member} {row.best_member_set_size:.2f}  ratio {row.ratio_to_best_member:.3f}")
    if study.gap:
        print("ratio to the best member (same items), one validity rule at a time:")
        for line in gap_table(study):
            print(line)
    for path in paths:
        print(f"written:     {path}")
    return 0


def _validate(args: argparse.Namespace, log: Any) -> int:
    from artifact.thresholds import load_artifact
    from calibration.errors import ArtifactError
    from offline.validate import recorded_datasets, validate_artifact_on, write_validation

    try:
        artifact = load_artifact(args.thresholds)
    except ArtifactError as error:
        raise DataError(args.thresholds, None, str(error)) from error
    if args.labels:
        from offline.labelled import cell_data, load_label_files

        datasets = cell_data(load_label_files(args.labels, scale=args.scale))
        described = "labelled files " + ", ".join(str(p) for p in args.labels)
    else:
        data_dir = resolve_data_dir(args.data_dir)
        datasets, described = recorded_datasets(data_dir), f"recorded SummEval judges in {data_dir}"
    report = validate_artifact_on(artifact, datasets, source=str(args.thresholds), labels=described)
    paths = write_validation(report, args.out)
    log.info("validate finished", cells=len(report.cells), out=str(args.out))
    for path in paths:
        print(f"written:     {path}")
    return 0


def _halves(args: argparse.Namespace, log: Any) -> int:
    from tqdm import tqdm

    from offline.halves import check_halves, write_halves
    from offline.validate import recorded_datasets

    data_dir = resolve_data_dir(args.data_dir)
    report = check_halves(recorded_datasets(data_dir), seed=args.seed, n_splits=args.splits,
                          progress=None if args.no_progress else (lambda t: tqdm(t, desc="halves", leave=False)))
    paths = write_halves(report, args.out)
    log.info("halves finished", passed=report.passed, checked=report.n_checked)
    print(f"cells checked:                 {report.n_checked} (judge x criterion x input x alpha x half)")
    print(f"coverage < 1 - alpha - 0.02:   {report.n_below_floor}")
    print(f"coverage >= 1 - alpha:         {report.share_at_target:.1%}")
    print(f"empty sets answered accept:    {report.n_empty_accepted}")
    print(f"log-probs larger than score:   {report.n_logprobs_larger}")
    print(f"passed:                        {'yes' if report.passed else 'no'}")
    for path in paths:
        print(f"written:     {path}")
    return 0 if report.passed else 1


def _calibrate_labels(args: argparse.Namespace, log: Any) -> int:
    from tqdm import tqdm

    from offline.labelled import calibrate_labels

    out = args.out or Path("reports") / "labels"
    thresholds = args.thresholds or out / "thresholds.json"
    log.info("calibrate started", labels=[str(p) for p in args.labels], out=str(out), thresholds=str(thresholds),
             splits=args.splits, seed=args.seed, scale=args.scale)
    started = time.perf_counter()
    result = calibrate_labels(
        args.labels, out_dir=out, thresholds_path=thresholds, scale=args.scale, n_splits=args.splits, seed=args.seed,
        progress=None if args.no_progress else (lambda t: tqdm(t, desc="conformal", file=sys.stderr)),
    )
    elapsed = time.perf_counter() - started
    for warning in result.warnings:
        log.warning("too few labels", detail=warning)
        print(f"warning:     {warning}")
    log.info("calibrate finished", seconds=round(elapsed, 2), cells=len(result.cells))
    for judge, family, criterion, k, n in result.cells:
        print(f"cell:        {judge} / {family} / {criterion}  (scale 1..{k}, {n} items)")
    print(f"report:      {result.index}")
    print(f"summary:     {result.summary}  (validity)")
    for path in (*result.tables, *result.figures):
        print(f"written:     {path}")
    print(f"thresholds:  {result.thresholds}")
    print(f"wall time:   {elapsed:.1f} s")
    return 0


def _calibrate(args: argparse.Namespace, log: Any) -> int:
    from offline.export import DEFAULT_THRESHOLDS
    from offline.pipeline import calibrate

    if args.splits < 2:
        raise DataError(None, None, f"--splits must be at least 2, got {args.splits}")
    if args.labels:
        return _calibrate_labels(args, log)
    args.out = args.out or Path("reports")
    data_dir = resolve_data_dir(args.data_dir)
    thresholds = args.thresholds or DEFAULT_THRESHOLDS
    if args.splits < 2:
        raise DataError(None, None, f"--splits must be at least 2, got {args.splits}")
    log.info("calibrate started", data_dir=str(data_dir), out=str(args.out), thresholds=str(thresholds),
             splits=args.splits, seed=args.seed)
    started = time.perf_counter()
    result = calibrate(data_dir=data_dir, out_dir=args.out, thresholds_path=thresholds, store_path=args.store,
                       n_splits=args.splits, seed=args.seed, progress=not args.no_progress, log=log)
    elapsed = time.perf_counter() - started
    log.info("calibrate finished", seconds=round(elapsed, 2), steps=result.seconds)
    print(f"report:      {result.index}")
    for name, path in result.summaries.items():
        print(f"summary:     {path}  ({name})")
    for path in (*result.tables, *result.factuality):
        print(f"table:       {path}")
    for path in result.figures:
        print(f"figure:      {path}")
    print(f"store:       {result.store}")
    print(f"thresholds:  {result.thresholds}")
    print(f"wall time:   {elapsed:.1f} s")
    return 0


def _collect_items(args: argparse.Namespace, data_dir: Path) -> tuple[list[Any], dict[str, Any] | None, list[str]]:
    """The items, articles and criteria of a collection task (SummEval subset, or a FRANK sample)."""
    from offline.collect import FACTUALITY_CRITERION, FACTUALITY_TASKS, default_subset, frank_targets
    from offline.data.summeval import CRITERIA, load_summeval

    if args.limit is not None and args.limit < 1:
        raise DataError(None, None, f"--limit must be at least 1, got {args.limit}")
    if args.task in FACTUALITY_TASKS:
        from offline.data.frank import load_frank

        items = frank_targets(load_frank(data_dir), split=args.split, limit=args.limit, seed=args.seed)
        return items, None, [FACTUALITY_CRITERION]
    summeval = load_summeval(data_dir)
    subset = default_subset(summeval)
    return (subset[: args.limit] if args.limit else subset), summeval.articles, list(CRITERIA)


def _collect_labels(args: argparse.Namespace, log: Any) -> int:
    import json

    from judges.client import JudgeClient, load_judge_configs
    from judges.rubric_prompt import RubricError, decode_rubrics
    from offline.collect_labels import collect_labels, default_out, read_unjudged

    configs = load_judge_configs(args.judges_file)
    if args.judge not in configs:
        raise DataError(args.judges_file, None, f"no judge named {args.judge!r} (known: {', '.join(sorted(configs))})")
    try:
        rubrics = {} if args.rubrics is None else decode_rubrics(args.rubrics.read_bytes(), source=str(args.rubrics))
    except (RubricError, OSError) as error:
        raise DataError(args.rubrics, None, str(error)) from None
    rows = read_unjudged(args.labels, scale=args.scale, rubrics=rubrics)
    raw = {n: json.loads(line) for n, line in enumerate(args.labels.read_text().splitlines(), start=1) if line.strip()}
    out = args.out or default_out(args.labels, args.judge)
    config = configs[args.judge]

    async def run() -> Any:
        async with JudgeClient(config) as client:
            return await collect_labels(client, rows, raw, judge=args.judge, prompt_family=config.prompt_family,
                                        rubrics=rubrics, out=out, concurrency=args.concurrency,
                                        progress=not args.no_progress)

    log.info("collect started", judge=args.judge, labels=str(args.labels), rows=len(rows), out=str(out))
    report = asyncio.run(run())
    log.info("collect finished", judged=report.judged, copied=report.copied, failed=report.failed)
    print(f"labels:      {report.out}")
    print(f"rows:        {report.judged} judged now, {report.copied} had a verdict, {report.failed} failed")
    if report.errors is not None:
        print(f"errors:      {report.errors}")
    return 0


def _collect(args: argparse.Namespace, log: Any) -> int:
    from judges.client import JudgeClient, load_judge_configs
    from offline.collect import collect
    from offline.store import AnswerStore

    if args.labels is not None:
        return _collect_labels(args, log)
    data_dir = resolve_data_dir(args.data_dir)
    configs = load_judge_configs(args.judges_file)
    if args.judge not in configs:
        raise DataError(args.judges_file, None, f"no judge named {args.judge!r} (known: {', '.join(sorted(configs))})")
    items, articles, criteria = _collect_items(args, data_dir)
    factuality = args.task.startswith("factuality")
    repetitions = args.repetitions if args.repetitions is not None else (1 if factuality else 3)

    async def run() -> Any:
        async with JudgeClient(configs[args.judge]) as client:
            with AnswerStore(args.store) as store:
                return await collect(store, client, task=args.task, items=items, criteria=criteria,
                                     repetitions=repetitions, both_orders=args.both_orders,
                                     concurrency=args.concurrency, progress=not args.no_progress,
                                     articles=articles)

    log.info("collect started", judge=args.judge, task=args.task, items=len(items), repetitions=repetitions,
             store=str(args.store), **({"split": args.split, "seed": args.seed} if factuality else {}))
    report = asyncio.run(run())
    log.info("collect finished", planned=report.planned, calls=report.calls, failed=report.failed,
             no_verdict=report.no_verdict, seconds=round(report.seconds, 2))
    print(f"store:       {args.store}")
    print(f"answers:     {report.succeeded} new, {report.skipped} already stored, {report.failed} failed")
    return 0


def _report(args: argparse.Namespace, log: Any) -> int:
    from offline.report import build_report

    files = build_report(args.out)
    log.info("report rebuilt", out=str(args.out), tables=len(files.tables), figures=len(files.figures))
    print(f"report:      {files.index}")
    for path in (*files.tables, *files.figures):
        print(f"written:     {path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the command; data and usage errors print one line to stderr and return 2."""
    args = build_parser().parse_args(argv)
    configure_logging()
    log = structlog.get_logger("offline")
    handlers = {"calibrate": _calibrate, "collect": _collect, "report": _report, "validate": _validate,
                "halves": _halves, "panels": _panels, "panels-nested": _panels_nested,
                "panels-cascades": _panels_cascades, "pairwise-decisions": _pairwise_decisions,
                "cascades": _cascades, "decisions": _decisions, "estimates": _estimates, "data": _data}
    try:
        return handlers[args.command](args, log)
    except (DataError, FileNotFoundError) as error:
        log.error("failed", command=args.command, error=str(error))
        print(f"error: {error}", file=sys.stderr)
        return 2
