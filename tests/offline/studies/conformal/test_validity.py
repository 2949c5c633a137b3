"""The artifact as served, on the real data: input kinds, PAC thresholds, splits by document, the default chosen
without peeking; validated on documents it was not fitted on, and the validator agreeing with the service."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from litestar.testing import TestClient

from artifact.thresholds import ThresholdIndex, load_artifact, save_artifact
from calibration.conformal import PROBABILITY_METHODS, prediction_set
from calibration.input_kinds.verdicts import methods_for_input_kind, verdict_inputs
from offline.build.export import OTHER_METHOD_ALPHAS, build_artifact
from offline.studies.conformal.validity import ALPHA_GRID, run_validity_study
from offline.studies.conformal.validity import markdown as validity_markdown
from offline.validation.artifact import INPUTS, serve_cells, serve_item, validate_artifact_on
from offline.validation.halves import SHARE_AT_TARGET, check_halves, size_interval
from offline.validation.halves import markdown as halves_markdown
from service.config.settings import Settings
from service.http.app import create_app

PICK = {("gpt-4o-mini-2024-07-18", "coherence"), ("llama-2-7b-chat", "fluency")}


@pytest.fixture(scope="module")
def datasets(recorded_cells):
    """``recorded_datasets(data_dir)``, computed once per session (tests/recorded_fixtures.py)."""
    return list(recorded_cells)


@pytest.fixture(scope="module")
def two_cells(datasets):
    chosen = [d for d in datasets if (d.judge, d.criterion) in PICK]
    summary, fits = run_validity_study(chosen, n_splits=6, seed=0)
    artifact = build_artifact(data_hash="test", code_version="test", created_at="t", fits=fits)
    return chosen, summary, fits, artifact


def test_each_cell_is_fitted_per_input_kind_with_pac_thresholds(two_cells):
    chosen, summary, fits, artifact = two_cells
    kinds = {(c.judge, c.kind) for c in summary.cells}
    assert kinds == {
        ("gpt-4o-mini-2024-07-18", "score"),
        ("gpt-4o-mini-2024-07-18", "probabilities"),
        ("llama-2-7b-chat", "score"),
    }
    for entry in artifact.entries:
        assert entry.method in methods_for_input_kind(entry.kind)
        assert entry.fitted.delta == 0.05
        assert entry.heldout_coverage is not None and entry.heldout_coverage_p5 is not None
        if entry.kind == "score":
            assert entry.method not in PROBABILITY_METHODS
            assert entry.fitted.n_cal + entry.fitted.n_model_fit == next(
                d.labels.size for d in chosen if d.judge == entry.judge
            )
    index = ThresholdIndex(artifact)
    for cell in summary.cells:
        default = index.default_method(cell.judge, cell.prompt_family, cell.criterion, cell.kind)
        assert default == cell.default_method
        levels = index.alphas(cell.judge, cell.prompt_family, cell.criterion, default, cell.kind)
        assert levels == list(ALPHA_GRID)  # the default covers the whole 0.01..0.30 grid
        for method in index.methods(cell.judge, cell.prompt_family, cell.criterion, cell.kind):
            if method != default:
                assert set(index.alphas(cell.judge, cell.prompt_family, cell.criterion, method, cell.kind)) == set(
                    OTHER_METHOD_ALPHAS
                )


def test_the_recipe_as_served_covers_unseen_documents(two_cells):
    _, summary, _, _ = two_cells
    for cell in summary.cells:
        for row in cell.procedure:
            assert row.mean_coverage >= 1 - row.alpha - 0.01, (cell.judge, cell.kind, row.alpha)
            assert row.p5_coverage >= 1 - row.alpha - 0.05, (cell.judge, cell.kind, row.alpha)
            low, high = row.mean_set_size_ci  # bootstrap over documents
            assert low <= row.mean_set_size <= high, (cell.judge, cell.kind, row.alpha)
    assert "size [95% CI]" in validity_markdown(summary)


def test_fit_on_half_the_documents_holds_on_the_other_half(datasets):
    """The issue's promise on the shipped data: every judge x criterion x input x alpha in {.05, .10, .20}."""
    report = check_halves(datasets, seed=0, n_splits=5)
    assert report.n_checked == 2 * 3 * (24 + 8)  # halves x alphas x (score cells + log-prob cells)
    assert report.n_below_floor == 0, [
        r for r in report.rows if r.coverage is not None and r.coverage < 1 - r.alpha - 0.02
    ]
    assert report.share_at_target >= SHARE_AT_TARGET
    assert report.n_empty_accepted == 0
    assert report.n_logprobs_larger == 0, report.logprobs_larger
    assert report.passed
    # Every served row carries its mean set size's interval over the unseen half's documents (taken on the
    # validator's per-document set sizes from its one serving pass).
    served = [r for r in report.rows if r.mean_set_size is not None]
    assert served and all(r.n_documents == report.n_documents[1 - r.fit_half] for r in served)
    for r in served:
        low, high = r.mean_set_size_ci
        assert low <= r.mean_set_size <= high
    assert "| 95% CI |" in halves_markdown(report)


