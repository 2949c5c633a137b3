"""POST /v1/estimates on 1,000 labelled + 100,000 unlabelled items against calibration.estimates.system directly
(run: python -m bench.bench_estimates).

=== ===================================================== =========================================================
row what is measured                                      baseline and target
=== ===================================================== =========================================================
a   POST /v1/estimates, metric mean, the issue's shape    ``estimate_mean`` called directly on the same numbers
    (``labelled: [{human, judge}]``, ``unlabelled:        (lists in, as a caller of the library passes them);
    [{judge}]``), body pre-encoded, wall time of the      median wall time < 1 s
    request including decoding and encoding
=== ===================================================== =========================================================

The app runs in-process (Litestar's TestClient, the same app as ``python -m service``), default settings
(``MAX_ESTIMATE_VALUES`` 200,000: this body holds 102,000 values). Data: seeded synthetic scores on 1..5 in thirds
and a noisy biased judge (as tests/service/estimating/test_estimates_api.py), so PPI++ is the served interval and the
betting and classical intervals are computed beside it, as for every request. The API's answer is checked to be the
direct call's. Each timing is the median of ``REPEAT`` runs after one warm-up.
"""

from __future__ import annotations

import time

import msgspec
import numpy as np
from litestar.testing import TestClient

from bench.table import BenchRow, median_seconds, print_table
from calibration.estimates.system import Sample, estimate_mean
from service.config.settings import Settings, default_thresholds_path
from service.http.app import create_app

N_LABELLED = 1_000
N_UNLABELLED = 100_000
REPEAT = 5
TARGET_S = 1.0


def _data() -> tuple[list[float], list[float], list[float]]:
    rng = np.random.default_rng(2025)
    size = N_LABELLED + N_UNLABELLED
    human = np.round(np.clip(rng.normal(3.3, 0.8, size), 1, 5) * 3) / 3
    judge = np.clip(0.8 * human + 0.5 + rng.normal(0, 0.5, size), 1, 5)
    return human[:N_LABELLED].tolist(), judge[:N_LABELLED].tolist(), judge[N_LABELLED:].tolist()


def bench_estimates() -> tuple[list[BenchRow], list[str]]:
    """Row a (module docstring)."""
    human, judge, unlabelled = _data()
    body = msgspec.json.encode(
        {
            "metric": "mean",
            "alpha": 0.05,
            "labelled": [{"human": h, "judge": j} for h, j in zip(human, judge, strict=True)],
            "unlabelled": [{"judge": j} for j in unlabelled],
        }
    )
    sample = Sample(human=human, judge=judge, judge_unlabelled=unlabelled)
    direct = estimate_mean(sample, 0.05)
    with TestClient(create_app(Settings(thresholds_path=default_thresholds_path()))) as client:

        def post() -> dict:
            response = client.post("/v1/estimates", content=body, headers={"Content-Type": "application/json"})
            response.raise_for_status()
            answer: dict = response.json()
            return answer

        answer = post()  # warm-up, and the answer checked against the direct call
        if (answer["estimate"], tuple(answer["interval"]), answer["method"]) != (
            direct.estimate,
            direct.interval,
            direct.method,
        ):
            raise RuntimeError(f"the API's answer differs from calibration.estimates.system': {answer} vs {direct}")
        ours = median_seconds(post, repeat=REPEAT)
    baseline = median_seconds(lambda: estimate_mean(sample, 0.05), repeat=REPEAT)
    started = time.perf_counter()
    msgspec.json.decode(body)
    decode = time.perf_counter() - started
    rows = [
        BenchRow(
            name=f"(a) POST /v1/estimates, {N_LABELLED:,} labelled + {N_UNLABELLED:,} unlabelled, median",
            ours=ours,
            baseline_name="estimate_mean called directly",
            baseline=baseline,
            unit="s",
            target=f"< {TARGET_S:g} s (API overhead {ours - baseline:+.3f} s)",
            met=ours < TARGET_S,
        )
    ]
    notes = [
        f"(a) body {len(body) / 1e6:.1f} MB; plain JSON decode of it {decode * 1e3:.0f} ms; served method "
        f"{direct.method}; {REPEAT} timings each after a warm-up"
    ]
    return rows, notes


def main() -> None:
    """Print the estimates table."""
    rows, notes = bench_estimates()
    print_table("Estimates over HTTP (service.estimating.estimates)", rows)
    for note in notes:
        print(f"- {note}")


if __name__ == "__main__":
    main()
