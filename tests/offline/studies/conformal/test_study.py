"""The conformal study on the real recorded judges: coverage in every cell, bins, correlations, summary JSON."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from calibration.conformal import METHODS, coverage_by_group, fit_conformal, predict_sets, repeated_splits
from offline.build.cell_data import SCORE_ONLY_METHODS
from offline.report import write_summary
from offline.studies.conformal.rules import (
    ALPHAS,
    BIN_SLACK,
    COVERAGE_SLACK,
    HEADLINE_ALPHA,
    MIN_BIN_ITEMS,
    PAPER_METHOD,
)
from offline.studies.conformal.study import run_conformal_study

SEED = 0


@pytest.fixture(scope="module")
def datasets(recorded_cells):
    """Every (judge, criterion) of the shipped recorded judges, read back from an ingested answer store (once per
    session: tests/recorded_fixtures.py)."""
    return list(recorded_cells)


@pytest.fixture(scope="module")
def study(datasets):
    """The full study: every judge x criterion x alpha x method, 20 splits (the coverage check needs 20)."""
    return run_conformal_study(datasets, n_splits=20, seed=SEED)


def test_mean_coverage_holds_in_every_cell_over_20_splits(study, datasets) -> None:
    n_probability = sum(d.probabilities is not None for d in datasets)
    expected = (n_probability * len(METHODS) + (len(datasets) - n_probability) * len(SCORE_ONLY_METHODS)) * len(ALPHAS)
    assert n_probability == 8 and len(datasets) == 24  # gpt-4o-mini and qwen carry log-probs, 4 criteria each
    assert len(study.cells) == expected
    below = [
        (c.judge, c.criterion, c.method, c.alpha, c.coverage)
        for c in study.cells
        if c.coverage < 1 - c.alpha - COVERAGE_SLACK
    ]
    assert below == []
    assert all(c.n_splits == 20 for c in study.cells)


def test_items_used_and_excluded(datasets) -> None:
    by_key = {(d.judge, d.criterion): d for d in datasets}
    assert len(datasets) == 24
    assert by_key["gpt-4o-mini-2024-07-18", "coherence"].labels.size == 1600
    relevance = by_key["gpt-4o-mini-2024-07-18", "relevance"]
    assert (relevance.labels.size, relevance.n_excluded, relevance.n_answered) == (1599, 1, 1600)
    for d in datasets:
        assert d.labels.size + d.n_excluded == d.n_answered
        assert d.n_answered == (1600 if d.probabilities is not None else 1200)
    assert sum(d.n_excluded for d in datasets) > 0
    assert by_key["qwen2.5-72b-instruct", "fluency"].probabilities is not None
    assert by_key["llama-2-7b-chat", "fluency"].probabilities is None


def test_bin_coverage_agrees_with_coverage_by_group_on_the_same_split(datasets) -> None:
    data = next(d for d in datasets if d.judge.startswith("qwen") and d.criterion == "relevance")
    summary = run_conformal_study([data], alphas=(0.1,), n_splits=1, seed=SEED, methods=("residual", "lac"))
    for cell in summary.cells:
        # Split 0 rebuilt by hand: the same generator sequence as repeated_splits (permute, fit, predict).
        generator = np.random.default_rng([SEED, 0])
        order = generator.permutation(data.labels.size)
        cal, test = order[: cell.n_cal], order[cell.n_cal :]
        fitted = fit_conformal(
            cell.method,
            0.1,
            data.labels[cal],
            judge_scores=data.judge_scores[cal],
            probabilities=data.probabilities[cal],
            rng=generator,
        )
        sets = predict_sets(
            fitted, judge_scores=data.judge_scores[test], probabilities=data.probabilities[test], rng=generator
        )
        for bins, groups in ((cell.judge_score_bins, data.judge_scores), (cell.human_label_bins, data.labels)):
            expected = coverage_by_group(sets, data.labels[test], groups[test])
            assert [b.group for b in bins] == [g.group for g in expected]
            for b, g in zip(bins, expected, strict=True):
                assert (b.n_mean, b.coverage, b.set_size) == pytest.approx((g.n, g.coverage, g.mean_set_size))
            assert all(b.counted == (b.n_mean >= MIN_BIN_ITEMS) for b in bins)
        floor = 1 - 0.1 - BIN_SLACK
        counted = [b.coverage for b in [*cell.judge_score_bins, *cell.human_label_bins] if b.counted]
        assert cell.keeps_bin_coverage == (min(counted) >= floor - 1e-12)


def test_width_error_spearman_has_one_observation_per_item(study, datasets) -> None:
    data = next(d for d in datasets if d.judge == "llama-2-70b-chat" and d.criterion == "consistency")
    cell = study.cell(data.judge, data.criterion, PAPER_METHOD, HEADLINE_ALPHA)
    splits = repeated_splits(
        PAPER_METHOD, HEADLINE_ALPHA, data.labels, judge_scores=data.judge_scores, n_splits=20, seed=SEED
    )
    # Independent recomputation: for every item, the mean of its set sizes over the splits that tested it.
    sizes: dict[int, list[int]] = {}
    for split in splits.splits:
        for index, size in zip(split.test_index.tolist(), split.set_sizes.tolist(), strict=True):
            sizes.setdefault(index, []).append(size)
    tested = sorted(sizes)
    widths = [sum(sizes[i]) / len(sizes[i]) for i in tested]
    errors = np.abs(data.judge_scores - data.labels)[tested]
    expected = scipy_stats.spearmanr(widths, errors)
    assert cell.spearman_n == len(tested) <= data.labels.size
    assert len(tested) > 0.99 * data.labels.size  # 20 half-splits miss an item with probability 2**-20
    assert cell.spearman_width_error == pytest.approx(expected.statistic)
    assert cell.spearman_p_value == pytest.approx(expected.pvalue)
    assert cell.coverage == pytest.approx(splits.coverage)


def test_default_methods_follow_the_stated_rule(study) -> None:
    assert len(study.default_methods) == 24
    for choice in study.default_methods:
        cells = [
            c
            for c in study.cells
            if (c.judge, c.criterion) == (choice.judge, choice.criterion) and abs(c.alpha - HEADLINE_ALPHA) < 1e-9
        ]
        qualifying = [c for c in cells if c.valid_coverage and c.keeps_bin_coverage]
        if qualifying:
            assert choice.set_size == min(c.set_size for c in qualifying)
            assert choice.method in choice.qualifying_methods
        else:
            assert choice.method == PAPER_METHOD and choice.reason.startswith("fallback")
        assert choice.reason
    # learned_lac reaches marginal coverage with tiny sets on some cells by naming the majority label; the rule
    # must not pick it there (its coverage within low human labels collapses).
    assert any(d.marginal_best_method == "learned_lac" and d.method != "learned_lac" for d in study.default_methods)
    for row in study.headline:
        assert row.ratio == pytest.approx(row.best_set_size / row.paper_set_size)


def test_variance_decomposition_matches_least_squares_r2(study) -> None:
    decomposition = next(v for v in study.variance if v.method == PAPER_METHOD)
    judges, criteria = decomposition.judges, decomposition.criteria
    sizes = np.array([study.cell(j, c, PAPER_METHOD, HEADLINE_ALPHA).set_size for j in judges for c in criteria])
    criterion_design = np.array([[1.0] + [float(c == k) for k in criteria] for _ in judges for c in criteria])
    fit, *_ = np.linalg.lstsq(criterion_design, sizes, rcond=None)
    r2 = 1 - ((sizes - criterion_design @ fit) ** 2).sum() / ((sizes - sizes.mean()) ** 2).sum()
    assert decomposition.eta2_criterion == pytest.approx(r2)
    total = decomposition.eta2_criterion + decomposition.eta2_judge + decomposition.eta2_residual
    assert total == pytest.approx(1.0)


def test_inter_judge_agreement_uses_common_items(study, datasets) -> None:
    assert len(study.inter_judge) == 15 * 4
    pair = next(
        a
        for a in study.inter_judge
        if a.criterion == "fluency" and a.judge_a.startswith("gpt-4o") and a.judge_b.startswith("qwen")
    )
    assert pair.n_items == 1600
    text_pair = next(
        a
        for a in study.inter_judge
        if a.judge_a == "gpt-3.5-turbo-0301" and a.judge_b == "llama-2-7b-chat" and a.criterion == "fluency"
    )
    assert text_pair.n_items == 1199  # one llama-2-7b fluency reply is unreadable
    # One observation per common item tested in at least one of the 20 splits (missing one has odds 2**-20).
    assert text_pair.n_items - 2 <= text_pair.correlation.n <= text_pair.n_items


def test_summary_json_has_the_required_fields(study, tmp_path: Path) -> None:
    path = write_summary(study, tmp_path / "conformal" / "summary.json")
    raw = json.loads(path.read_text())
    required = {
        "judge",
        "criterion",
        "alpha",
        "method",
        "coverage",
        "coverage_std",
        "set_size",
        "spearman_width_error",
        "spearman_p_value",
        "spearman_n",
        "n_cal",
        "n_test",
    }
    assert raw["cells"] and all(required <= set(cell) for cell in raw["cells"])
    assert raw["n_splits"] == 20 and raw["seed"] == SEED
    assert {"default_methods", "headline", "inter_judge", "variance", "exclusions", "rules"} <= set(raw)
