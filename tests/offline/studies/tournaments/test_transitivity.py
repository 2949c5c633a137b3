"""Transitivity study: simulated tournaments (seeded, labelled), rho(x) and rankings against independent counts."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from offline.build.inputs.summeval import load_summeval
from offline.report import tables, write_summary
from offline.report.figures import violation_figure
from offline.studies.tournaments.position_bias import PairwiseAnswer
from offline.studies.tournaments.simulate import SIMULATED_LABEL, SimulationConfig, simulate_tournaments
from offline.studies.tournaments.transitivity import has_triangles, run_transitivity


@pytest.fixture(scope="module")
def recorded(data_dir: Path, recorded_cells, recorded_pairwise):
    """(datasets, shipped pairwise answers, SummEval items) from an ingested answer store (tests/recorded_fixtures.py:
    one ingest per session)."""
    return list(recorded_cells), list(recorded_pairwise), load_summeval(data_dir).items


@pytest.fixture(scope="module")
def simulation(recorded):
    datasets, _, items = recorded
    return simulate_tournaments(datasets, items, config=SimulationConfig(seed=7))


@pytest.fixture(scope="module")
def summary(simulation, recorded):
    return run_transitivity(simulation.answers, recorded[2], simulated=True, label=simulation.label, source="test")


def test_simulation_is_seeded(recorded, simulation) -> None:
    datasets, _, items = recorded
    again = simulate_tournaments(datasets, items, config=SimulationConfig(seed=7), judges=["qwen2.5-72b-instruct"])
    other = simulate_tournaments(datasets, items, config=SimulationConfig(seed=8), judges=["qwen2.5-72b-instruct"])
    mine = [a for a in simulation.answers if a.judge == "qwen2.5-72b-instruct"]
    # A judge's draws do not depend on which other judges are simulated.
    assert again.answers == mine
    assert other.answers != mine


def test_paper_default_subset(simulation) -> None:
    assert simulation.config.n_documents == 30 and simulation.config.repetitions == 3
    for judge in simulation.judges:
        assert len(judge.systems) == 8 and len(judge.documents) == 30
        assert judge.n_verdicts == 30 * 4 * 28 * 3 * 2
        assert judge.distribution_source == (
            "logprobs" if judge.judge.startswith(("gpt-4o", "qwen")) else "empirical per system"
        )
    orders = Counter((a.first < a.second) for a in simulation.answers)
    assert orders[True] == orders[False]  # both presentation orders, equally often


def test_simulated_outputs_are_labelled(summary, tmp_path: Path) -> None:
    assert SIMULATED_LABEL == "simulated from recorded score distributions"
    assert summary.simulated and summary.label == SIMULATED_LABEL
    raw = json.loads(write_summary(summary, tmp_path / "transitivity" / "summary.json").read_text())
    assert raw["simulated"] is True and raw["label"] == SIMULATED_LABEL
    markdown = tables.transitivity_tables(summary)
    assert markdown.count(SIMULATED_LABEL) >= 3  # page title and both table titles
    assert SIMULATED_LABEL in violation_figure(summary).get_suptitle()


def _cycles_by_brute_force(answers: list[PairwiseAnswer]) -> tuple[int, int]:
    """Majority edges from raw verdicts, then every triple checked for a directed cycle."""
    wins: Counter[tuple[str, str]] = Counter()
    for a in answers:
        if a.outcome == "first":
            wins[a.first, a.second] += 1
        elif a.outcome == "second":
            wins[a.second, a.first] += 1
    systems = sorted({s for a in answers for s in (a.first, a.second)})
    beats = {(x, y) for x in systems for y in systems if wins[x, y] > wins[y, x]}
    cycles = sum(
        ((x, y) in beats and (y, z) in beats and (z, x) in beats)
        or ((x, z) in beats and (z, y) in beats and (y, x) in beats)
        for x, y, z in itertools.combinations(systems, 3)
    )
    return cycles, len(list(itertools.combinations(systems, 3)))


def test_violation_rates_match_a_brute_force_count(summary, simulation) -> None:
    judge = "llama-2-13b-chat"
    checked = 0
    for rate in summary.inputs:
        if rate.judge != judge or rate.criterion != "coherence":
            continue
        answers = [
            a for a in simulation.answers if (a.judge, a.criterion, a.doc_id) == (judge, "coherence", rate.doc_id)
        ]
        cycles, triples = _cycles_by_brute_force(answers)
        assert (rate.n_cycles, rate.violation_rate) == (cycles, pytest.approx(cycles / triples))
        checked += 1
    assert checked == 30
    row = next(r for r in summary.rows if (r.judge, r.criterion) == (judge, "coherence"))
    rates = [r.violation_rate for r in summary.inputs if (r.judge, r.criterion) == (judge, "coherence")]
    assert row.mean == pytest.approx(np.mean(rates)) and row.median == pytest.approx(np.median(rates))
    assert row.share_with_cycle == pytest.approx(np.mean([r > 0 for r in rates]))
    # 95% intervals with the document as the unit: exact binomial for the share, bootstrap over documents.
    exact = scipy_stats.binomtest(sum(r > 0 for r in rates), len(rates)).proportion_ci(method="exact")
    assert row.n_with_cycle == sum(r > 0 for r in rates)
    assert row.share_with_cycle_ci == [pytest.approx(exact.low), pytest.approx(exact.high)]
    boot = scipy_stats.bootstrap(
        (np.array(rates),), np.mean, n_resamples=2000, method="percentile", rng=np.random.default_rng(0)
    ).confidence_interval
    assert row.violation_rate_ci == [pytest.approx(boot.low, abs=1e-12), pytest.approx(boot.high, abs=1e-12)]


def test_every_row_carries_intervals_holding_its_figures(summary, tmp_path: Path) -> None:
    for row in summary.rows:
        low, high = row.violation_rate_ci
        assert low <= row.mean <= high
        low, high = row.share_with_cycle_ci
        assert low <= row.share_with_cycle <= high
    raw = json.loads(write_summary(summary, tmp_path / "summary.json").read_text())
    assert all(len(r["violation_rate_ci"]) == 2 and len(r["share_with_cycle_ci"]) == 2 for r in raw["rows"])
    assert "ρ̄ 95% CI" in tables.transitivity_tables(summary)


def test_ranking_agreement_is_kendall_tau_against_human_means(summary, recorded) -> None:
    items = recorded[2]
    rows = [r for r in summary.rankings if r.judge == "gpt-4o-mini-2024-07-18" and r.criterion == "relevance"]
    assert [r.method for r in rows] == ["win_rate", "bradley_terry", "schulze", "mfas_copeland", "mfas_ilp"]
    docs = {x.doc_id for x in summary.inputs if x.judge == "gpt-4o-mini-2024-07-18"}
    for row in rows:
        systems = sorted(row.order)
        human = [
            np.mean([i.expert_mean["relevance"] for i in items if i.system_id == s and i.doc_id in docs])
            for s in systems
        ]
        expected = scipy_stats.kendalltau([-row.order.index(s) for s in systems], human).statistic
        assert row.kendall_tau == pytest.approx(expected)
        assert row.human_order[0] == systems[int(np.argmax(human))]


def test_shipped_pairwise_chain_has_no_triangles(recorded, simulation) -> None:
    _, shipped, _ = recorded
    assert len(shipped) == 8800
    assert not has_triangles(shipped)
    assert has_triangles(simulation.answers)
