"""Streams, delays and the study end to end on real data with few streams: the vectorised delays equal the
service's one-document-at-a-time path; the headline shift is caught fast and beats the plain test; no-shift
streams stay quiet; the report's files; the information bound against scipy; the CLI."""

from __future__ import annotations

import math
from pathlib import Path

import msgspec
import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from artifact.thresholds import load_artifact
from offline.build.export import DEFAULT_THRESHOLDS
from offline.cli import main
from offline.studies.monitoring.checks import HEADLINE_TARGET
from offline.studies.monitoring.report import MonitoringReport, write_monitoring_report
from offline.studies.monitoring.streams import information_labels, stream_orders
from offline.studies.monitoring.study import StudySettings, run_study

CELLS = {("gpt-4o-mini-2024-07-18", "relevance"), ("qwen2.5-72b-instruct", "relevance")}


@pytest.fixture(scope="module")
def study(recorded_cells):
    cells = [c for c in recorded_cells if (c.judge, c.criterion) in CELLS]
    return run_study(cells, load_artifact(DEFAULT_THRESHOLDS), StudySettings(streams=40, fit_splits=2))


def _row(study, kind: str, judge: str = "gpt-4o-mini-2024-07-18"):
    return next(r for r in study.rows if r.kind == kind and r.judge == judge)


def test_stream_orders_are_seeded_passes_of_permutations() -> None:
    labels = np.array([16] * 99 + [15])
    orders = stream_orders(labels, streams=3, horizon=3000, seed=4)
    assert orders.shape == (3, 200)
    for stream in orders:
        assert sorted(stream[:100]) == list(range(100)) and sorted(stream[100:]) == list(range(100))
    assert np.array_equal(orders, stream_orders(labels, streams=3, horizon=3000, seed=4))


def test_every_scenario_kind_has_rows_and_the_headline_is_caught(study) -> None:
    assert {r.kind for r in study.rows} == {"none", "harsher", "lenient", "swap", "abstractive", "new_input"}
    harsher = _row(study, "harsher")
    assert harsher.harmful and harsher.harms == ["accept_error"]
    assert harsher.alarm_rate == 1.0 and harsher.median_labels <= HEADLINE_TARGET
    assert harsher.plain_median_labels > harsher.median_labels
    assert harsher.named["accept_error"] == harsher.streams
    assert harsher.information_labels == pytest.approx(686, abs=15)  # log(horizon / delta) / KL_inf, in labels
    for kind in ("none", "abstractive"):
        quiet = _row(study, kind)
        assert not quiet.harmful and quiet.alarm_rate <= 0.05 and quiet.median_labels is None


def test_the_example_stream_fed_one_document_at_a_time_agrees_with_the_table(study) -> None:
    for example in study.examples:
        row = next(r for r in study.rows if r.kind == example.kind and r.judge == example.judge)
        # the example is stream 0 of the row's orders: its alarm label is that stream's delay
        assert len(example.labels) == len(example.cell_e_value) and example.labels[-1] <= study.settings.horizon
        if example.alarm_label is not None:
            assert example.cell_e_value[example.labels.index(example.alarm_label)] >= example.threshold
            assert all(
                v < example.threshold
                for v, n in zip(example.cell_e_value, example.labels, strict=True)
                if n < example.alarm_label
            )
        else:
            assert max(example.cell_e_value) < example.threshold
        assert row.alarm_rate < 1.0 or example.alarm_label is not None


def test_report_files(study, tmp_path: Path) -> None:
    report = write_monitoring_report(study, tmp_path)
    folder = tmp_path / "monitoring"
    back = msgspec.json.decode((folder / "monitoring.json").read_bytes(), type=MonitoringReport)
    assert back.checks == report.checks and len(back.study.rows) == len(study.rows)
    assert report.checks.false_alarms_ok and report.checks.headline_ok
    assert all((folder / name).stat().st_size > 10_000 for name in report.figures)
    assert len(report.figures) == 6
    text = (folder / "monitoring.md").read_text()
    assert "| one label harsher | gpt-4o-mini-2024-07-18 / relevance |" in text and "### Checks" in text


def test_information_bound_matches_scipy() -> None:
    rng = np.random.default_rng(0)
    counted = rng.integers(8, 17, size=300)
    failures = rng.binomial(counted, 0.2)
    level, m = 0.1, 16
    x = (failures - level * counted) / m
    best = minimize_scalar(lambda lam: -np.mean(np.log1p(lam * x)), bounds=(0, 1 / level - 1e-6), method="bounded")
    expected = math.log(20) / -best.fun * 16
    got = information_labels(failures, counted, np.full(300, 16), level=level, max_items=m, delta=0.05)
    assert got == pytest.approx(expected, rel=1e-3)
    assert information_labels(np.zeros(5), np.full(5, 16), np.full(5, 16), level=0.1, max_items=16, delta=0.05) is None


def test_cli_monitor_writes_the_report(recorded_cells, monkeypatch, tmp_path: Path, capsys) -> None:
    # the session's ingest of the recorded judges stands in for the command's own (same function, same data)
    monkeypatch.setattr("offline.validation.artifact.recorded_datasets", lambda data_dir: list(recorded_cells))
    code = main(
        [
            "monitor",
            "--criteria",
            "relevance",
            "--streams",
            "5",
            "--splits",
            "2",
            "--out",
            str(tmp_path),
            "--no-progress",
        ]
    )
    assert code == 0
    assert (tmp_path / "monitoring" / "monitoring.json").exists()
    skill = (tmp_path / "monitoring" / "skill.md").read_text()
    assert "| relevance | gpt-4o-mini-2024-07-18 | llama-2-7b-chat |" in skill and "(own)" in skill
    out = capsys.readouterr().out
    assert "false alarms" in out and "skill.md" in out
    assert main(["monitor", "--streams", "0", "--out", str(tmp_path)]) == 2
