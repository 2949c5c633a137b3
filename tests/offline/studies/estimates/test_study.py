"""offline.studies.estimates.study: the SummEval and Arena studies on the real data with few resamples, their tables,
figures and the CLI subcommand."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from offline.cli import main
from offline.commands.parser import build_parser
from offline.studies.estimates.arena import ARENA_MODELS, load_arena, run_arena_study
from offline.studies.estimates.report import markdown, summeval_gains, write_estimates_study
from offline.studies.estimates.results import EstimatesStudy
from offline.studies.estimates.summeval import MeanCell, run_summeval_study, summeval_cells


@pytest.fixture(scope="module")
def cells(data_dir: Path) -> list[MeanCell]:
    return summeval_cells(data_dir)


def test_summeval_cells_are_system_populations(cells: list[MeanCell]) -> None:
    assert len(cells) == 2 * 4 * 16
    assert all(95 <= cell.human.size <= 100 and cell.human.size == cell.judge_score.size for cell in cells)
    assert all(1 <= cell.judge_score.min() and cell.judge_score.max() <= 5 for cell in cells)
    # expert means are thirds on 1..5
    cell = cells[0]
    np.testing.assert_allclose(cell.human * 3, np.round(cell.human * 3), atol=1e-9)


def test_summeval_study_rows_and_served_rule(cells: list[MeanCell]) -> None:
    chosen = [c for c in cells if c.system == "M11" and c.judge.startswith("gpt-4o")]
    rows = run_summeval_study(chosen, ns=(10, 60), resamples=60, betting_resamples=10, seed=1)
    assert {r.method for r in rows} == {"classical", "ppi++", "betting", "served"}
    by = {(r.criterion, r.n, r.method): r for r in rows}
    for criterion in ("coherence", "consistency", "fluency", "relevance"):
        assert by[(criterion, 10, "betting")].resamples == 10
        assert by[(criterion, 10, "served")].resamples == 60
        # at n = 10 the served interval is the betting one: never narrower than PPI++'s CLT interval on average
        assert by[(criterion, 10, "served")].mean_width > by[(criterion, 10, "ppi++")].mean_width
        assert all(0 <= by[(criterion, n, m)].coverage <= 1 for n in (10, 60) for m in ("classical", "ppi++", "served"))
    gains = summeval_gains(rows)
    assert set(gains) == {
        ("gpt-4o-mini-2024-07-18", c, n) for c in ("coherence", "consistency", "fluency", "relevance") for n in (10, 60)
    }
    # the same seed gives the same rows
    assert run_summeval_study(chosen[:1], ns=(10,), resamples=20, betting_resamples=5, seed=1) == run_summeval_study(
        chosen[:1], ns=(10,), resamples=20, betting_resamples=5, seed=1
    )


def test_arena_loader_and_study(data_dir: Path) -> None:
    data = load_arena(data_dir)
    assert data.models == ARENA_MODELS
    assert set(data.judges) == {"gpt-4-0125-preview", "claude-3-opus-20240229", "gpt-3.5-turbo"}
    assert 10_000 < len(data.human) < 26_919  # battles among the paper's 12 models only
    for judge in data.judges.values():
        assert np.array_equal(judge.model_a, data.human.model_a)
    # a tie counts 0 for both sides; a decided battle 1 for exactly one
    total = data.human.win_a + data.human.win_b
    assert set(np.unique(total).tolist()) <= {0.0, 1.0}
    rows, intervals, truth = run_arena_study(data, ns=(200,), alphas=(0.1, 0.3), iterations=3, seed=2)
    assert len(rows) == 4 * 2 * 2  # (3 judges + human only) x 2 constructions x 2 alphas
    assert {r.iterations for r in rows} == {3}
    assert max(truth, key=truth.get) == "gpt-4"
    assert {r.judge for r in intervals} == set(data.judges)
    assert all(r.effective_sample_gain > 0 for r in intervals)


def test_markdown_figures_and_cli(tmp_path: Path, data_dir: Path, cells: list[MeanCell]) -> None:
    rows = run_summeval_study(cells[:2], ns=(10, 50), resamples=20, betting_resamples=5, seed=0)
    arena, intervals, truth = run_arena_study(load_arena(data_dir), ns=(100, 300), alphas=(0.05, 0.2), iterations=2)
    study = EstimatesStudy(
        seed=0,
        alpha=0.05,
        rules={"r": "v"},
        summeval=rows,
        summeval_resamples=20,
        betting_resamples=5,
        arena=arena,
        arena_intervals=intervals,
        arena_iterations=2,
        arena_truth=truth,
    )
    text = markdown(study)
    assert "## SummEval: coverage" in text and "effective sample gain" in text and "### ellipsoid" in text
    paths = write_estimates_study(study, tmp_path)
    assert {p.name for p in paths} >= {"estimates.json", "estimates.md", "arena_rank_sets.png"}
    assert json.loads((tmp_path / "estimates" / "estimates.json").read_text())["summeval_resamples"] == 20
    args = build_parser().parse_args(["estimates", "--part", "arena", "--iterations", "1"])
    assert (args.part, args.iterations, args.resamples) == ("arena", 1, 1000)
    assert main(["estimates", "--resamples", "0"]) == 2


def _partial_pearson(x: np.ndarray, y: np.ndarray, systems: list[str]) -> float:
    names = sorted(set(systems))
    design = np.column_stack(
        [np.ones(len(systems))] + [np.array([s == name for s in systems], dtype=float) for name in names[1:]]
    )
    rx = x - design @ np.linalg.lstsq(design, x, rcond=None)[0]
    ry = y - design @ np.linalg.lstsq(design, y, rcond=None)[0]
    return float(np.corrcoef(rx, ry)[0, 1])


def test_frank_sentence_rows_gain_fisher_intervals_and_the_recorders_figure(data_dir: Path) -> None:
    """Item 5: every overall row carries 95% Fisher-z intervals (df n - 2 - k) and the partial correlation on the
    recorder's own pred_error, checked by an independent least squares; the issue's figures for gpt-4o."""
    from offline.build.inputs.finesure import load_finesure
    from offline.build.inputs.frank import load_frank
    from offline.studies.factuality.sentences import run_sentence_study

    frank = load_frank(data_dir)
    checks = load_finesure(data_dir, frank)
    summary = run_sentence_study(frank, checks)
    items = {item.item_id: item for item in frank.items}
    overall = {r.judge: r for r in summary.rows if r.dataset == "all"}
    for check in checks:
        row = overall[check.judge]
        low, high = row.partial_pearson_ci
        assert low < row.partial_pearson < high
        assert row.partial_spearman_ci[0] < row.partial_spearman < row.partial_spearman_ci[1]
        read = [r for r in check.rows if r.pred_error and len(r.pred_error) == len(r.sentences)]
        x = np.array([1 - sum(r.pred_error) / len(r.pred_error) for r in read])
        chosen = [items[r.item_id] for r in read]
        y = np.array([item.factuality for item in chosen])
        assert row.recorded_n == len(read)
        assert row.recorded_partial_pearson == pytest.approx(
            _partial_pearson(x, y, [item.model_name for item in chosen]), abs=1e-6
        )
    gpt4o = overall["gpt-4o-2024-05-13"]
    assert gpt4o.recorded_partial_pearson == pytest.approx(0.447, abs=0.0015)
    assert gpt4o.partial_pearson == pytest.approx(0.496, abs=0.0015)
    nano = overall["gpt-4.1-nano-2025-04-14"]
    assert (nano.recorded_partial_pearson, nano.partial_pearson) == pytest.approx((0.421, 0.357), abs=0.0015)
