"""The calibration subcommands: ``build`` (the artifacts alone), ``calibrate`` (the build and the studies, or your
own labelled files), ``report``, ``validate``, ``halves`` and ``guarantees``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from offline.build.inputs.errors import DataError
from offline.data.paths import resolve_data_dir

__all__ = ["run_build", "run_calibrate", "run_guarantees", "run_halves", "run_report", "run_validate"]


def _calibrate_labels(args: argparse.Namespace, log: Any) -> int:
    from tqdm import tqdm

    from offline.labelled import calibrate_labels

    out = args.out or Path("reports") / "labels"
    thresholds = args.thresholds or out / "thresholds.json"
    log.info(
        "calibrate started",
        labels=[str(p) for p in args.labels],
        out=str(out),
        thresholds=str(thresholds),
        splits=args.splits,
        seed=args.seed,
        scale=args.scale,
    )
    started = time.perf_counter()
    result = calibrate_labels(
        args.labels,
        out_dir=out,
        thresholds_path=thresholds,
        scale=args.scale,
        n_splits=args.splits,
        seed=args.seed,
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


def run_calibrate(args: argparse.Namespace, log: Any) -> int:
    """``python -m offline calibrate``: the build, then the studies and the report on it; or your labelled files."""
    from offline.build.build import DEFAULT_PAIRWISE, DEFAULT_THRESHOLDS
    from offline.pipeline import calibrate

    if args.splits < 2:
        raise DataError(None, None, f"--splits must be at least 2, got {args.splits}")
    if args.labels:
        return _calibrate_labels(args, log)
    args.out = args.out or Path("reports")
    data_dir = resolve_data_dir(args.data_dir)
    thresholds, pairwise = args.thresholds or DEFAULT_THRESHOLDS, args.pairwise or DEFAULT_PAIRWISE
    log.info(
        "calibrate started",
        data_dir=str(data_dir),
        out=str(args.out),
        thresholds=str(thresholds),
        pairwise=str(pairwise),
        splits=args.splits,
        seed=args.seed,
    )
    started = time.perf_counter()
    result = calibrate(
        data_dir=data_dir,
        out_dir=args.out,
        thresholds_path=thresholds,
        pairwise_path=pairwise,
        store_path=args.store,
        n_splits=args.splits,
        seed=args.seed,
        progress=not args.no_progress,
        log=log,
    )
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
    print(f"pairwise:    {result.pairwise}")
    print(f"wall time:   {elapsed:.1f} s")
    return 0


def run_build(args: argparse.Namespace, log: Any) -> int:
    """``python -m offline build``: the artifact build alone (ingest, fit, both artifacts)."""
    from offline.build.build import DEFAULT_PAIRWISE, DEFAULT_THRESHOLDS, build_artifacts

    if args.splits < 2:
        raise DataError(None, None, f"--splits must be at least 2, got {args.splits}")
    data_dir = resolve_data_dir(args.data_dir)
    thresholds, pairwise = args.thresholds or DEFAULT_THRESHOLDS, args.pairwise or DEFAULT_PAIRWISE
    log.info("build started", data_dir=str(data_dir), thresholds=str(thresholds), pairwise=str(pairwise))
    started = time.perf_counter()
    built = build_artifacts(
        data_dir=data_dir,
        store_path=args.store,
        thresholds_path=thresholds,
        pairwise_path=pairwise,
        n_splits=args.splits,
        seed=args.seed,
        progress=not args.no_progress,
        log=log,
    )
    elapsed = time.perf_counter() - started
    log.info("build finished", seconds=round(elapsed, 2), steps=built.seconds)
    print(f"store:       {built.store}")
    print(f"thresholds:  {built.thresholds}")
    print(f"pairwise:    {built.pairwise}")
    print(f"wall time:   {elapsed:.1f} s")
    return 0


def run_report(args: argparse.Namespace, log: Any) -> int:
    """``python -m offline report``: rebuild the report from the saved summary JSONs."""
    from offline.report import build_report

    files = build_report(args.out)
    log.info("report rebuilt", out=str(args.out), tables=len(files.tables), figures=len(files.figures))
    print(f"report:      {files.index}")
    for path in (*files.tables, *files.figures):
        print(f"written:     {path}")
    return 0


def run_validate(args: argparse.Namespace, log: Any) -> int:
    """``python -m offline validate``: a fixed artifact on labelled data, served as the service serves."""
    from artifact.thresholds import load_artifact
    from calibration.errors import ArtifactError
    from offline.validation.artifact import recorded_datasets, validate_artifact_on
    from offline.validation.report import write_validation

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


def run_halves(args: argparse.Namespace, log: Any) -> int:
    """``python -m offline halves``: fit on half the documents, validate on the other half, both ways."""
    from tqdm import tqdm

    from offline.validation.artifact import recorded_datasets
    from offline.validation.halves import check_halves, write_halves

    data_dir = resolve_data_dir(args.data_dir)
    report = check_halves(
        recorded_datasets(data_dir),
        seed=args.seed,
        n_splits=args.splits,
        progress=None if args.no_progress else (lambda t: tqdm(t, desc="halves", leave=False)),
    )
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


def run_guarantees(args: argparse.Namespace, log: Any) -> int:
    """``python -m offline guarantees``: both guarantee modes fitted on half the documents, served on the other."""
    from tqdm import tqdm

    if args.per_label and args.docs is not None:
        from offline.studies.guarantees.per_label_report import write_per_label_docs

        for path in write_per_label_docs(args.out, args.docs, args.calibration_documents):
            print(f"written:     {path}")
        return 0
    if args.docs is not None:
        from offline.studies.guarantees.docs import write_docs

        for path in write_docs(args.out, args.docs):
            print(f"written:     {path}")
        return 0
    if args.per_label:
        from offline.studies.guarantees.per_label import run_per_label_study
        from offline.studies.guarantees.per_label_report import write_per_label
        from offline.validation.artifact import recorded_datasets

        per_label = run_per_label_study(
            recorded_datasets(resolve_data_dir(args.data_dir)),
            n_splits=args.splits,
            seed=args.seed,
            calibration_documents=args.calibration_documents,
            progress=None if args.no_progress else (lambda t: tqdm(t, desc="per-label", leave=False)),
        )
        for path in write_per_label(per_label, args.out):
            print(f"written:     {path}")
        return 0
    from offline.studies.guarantees.report import write_guarantees
    from offline.studies.guarantees.study import run_guarantees_study
    from offline.validation.artifact import recorded_datasets

    study = run_guarantees_study(
        recorded_datasets(resolve_data_dir(args.data_dir)),
        n_splits=args.splits,
        seed=args.seed,
        calibration_documents=args.calibration_documents,
        progress=None if args.no_progress else (lambda t: tqdm(t, desc="guarantees", leave=False)),
    )
    for path in write_guarantees(study, args.out):
        print(f"written:     {path}")
    log.info("guarantees finished", splits=study.n_splits)
    return 0
