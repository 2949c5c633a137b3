"""`make calibrate` on the shipped data, timed end to end (goal: under 60 s on the 2-core machine).

Beside it, the same command with 2 splits instead of 20: the floor of ingest, FRANK, report and export, so the
ratio shows what the repeated-split conformal study costs on top. A second row: the validity study (what the
artifact is built from) over the 30-level alpha grid beside the same study over 4 levels, in CPU seconds of this
process (robust to other load on a shared machine): the cost of serving any alpha from 0.01 to 0.30.
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
        sys.executable,
        "-m",
        "offline",
        "calibrate",
        "--out",
        str(out),
        "--thresholds",
        str(out / "thresholds.json"),
        "--splits",
        str(splits),
        "--no-progress",
    ]
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def _validity_cpu_seconds(alphas: tuple[float, ...]) -> float:
    """CPU seconds of the validity study on the shipped data at these levels (20 splits, seed 0)."""
    from offline.data.paths import resolve_data_dir
    from offline.studies.conformal.validity import run_validity_study
    from offline.validation.artifact import recorded_datasets

    datasets = recorded_datasets(resolve_data_dir(None))
    started = time.process_time()
    run_validity_study(datasets, n_splits=20, seed=0, alphas=alphas)
    return time.process_time() - started


def main() -> None:
    """Print the calibrate wall time (20 splits) beside the 2-split floor, and the alpha grid's cost."""
    from offline.build.modes import ALPHA_GRID, TABLE_ALPHAS

    with tempfile.TemporaryDirectory() as folder:
        full = _calibrate_seconds(Path(folder) / "full", 20)
        floor = _calibrate_seconds(Path(folder) / "floor", 2)
    grid = _validity_cpu_seconds(ALPHA_GRID)
    four = _validity_cpu_seconds(TABLE_ALPHAS)
    print_table(
        "Offline: make calibrate on the shipped data (subprocess, wall time)",
        [
            BenchRow(
                name="python -m offline calibrate (20 splits)",
                ours=full,
                baseline_name="same with --splits 2",
                baseline=floor,
                unit="s",
                target=f"< {GOAL_SECONDS:.0f} s",
                met=full < GOAL_SECONDS,
            ),
            BenchRow(
                name="validity study, alpha grid 0.01..0.30 (CPU s)",
                ours=grid,
                baseline_name="same, 4 levels",
                baseline=four,
                unit="s",
                target="reported",
                met=True,
            ),
        ],
    )


if __name__ == "__main__":
    main()
