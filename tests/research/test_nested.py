"""research.panels.recipes and research.panels.nested: the menu, one evaluation of every recipe (checked
against hand computations), the selection rule over recipes, and the nested estimate's use of documents (the
choice never sees test documents)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calibration.conformal import fit_conformal, predict_sets
from calibration.input_kinds.evaluation import cross_fit_splits
from calibration.input_kinds.fit import KindData
from calibration.input_kinds.heldout import group_splits, pooled_group_coverage
from calibration.input_kinds.selection import MethodEvidence
from research.panels.model import fit_multinomial
from research.panels.nested import (
    FALLBACK,
    choose_recipe,
    evidence_of,
    fixed_recipes,
    nested_estimate,
    pick_recipe,
)
from research.panels.recipes import Contender, Recipe, RecipeSets, evaluate_recipes, menu_for

N_DOCS, PER_DOC, K = 40, 10, 5


def _contender(seed: int = 0, *, kind: str = "probabilities", n_docs: int = N_DOCS) -> Contender:
    rng = np.random.default_rng(seed)
    n = n_docs * PER_DOC
    labels = rng.choice(np.arange(1, K + 1), size=n, p=[0.05, 0.15, 0.3, 0.35, 0.15])
    latent = labels + rng.normal(0, 0.9, n)
    logits = -((np.arange(1, K + 1)[None, :] - latent[:, None]) ** 2)
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    scores = np.clip(np.rint(latent), 1, K).astype(np.int64)
    groups = np.repeat(np.arange(n_docs), PER_DOC)
    data = KindData(
        kind=kind,
        labels=labels,
        judge_scores=scores,
        probabilities=probs if kind == "probabilities" else None,
        groups=groups,
        n_labels=K,
    )
    features = {"expected": (probs @ np.arange(1, K + 1))[:, None], "full": np.log(probs)}
    return Contender(name="judge", data=data, features=features, l2={"expected": 0.01, "full": 0.1})


def test_the_menu_is_the_kinds_core_methods_then_six_learned_recipes_per_feature_set() -> None:
    menu = menu_for(_contender())
    assert [r.name for r in menu[:9]] == [
        "residual",
        "residual_expected",
        "lac",
        "aps",
        "aps_randomized",
        "ordinal",
        "mondrian_residual",
        "learned_lac",
        "label_conditional",
    ]
    learned = menu[9:]
    assert len(learned) == 12
    assert {(r.features, r.score, r.thresholds) for r in learned} == {
        (f, s, t) for f in ("expected", "full") for s in ("lac", "balanced") for t in ("marginal", "bin", "label")
    }
    assert all(r.name == f"{r.features}:{r.score}:{r.thresholds}" and r.core is None for r in learned)
    score_menu = menu_for(_contender(kind="score"))  # no probabilities: only the score kind's methods
    assert [r.name for r in score_menu if r.core] == [
        "residual",
        "mondrian_residual",
        "learned_lac",
        "label_conditional",
    ]


def test_a_core_recipe_gives_the_cores_sets() -> None:
    contender = _contender()
    data = contender.data
    (split,) = group_splits(data.groups, n_splits=1, seed=3)
    for method in ("residual", "lac", "mondrian_residual"):
        found = evaluate_recipes(
            contender,
            [Recipe(name=method, core=method)],
            split.calibration,
            split.test,
            alpha=0.1,
            delta=0.05,
            key=[0, 1],
        )[method]
        fitted = fit_conformal(
            method,
            0.1,
            data.labels[split.calibration],
            judge_scores=data.judge_scores[split.calibration],
            probabilities=data.probabilities[split.calibration],
            n_labels=K,
            delta=0.05,
            rng=np.random.default_rng([0, 1]),
        )
        sets = predict_sets(
            fitted, judge_scores=data.judge_scores[split.test], probabilities=data.probabilities[split.test]
        )
        np.testing.assert_array_equal(found.sizes, sets.sum(axis=1))
        np.testing.assert_array_equal(found.covered, sets[np.arange(split.test.size), data.labels[split.test] - 1])
        np.testing.assert_array_equal(found.test_index, split.test)


def _marginal_threshold(scores: np.ndarray, alpha: float) -> float:
    """ceil((1 - alpha)(n + 1))-th smallest, by sorting (independent of calibration.conformal)."""
    rank = math.ceil((1 - alpha) * (scores.size + 1) - 1e-9)
    return float(np.sort(scores)[rank - 1]) if rank <= scores.size else math.inf


def test_a_learned_recipe_fits_model_and_thresholds_on_disjoint_halves_of_the_fit_documents() -> None:
    contender = _contender(1)
    data = contender.data
    (split,) = group_splits(data.groups, n_splits=1, seed=0)
    key = [4, 2]
    menu = [Recipe(name=n, features="full", score="lac", thresholds=t) for n, t in (("m", "marginal"), ("l", "label"))]
    found = evaluate_recipes(contender, menu, split.calibration, split.test, alpha=0.1, delta=None, key=key)
    docs = np.unique(data.groups[split.calibration])
    model_docs = np.random.default_rng([*key, 7]).permutation(docs)[: docs.size // 2]
    model_items = split.calibration[np.isin(data.groups[split.calibration], model_docs)]
    threshold_items = np.setdiff1d(split.calibration, model_items)
    assert not set(data.groups[model_items]) & set(data.groups[threshold_items])
    model = fit_multinomial(contender.features["full"][model_items], data.labels[model_items], K, l2=0.1)
    probs = model.probabilities(contender.features["full"])
    true = 1 - probs[threshold_items, data.labels[threshold_items] - 1]
    limit = _marginal_threshold(true, 0.1)
    membership = 1 - probs[split.test] <= limit + 1e-12
    np.testing.assert_array_equal(found["m"].sizes, membership.sum(axis=1))
    # label thresholds: one per human label among the threshold items
    limits = [_marginal_threshold(true[data.labels[threshold_items] == y], 0.1) for y in range(1, K + 1)]
    membership = 1 - probs[split.test] <= np.array(limits)[None, :] + 1e-12
    np.testing.assert_array_equal(found["l"].sizes, membership.sum(axis=1))
    np.testing.assert_array_equal(
        found["l"].covered, membership[np.arange(split.test.size), data.labels[split.test] - 1]
    )
    spans = np.array(
        [np.flatnonzero(row).max() - np.flatnonzero(row).min() + 1 if row.any() else 0 for row in membership]
    )
    np.testing.assert_array_equal(found["l"].spans, spans)


def test_label_thresholds_cover_every_label_where_balanced_bins_need_not() -> None:
    contender = _contender(2, n_docs=200)
    data = contender.data
    (split,) = group_splits(data.groups, n_splits=1, seed=0)
    menu = [
        Recipe(name="label", features="expected", score="lac", thresholds="label"),
        Recipe(name="plain", features="expected", score="lac", thresholds="marginal"),
    ]
    found = evaluate_recipes(contender, menu, split.calibration, split.test, alpha=0.1, delta=0.05, key=[0])
    y = data.labels[split.test]
    by_label = [found["label"].covered[y == label].mean() for label in range(1, K + 1)]
    assert min(by_label) >= 0.85  # PAC per label at alpha 0.1, ~100 test items in the rarest label
    plain = [found["plain"].covered[y == label].mean() for label in range(1, K + 1)]
    assert min(plain) < min(by_label)  # plain LAC under-covers the rare extreme label


def _evidence(name: str, size: float, *, label: float = 0.9, non_interval: float = 0.0) -> MethodEvidence:
    return MethodEvidence(
        method=name,
        alpha=0.1,
        n_evaluations=4,
        mean_coverage=0.9,
        p5_coverage=0.89,
        min_label_coverage=label,
        min_bin_coverage=0.9,
        mean_set_size=size,
        non_interval_share=non_interval,
        full_scale_share=0.0,
        empty_share=0.0,
    )


def test_pick_recipe_applies_the_selection_rule_in_menu_order() -> None:
    # the smallest fails the within-label condition (0.84 < 0.85): the next smallest wins
    assert pick_recipe([_evidence("residual", 3.0), _evidence("a", 2.0, label=0.84), _evidence("b", 2.5)]) == (
        "b",
        True,
    )
    # within 0.05 of the smallest, fewer sets with a hole wins
    assert pick_recipe(
        [_evidence("residual", 3.0), _evidence("a", 2.0, non_interval=0.3), _evidence("b", 2.04, non_interval=0.1)]
    ) == ("b", True)
    assert pick_recipe(
        [_evidence("residual", 3.0), _evidence("a", 2.0, non_interval=0.3), _evidence("b", 2.06, non_interval=0.1)]
    ) == ("a", True)
    # exact ties: menu order
    assert pick_recipe([_evidence("residual", 3.0), _evidence("a", 2.0), _evidence("b", 2.0)]) == ("a", True)
    # none qualifies: the fallback, not qualified
    assert pick_recipe([_evidence("residual", 3.0, label=0.5), _evidence("a", 2.0, label=0.8)]) == (FALLBACK, False)


def test_evidence_pools_groups_as_the_selection_rule_does() -> None:
    contender = _contender(3)
    labels = contender.data.labels
    runs = [
        RecipeSets(
            test_index=np.arange(0, 50), covered=np.arange(50) % 5 != 0, sizes=np.full(50, 3), spans=np.full(50, 3)
        ),
        RecipeSets(
            test_index=np.arange(50, 90),
            covered=np.ones(40, dtype=bool),
            sizes=np.full(40, 2),
            spans=np.array([2] * 30 + [3] * 10),
        ),
    ]
    found = evidence_of("x", runs, contender, alpha=0.1, min_group_items=5)
    covered = np.concatenate([r.covered for r in runs])
    assert found.mean_coverage == pytest.approx((0.8 + 1.0) / 2)
    assert found.p5_coverage == pytest.approx(np.percentile([0.8, 1.0], 5))
    assert found.mean_set_size == pytest.approx((50 * 3 + 40 * 2) / 90)
    assert found.non_interval_share == pytest.approx(10 / 90)
    pooled = pooled_group_coverage(covered, labels[:90], min_items=10)
    assert found.min_label_coverage == pytest.approx(min(c for _, _, c in pooled))
    bins = pooled_group_coverage(covered, contender.data.judge_scores[:90], min_items=10)
    assert found.min_bin_coverage == pytest.approx(min(c for _, _, c in bins))


def test_the_choice_never_reads_labels_outside_its_documents() -> None:
    contender = _contender(4)
    (split,) = group_splits(contender.data.groups, n_splits=1, seed=0)
    menu = menu_for(contender)
    first = choose_recipe(contender, menu, split.calibration, alpha=0.1, delta=0.05, repeats=1, seed=5, key=[0])
    scrambled = contender.data.labels.copy()
    scrambled[split.test] = 6 - scrambled[split.test]
    other = Contender(
        name="judge",
        data=KindData(
            kind="probabilities",
            labels=scrambled,
            judge_scores=contender.data.judge_scores,
            probabilities=contender.data.probabilities,
            groups=contender.data.groups,
            n_labels=K,
        ),
        features=contender.features,
        l2=contender.l2,
    )
    second = choose_recipe(other, menu, split.calibration, alpha=0.1, delta=0.05, repeats=1, seed=5, key=[0])
    assert first == second
    assert [e.method for e in first.evidence] == [r.name for r in menu]


def test_the_nested_estimate_scores_the_chosen_recipe_on_test_documents_only() -> None:
    contender = _contender(5)
    menu = [r for r in menu_for(contender) if r.name in ("residual", "lac", "expected:balanced:bin")]
    estimate = nested_estimate(contender, alpha=0.1, delta=0.05, outer_seeds=[0, 1], n_splits=2, repeats=1, menu=menu)
    assert estimate.n_evaluations == 4 and len(estimate.chosen) == 4
    assert set(estimate.chosen) <= {r.name for r in menu}
    assert estimate.coverage == pytest.approx(np.mean(estimate.split_coverage))
    # split 0 of seed 1 by hand: the same choice inside its calibration documents, fitted there, tested on the rest
    split = group_splits(contender.data.groups, n_splits=2, seed=1)[0]
    choice = choose_recipe(
        contender, menu, split.calibration, alpha=0.1, delta=0.05, repeats=1, seed=1001, key=[1, 3, 0]
    )
    assert estimate.chosen[2] == choice.recipe
    sets = evaluate_recipes(
        contender,
        [r for r in menu if r.name == choice.recipe],
        split.calibration,
        split.test,
        alpha=0.1,
        delta=0.05,
        key=[1, 1, 0],
    )[choice.recipe]
    assert estimate.split_set_size[2] == pytest.approx(sets.sizes.mean())
    assert estimate.split_coverage[2] == pytest.approx(sets.covered.mean())
    with pytest.raises(ValueError, match="fallback"):
        nested_estimate(contender, alpha=0.1, delta=0.05, outer_seeds=[0], n_splits=1, menu=menu[1:])


def test_fixed_recipes_are_each_recipe_fitted_as_the_nested_estimates_final_fit() -> None:
    contender = _contender(6)
    menu = [r for r in menu_for(contender) if r.name in ("residual", "full:lac:label")]
    found = fixed_recipes(contender, alpha=0.1, delta=0.05, outer_seeds=[2], n_splits=3, menu=menu)
    assert [e.method for e in found] == ["residual", "full:lac:label"] and found[0].n_evaluations == 3
    runs = [
        evaluate_recipes(contender, menu, s.calibration, s.test, alpha=0.1, delta=0.05, key=[2, 1, s.split])
        for s in group_splits(contender.data.groups, n_splits=3, seed=2)
    ]
    for evidence in found:
        assert evidence == evidence_of(
            evidence.method, [r[evidence.method] for r in runs], contender, alpha=0.1, min_group_items=20
        )
    # a one-recipe menu: the nested estimate serves that recipe, with the same figures
    only = nested_estimate(contender, alpha=0.1, delta=0.05, outer_seeds=[2], n_splits=3, repeats=1, menu=menu[:1])
    assert only.set_size == pytest.approx(found[0].mean_set_size)
    assert only.min_label_coverage == pytest.approx(found[0].min_label_coverage)


def test_cal_fraction_sets_the_share_of_calibration_documents_in_every_outer_split() -> None:
    contender = _contender(7)
    menu = [r for r in menu_for(contender) if r.name in ("residual", "mondrian_residual")]
    estimate = nested_estimate(
        contender, alpha=0.1, delta=0.05, outer_seeds=[0], n_splits=1, repeats=1, menu=menu, cal_fraction=0.75
    )
    (split,) = group_splits(contender.data.groups, n_splits=1, seed=0, cal_fraction=0.75)
    assert np.unique(contender.data.groups[split.test]).size == 10  # 40 documents: 30 calibrate, 10 test
    choice = choose_recipe(contender, menu, split.calibration, alpha=0.1, delta=0.05, repeats=1, seed=1, key=[0, 3, 0])
    sets = evaluate_recipes(
        contender,
        [r for r in menu if r.name == choice.recipe],
        split.calibration,
        split.test,
        alpha=0.1,
        delta=0.05,
        key=[0, 1, 0],
    )[choice.recipe]
    assert estimate.chosen == [choice.recipe]
    assert estimate.split_set_size[0] == pytest.approx(sets.sizes.mean())
    bound = fixed_recipes(contender, alpha=0.1, delta=0.05, outer_seeds=[0], n_splits=1, menu=menu, cal_fraction=0.75)
    chosen = next(e for e in bound if e.method == choice.recipe)
    assert chosen.mean_set_size == pytest.approx(sets.sizes.mean())


# --- exact checks added by mutation testing: each pins a rule of the module docstring by hand ---------


def _pac_threshold(scores: np.ndarray, alpha: float, delta: float) -> float:
    """The k-th smallest, k the smallest with P(Binomial(n, 1 - alpha) >= k) <= delta (scipy, not the module's
    order statistics); inf when even k = n fails."""
    from scipy.stats import binom

    n = scores.size
    rank = next((k for k in range(1, n + 1) if binom.sf(k - 1, n, 1 - alpha) <= delta), n + 1)
    return float(np.sort(scores)[rank - 1]) if rank <= n else math.inf


def test_spans_of_hand_made_sets() -> None:
    from research.panels.recipes import _spans

    membership = np.array(
        [[0, 0, 0, 0, 0], [1, 0, 1, 0, 0], [0, 1, 1, 1, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 1], [0, 0, 1, 0, 0]],
        dtype=bool,
    )
    spans = _spans(membership)
    np.testing.assert_array_equal(spans, [0, 3, 3, 5, 1, 1])
    assert spans.dtype.kind == "i"


def test_learned_thresholds_marginal_bin_and_label_by_hand() -> None:
    from research.panels.recipes import _learned_limits

    rng = np.random.default_rng(11)
    # threshold items: bin 1 has 15 items, bins 2 and 3 have 40 each; test items in bins 1..4 (4 never seen)
    bins = np.repeat([1, 2, 3], [15, 40, 40])
    labels = np.tile(np.arange(1, K + 1), 19)  # 95 items, 19 per label
    scores = rng.permutation(np.arange(95 * K, dtype=float)).reshape(95, K) / (95 * K)
    true = scores[np.arange(95), labels - 1]
    test_bins = np.array([1, 2, 3, 4, 2])

    def limits(thresholds: str, delta: float | None, rows: slice = slice(None)) -> np.ndarray:
        recipe = Recipe(name="r", features="f", score="lac", thresholds=thresholds)
        return _learned_limits(
            recipe, scores[rows], labels[rows], bins[rows], test_bins, alpha=0.1, delta=delta, n_labels=K
        )

    # marginal, PAC at delta 0.05 (rank 91 of 95, not the marginal rank 87)
    expected = _pac_threshold(true, 0.1, 0.05)
    assert expected != _marginal_threshold(true, 0.1)
    np.testing.assert_array_equal(limits("marginal", 0.05), np.full((5, 1), expected))
    # marginal on 5 items: no finite rank, the full scale
    np.testing.assert_array_equal(limits("marginal", 0.05, slice(0, 5)), np.full((5, 1), np.inf))
    # bins, PAC at delta 0.05: the smallest n with a finite PAC rank is 29, so bin 1 (15 items) pools with bin 2;
    # bin 3 stands alone; bin 4 has no threshold items: full scale
    low = _pac_threshold(true[bins <= 2], 0.1, 0.05)
    high = _pac_threshold(true[bins == 3], 0.1, 0.05)
    assert math.isfinite(low) and math.isfinite(high) and low != high
    assert _pac_threshold(true[bins == 1], 0.1, 0.05) == math.inf  # alone, bin 1 would be the full scale
    assert _marginal_threshold(true[bins == 3], 0.1) != high
    np.testing.assert_array_equal(limits("bin", 0.05), [[low], [low], [high], [np.inf], [low]])
    # labels, marginal: one threshold per human label, every label (19 items each) finite
    per_label = [_marginal_threshold(true[labels == y], 0.1) for y in range(1, K + 1)]
    assert all(math.isfinite(v) for v in per_label)
    np.testing.assert_array_equal(limits("label", None), np.tile(per_label, (5, 1)))
    # a label missing among the threshold items always joins the set
    rows = labels != 2
    recipe = Recipe(name="r", features="f", score="lac", thresholds="label")
    found = _learned_limits(
        recipe, scores[rows], labels[rows], bins[rows], test_bins, alpha=0.1, delta=None, n_labels=K
    )
    np.testing.assert_array_equal(found[0], [per_label[0], np.inf, *per_label[2:]])


def _discrete_contender(seed: int, n_labels: int = 3) -> Contender:
    """A judge whose one feature is its integer score: scores tie, so thresholds equal some test items' scores."""
    rng = np.random.default_rng(seed)
    n_docs, per_doc = 30, 8
    n = n_docs * per_doc
    labels = rng.integers(1, n_labels + 1, n)
    judged = np.clip(labels + rng.integers(-1, 2, n), 1, n_labels)
    data = KindData(
        kind="score",
        labels=labels,
        judge_scores=judged,
        probabilities=None,
        groups=np.repeat(np.arange(n_docs), per_doc),
        n_labels=n_labels,
    )
    return Contender(name="tied", data=data, features={"score": judged[:, None].astype(float)}, l2={"score": 0.05})


