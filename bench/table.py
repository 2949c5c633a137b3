"""Side-by-side benchmark tables: ours against a baseline run in the same process, with the target."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class BenchRow:
    """One benchmark line: what was measured, the baseline beside it, and the target it must meet."""

    name: str
    ours: float
    baseline_name: str
    baseline: float
    unit: str
    target: str
    met: bool


def median_seconds(fn: Callable[[], object], *, repeat: int, inner: int = 1) -> float:
    """Median wall time of one call of fn in seconds, over `repeat` timings of `inner` calls each."""
    timings = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        timings.append((time.perf_counter() - start) / inner)
    return statistics.median(timings)


def print_table(title: str, rows: list[BenchRow]) -> None:
    """Print rows as a Markdown table: ours, baseline, ratio baseline/ours, target, met."""
    print(f"\n### {title}\n")
    print("| benchmark | ours | baseline | baseline value | ratio (baseline/ours) | target | met |")
    print("|---|---:|---|---:|---:|---|---|")
    for row in rows:
        ratio = row.baseline / row.ours if row.ours else float("inf")
        print(
            f"| {row.name} | {row.ours:.4g} {row.unit} | {row.baseline_name} | {row.baseline:.4g} {row.unit} "
            f"| {ratio:.3g} | {row.target} | {'yes' if row.met else 'NO'} |"
        )
