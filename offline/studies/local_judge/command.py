"""``python -m offline local-judge``: (with ``--store``) export the judge's answers from the answer store into the
committed file, then calibrate them, run the study and write the report page.

Writes under ``--out`` (default ``reports/local-judge``): ``labels.jsonl`` (the answers joined with the human labels,
the labelled format), the calibration of all of them (``calibrate --labels``'s report and ``thresholds.json``: the
artifact a service with ``THRESHOLDS_PATH`` pointing at it serves the local judge from) and ``study.json``; and the
page (``--page``, default ``docs/local-judge.md``). Needs the data directory (the human labels), never the server.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from offline.build.inputs.errors import DataError
from offline.data.paths import resolve_data_dir

__all__ = ["add_parser", "run_local_judge"]


def add_parser(commands: Any) -> None:
    """The subcommand's options."""
    from offline.studies.local_judge.recorded import RECORDED

    cmd = commands.add_parser(
        "local-judge",
        help="the local judge's recorded SummEval answers: calibrate, study, report page (offline.studies.local_judge)",
    )
    cmd.add_argument("--store", type=Path, default=None, help="export this answer store's answers first")
    cmd.add_argument("--judge", default="smollm2-135m", help="with --store: the judge whose answers to export")
    cmd.add_argument("--recorded", type=Path, default=RECORDED, help="the recorded answers (committed)")
    cmd.add_argument("--data-dir", type=Path, default=None)
    cmd.add_argument("--out", type=Path, default=Path("reports/local-judge"))
    cmd.add_argument("--page", type=Path, default=Path("docs/local-judge.md"))
    cmd.add_argument("--splits", type=int, default=20, help="held-out splits of each calibration (default 20)")
    cmd.add_argument("--seed", type=int, default=0)


def run_local_judge(args: argparse.Namespace, log: Any) -> int:
    """Export (optional), calibrate, study, page; prints what it wrote."""
    from offline.build.answers.store import AnswerStore
    from offline.build.inputs.summeval import load_summeval
    from offline.jsonfile import write_json
    from offline.labelled import calibrate_labels, cell_data, load_label_files
    from offline.studies.local_judge.page import write_page
    from offline.studies.local_judge.recorded import export_recorded, labelled_rows, read_recorded
    from offline.studies.local_judge.study import run_study

    if args.splits < 2:
        raise DataError(None, None, f"--splits must be at least 2, got {args.splits}")
    started = time.perf_counter()
    if args.store is not None:
        if not args.store.exists():
            raise DataError(args.store, None, "no answer store here (python -m offline collect writes it)")
        with AnswerStore(args.store) as store:
            exported = export_recorded(store, judge=args.judge, out=args.recorded)
        print(f"recorded:    {args.recorded} ({len(exported.answers)} answers)")
    recorded = read_recorded(args.recorded)
    summeval = load_summeval(resolve_data_dir(args.data_dir))
    args.out.mkdir(parents=True, exist_ok=True)
    labels = args.out / "labels.jsonl"
    rows = labelled_rows(recorded, summeval.items)
    labels.write_text("".join(json.dumps(row) + "\n" for row in rows))
    calibration = calibrate_labels(
        [labels], out_dir=args.out, thresholds_path=args.out / "thresholds.json", n_splits=args.splits, seed=args.seed
    )
    means = {(criterion, item.item_id): mean for item in summeval.items for criterion, mean in item.expert_mean.items()}
    datasets = cell_data(load_label_files([labels]))
    study = run_study(datasets, means, seed=args.seed, n_splits=args.splits)
    write_json(study, args.out / "study.json")
    page = write_page(study, recorded, args.page)
    log.info("local-judge finished", seconds=round(time.perf_counter() - started, 1), cells=len(datasets))
    print(f"labels:      {labels} ({len(rows)} rows with a score)")
    print(f"thresholds:  {calibration.thresholds}  (THRESHOLDS_PATH for a service serving this judge)")
    print(f"study:       {args.out / 'study.json'}")
    print(f"page:        {page}")
    return 0
