"""The document-level PAC threshold: the walk against brute force, its exact level on tiny clustered models, its
use in fits and held-out splits, and a document-resampling simulation of every method on clustered data."""

from __future__ import annotations

import itertools
import math

import msgspec
import numpy as np
import pytest

from calibration.conformal import (
    METHODS,
    calibration_scores,
    conformal_quantile,
    fit_conformal,
    fit_from_scores,
    predict_sets,
)
from calibration.conformal.fit import fits_from_scores
from calibration.conformal.group_pac import (
    ORDER_SEED,
    group_pac_threshold,
    group_pac_threshold_reference,
    group_pac_thresholds,
    keyed_group_pac_thresholds,
)
from calibration.decisions.risk_control import betting_test, min_groups_to_certify
from calibration.input_kinds.heldout import evaluate_split, group_splits
from tests.calibration.reference.resampling import document_resampling, mc_error


def _brute_force(scores: list[float], groups: list[int], alpha: float, delta: float) -> float | None:
    """The rule written from its statement with plain loops: candidates from the largest score down, per-document
    misses counted one item at a time, each tested with risk_control.betting_test; stop at the first acceptance."""
    documents = sorted(set(groups))
    order = np.random.default_rng(ORDER_SEED).permutation(len(documents))
    sizes = [sum(1 for g in groups if g == d) for d in documents]
    chosen = None
    for candidate in sorted(set(scores), reverse=True):
        misses = [
            sum(1 for s, g in zip(scores, groups, strict=True) if g == d and s > candidate + 1e-12) for d in documents
        ]
        if not betting_test(
            np.array(misses), np.array(sizes), alpha=alpha, delta=delta, max_group_size=max(sizes), order=order
        ).rejected:
            break
        chosen = candidate
    return chosen


def _clustered_scores(rng: np.random.Generator, n_documents: int, *, rounding: int) -> tuple[np.ndarray, np.ndarray]:
    sizes = rng.integers(1, 7, size=n_documents)
    groups = np.repeat(rng.permutation(n_documents) * 3 + 5, sizes)  # ids neither 0..G-1 nor in first-seen order
    scores = np.round(rng.normal(size=n_documents).repeat(sizes) + rng.normal(size=groups.size), rounding)
    return scores, groups


@pytest.mark.parametrize("case", range(12))
def test_the_vectorised_walk_is_brute_force_and_the_reference(case: int):
    rng = np.random.default_rng([7, case])
    scores, groups = _clustered_scores(rng, int(rng.integers(3, 45)), rounding=int(rng.integers(0, 3)))
    alpha = float(rng.choice([0.1, 0.2, 0.3]))
    delta = float(rng.choice([0.05, 0.2, 0.5]))
    expected = _brute_force(scores.tolist(), groups.tolist(), alpha, delta)
    assert group_pac_threshold(scores, groups, alpha, delta) == expected
    assert group_pac_threshold_reference(scores, groups, alpha, delta) == expected
    assert group_pac_thresholds(scores, groups, [(alpha, delta), (0.15, 0.1)]) == [
        expected,
        _brute_force(scores.tolist(), groups.tolist(), 0.15, 0.1),
    ]


def test_more_than_one_chunk_of_candidates_is_walked():
    # 400 distinct scores, 80 documents, alpha = 0.3: the walk passes well over 32 candidates
    rng = np.random.default_rng(3)
    groups = np.repeat(np.arange(80), 5)
    scores = rng.normal(size=80).repeat(5) * 0.3 + rng.normal(size=400)
    threshold = group_pac_threshold(scores, groups, 0.3, 0.1)
    assert threshold is not None and np.sum(scores > threshold) > 40
    assert threshold == group_pac_threshold_reference(scores, groups, 0.3, 0.1)


def test_levels_walked_together_are_each_level_walked_alone():
    # walks of different lengths (alpha 0.02 stops at once, 0.4 passes several chunks) stepped in one array
    rng = np.random.default_rng(5)
    groups = np.repeat(np.arange(90), 5)
    scores = rng.normal(size=90).repeat(5) * 0.3 + rng.normal(size=450)
    levels = [(0.4, 0.1), (0.02, 0.05), (0.2, 0.2), (0.1, 0.05), (0.3, 0.5)]
    together = group_pac_thresholds(scores, groups, levels)
    assert together == [group_pac_threshold(scores, groups, alpha, delta) for alpha, delta in levels]
    assert together[0] is not None and np.sum(scores > together[0]) > 64  # the longest walk took 3+ chunks


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("delta", [None, 0.1])
def test_fits_at_several_alphas_are_the_fits_at_each(method: str, delta: float | None):
    groups, labels, scores, probs = _data()
    alphas = [0.05, 0.1, 0.2, 0.3]
    for documents in (groups, None):
        prepared = calibration_scores(
            method, labels, judge_scores=scores, probabilities=probs, rng=np.random.default_rng(1), groups=documents
        )
        assert fits_from_scores(prepared, alphas, delta) == [fit_from_scores(prepared, a, delta) for a in alphas]


