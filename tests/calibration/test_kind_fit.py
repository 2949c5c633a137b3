"""One (cell, kind) calibrated as served: figures by group, selection, the recipe on unseen groups, final fits."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.conformal import fit_conformal
from calibration.kind_fit import KindData, cross_fit_splits, decision_shares, fit_kind


def _data(n_groups: int = 60, per_group: int = 8, seed: int = 0) -> KindData:
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(n_groups), per_group)
    shift = rng.normal(0, 0.4, size=n_groups)[groups]  # items of one group share a shift: not exchangeable
    latent = rng.uniform(1, 5, size=groups.size)
    labels = np.clip(np.round(latent + shift), 1, 5).astype(np.int64)
    scores = np.clip(np.round(latent + rng.normal(0, 0.8, size=groups.size)), 1, 5).astype(np.int64)
    return KindData(kind="score", labels=labels, judge_scores=scores, probabilities=None, groups=groups)


@pytest.fixture(scope="module")
def fitted():
    return fit_kind(_data(), alphas=[0.05, 0.1, 0.2], delta=0.05, n_splits=8, selection_repeats=3,
                    nested_repeats=1, seed=3)


def test_every_method_of_the_kind_is_fitted_on_all_items_at_every_level(fitted):
    data = _data()
    assert set(fitted.fitted) == {"residual", "mondrian_residual", "learned_lac", "label_conditional"}
    for method, by_alpha in fitted.fitted.items():
        for alpha, predictor in by_alpha.items():
            expected = fit_conformal(method, alpha, data.labels, judge_scores=data.judge_scores,
                                     rng=np.random.default_rng(3), delta=0.05)
            assert predictor == expected


def test_pac_figures_cover_on_unseen_groups_and_the_recipe_keeps_its_promise(fitted):
    for row in fitted.heldout:
        assert row.coverage >= 1 - row.alpha - 0.03, row
        assert row.accept_share + row.review_share + row.escalate_share == pytest.approx(1.0)
    for row in fitted.procedure:
        assert len(row.coverage) == 8 and set(row.chosen) <= set(fitted.fitted)
        assert row.mean_coverage >= 1 - row.alpha - 0.01


def test_the_default_qualifies_or_is_the_fallback(fitted):
    evidence = {e.method: e for e in fitted.selection_evidence}
    assert fitted.default.method in evidence
    assert fitted.default.qualified == bool(fitted.default.qualifying)
    if fitted.default.qualified:
        qualifying = [evidence[m].mean_set_size for m in fitted.default.qualifying]
        assert evidence[fitted.default.method].mean_set_size <= min(qualifying) + 0.05 + 1e-9


def test_cross_fit_splits_are_both_directions_of_each_half():
    groups = np.repeat(np.arange(10), 3)
    splits = cross_fit_splits(groups, repeats=2, seed=0)
    assert len(splits) == 4
    assert np.array_equal(splits[0].calibration, splits[1].test)
    assert set(groups[splits[0].calibration]).isdisjoint(set(groups[splits[0].test]))


def test_decision_shares_escalate_empty_sets():
    accept, review, escalate = decision_shares(np.array([0, 1, 2, 3, 4, 5]), 5, accept_max=2, escalate_min=5)
    assert accept.tolist() == [False, True, True, False, False, False]
    assert review.tolist() == [False, False, False, True, True, False]
    assert escalate.tolist() == [True, False, False, False, False, True]
