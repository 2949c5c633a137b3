"""One prediction set from a loaded artifact: the service's path (the entry's compiled rule), and
``prediction_set(fitted, ...)``, against the vectorised numpy path."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from artifact.thresholds import (
    FORMAT_VERSION,
    ThresholdEntry,
    ThresholdIndex,
    ThresholdsArtifact,
    load_artifact,
    save_artifact,
)
from bench.table import BenchRow, median_seconds, print_table
from calibration.conformal import fit_conformal, predict_sets, prediction_set

TARGET_SECONDS = 5e-6


def _loaded_index(methods: list[str]) -> ThresholdIndex:
    rng = np.random.default_rng(0)
    labels = rng.integers(1, 6, 1000)
    judge = np.clip(labels + rng.integers(-1, 2, 1000), 1, 5)
    probabilities = rng.dirichlet(np.ones(5), 1000)
    entries = [
        ThresholdEntry(
            judge="bench",
            prompt_family="paper",
            criterion="coherence",
            method=method,
            alpha=0.1,
            fitted=fit_conformal(method, 0.1, labels, judge_scores=judge, probabilities=probabilities),
        )
        for method in methods
    ]
    artifact = ThresholdsArtifact(
        format_version=FORMAT_VERSION,
        created_at="bench",
        code_version="bench",
        data_hash="bench",
        label_scale=[1, 2, 3, 4, 5],
        entries=entries,
    )
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "thresholds.json"
        save_artifact(artifact, path)
        return ThresholdIndex(load_artifact(path))


def main() -> None:
    """Print the per-set latency of each method: the compiled rule (the service's path) and ``prediction_set``
    (single-item path) vs numpy's vectorised path on one item."""
    methods = ["residual", "mondrian_residual", "lac", "aps", "ordinal", "residual_expected", "learned_lac"]
    index = _loaded_index(methods)
    probabilities = [0.05, 0.15, 0.5, 0.2, 0.1]
    rows = []
    for method in methods:
        entry = index.lookup("bench", "paper", "coherence", method, 0.1)
        assert entry is not None
        fitted = entry.fitted
        rule = index.rule(entry)

        def served(rule=rule):
            return rule.prediction_set(judge_score=3, probabilities=probabilities)

        def ours(fitted=fitted):
            return prediction_set(fitted, judge_score=3, probabilities=probabilities)

        def baseline(fitted=fitted):
            return predict_sets(fitted, judge_scores=[3], probabilities=[probabilities])

        served_s = median_seconds(served, repeat=15, inner=2000)
        ours_s = median_seconds(ours, repeat=15, inner=2000)
        base_s = median_seconds(baseline, repeat=15, inner=200)
        rows.append(
            BenchRow(
                name=f"compiled rule, the service's path ({method})",
                ours=served_s * 1e6,
                baseline_name="predict_sets on 1 item",
                baseline=base_s * 1e6,
                unit="µs",
                target="median ≤ 5 µs",
                met=served_s <= TARGET_SECONDS,
            )
        )
        rows.append(
            BenchRow(
                name=f"prediction_set ({method})",
                ours=ours_s * 1e6,
                baseline_name="predict_sets on 1 item",
                baseline=base_s * 1e6,
                unit="µs",
                target="median ≤ 5 µs",
                met=ours_s <= TARGET_SECONDS,
            )
        )
    print_table("Conformal: one prediction set from a loaded artifact (in-process)", rows)


if __name__ == "__main__":
    main()