def test_the_validator_serves_every_item_exactly_as_the_service(two_cells, tmp_path: Path):
    chosen, _, _, artifact = two_cells
    path = tmp_path / "thresholds.json"
    save_artifact(artifact, path)
    loaded = load_artifact(path)
    index = ThresholdIndex(loaded)
    app = create_app(Settings(thresholds_path=path))
    with TestClient(app) as client:
        for data in chosen:
            cell = (data.judge, data.prompt_family, data.criterion)
            for position in range(0, data.labels.size, 53):
                probs = None if data.probabilities is None else data.probabilities[position].tolist()
                score = int(data.judge_scores[position])
                for name, kinds in INPUTS.items():
                    if probs is None and name != "score":
                        continue
                    body = {
                        "criterion": data.criterion,
                        "judge": data.judge,
                        "prompt_family": data.prompt_family,
                        "alpha": 0.13,
                        "guarantee": "pac",  # the fixture fits the pac mode only
                    }
                    if "score" in kinds:
                        body["judge_score"] = score
                    if "probabilities" in kinds:
                        body["judge_logprobs"] = {str(k + 1): float(np.log(p)) for k, p in enumerate(probs) if p > 0}
                    answer = client.post("/v1/score", json=body).json()
                    # the service renormalises the log-probs it is sent: compare on the probabilities it used
                    used = answer["probabilities"]
                    item = serve_item(index, cell, kinds, 0.13, judge_score=score, probabilities=used, n_labels=5)
                    assert answer["prediction_set"] == list(item.labels), (data.judge, position, name)
                    assert (answer["method"], answer["input_kind"], answer["alpha"]) == (
                        item.served.method,
                        item.served.kind,
                        item.served.alpha,
                    )
                    core_score, core_probs = verdict_inputs(item.served.kind, 5, judge_score=score, probabilities=used)
                    assert item.labels == prediction_set(
                        item.served.entry.fitted, judge_score=core_score, probabilities=core_probs
                    )


def test_validation_report_counts_coverage_with_an_exact_interval(two_cells):
    chosen, _, _, artifact = two_cells
    report = validate_artifact_on(artifact, chosen, alphas=(0.1,))
    assert {c.input for c in report.cells} == {"score", "logprobs", "score+logprobs"}
    for cell in report.cells:
        assert cell.n + cell.n_uncalibrated == next(d.labels.size for d in chosen if d.judge == cell.judge)
        assert cell.ci_low <= cell.coverage <= cell.ci_high
        assert sum(g.n for g in cell.by_label) == cell.n


def test_the_validator_reports_each_cells_set_sizes_per_document_from_its_one_pass(two_cells):
    """The per-document sums beside each cell are those of serving every item again, one by one; they add up to
    the cell's n and mean set size, and the halves interval is taken on them."""
    chosen, _, _, artifact = two_cells
    index = ThresholdIndex(artifact)
    served = serve_cells(index, chosen, alphas=(0.1, 0.2))
    assert len(served) == len(validate_artifact_on(artifact, chosen, alphas=(0.1, 0.2)).cells)
    by_cell = {(d.judge, d.prompt_family, d.criterion): d for d in chosen}
    for s in served:
        c, sizes = s.cell, s.sizes
        data = by_cell[c.judge, c.prompt_family, c.criterion]
        kinds = INPUTS[c.input]
        expected: dict[str, list[int]] = {}
        for position in range(data.labels.size):
            probs = None if data.probabilities is None else data.probabilities[position].tolist()
            item = serve_item(
                index, (data.judge, data.prompt_family, data.criterion), kinds, c.alpha,
                judge_score=int(data.judge_scores[position]), probabilities=probs, n_labels=data.n_labels,
            )  # fmt: skip
            if item.labels is not None:
                total = expected.setdefault(data.groups[position], [0, 0])
                total[0] += len(item.labels)
                total[1] += 1
        assert sizes is not None and sizes.documents == sorted(expected)
        assert [[a, b] for a, b in zip(sizes.set_sizes, sizes.items, strict=True)] == [
            expected[d] for d in sizes.documents
        ]
        assert sum(sizes.items) == c.n
        if c.n:
            assert sum(sizes.set_sizes) / c.n == pytest.approx(c.mean_set_size, abs=1e-12)
            interval = size_interval(sizes, seed=0)
            assert interval is not None and interval.n_units == len(sizes.documents)
            assert interval.estimate == pytest.approx(c.mean_set_size, abs=1e-12)
            assert interval.low <= c.mean_set_size <= interval.high