def _exact_failure(p_one: float, rho: float, alpha: float, delta: float, n_documents: int) -> tuple[float, float]:
    """Exact probability that the group rule and the item rule give a threshold with miscoverage > alpha, over
    every calibration draw of n_documents 2-item documents: a document's two scores in {0, 1} are one shared
    Bernoulli(p_one) draw with probability rho, two independent ones otherwise (so m(0) = p_one, m(1) = 0)."""
    law = {
        0: (1 - rho) * (1 - p_one) ** 2 + rho * (1 - p_one),
        1: (1 - rho) * 2 * p_one * (1 - p_one),
        2: (1 - rho) * p_one**2 + rho * p_one,
    }  # number of 1s in a document
    assert math.isclose(sum(law.values()), 1.0)
    groups = np.repeat(np.arange(n_documents), 2)
    group_fail = item_fail = 0.0
    for draw in itertools.product(range(3), repeat=n_documents):
        p = math.prod(law[k] for k in draw)
        scores = np.array([1.0 if j < k else 0.0 for k in draw for j in range(2)])
        group_fail += p * (group_pac_threshold(scores, groups, alpha, delta) == 0.0)  # 0.0 misses p_one > alpha
        item_fail += p * (conformal_quantile(scores, alpha, delta) == 0.0)
    return group_fail, item_fail


def test_exact_level_on_a_tiny_clustered_model_where_the_item_rule_fails():
    # every one of the 3^6 calibration draws enumerated: the group rule's failure probability is <= delta, the
    # item rule's (12 items counted as independent) exceeds it
    group_fail, item_fail = _exact_failure(p_one=0.32, rho=0.9, alpha=0.3, delta=0.3, n_documents=6)
    assert group_fail <= 0.3
    assert item_fail > 0.3
    assert group_fail == pytest.approx(0.12895023181180215, rel=1e-9)  # pinned: the rule does not drift


def test_too_few_documents_never_certify_and_the_threshold_is_a_calibration_score():
    needed = min_groups_to_certify(alpha=0.1, delta=0.05)
    scores = np.linspace(0, 1, 4 * (needed - 1))
    groups = np.repeat(np.arange(needed - 1), 4)
    assert group_pac_threshold(scores, groups, 0.1, 0.05) is None
    rng = np.random.default_rng(0)
    scores = rng.normal(size=400)
    threshold = group_pac_threshold(scores, np.repeat(np.arange(100), 4), 0.1, 0.05)
    assert threshold in set(scores.tolist())


def test_keyed_thresholds_use_only_the_documents_with_that_key():
    rng = np.random.default_rng(5)
    groups = np.repeat(np.arange(120), 6)
    keys = rng.integers(1, 4, size=groups.size)
    scores = rng.normal(size=groups.size)
    thresholds, sizes = keyed_group_pac_thresholds(scores, keys, groups, 4, 0.2, 0.1)
    assert sizes == {1: int((keys == 1).sum()), 2: int((keys == 2).sum()), 3: int((keys == 3).sum()), 4: 0}
    assert thresholds[4] is None
    for key in (1, 2, 3):
        members = keys == key
        assert thresholds[key] == _brute_force(scores[members].tolist(), groups[members].tolist(), 0.2, 0.1)


def _data(n_documents: int = 70, per_document: int = 6, seed: int = 0):
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(n_documents), per_document)
    quality = rng.normal(0, 1, n_documents)[groups] + rng.normal(0, 0.6, groups.size)
    labels = np.clip(np.round(3 + quality), 1, 5).astype(np.int64)
    raw = rng.dirichlet(np.ones(5), size=groups.size) + np.eye(5)[labels - 1] * 0.8
    probs = raw / raw.sum(axis=1, keepdims=True)
    return groups, labels, np.argmax(probs, axis=1) + 1, probs


@pytest.mark.parametrize("method", METHODS)
def test_fit_with_groups_records_the_unit_and_uses_the_group_rule(method: str):
    groups, labels, scores, probs = _data()
    fitted = fit_conformal(method, 0.2, labels, judge_scores=scores, probabilities=probs, delta=0.1, groups=groups)
    assert fitted.pac_unit == "group"
    item = fit_conformal(method, 0.2, labels, judge_scores=scores, probabilities=probs, delta=0.1)
    assert item.pac_unit is msgspec.UNSET
    assert b"pac_unit" not in msgspec.json.encode(item)  # an item-level predictor encodes as before the field
    assert msgspec.json.decode(msgspec.json.encode(fitted), type=type(fitted)) == fitted
    expected = fit_conformal(method, 0.2, labels, judge_scores=scores, probabilities=probs, groups=groups)
    assert expected.pac_unit == "group" and expected.delta is None  # in expectation, documents as the unit
    assert expected.threshold is not None and (fitted.threshold is None or expected.threshold <= fitted.threshold)


def test_fit_with_groups_thresholds_are_the_group_rule_on_the_true_labels_scores():
    groups, labels, scores, _ = _data()
    fitted = fit_conformal("residual", 0.2, labels, judge_scores=scores, delta=0.1, groups=groups)
    assert fitted.threshold == group_pac_threshold(np.abs(scores - labels).astype(float), groups, 0.2, 0.1)
    mondrian = fit_conformal("mondrian_residual", 0.2, labels, judge_scores=scores, delta=0.1, groups=groups)
    expected, _ = keyed_group_pac_thresholds(np.abs(scores - labels).astype(float), scores, groups, 5, 0.2, 0.1)
    assert mondrian.group_thresholds == expected


