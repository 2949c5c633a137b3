"""The command line: ``python -m offline calibrate | collect | report | ...`` (handlers in :mod:`offline.commands`).

================================================================  ===============================================
command                                                           does
================================================================  ===============================================
``build [--data-dir D] [--thresholds P] [--pairwise P]``          the artifacts alone: ingest -> fit -> both
``      [--store S] [--splits 20] [--seed 0] [--no-progress]``      artifacts (offline.build.build; make artifact)
``calibrate [--data-dir D] [--out reports] [--thresholds P]``     the build, then the studies and the report on it
``          [--pairwise P] [--store S] [--splits 20] [--seed 0]``
``collect --judges-file F --judge J --task T [--repetitions R]``  a live judge's answers into the answer store
``        [--both-orders] [--limit N] [--split S] [--seed 0]``
``        [--store S]``
``report --out reports``                                          rebuild tables/figures/index from summaries
``validate --thresholds F [--data-dir D] [--out reports/validate]``  a fixed artifact on labelled data, served as
``         [--labels FILE ...]``                                   the service serves (offline.validation.artifact);
--labels:
                                                                  your own held-out labelled files
``halves [--data-dir D] [--out reports] [--splits 20]``           fit on half the documents, validate on the
                                                                  other half, both ways (offline.validation.halves);
                                                                  exit 1 when a validity check fails
``results-page [--reports reports] [--out docs/results.md]``        docs/results.md from the reports' JSON files
                                                                  (offline.results_page); exit 2 naming a missing
                                                                  report and the command that writes it
``report-cards [--data-dir D] [--thresholds P]``                  the report card of each recorded SummEval cell
                                                                  P serves, to report_cards.json beside P
                                                                  (offline.report_cards)
``panels [--data-dir D] [--out reports] [--alpha 0.1]``           every panel of 2-6 recorded judges vs its best
``       [--splits 20] [--max-size 6]``                           member (offline.studies.panels.study)
``decisions [--data-dir D] [--out reports] [--splits 20]``        certified accept/escalate on unseen documents
``          [--docs [DOCS]]``                                      (offline.studies.decisions.study);
                                                                  --docs: the operating curve (figure, table) from
                                                                  <out>/decisions/decisions.json into DOCS (default
                                                                  docs/; offline.studies.decisions.docs)
``pairwise-decisions [--data-dir D] [--out reports]``             certified accept/abstain of pairwise verdicts
``       [--splits 20] [--seed 0] [--delta 0.1] [--draws 300]``   on human votes (offline.studies.
                                                                  pairwise_decisions)
``estimates [--data-dir D] [--out reports] [--part all]``         system means and rank sets with valid intervals
                                                                  from few human labels + judge verdicts
                                                                  (offline.studies.estimates.study)
``monitor [--data-dir D] [--out reports] [--streams 200]``        anytime-valid monitors on seeded streams of
``        [--horizon 1600] [--delta 0.05] [--thresholds F]``      recorded verdicts, unshifted and shifted
                                                                  (offline.studies.monitoring)
``local-judge [--store S] [--out reports/local-judge]``           the local judge's recorded SummEval answers:
``            [--page docs/local-judge.md]``                       calibrated, studied, its report page
                                                                  (offline.studies.local_judge)
``data [--out D] [--mirror URL] [--no-progress]``                 build the data directory from its pinned public
                                                                  sources (offline.data.fetch, sources.json);
                                                                  the default one is used as is when it exists
================================================================  ===============================================

Collect items: ``direct``/``pairwise`` run on the paper's SummEval subset (``--limit N``: its first N items;
``--documents N``, ``--all-systems`` (16 summaries a document) and ``--criteria`` widen or narrow it);
``factuality_direct``/``factuality_qa`` on FRANK items of ``--split valid|test|all`` (default all) with
their articles (``frank/articles.jsonl``), ``--limit N`` = a seeded sample of N of them
(``offline.collecting.targets.frank_targets``: the first N of ``numpy.random.default_rng(--seed).permutation``, in file
order; a larger N with the same seed extends a smaller one). ``--repetitions`` defaults to 3 for
direct/pairwise and 1 for the factuality tasks (one verdict per summary, as in the paper; the studies read
repetition 0).

Data directory: ``--data-dir``, else ``$DATA_DIR``, else ``../shared/data`` beside the checkout
(``offline.data.paths.resolve_data_dir``); otherwise the command stops with a message saying what to set.
Logs: structlog JSON lines on stderr (configured here only); progress bars on stderr; stdout says where
things were written. Exit status 0 on success, 2 on a usage or data error.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

import structlog

from offline.build.inputs.errors import DataError
from offline.commands.calibration import (
    run_build,
    run_calibrate,
    run_guarantees,
    run_halves,
    run_report,
    run_validate,
)
from offline.commands.collecting import run_collect, run_data
from offline.commands.parser import build_parser
from offline.commands.results import run_report_cards, run_results_page
from offline.commands.studies import (
    run_decisions,
    run_estimates,
    run_pairwise_decisions,
    run_panels,
)
from offline.studies.local_judge.command import run_local_judge
from offline.studies.monitoring.command import run_monitor

__all__ = ["configure_logging", "main"]


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


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the command; data and usage errors print one line to stderr and return 2."""
    args = build_parser().parse_args(argv)
    configure_logging()
    log = structlog.get_logger("offline")
    handlers = {
        "build": run_build,
        "calibrate": run_calibrate,
        "collect": run_collect,
        "report": run_report,
        "validate": run_validate,
        "halves": run_halves,
        "guarantees": run_guarantees,
        "results-page": run_results_page,
        "report-cards": run_report_cards,
        "panels": run_panels,
        "pairwise-decisions": run_pairwise_decisions,
        "decisions": run_decisions,
        "estimates": run_estimates,
        "monitor": run_monitor,
        "local-judge": run_local_judge,
        "data": run_data,
    }
    try:
        return handlers[args.command](args, log)
    except (DataError, FileNotFoundError) as error:
        log.error("failed", command=args.command, error=str(error))
        print(f"error: {error}", file=sys.stderr)
        return 2
