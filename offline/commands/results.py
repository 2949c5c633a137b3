"""The ``results-page`` subcommand: ``docs/results.md`` from the JSON reports (:mod:`offline.results_page`)."""

from __future__ import annotations

import argparse
from typing import Any

from offline.build.inputs.errors import DataError

__all__ = ["run_report_cards", "run_results_page"]


def run_results_page(args: argparse.Namespace, log: Any) -> int:
    """``python -m offline results-page``: write the page; a missing report is a data error naming its command."""
    from offline.results_page import generate

    try:
        path = generate(args.reports, args.out, reports_label=args.reports.as_posix())
    except ValueError as error:
        if isinstance(error, DataError):
            raise
        raise DataError(args.out, None, str(error)) from error
    log.info("results page written", reports=str(args.reports), out=str(path))
    print(f"written:     {path}")
    return 0


def run_report_cards(args: argparse.Namespace, log: Any) -> int:
    """``python -m offline report-cards``: the shipped cells' report cards beside the artifact."""
    from offline.data.paths import resolve_data_dir
    from offline.report_cards import print_planner_checks, write_report_cards

    if args.planner_check:
        print_planner_checks(resolve_data_dir(args.data_dir), args.thresholds)
        return 0
    path = write_report_cards(
        resolve_data_dir(args.data_dir), args.thresholds, progress=lambda cell: log.info("report card", cell=cell)
    )
    print(f"written:     {path}")
    return 0
