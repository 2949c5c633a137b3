"""The worst case of POST /v1/estimates at the MAX_ESTIMATE_VALUES cap against the same values shuffled
(run: python -m bench.bench_estimates_worst).

=== ===================================================== =========================================================
row what is measured                                      baseline and target
=== ===================================================== =========================================================
a   ``estimate_mean``, 10 labelled + 199,980 unlabelled   the same values shuffled, run beside it; median wall time
    values sorted (all 1s then all 5s), alpha 0.05:        <= 3 s and at most 1.5 x the shuffled one (the answer is
    the body that took 27.5 s and 4.5 GB                   the same: the order no longer matters)
b   the same at alpha 0.999: the centre is rejected, so    the shuffled values at alpha 0.05; <= 3 s
    the bisection's start is searched on the seed grid
c   peak of numpy's allocations (tracemalloc) of row a     the shuffled case's peak; <= 120 MB (the old fallback
                                                          held 257 x n arrays: 4.5 GB)
=== ===================================================== =========================================================

Time is the median of ``REPEAT`` runs after one warm-up; memory one traced run each. The library is called
directly (what the route runs in a worker thread); the API's own RSS is measured by hand against
``python -m service`` (docs/estimates.md).
"""

from __future__ import annotations

import tracemalloc

import numpy as np

from bench.table import BenchRow, median_seconds, print_table
from calibration.estimates.system import EstimateAnswer, Sample, estimate_mean

N_UNLABELLED = 199_980
REPEAT = 3
TARGET_S = 3.0
TARGET_RATIO = 1.5
TARGET_MB = 120.0


def _samples() -> tuple[Sample, Sample]:
    """(sorted, shuffled) samples of the same values."""
    human = [1.0] * 5 + [5.0] * 5
    values = [1.0] * (N_UNLABELLED // 2) + [5.0] * (N_UNLABELLED - N_UNLABELLED // 2)
    shuffled = np.random.default_rng(32).permutation(values).tolist()
    return (
        Sample(human=human, judge=human, judge_unlabelled=values),
        Sample(human=human[::-1], judge=human[::-1], judge_unlabelled=shuffled),
    )


def _peak_mb(sample: Sample, alpha: float) -> float:
    tracemalloc.start()
    try:
        estimate_mean(sample, alpha)
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def _same(first: EstimateAnswer, second: EstimateAnswer) -> None:
    if first != second:
        raise RuntimeError(f"the order changed the answer: {first.interval} vs {second.interval}")


def bench_estimates_worst() -> tuple[list[BenchRow], list[str]]:
    """Rows a, b and c (module docstring)."""
    ordered, shuffled = _samples()
    _same(estimate_mean(ordered, 0.05), estimate_mean(shuffled, 0.05))
    worst = median_seconds(lambda: estimate_mean(ordered, 0.05), repeat=REPEAT)
    base = median_seconds(lambda: estimate_mean(shuffled, 0.05), repeat=REPEAT)
    large_alpha = median_seconds(lambda: estimate_mean(ordered, 0.999), repeat=REPEAT)
    peak, base_peak = _peak_mb(ordered, 0.05), _peak_mb(shuffled, 0.05)
    rows = [
        BenchRow(
            name=f"(a) 10 labelled + {N_UNLABELLED:,} unlabelled sorted, alpha 0.05, median",
            ours=worst,
            baseline_name="the same values shuffled",
            baseline=base,
            unit="s",
            target=f"<= {TARGET_S:g} s and <= {TARGET_RATIO:g} x the shuffled",
            met=worst <= TARGET_S and worst <= TARGET_RATIO * base,
        ),
        BenchRow(
            name="(b) the same sorted values, alpha 0.999 (seed-grid start), median",
            ours=large_alpha,
            baseline_name="the shuffled values, alpha 0.05",
            baseline=base,
            unit="s",
            target=f"<= {TARGET_S:g} s",
            met=large_alpha <= TARGET_S,
        ),
        BenchRow(
            name="(c) peak traced allocations of (a)",
            ours=peak,
            baseline_name="the shuffled values",
            baseline=base_peak,
            unit="MB",
            target=f"<= {TARGET_MB:g} MB",
            met=peak <= TARGET_MB,
        ),
    ]
    notes = [f"(a-c) {REPEAT} timings each after a warm-up; the sorted and shuffled answers are checked equal"]
    return rows, notes


def main() -> None:
    """Print the worst-case estimates table."""
    rows, notes = bench_estimates_worst()
    print_table("Estimates at the cap, the worst order (calibration.estimates.betting)", rows)
    for note in notes:
        print(f"- {note}")


if __name__ == "__main__":
    main()
