"""One labelled cell calibrated: group splits, held-out figures, default method, fitted entries, K != 5."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.cell_calibration import _group_splits, calibrate_cell, cell_artifact, decision_of
from calibration.conformal import METHODS, prediction_set
from calibration.labels import LabelledCell
from calibration.thresholds import decode_artifact, encode_artifact


def _cell(k: int = 7, n_groups: int = 60, per_group: int = 8, seed: int = 1, probs: bool = False) -> LabelledCell:
    rng = np.random.default_rng(seed)
    n = n_groups * per_group
    labels = rng.integers(1, k + 1, size=n)
    scores = np.clip(labels + rng.integers(-1, 2, size=n), 1, k)
    probabilities = None
    if probs:
        raw = rng.dirichlet(np.ones(k), size=n) + np.eye(k)[scores - 1]
        probabilities = raw / raw.sum(axis=1, keepdims=True)
    return LabelledCell(
        judge="j", prompt_family="custom", criterion="helpfulness", n_labels=k,
        item_ids=tuple(f"i{i:04d}" for i in range(n)), labels=labels.astype(np.int64),
        judge_scores=scores.astype(np.int64), probabilities=probabilities,
        groups=tuple(f"g{i // per_group}" for i in range(n)),
    )


def test_group_splits_keep_each_group_on_one_side_and_are_seeded() -> None:
    groups = [f"g{i // 3}" for i in range(30)]
    splits = _group_splits(groups, 5, 0)
    for cal, test in splits:
        assert set(cal).isdisjoint(test) and len(cal) + len(test) == 30
        assert {groups[i] for i in cal}.isdisjoint({groups[i] for i in test})
        assert len({groups[i] for i in cal}) == 5
    again = _group_splits(groups, 5, 0)
    assert all((a[0] == b[0]).all() for a, b in zip(splits, again, strict=True))
    assert _group_splits(["one"] * 4, 5, 0) == []


def test_decision_rule_empty_escalates() -> None:
    assert decision_of(np.array([0, 1, 2, 3, 4, 5, 7]), 7).tolist() == [2, 0, 0, 1, 1, 2, 2]
    assert decision_of(np.array([3]), 3).tolist() == [2]  # the full scale of a 3-label scale


@pytest.mark.parametrize("probs", [False, True])
def test_calibrate_cell_on_exchangeable_data(probs: bool) -> None:
    cell = _cell(probs=probs)
    done: list[tuple[int, int]] = []
    result = calibrate_cell(cell, alphas=[0.1, 0.2], n_splits=10, seed=3, progress=lambda d, t: done.append((d, t)))
    n_methods = len(METHODS) if probs else 4
    assert done[-1] == (2 * n_methods, 2 * n_methods)
    assert len(result.entries) == len(result.figures) == 2 * n_methods
    for figures in result.figures:
        assert figures.coverage >= 1 - figures.alpha - 0.03  # exchangeable groups: marginal validity
        assert figures.share_accept + figures.share_review + figures.share_escalate == pytest.approx(1.0)
    # the default is one of the calibrated methods and the entries reproduce the fitted sets
    assert result.default.method in {e.method for e in result.entries}
    residual = next(e for e in result.entries if e.method == "residual" and e.alpha == 0.1)
    assert residual.fitted.n_labels == 7 and residual.heldout_coverage is not None
    assert set(prediction_set(residual.fitted, judge_score=4)) <= set(range(1, 8))


def test_artifact_of_cells_round_trips_with_its_scale() -> None:
    result = calibrate_cell(_cell(k=10, n_groups=30), alphas=[0.1], n_splits=4)
    artifact = cell_artifact([result], created_at="2026-01-01T00:00:00+00:00", code_version="t", data_hash="h",
                             source="test")
    assert artifact.label_scale == list(range(1, 11))
    again = decode_artifact(encode_artifact(artifact))
    assert again == artifact


def test_too_few_groups_gives_entries_without_heldout_figures() -> None:
    cell = _cell(n_groups=1, per_group=30)
    result = calibrate_cell(cell, alphas=[0.1], n_splits=4)
    assert result.figures == [] and result.default.method == "residual"
    assert all(e.heldout_coverage is None and e.n_splits == 0 for e in result.entries)


def test_score_only_methods_never_see_the_probabilities() -> None:
    with_probs = calibrate_cell(_cell(probs=True), alphas=[0.1], n_splits=3)
    without = calibrate_cell(_cell(probs=False), alphas=[0.1], n_splits=3)
    score_only = {e.method: e.fitted for e in without.entries}
    for entry in with_probs.entries:
        if entry.method in score_only:  # fitted on the integer score alone, as a score-only verdict is served
            assert entry.fitted == score_only[entry.method]
