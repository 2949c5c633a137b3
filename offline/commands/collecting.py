"""The subcommands that bring data in: ``data`` (the data directory) and ``collect`` (a live judge's answers)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from offline.build.inputs.errors import DataError
from offline.data.paths import resolve_data_dir

__all__ = ["run_collect", "run_data"]

SUMMEVAL_SYSTEMS_PER_DOCUMENT = 16  # SummEval's summaries of each document, in one per-document system order


def run_data(args: argparse.Namespace, log: Any) -> int:
    """``python -m offline data``: build the data directory from its pinned upstream sources or a mirror, then
    say what each source repository states about its licence."""
    from tqdm import tqdm

    from offline.data.fetch import build_data_dir, mirror_url
    from offline.data.manifest import MANIFEST, licences, load_manifest
    from offline.data.upstream import source_base

    if args.retries < 1:
        raise DataError(None, None, "--retries must be >= 1")
    manifest = args.manifest or MANIFEST
    report = build_data_dir(
        args.out,
        mirror=mirror_url(args.mirror),
        source_base=source_base(args.source_base),
        manifest=manifest,
        retries=args.retries,
        progress=None
        if args.no_progress
        else (lambda total: tqdm(total=total, unit="B", unit_scale=True, desc="data", file=sys.stderr)),
    )
    log.info(
        "data ready",
        target=str(report.target),
        fetched=len(report.fetched),
        present=len(report.present),
        used_as_is=report.used_as_is,
    )
    if report.used_as_is:
        print(f"data:        {report.target} exists; used as is, nothing downloaded")
    else:
        print(f"data:        {report.target} ({len(report.fetched)} fetched, {len(report.present)} already present)")
    print("licences (as each source repository states it; see docs/offline.md):")
    files = load_manifest(manifest)
    for source in licences(files):
        print(f"  {source.repo} @ {source.commit[:8]}: {source.licence} ({len(source.files)} data file(s))")
    own = [f.path for f in files if f.project is not None]
    if own:
        print(f"  this project (offline/data/notes/): the code's licence, MIT ({len(own)} data file(s))")
    return 0


def _collect_items(args: argparse.Namespace, data_dir: Path) -> tuple[list[Any], dict[str, Any] | None, list[str]]:
    """The items, articles and criteria of a collection task (SummEval subset, or a FRANK sample)."""
    from offline.build.inputs.summeval import CRITERIA, load_summeval
    from offline.collecting.run import FACTUALITY_CRITERION, FACTUALITY_TASKS
    from offline.collecting.targets import PAPER_SYSTEM_POSITIONS, default_subset, frank_targets

    if args.limit is not None and args.limit < 1:
        raise DataError(None, None, f"--limit must be at least 1, got {args.limit}")
    if args.task in FACTUALITY_TASKS:
        from offline.build.inputs.frank import load_frank

        items = frank_targets(load_frank(data_dir), split=args.split, limit=args.limit, seed=args.seed)
        return items, None, [FACTUALITY_CRITERION]
    summeval = load_summeval(data_dir)
    # --all-systems: every summary of each document (SummEval has 16 per document) instead of the paper's 8.
    positions = range(SUMMEVAL_SYSTEMS_PER_DOCUMENT) if args.all_systems else PAPER_SYSTEM_POSITIONS
    try:
        subset = default_subset(summeval, n_documents=args.documents, positions=tuple(positions))
    except ValueError as error:
        raise DataError(None, None, str(error)) from None
    criteria = list(args.criteria or CRITERIA)
    unknown = sorted(set(criteria) - set(CRITERIA))
    if unknown:
        raise DataError(None, None, f"unknown criteria {', '.join(unknown)}; known: {', '.join(CRITERIA)}")
    return (subset[: args.limit] if args.limit else subset), summeval.articles, criteria


def _collect_labels(args: argparse.Namespace, log: Any) -> int:
    import json

    from judges.client import JudgeClient
    from judges.config import load_judge_configs
    from judges.prompts.rubric import RubricError, decode_rubrics
    from offline.collecting.labels import collect_labels, default_out, read_unjudged

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
            return await collect_labels(
                client,
                rows,
                raw,
                judge=args.judge,
                prompt_family=config.prompt_family,
                rubrics=rubrics,
                out=out,
                concurrency=args.concurrency,
                progress=not args.no_progress,
            )

    log.info("collect started", judge=args.judge, labels=str(args.labels), rows=len(rows), out=str(out))
    report = asyncio.run(run())
    log.info("collect finished", judged=report.judged, copied=report.copied, failed=report.failed)
    print(f"labels:      {report.out}")
    print(f"rows:        {report.judged} judged now, {report.copied} had a verdict, {report.failed} failed")
    if report.errors is not None:
        print(f"errors:      {report.errors}")
    return 0


def run_collect(args: argparse.Namespace, log: Any) -> int:
    """``python -m offline collect``: a live judge's answers into the answer store (or onto your labelled files)."""
    from judges.client import JudgeClient
    from judges.config import load_judge_configs
    from offline.build.answers.store import AnswerStore
    from offline.collecting.run import collect

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
                return await collect(
                    store,
                    client,
                    task=args.task,
                    items=items,
                    criteria=criteria,
                    repetitions=repetitions,
                    both_orders=args.both_orders,
                    concurrency=args.concurrency,
                    progress=not args.no_progress,
                    articles=articles,
                )

    log.info(
        "collect started",
        judge=args.judge,
        task=args.task,
        items=len(items),
        repetitions=repetitions,
        store=str(args.store),
        **({"split": args.split, "seed": args.seed} if factuality else {}),
    )
    report = asyncio.run(run())
    log.info(
        "collect finished",
        planned=report.planned,
        calls=report.calls,
        failed=report.failed,
        no_verdict=report.no_verdict,
        seconds=round(report.seconds, 2),
    )
    print(f"store:       {args.store}")
    print(f"answers:     {report.succeeded} new, {report.skipped} already stored, {report.failed} failed")
    if report.calls:
        # Wall time over calls: with --concurrency 1 this is each call's latency, retries and format retries included.
        print(f"time:        {report.seconds:.1f} s, {report.seconds / report.calls:.2f} s per call")
    return 0
