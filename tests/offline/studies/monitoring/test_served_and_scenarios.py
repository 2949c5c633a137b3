"""The study's adapter and populations on the real recorded judges: what the service served, cross-checked against
``offline validate``'s independent pass; shifts, swaps and the abstractive / extractive split."""

from __future__ import annotations

import numpy as np
import pytest

from artifact.thresholds import load_artifact
from offline.build.export import DEFAULT_THRESHOLDS
from offline.studies.monitoring.scenarios import by_systems, shifted, swapped
from offline.studies.monitoring.served import ServedLevels, serve_outcomes, watched_guarantees
from offline.validation.artifact import validate_artifact_on

GPT = "gpt-4o-mini-2024-07-18"
QWEN = "qwen2.5-72b-instruct"


@pytest.fixture(scope="module")
def artifact():
    return load_artifact(DEFAULT_THRESHOLDS)


def _cell(cells, judge: str, criterion: str = "relevance"):
    return next(c for c in cells if c.judge == judge and c.criterion == criterion)


def test_served_outcomes_match_offline_validate(recorded_cells, artifact) -> None:
    data = _cell(recorded_cells, GPT)
    cell = (data.judge, data.prompt_family, data.criterion)
    outcomes = serve_outcomes(artifact, cell, data, ServedLevels())
    report = validate_artifact_on(artifact, [data], alphas=(0.1,))
    coverage = next(c for c in report.cells if c.input == "score" and c.alpha == 0.1)
    assert outcomes.covered.mean() == pytest.approx(coverage.coverage, abs=1e-12)
    check = next(
        d
        for d in report.decisions
        if d.input_kind == "score" and d.kind == "accept" and d.tolerance == 2 and d.accept_alpha == 0.1
    )
    taken = outcomes.accepted.sum()
    assert taken / outcomes.accepted.size == pytest.approx(check.accept_share, abs=1e-12)
    assert outcomes.errors.sum() / taken == pytest.approx(check.error_among_accepted, abs=1e-12)
    # the figures of the shipped artifact this study starts from: 0.058 unshifted, everything accepted
    assert round(outcomes.errors.sum() / taken, 3) == 0.058 and taken == outcomes.accepted.size
    specs = watched_guarantees(outcomes, 16)
    assert [(s.guarantee, s.level) for s in specs] == [("coverage", 0.1), ("accept_error", 0.1)]


def test_one_label_harsher_raises_the_error_among_accepted(recorded_cells, artifact) -> None:
    data = _cell(recorded_cells, GPT)
    cell = (data.judge, data.prompt_family, data.criterion)
    harsher = serve_outcomes(artifact, cell, shifted(data, -1), ServedLevels())
    assert harsher.accepted.all()
    assert round(harsher.errors.sum() / harsher.accepted.sum(), 3) == 0.176


def test_a_cell_without_certified_accepts_watches_coverage_only(recorded_cells, artifact) -> None:
    data = _cell(recorded_cells, GPT, "coherence")
    outcomes = serve_outcomes(artifact, (data.judge, data.prompt_family, data.criterion), data, ServedLevels())
    assert not outcomes.accepted.any() and outcomes.served_accept_alpha is None
    assert [s.guarantee for s in watched_guarantees(outcomes, 16)] == ["coverage"]


def test_uncalibrated_or_unsent_inputs_are_refused(recorded_cells, artifact) -> None:
    data = _cell(recorded_cells, "gpt-3.5-turbo-0301")
    with pytest.raises(ValueError, match="log-probs"):
        serve_outcomes(artifact, (data.judge, data.prompt_family, data.criterion), data, ServedLevels(input="logprobs"))
    with pytest.raises(ValueError, match="does not calibrate"):
        serve_outcomes(artifact, ("nobody", "geval", "relevance"), data, ServedLevels())


def test_shifts_move_scores_and_probabilities_within_the_scale(recorded_cells) -> None:
    data = _cell(recorded_cells, GPT)
    down, up = shifted(data, -1), shifted(data, 1)
    assert down.judge_scores.min() == 1 and up.judge_scores.max() == 5
    assert np.all(down.judge_scores == np.clip(data.judge_scores - 1, 1, 5))
    assert np.allclose(down.probabilities.sum(axis=1), 1.0) and np.allclose(up.probabilities.sum(axis=1), 1.0)
    expected = down.probabilities @ np.arange(1, 6)
    assert np.all(expected <= data.probabilities @ np.arange(1, 6) + 1e-12)
    assert np.array_equal(down.labels, data.labels)


def test_a_swap_serves_the_other_judge_with_each_item_keeping_its_human_label(recorded_cells) -> None:
    gpt, qwen = _cell(recorded_cells, GPT), _cell(recorded_cells, QWEN)
    swap = swapped(gpt, qwen)
    assert swap.judge == GPT and swap.prompt_family == gpt.prompt_family
    label_of = dict(zip(gpt.item_ids, gpt.labels, strict=True))
    assert all(label_of[i] == y for i, y in zip(swap.item_ids, swap.labels, strict=True))
    score_of = dict(zip(qwen.item_ids, qwen.judge_scores, strict=True))
    assert all(score_of[i] == s for i, s in zip(swap.item_ids, swap.judge_scores, strict=True))


def test_abstractive_and_extractive_items_split_by_system(recorded_cells) -> None:
    data = _cell(recorded_cells, GPT)
    abstractive, extractive = by_systems(data, extractive=False), by_systems(data, extractive=True)
    assert len(abstractive.item_ids) + len(extractive.item_ids) == len(data.item_ids)
    assert {i.split("/")[1] for i in extractive.item_ids} == {"M0", "M1", "M2", "M5"}
    assert len(set(extractive.groups)) == 100 and len(extractive.item_ids) == 400
