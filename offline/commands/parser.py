"""The argparse parser of ``python -m offline``: every subcommand with its options and help texts."""

from __future__ import annotations

import argparse
from pathlib import Path

from offline.studies.local_judge.command import add_parser as add_local_judge_parser

__all__ = ["build_parser"]

TASKS = ("direct", "pairwise", "factuality_direct", "factuality_qa")


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of every subcommand ``offline.cli.main`` dispatches."""
    parser = argparse.ArgumentParser(prog="python -m offline", description="Conformal Judge offline module")
    commands = parser.add_subparsers(dest="command", required=True)

    cal = commands.add_parser("calibrate", help="ingest recorded answers, run the studies, write report and thresholds")
    cal.add_argument(
        "--data-dir", type=Path, default=None, help="shared data directory (default: $DATA_DIR, else ../shared/data)"
    )
    cal.add_argument(
        "--out", type=Path, default=None, help="report folder (default: reports/; with --labels: reports/labels/)"
    )
    cal.add_argument(
        "--thresholds",
        type=Path,
        default=None,
        help="thresholds artifact to write (default: artifact/thresholds.json; with --labels: "
        "<out>/thresholds.json, holding only the labelled cells)",
    )
    cal.add_argument(
        "--labels",
        type=Path,
        action="append",
        default=None,
        metavar="FILE",
        help="your own labelled JSON Lines file (repeatable; format: artifact/labels.py): calibrate "
        "these judges' cells only, instead of the shipped data",
    )
    cal.add_argument(
        "--scale",
        type=int,
        default=5,
        metavar="K",
        help="with --labels: the scale 1..K of rows without a scale_max field (default 5)",
    )
    cal.add_argument(
        "--pairwise",
        type=Path,
        default=None,
        help="pairwise artifact to write (default: artifact/pairwise_decisions.json; not with --labels)",
    )
    cal.add_argument("--store", type=Path, default=None, help="SQLite answer store (default: <out>/answers.sqlite)")
    cal.add_argument("--splits", type=int, default=20, help="random calibration/test splits per cell (default 20)")
    cal.add_argument("--seed", type=int, default=0, help="seed of splits, fits and simulation (default 0)")
    cal.add_argument("--no-progress", action="store_true", help="hide the progress bars")

    bld = commands.add_parser(
        "build",
        help="the artifact build alone: recorded answers into the answer store, every fit, "
        "artifact/thresholds.json and artifact/pairwise_decisions.json (offline.build.build; no study, no report)",
    )
    bld.add_argument(
        "--data-dir", type=Path, default=None, help="shared data directory (default: $DATA_DIR, else ../shared/data)"
    )
    bld.add_argument(
        "--thresholds", type=Path, default=None, help="thresholds artifact to write (default: artifact/thresholds.json)"
    )
    bld.add_argument(
        "--pairwise",
        type=Path,
        default=None,
        help="pairwise artifact to write (default: artifact/pairwise_decisions.json)",
    )
    bld.add_argument("--store", type=Path, default=Path("reports/answers.sqlite"), help="SQLite answer store")
    bld.add_argument("--splits", type=int, default=20, help="splits by document per cell (default 20)")
    bld.add_argument("--seed", type=int, default=0, help="seed of splits and fits (default 0)")
    bld.add_argument("--no-progress", action="store_true", help="hide the progress bars")

    col = commands.add_parser("collect", help="collect a live judge's answers into the answer store")
    col.add_argument("--judges-file", type=Path, required=True, help="JSON file of judge configurations")
    col.add_argument("--judge", required=True, help="name of the judge in the judges file")
    col.add_argument("--task", choices=TASKS, default="direct")
    col.add_argument(
        "--repetitions", type=int, default=None, help="answers per item (default 3; 1 for the factuality tasks)"
    )
    col.add_argument("--both-orders", action="store_true", help="pairwise: also ask in the swapped order")
    col.add_argument(
        "--limit",
        type=int,
        default=None,
        help="SummEval: the first N items of the subset; FRANK: a seeded sample of N items",
    )
    col.add_argument(
        "--documents", type=int, default=30, help="SummEval: the first N documents in file order (default 30)"
    )
    col.add_argument(
        "--all-systems",
        action="store_true",
        help="SummEval: all 16 summaries of each document (default: the paper's 8 systems)",
    )
    col.add_argument(
        "--criteria", nargs="+", default=None, metavar="NAME", help="SummEval: these criteria only (default: all four)"
    )
    col.add_argument(
        "--split",
        choices=("valid", "test", "all"),
        default="all",
        help="factuality tasks: FRANK split to judge (default all)",
    )
    col.add_argument("--seed", type=int, default=0, help="factuality tasks: seed of the --limit sample (default 0)")
    col.add_argument("--store", type=Path, default=Path("reports/answers.sqlite"))
    col.add_argument("--data-dir", type=Path, default=None)
    col.add_argument("--concurrency", type=int, default=8)
    col.add_argument("--no-progress", action="store_true")
    col.add_argument(
        "--labels",
        type=Path,
        default=None,
        metavar="FILE",
        help="judge the rows of your labelled file that have texts but no verdict "
        "(offline.collecting.labels) and write a labelled file for calibrate --labels",
    )
    col.add_argument("--rubrics", type=Path, default=None, help="with --labels: RUBRICS_FILE of your criteria")
    col.add_argument(
        "--out", type=Path, default=None, help="with --labels: output file (default <FILE stem>.<judge>.jsonl)"
    )
    col.add_argument("--scale", type=int, default=5, metavar="K", help="with --labels: K of rows without scale_max")

    rep = commands.add_parser("report", help="rebuild the report from the saved summary JSONs")
    rep.add_argument("--out", type=Path, default=Path("reports"))

    val = commands.add_parser(
        "validate",
        help="score labelled items with a fixed artifact exactly as the service "
        "would; coverage, set sizes and decisions per cell",
    )
    val.add_argument("--thresholds", type=Path, required=True, help="the artifact to validate")
    val.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="labelled data (default: $DATA_DIR, else ../shared/data): its recorded SummEval judges",
    )
    val.add_argument(
        "--labels",
        type=Path,
        action="append",
        default=None,
        metavar="FILE",
        help="your own held-out labelled JSON Lines file (repeatable; format: artifact/labels.py) "
        "instead of the recorded SummEval judges",
    )
    val.add_argument(
        "--scale",
        type=int,
        default=5,
        metavar="K",
        help="with --labels: the scale 1..K of rows without a scale_max field (default 5)",
    )
    val.add_argument("--out", type=Path, default=Path("reports/validate"))

    hal = commands.add_parser(
        "halves", help="fit on half of the documents, validate on the other half, both ways; print the validity checks"
    )
    hal.add_argument("--data-dir", type=Path, default=None)
    hal.add_argument("--out", type=Path, default=Path("reports"))
    hal.add_argument("--splits", type=int, default=20, help="splits by document inside each fit (default 20)")
    hal.add_argument("--seed", type=int, default=0)
    hal.add_argument("--no-progress", action="store_true")

    gua = commands.add_parser(
        "guarantees", help="both guarantee modes: rules fitted on half the documents, the other half served"
    )
    gua.add_argument("--data-dir", type=Path, default=None)
    gua.add_argument("--out", type=Path, default=Path("reports"))
    gua.add_argument("--splits", type=int, default=20, help="splits by document (default 20)")
    gua.add_argument("--seed", type=int, default=0)
    gua.add_argument(
        "--calibration-documents", type=int, default=50, help="documents each split calibrates on (default 50)"
    )
    gua.add_argument(
        "--docs",
        type=Path,
        nargs="?",
        const=Path("docs"),
        default=None,
        help="instead of running the study, read every guarantees_<N>docs.json under --out and write, under the "
        "docs folder DOCS (default docs/), figures/guarantees.json, figures/guarantees_curve.png and the generated "
        "region of guarantees.md",
    )
    gua.add_argument(
        "--per-label",
        action="store_true",
        help="the per-label guarantee with its controls (a constant and a shuffled judge), not the marginal modes",
    )
    gua.add_argument("--no-progress", action="store_true")

    res = commands.add_parser(
        "results-page", help="write docs/results.md from the JSON reports (calibrate's and halves') under --reports"
    )
    res.add_argument("--reports", type=Path, default=Path("reports"), help="the report folder (default reports)")
    res.add_argument("--out", type=Path, default=Path("docs/results.md"), help="the page (default docs/results.md)")

    rc = commands.add_parser(
        "report-cards",
        help="the report cards of the artifact's recorded SummEval cells, written beside it (offline.report_cards)",
    )
    rc.add_argument("--data-dir", type=Path, default=None)
    rc.add_argument(
        "--thresholds",
        type=Path,
        default=Path("artifact/thresholds.json"),
        help="the artifact whose cells get a card (default artifact/thresholds.json); the cards go to "
        "report_cards.json in its folder",
    )
    rc.add_argument(
        "--planner-check",
        action="store_true",
        help="instead, print per cell the planner's share at 50 documents predicted from a 30-document file "
        "against the share measured at 50 documents (a Markdown table; offline.report_cards.planner_check)",
    )

    pan = commands.add_parser(
        "panels",
        help="judge panels: every panel of 2-6 recorded judges calibrated as one "
        "mean verdict, against its best member (offline.studies.panels.study)",
    )
    pan.add_argument("--data-dir", type=Path, default=None)
    pan.add_argument("--out", type=Path, default=Path("reports"))
    pan.add_argument("--splits", type=int, default=20, help="splits by document per fit (default 20)")
    pan.add_argument("--seed", type=int, default=0)
    pan.add_argument("--alpha", type=float, default=0.10, help="level of the study (default 0.10)")
    pan.add_argument("--max-size", type=int, default=6, help="largest panel (default 6)")
    pan.add_argument("--no-progress", action="store_true")

    dec = commands.add_parser(
        "decisions",
        help="certified decisions: fit on calibration documents, serve unseen "
        "ones with decide(); accept share and error among accepted per cell (offline.studies."
        "decisions; the artifact's rules are the build's, python -m offline build)",
    )
    dec.add_argument("--data-dir", type=Path, default=None)
    dec.add_argument("--out", type=Path, default=Path("reports"))
    dec.add_argument("--splits", type=int, default=20)
    dec.add_argument("--seed", type=int, default=0)
    dec.add_argument(
        "--docs",
        type=Path,
        nargs="?",
        const=Path("docs"),
        default=None,
        metavar="DOCS",
        help="write the operating curve (figure, table) from <out>/decisions/decisions.json into the "
        "docs folder DOCS (default docs/): figures/ and the generated region of certified-decisions.md "
        "(no study is run)",
    )
    dec.add_argument("--no-progress", action="store_true")
    pwd = commands.add_parser(
        "pairwise-decisions",
        help="certified accept/abstain of pairwise verdicts on Vicuna80 "
        "and Arena PPR human votes (offline.studies.pairwise_decisions.study)",
    )
    pwd.add_argument("--data-dir", type=Path, default=None)
    pwd.add_argument("--out", type=Path, default=Path("reports"))
    pwd.add_argument("--splits", type=int, default=20, help="splits by question/battle (default 20)")
    pwd.add_argument("--seed", type=int, default=0)
    pwd.add_argument("--delta", type=float, default=0.10, help="1 - confidence of the certificate (default 0.10)")
    pwd.add_argument("--draws", type=int, default=300, help="group-resampling draws of the validity check (0: skip)")
    pwd.add_argument("--no-progress", action="store_true")

    est = commands.add_parser(
        "estimates",
        help="system means and rank sets with valid intervals from a few human "
        "labels plus judge verdicts: SummEval and Arena PPR (offline.studies.estimates.study)",
    )
    est.add_argument("--data-dir", type=Path, default=None)
    est.add_argument("--out", type=Path, default=Path("reports"))
    est.add_argument("--part", choices=("all", "summeval", "arena"), default="all")
    est.add_argument("--resamples", type=int, default=1000, help="SummEval resamples per (system, n) (default 1000)")
    est.add_argument(
        "--betting-resamples",
        type=int,
        default=200,
        help="resamples on which the (slow) betting interval is reported (default 200)",
    )
    est.add_argument("--iterations", type=int, default=1000, help="Arena iterations per n (default 1000)")
    est.add_argument("--seed", type=int, default=0)
    est.add_argument("--no-progress", action="store_true")

    mon = commands.add_parser(
        "monitor",
        help="anytime-valid monitors on seeded streams of recorded verdicts, unshifted and shifted: harm, alarm "
        "rate, labels to the alarm (offline.studies.monitoring)",
    )
    mon.add_argument("--data-dir", type=Path, default=None)
    mon.add_argument("--out", type=Path, default=Path("reports"))
    mon.add_argument("--thresholds", type=Path, default=None, help="artifact (default: artifact/thresholds.json)")
    mon.add_argument("--streams", type=int, default=200, help="seeded document orders per scenario (default 200)")
    mon.add_argument("--horizon", type=int, default=1600, help="labels per stream (default 1600)")
    mon.add_argument("--delta", type=float, default=0.05, help="false-alarm level of a cell (default 0.05)")
    mon.add_argument("--input", default="score", help="what the verdicts send: score | logprobs | score+logprobs")
    mon.add_argument("--criteria", nargs="+", default=None, help="only these criteria (default: all)")
    mon.add_argument("--splits", type=int, default=10, help="held-out splits of the abstractive fit (default 10)")
    mon.add_argument("--seed", type=int, default=0)
    mon.add_argument("--no-progress", action="store_true")

    dat = commands.add_parser(
        "data",
        help="build the data directory from its pinned upstream sources (or a mirror) "
        "(offline.data.fetch); an existing $DATA_DIR or ../shared/data is used as is",
    )
    dat.add_argument(
        "--out",
        type=Path,
        default=None,
        help="directory to build or complete (default: $DATA_DIR, else ../shared/data, used as is when it exists)",
    )
    dat.add_argument(
        "--mirror",
        default=None,
        metavar="URL",
        help="base URL of a copy of the data directory (default: $DATA_MIRROR_URL)",
    )
    dat.add_argument(
        "--source-base",
        default=None,
        metavar="URL",
        help="replaces https://raw.githubusercontent.com in every pinned URL, e.g. a loopback copy of the raw "
        "upstream files laid out OWNER/REPO/COMMIT/PATH (default: $DATA_SOURCE_BASE)",
    )
    dat.add_argument("--manifest", type=Path, default=None, help="the file list (default: offline/data/sources.json)")
    dat.add_argument("--retries", type=int, default=4, help="attempts per file on transient errors (default 4)")
    dat.add_argument("--no-progress", action="store_true")

    add_local_judge_parser(commands)
    return parser
