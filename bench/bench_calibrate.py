"""`make calibrate` on the shipped data, timed end to end (goal: under 60 s on the 2-core machine).

Beside it, the same command with 2 splits instead of 20: the floor of ingest, FRANK, report and export, so the
ratio shows what the repeated-split conformal study costs on top.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.table import BenchRow, print_table

GOAL_SECONDS = 60.0


def _calibrate_seconds(out: Path, splits: int) -> float:
    """Wall time of one `python -m offline calibrate` into out (thresholds written there too)."""
    command = [
        sys.executable, "-m", "offline", "calibrate", "--out", str(out), "--thresholds", str(out / "thresholds.json"),
        "--splits", str(splits), "--no-progress",
    ]
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    """Print the calibrate wall time (20 splits) beside the 2-split floor."""
    with tempfile.TemporaryDirectory() as folder:
        full = _calibrate_seconds(Path(folder) / "full", 20)
        floor = _calibrate_seconds(Path(folder) / "floor", 2)
    print_table(
        "Offline: make calibrate on the shipped data (subprocess, wall time)",
        [
            BenchRow(
                name="python -m offline calibrate (20 splits)", ours=full, baseline_name="same with --splits 2",
                baseline=floor, unit="s", target=f"< {GOAL_SECONDS:.0f} s", met=full < GOAL_SECONDS,
            )
        ],
    )


if __name__ == "__main__":
    main()
