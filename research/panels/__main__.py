"""``python -m research.panels nested | cascades | rule-cascades | why-missed``: rerun the panel research of
docs/panels.md.

==============================================================  ================================================
command                                                         does
==============================================================  ================================================
``nested [--data-dir D] [--out reports] [--alpha 0.1]``         the four-judge panel against its members, each
``       [--seeds 0 1 2] [--splits 10] [--repeats 5]``          choosing from the same menu inside the
``       [--cal-fraction 0.5]``                                 calibration documents (``nested_study``)
``cascades [--data-dir D] [--out reports] [--splits 20]``       two-judge cascades with fixed stage methods:
                                                                calls vs set size vs coverage (``cascades``)
``rule-cascades [--data-dir D] [--out reports] [--splits 10]``  the same, each stage's method chosen by the
                                                                validity rule (``rule_cascades``)
``why-missed [--data-dir D] [--out reports] [--splits 20]``     the exported panel's gap one validity rule at a
                                                                time, a screened candidate, a learned model
                                                                (``why_missed``)
==============================================================  ================================================

Data directory and exit status as ``python -m offline``: 0 on success, 2 on a usage or data error.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(variable, "1")  # one BLAS thread, as python -m offline (offline/__main__.py says why)

import structlog  # noqa: E402  (after the BLAS setting)

from offline.build.inputs.errors import DataError  # noqa: E402
from offline.cli import configure_logging  # noqa: E402
from research.panels.commands import run_cascades, run_nested, run_rule_cascades, run_why_missed  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of the four research commands."""
    parser = argparse.ArgumentParser(prog="python -m research.panels", description="the panel research")
    commands = parser.add_subparsers(dest="command", required=True)
    nes = commands.add_parser(
        "nested",
        help="the four-judge panel against its members, nested: every side chooses from the same menu inside "
        "the calibration documents (research.panels.nested_study)",
    )
    nes.add_argument("--data-dir", type=Path, default=None)
    nes.add_argument("--out", type=Path, default=Path("reports"))
    nes.add_argument("--alpha", type=float, default=0.10)
    nes.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="outer seeds (default 0 1 2)")
    nes.add_argument("--splits", type=int, default=10, help="outer splits by document per seed (default 10)")
    nes.add_argument("--repeats", type=int, default=5, help="2-fold cross-fitting repeats of the choice (default 5)")
    nes.add_argument(
        "--cal-fraction", type=float, default=0.5, help="share of documents that calibrate in each outer split"
    )
    nes.add_argument("--no-progress", action="store_true")

    cas = commands.add_parser(
        "cascades",
        help="two-judge cascades: ask the second judge only when the first's set is wide; calls vs set size vs "
        "coverage (research.panels.cascades)",
    )
    cas.add_argument("--data-dir", type=Path, default=None)
    cas.add_argument("--out", type=Path, default=Path("reports"))
    cas.add_argument("--splits", type=int, default=20)
    cas.add_argument("--seed", type=int, default=0)
    cas.add_argument("--alpha", type=float, default=0.10)
    cas.add_argument("--no-progress", action="store_true")

    rca = commands.add_parser(
        "rule-cascades",
        help="two-judge cascades of the panel's members with each stage's method chosen by the validity rule "
        "(research.panels.rule_cascades)",
    )
    rca.add_argument("--data-dir", type=Path, default=None)
    rca.add_argument("--out", type=Path, default=Path("reports"))
    rca.add_argument("--alpha", type=float, default=0.10)
    rca.add_argument("--seed", type=int, default=0)
    rca.add_argument("--splits", type=int, default=10)
    rca.add_argument("--repeats", type=int, default=1, help="2-fold cross-fitting repeats of each stage's choice")
    rca.add_argument("--no-progress", action="store_true")

    why = commands.add_parser(
        "why-missed",
        help="why the four-judge panel misses its target: the ratio one validity rule at a time, a screened "
        "candidate and a learned model, none served (research.panels.why_missed)",
    )
    why.add_argument("--data-dir", type=Path, default=None)
    why.add_argument("--out", type=Path, default=Path("reports"))
    why.add_argument("--alpha", type=float, default=0.10)
    why.add_argument("--seed", type=int, default=0)
    why.add_argument("--splits", type=int, default=20)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the command; data and usage errors print one line to stderr and return 2."""
    args = build_parser().parse_args(argv)
    configure_logging()
    log = structlog.get_logger("research")
    handlers = {
        "nested": run_nested,
        "cascades": run_cascades,
        "rule-cascades": run_rule_cascades,
        "why-missed": run_why_missed,
    }
    try:
        return handlers[args.command](args, log)
    except (DataError, FileNotFoundError) as error:
        log.error("failed", command=args.command, error=str(error))
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