def test_learned_scores_lac_and_balanced_with_ties_by_hand() -> None:
    contender = _discrete_contender(12)
    data, k = contender.data, contender.data.n_labels
    (split,) = group_splits(data.groups, n_splits=1, seed=1)
    key = [3, 0]
    menu = [
        Recipe(name="b", features="score", score="balanced", thresholds="marginal"),
        Recipe(name="l", features="score", score="lac", thresholds="marginal"),
    ]
    found = evaluate_recipes(contender, menu, split.calibration, split.test, alpha=0.2, delta=None, key=key)
    docs = np.unique(data.groups[split.calibration])
    model_docs = np.random.default_rng([*key, 7]).permutation(docs)[: docs.size // 2]
    in_model = np.isin(data.groups[split.calibration], model_docs)
    model_items, threshold_items = split.calibration[in_model], split.calibration[~in_model]
    model = fit_multinomial(contender.features["score"][model_items], data.labels[model_items], k, l2=0.05)
    probs = model.probabilities(contender.features["score"])
    assert probs.shape == (data.labels.size, k)
    counts = np.array([(data.labels[model_items] == y).sum() for y in range(1, k + 1)], dtype=float)
    prior = (counts + 1) / (counts.sum() + k)
    ratio = probs / prior
    balanced = ratio / ratio.sum(axis=1, keepdims=True)
    for name, score in (("b", 1 - balanced), ("l", 1 - probs)):
        true = score[threshold_items, data.labels[threshold_items] - 1]
        limit = _marginal_threshold(true, 0.2)
        test_scores = score[split.test]
        assert (test_scores == limit).any()  # ties at the threshold: they join the set
        membership = test_scores <= limit + 1e-12
        np.testing.assert_array_equal(found[name].sizes, membership.sum(axis=1))
        np.testing.assert_array_equal(
            found[name].covered, membership[np.arange(split.test.size), data.labels[split.test] - 1]
        )
    assert not np.array_equal(found["b"].sizes, found["l"].sizes)


def test_evidence_counts_full_scale_and_empty_sets() -> None:
    contender = _contender(8)
    sizes = np.array([0, 5, 2, 5, 0, 0, 1, 5, 3, 4])
    runs = [RecipeSets(test_index=np.arange(10), covered=sizes > 0, sizes=sizes, spans=sizes)]
    found = evidence_of("x", runs, contender, alpha=0.1, min_group_items=1)
    assert found.full_scale_share == 3 / 10 and found.empty_share == 3 / 10
    assert found.mean_coverage == 0.7 and found.n_evaluations == 1 and found.method == "x"


def test_pick_recipe_margin_and_rounding_edges() -> None:
    from calibration.input_kinds.selection import INTERVAL_MARGIN

    # exactly at smallest + margin + 1e-12: still near, so fewer holes wins
    assert pick_recipe(
        [
            _evidence("residual", 3.0),
            _evidence("a", 2.0, non_interval=0.3),
            _evidence("b", 2.0 + INTERVAL_MARGIN + 1e-12, non_interval=0.1),
        ]
    ) == ("b", True)
    # non-interval shares equal to 9 decimals: the smaller set wins, not the smaller share
    assert pick_recipe(
        [
            _evidence("residual", 3.0),
            _evidence("a", 2.03, non_interval=0.1),
            _evidence("b", 2.0, non_interval=0.1 + 3e-10),
        ]
    ) == ("b", True)
    # set sizes equal to 9 decimals: menu order; unequal at 2 decimals: the smaller
    assert pick_recipe([_evidence("residual", 3.0), _evidence("a", 2.0 + 3e-10), _evidence("b", 2.0)]) == ("a", True)
    assert pick_recipe([_evidence("residual", 3.0), _evidence("a", 2.04), _evidence("b", 2.0)]) == ("b", True)


def test_choose_recipe_by_hand_with_the_documented_keys() -> None:
    contender = _contender(9)
    (split,) = group_splits(contender.data.groups, n_splits=1, seed=2)
    menu = [
        r
        for r in menu_for(contender)
        if r.name in ("residual", "aps_randomized", "full:lac:marginal", "expected:balanced:label")
    ]
    choice = choose_recipe(contender, menu, split.calibration, alpha=0.1, delta=0.05, repeats=2, seed=8, key=[5])
    runs: dict[str, list[RecipeSets]] = {r.name: [] for r in menu}
    for inner in cross_fit_splits(contender.data.groups[split.calibration], repeats=2, seed=8):
        found = evaluate_recipes(
            contender,
            menu,
            split.calibration[inner.calibration],
            split.calibration[inner.test],
            alpha=0.1,
            delta=0.05,
            key=[5, inner.split // 2, inner.split % 2],
        )
        for name, sets in found.items():
            runs[name].append(sets)
    evidence = [evidence_of(r.name, runs[r.name], contender, alpha=0.1, min_group_items=20) for r in menu]
    recipe, qualified = pick_recipe(evidence)
    assert choice.evidence == evidence
    assert choice.recipe == recipe and choice.qualified is qualified
    assert [e.n_evaluations for e in evidence] == [4] * 4


def test_the_defaults_and_keys_of_the_nested_estimate_and_fixed_recipes(monkeypatch: pytest.MonkeyPatch) -> None:
    import research.panels.nested as module
    from calibration.input_kinds.selection import qualifies
    from research.panels.nested import NestedEstimate, RecipeChoice

    contender = _contender(10)
    calls: list[tuple[str, dict]] = []
    real_evaluate, real_evidence = module.evaluate_recipes, module.evidence_of

    def choose_spy(who: Contender, menu: list[Recipe], items: np.ndarray, **kwargs: object) -> RecipeChoice:
        calls.append(("choose", {"menu": [r.name for r in menu], "items": items, **kwargs}))
        return RecipeChoice(recipe="residual", qualified=True, evidence=[])

    def evaluate_spy(
        who: Contender, menu: list[Recipe], fit: np.ndarray, test: np.ndarray, **kwargs: object
    ) -> dict[str, RecipeSets]:
        calls.append(("evaluate", {"menu": [r.name for r in menu], "key": list(kwargs["key"])}))
        return real_evaluate(who, menu, fit, test, **kwargs)

    def evidence_spy(name: str, runs: list[RecipeSets], who: Contender, **kwargs: object) -> MethodEvidence:
        calls.append(("evidence", {"name": name, "min_group_items": kwargs["min_group_items"]}))
        return real_evidence(name, runs, who, **kwargs)

    monkeypatch.setattr(module, "choose_recipe", choose_spy)
    monkeypatch.setattr(module, "evaluate_recipes", evaluate_spy)
    monkeypatch.setattr(module, "evidence_of", evidence_spy)
    names = [r.name for r in menu_for(contender)]
    # the nested estimate, defaults: the whole menu, 2 repeats, groups of 20; seeds 1000 s + 1 + i, keys [s, 3, i]
    estimate = nested_estimate(contender, alpha=0.1, delta=0.05, outer_seeds=[0, 1], n_splits=2)
    chooses = [c for kind, c in calls if kind == "choose"]
    assert [(c["seed"], c["key"], c["repeats"], c["min_group_items"]) for c in chooses] == [
        (1, [0, 3, 0], 2, 20),
        (2, [0, 3, 1], 2, 20),
        (1001, [1, 3, 0], 2, 20),
        (1002, [1, 3, 1], 2, 20),
    ]
    assert all(c["menu"] == names and c["alpha"] == 0.1 and c["delta"] == 0.05 for c in chooses)
    splits = [s for seed in (0, 1) for s in group_splits(contender.data.groups, n_splits=2, seed=seed)]
    for c, s in zip(chooses, splits, strict=True):
        np.testing.assert_array_equal(c["items"], s.calibration)
    assert [c for kind, c in calls if kind == "evaluate"] == [
        {"menu": ["residual"], "key": [s, 1, i]} for s in (0, 1) for i in (0, 1)
    ]
    assert [c for kind, c in calls if kind == "evidence"] == [{"name": "served", "min_group_items": 20}]
    runs = [
        real_evaluate(
            contender, [menu_for(contender)[0]], s.calibration, s.test, alpha=0.1, delta=0.05, key=[seed, 1, s.split]
        )["residual"]
        for seed in (0, 1)
        for s in group_splits(contender.data.groups, n_splits=2, seed=seed)
    ]
    figures = real_evidence("served", runs, contender, alpha=0.1, min_group_items=20)
    assert estimate == NestedEstimate(
        contender="judge",
        alpha=0.1,
        delta=0.05,
        outer_seeds=[0, 1],
        n_splits=2,
        n_evaluations=4,
        coverage=figures.mean_coverage,
        coverage_p5=figures.p5_coverage,
        min_label_coverage=figures.min_label_coverage,
        min_bin_coverage=figures.min_bin_coverage,
        set_size=figures.mean_set_size,
        meets_rule=qualifies(figures),
        chosen=["residual"] * 4,
        split_coverage=[float(r.covered.mean()) for r in runs],
        split_set_size=[float(r.sizes.mean()) for r in runs],
    )
    assert isinstance(estimate.meets_rule, bool) and estimate.coverage_p5 < estimate.coverage
    # explicit repeats and group size are passed through
    calls.clear()
    nested_estimate(
        contender,
        alpha=0.2,
        delta=None,
        outer_seeds=[3],
        n_splits=1,
        repeats=1,
        min_group_items=7,
        menu=[Recipe(name="residual", core="residual")],
    )
    (choose,) = [c for kind, c in calls if kind == "choose"]
    assert (choose["seed"], choose["key"], choose["repeats"], choose["min_group_items"], choose["menu"]) == (
        3001,
        [3, 3, 0],
        1,
        7,
        ["residual"],
    )
    assert [c for kind, c in calls if kind == "evidence"] == [{"name": "served", "min_group_items": 7}]
    # fixed recipes, defaults: the whole menu, keys [s, 1, i], groups of 20
    calls.clear()
    found = fixed_recipes(contender, alpha=0.1, delta=0.05, outer_seeds=[4], n_splits=1)
    assert [e.method for e in found] == names
    assert [c for kind, c in calls if kind == "evaluate"] == [{"menu": names, "key": [4, 1, 0]}]
    assert [c for kind, c in calls if kind == "evidence"] == [{"name": n, "min_group_items": 20} for n in names]


def test_choose_recipe_pools_groups_of_20_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    import research.panels.nested as module

    contender = _contender(13)
    seen: list[tuple[str, int]] = []
    real_evidence = module.evidence_of

    def evidence_spy(name: str, runs: list[RecipeSets], who: Contender, **kwargs: object) -> MethodEvidence:
        seen.append((name, kwargs["min_group_items"]))
        return real_evidence(name, runs, who, **kwargs)

    monkeypatch.setattr(module, "evidence_of", evidence_spy)
    menu = [Recipe(name="residual", core="residual"), Recipe(name="lac", core="lac")]
    items = np.arange(contender.data.labels.size)
    choose_recipe(contender, menu, items, alpha=0.1, delta=0.05, repeats=1, seed=0, key=[0])
    choose_recipe(contender, menu, items, alpha=0.1, delta=0.05, repeats=1, seed=0, key=[0], min_group_items=3)
    assert seen == [("residual", 20), ("lac", 20), ("residual", 3), ("lac", 3)]
