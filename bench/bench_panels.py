"""A panel of 4 live judges against its slowest member alone (run: python -m bench.bench_panels).

=== ===================================================== =========================================================
row what is measured                                      baseline and target
=== ===================================================== =========================================================
a   POST /v1/score with ``panel: NAME`` of 4 members on   the same request to the slowest member alone
    the judge stand-in (50 / 80 / 100 / 150 ms a call),   (``judge``: 150 ms); median latency <= 1.2 x
    every request a new text (no cache hit)
=== ===================================================== =========================================================

The app runs in-process (Litestar's TestClient, the same for both rows); the stand-in is a real HTTP server on
127.0.0.1 whose responder sleeps the member's latency. The panel cell is fitted on seeded synthetic members so
the answer is calibrated (the latency does not depend on it). Requests are sequential (concurrency 1),
alternating panel and single-member, ``N_REQUESTS`` each after a warm-up.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import msgspec
import numpy as np
from litestar.testing import TestClient

from artifact.input_kinds import kind_artifact
from artifact.thresholds import save_artifact
from bench.table import BenchRow, print_table
from calibration.input_kinds.fit import fit_input_kind
from calibration.input_kinds.mean_panel import panel_family, panel_kind_data, panel_name
from service.config.settings import Settings
from service.http.app import create_app
from tests.fakes.judge_server import JudgeServer, ScriptedReply, judge_config_for, peaked_logprobs

LATENCIES = {"bench-a": 0.05, "bench-b": 0.08, "bench-c": 0.10, "bench-d": 0.15}
N_REQUESTS = 30
WARMUP = 3


def _artifact(path: Path) -> None:
    rng = np.random.default_rng(5)
    labels = rng.integers(1, 6, 400)
    expected = np.clip(labels[:, None] + rng.normal(0, 0.8, (400, len(LATENCIES))), 1, 5)
    data = panel_kind_data(expected, labels, np.repeat(np.arange(50), 8).astype(str))
    fit = fit_input_kind(data, alphas=(0.1,), delta=0.05, n_splits=3, selection_repeats=2, nested_repeats=1)
    family = panel_family(["probabilities"] * len(LATENCIES))  # the stand-in answers with log-probs
    artifact = kind_artifact(
        {(panel_name(LATENCIES), family, "coherence", "mean"): fit},
        created_at="2026-01-01T00:00:00+00:00",
        code_version="bench",
        data_hash="synthetic",
        source="bench/bench_panels.py",
    )
    save_artifact(artifact, path)


def _body(i: int, **extra: object) -> dict:
    return {
        "criterion": "coherence",
        "document": f"Bench article {i}: the council approved the park budget.",
        "summary": f"Summary {i}: budget approved.",
        **extra,
    }


def bench_panel() -> tuple[list[BenchRow], list[str]]:
    """Row a (module docstring)."""
    models = {f"model-{name}": latency for name, latency in LATENCIES.items()}

    def respond(body: dict) -> ScriptedReply:
        time.sleep(models[body["model"]])
        return ScriptedReply("4", peaked_logprobs(4))

    with tempfile.TemporaryDirectory() as folder, JudgeServer() as server:
        server.responder = respond
        root = Path(folder)
        _artifact(root / "thresholds.json")
        judges = [judge_config_for(server, name=name, model=f"model-{name}", timeout_s=5.0) for name in LATENCIES]
        (root / "judges.json").write_bytes(msgspec.json.encode(judges))
        (root / "panels.json").write_text(msgspec.json.encode([{"name": "four", "judges": list(LATENCIES)}]).decode())
        settings = Settings(
            thresholds_path=root / "thresholds.json", judges_file=root / "judges.json", panels_file=root / "panels.json"
        )
        slowest = max(LATENCIES, key=LATENCIES.__getitem__)
        panel_times, single_times = [], []
        with TestClient(create_app(settings)) as client:
            for i in range(WARMUP + N_REQUESTS):
                for kind, times, extra in (
                    ("p", panel_times, {"panel": "four"}),
                    ("s", single_times, {"judge": slowest}),
                ):
                    started = time.perf_counter()
                    response = client.post("/v1/score", json=_body(i, **extra) | {"summary": f"{kind}{i}"})
                    elapsed = time.perf_counter() - started
                    response.raise_for_status()
                    if kind == "p" and not response.json()["calibrated"]:
                        raise RuntimeError(f"the panel answer should be calibrated: {response.json()}")
                    if i >= WARMUP:
                        times.append(elapsed)
        calls = server.call_count
    panel, single = statistics.median(panel_times), statistics.median(single_times)
    rows = [
        BenchRow(
            name="(a) /v1/score panel of 4 live members, median latency (c=1)",
            ours=panel * 1e3,
            baseline_name=f"slowest member alone ({slowest}, {LATENCIES[slowest] * 1e3:.0f} ms)",
            baseline=single * 1e3,
            unit="ms",
            target=f"≤ 1.2 × baseline (is {panel / single:.2f}×)",
            met=panel <= 1.2 * single,
        )
    ]
    p90 = (np.percentile(panel_times, 90) * 1e3, np.percentile(single_times, 90) * 1e3)
    notes = [
        f"(a) {N_REQUESTS} requests each after {WARMUP} warm-up; stand-in calls in all: {calls}; panel p90 "
        f"{p90[0]:.0f} ms, single p90 {p90[1]:.0f} ms"
    ]
    return rows, notes


def main() -> None:
    """Print the panel table."""
    rows, notes = bench_panel()
    print_table("Judge panels (service.scoring.panels)", rows)
    for note in notes:
        print(f"- {note}")


if __name__ == "__main__":
    main()