def test_learned_methods_with_groups_fit_their_model_on_whole_documents():
    groups, labels, scores, probs = _data()
    from calibration.conformal import calibration_scores

    prepared = calibration_scores(
        "learned_lac", labels, judge_scores=scores, probabilities=probs, groups=groups, rng=np.random.default_rng(1)
    )
    assert prepared.documents is not None
    threshold_documents = set(np.unique(prepared.documents).tolist())
    assert prepared.n_model_fit == 6 * (70 - len(threshold_documents))  # whole documents went to the model
    assert len(threshold_documents) == 35


@pytest.mark.parametrize("method", METHODS)
def test_held_out_engine_with_groups_equals_fit_and_predict(method: str):
    groups, labels, scores, probs = _data(n_documents=90)
    split = group_splits(groups, n_splits=1, seed=2)[0]
    levels = [(0.1, 0.05), (0.2, 0.1), (0.3, 0.2), (0.2, None)]
    engine = evaluate_split(
        method,
        labels,
        split,
        levels=levels,
        judge_scores=scores,
        probabilities=probs,
        n_labels=5,
        rng=np.random.default_rng(11),
        groups=groups,
    )
    for position, (alpha, delta) in enumerate(levels):
        rng = np.random.default_rng(11)
        cal, test = split.calibration, split.test
        fitted = fit_conformal(
            method,
            alpha,
            labels[cal],
            judge_scores=scores[cal],
            probabilities=probs[cal],
            rng=rng,
            delta=delta,
            groups=groups[cal],
        )
        sets = predict_sets(fitted, judge_scores=scores[test], probabilities=probs[test], rng=rng)
        assert np.array_equal(engine.set_sizes[position], sets.sum(axis=1)), (alpha, delta)
        assert np.array_equal(engine.covered[position], sets[np.arange(test.size), labels[test] - 1])


# ---- Document resampling on clustered synthetic data: a document-level judge bias makes a document's misses move
# together (the SummEval situation, stronger), so items are far from independent.


def clustered_population(n_documents: int, per_document: int, seed: int):
    """Labels 1..5, judge probabilities, argmax scores and document ids with a strong document effect."""
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(n_documents), per_document)
    quality = rng.normal(0, 1.0, n_documents)[groups] + rng.normal(0, 0.6, groups.size)
    labels = np.clip(np.round(3 + quality), 1, 5).astype(np.int64)
    bias = rng.normal(0, 0.9, n_documents)[groups]  # the judge's error shared by a document's items
    centre = 3 + quality + bias + rng.normal(0, 0.35, groups.size)
    logits = -((np.arange(1, 6)[None, :] - centre[:, None]) ** 2) / (2 * 0.7**2)
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    return labels, np.argmax(probs, axis=1) + 1, probs, groups


ALPHA, DELTA, DRAWS, DOCUMENTS = 0.1, 0.05, 300, 100
CONTINUOUS = ("residual_expected", "lac", "aps", "ordinal")


@pytest.fixture(scope="module")
def population():
    return clustered_population(400, 8, seed=0)


@pytest.mark.parametrize("method", METHODS)
def test_resampled_documents_group_rule_fails_at_most_delta_plus_three_mc_errors(population, method: str):
    labels, scores, probs, groups = population
    result = document_resampling(
        method,
        labels,
        judge_scores=scores,
        probabilities=probs,
        groups=groups,
        alpha=ALPHA,
        delta=DELTA,
        rule="group",
        n_draws=DRAWS,
        n_documents=DOCUMENTS,
        seed=1,
    )
    assert result.worst_failure_rate <= DELTA + 3 * mc_error(DELTA, DRAWS), result
    assert result.mean_coverage >= 1 - ALPHA


@pytest.mark.parametrize("method", CONTINUOUS)
def test_resampled_documents_item_rule_fails_more_than_delta_plus_three_mc_errors(population, method: str):
    # the regression: the shipped rule counts 800 items as independent on 100 documents
    labels, scores, probs, groups = population
    result = document_resampling(
        method,
        labels,
        judge_scores=scores,
        probabilities=probs,
        groups=groups,
        alpha=ALPHA,
        delta=DELTA,
        rule="item",
        n_draws=DRAWS,
        n_documents=DOCUMENTS,
        seed=1,
    )
    assert result.failure_rate > DELTA + 3 * mc_error(DELTA, DRAWS), result


def test_a_learned_method_on_one_document_splits_by_item_and_certifies_nothing():
    labels = np.array([1, 2, 3, 4, 5, 3, 2, 4])
    fitted = fit_conformal("learned_lac", 0.2, labels, judge_scores=labels, delta=0.1, groups=["d"] * 8)
    assert fitted.n_model_fit == 4 and fitted.n_cal == 4 and fitted.threshold is None
