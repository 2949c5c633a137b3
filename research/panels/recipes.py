"""A panel's or a member's recipes: the contender, its menu and one evaluation of every recipe on (fit, test) items.

Pure (numbers in, typed results out). The honest comparison that chooses among these recipes by document is
:mod:`research.panels.nested`. Rules, stated once:

* **Contender** (:class:`Contender`): one side of the comparison on the panel's common items: its core inputs
  (:class:`calibration.input_kinds.fit.KindData`: a panel's ``mean`` verdicts, a member's ``score`` or
  ``probabilities`` verdicts), named feature matrices for the learned recipes, and its score bins (the kind's
  integer score: a panel's rounded mean, a member's score) for the bin condition and Mondrian thresholds.
* **Menu** (:func:`menu_for`): every core method of the contender's kind (:func:`calibration.input_kinds.verdicts.
  methods_for_input_kind`), then, per feature set the contender has, the learned recipes: a multinomial model of the
  human label (:func:`research.panels.model.fit_multinomial`, ridge ``l2`` of the feature set) with score
  ``lac`` (1 - P(y | x)) or ``balanced`` (1 - the class-balanced probability,
  :func:`research.panels.candidate.balanced_probabilities`), and thresholds ``marginal`` (one), ``bin`` (one per
  pooled score bin, :func:`research.panels.candidate.bin_thresholds`) or ``label`` (one per human label; a label
  whose threshold items give no finite threshold always joins the set). A panel and a member get the same menu
  over their own inputs: anything the panel may use, a member may use on its own output.
* **One evaluation** (:func:`evaluate_recipes`) of every recipe on (fit items, test items): a core method is
  fitted on the fit items as :func:`calibration.input_kinds.heldout.evaluate_split` does (generator
  ``default_rng(key)``); a
  learned recipe halves the fit items' *documents* (``default_rng([*key, 7]).permutation`` of the sorted
  distinct documents, the first floor(G / 2) for the model), fits the model on one half and the thresholds on the
  other (PAC at ``delta``, or marginal when None), so model, threshold and test documents are disjoint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from calibration.conformal import conformal_quantile
from calibration.input_kinds.fit import KindData
from calibration.input_kinds.heldout import GroupSplit, evaluate_split
from calibration.input_kinds.verdicts import methods_for_input_kind
from research.panels.candidate import balanced_probabilities, bin_thresholds, finite_rank_items, label_prior
from research.panels.model import fit_multinomial

__all__ = [
    "LEARNED_SCORES",
    "LEARNED_THRESHOLDS",
    "Contender",
    "Recipe",
    "RecipeSets",
    "evaluate_recipes",
    "menu_for",
]

LEARNED_SCORES: tuple[str, ...] = ("lac", "balanced")
LEARNED_THRESHOLDS: tuple[str, ...] = ("marginal", "bin", "label")


@dataclass(frozen=True)
class Contender:
    """One side of the comparison (module rules). ``features``: name -> (n, d) matrix; ``l2``: name -> ridge."""

    name: str
    data: KindData
    features: Mapping[str, np.ndarray]
    l2: Mapping[str, float]

    @property
    def bins(self) -> np.ndarray:
        return self.data.judge_scores


@dataclass(frozen=True)
class Recipe:
    """A core method (``core``) or a learned recipe (``features``, ``score``, ``thresholds``)."""

    name: str
    core: str | None = None
    features: str | None = None
    score: str | None = None
    thresholds: str | None = None


@dataclass(frozen=True)
class RecipeSets:
    """One recipe's sets on one evaluation's test items."""

    test_index: np.ndarray
    covered: np.ndarray
    sizes: np.ndarray
    spans: np.ndarray


def menu_for(contender: Contender) -> list[Recipe]:
    """The module's menu for one contender: its kind's core methods, then the learned recipes per feature set."""
    usable = methods_for_input_kind(contender.data.kind)
    if contender.data.probabilities is None:
        usable = tuple(m for m in usable if m in methods_for_input_kind("score"))
    menu = [Recipe(name=m, core=m) for m in usable]
    for features in contender.features:
        for score in LEARNED_SCORES:
            for thresholds in LEARNED_THRESHOLDS:
                menu.append(
                    Recipe(
                        name=f"{features}:{score}:{thresholds}", features=features, score=score, thresholds=thresholds
                    )
                )
    return menu


def _spans(membership: np.ndarray) -> np.ndarray:
    k = membership.shape[1]
    sizes = membership.sum(axis=1)
    first = np.argmax(membership, axis=1)
    last = k - 1 - np.argmax(membership[:, ::-1], axis=1)
    return np.where(sizes > 0, last - first + 1, 0)


def _learned_limits(
    recipe: Recipe,
    scores: np.ndarray,
    labels: np.ndarray,
    bins: np.ndarray,
    test_bins: np.ndarray,
    *,
    alpha: float,
    delta: float | None,
    n_labels: int,
) -> np.ndarray:
    """(n_test, K) or (n_test, 1) thresholds from the threshold items' (n, K) score matrix (module rules)."""
    true = scores[np.arange(labels.size), labels - 1]
    if recipe.thresholds == "marginal":
        limit = conformal_quantile(true, alpha, delta)
        return np.full((test_bins.size, 1), np.inf if limit is None else limit)
    if recipe.thresholds == "bin":
        table = bin_thresholds(true, bins, alpha=alpha, delta=delta, min_items=finite_rank_items(alpha, delta))
        return np.array([[np.inf if table.get(int(b)) is None else table[int(b)]] for b in test_bins])
    per_label = np.full(n_labels, np.inf)
    for y in range(1, n_labels + 1):
        mine = true[labels == y]
        limit = conformal_quantile(mine, alpha, delta) if mine.size else None
        per_label[y - 1] = np.inf if limit is None else limit
    return np.broadcast_to(per_label, (test_bins.size, n_labels))


def evaluate_recipes(
    contender: Contender,
    menu: Sequence[Recipe],
    fit: np.ndarray,
    test: np.ndarray,
    *,
    alpha: float,
    delta: float | None,
    key: Sequence[int],
) -> dict[str, RecipeSets]:
    """Every recipe of ``menu`` fitted on ``fit`` items and applied to ``test`` items (module rules)."""
    data = contender.data
    labels, k = data.labels, data.n_labels
    result: dict[str, RecipeSets] = {}
    docs = np.unique(data.groups[fit])
    model_docs = np.random.default_rng([*key, 7]).permutation(docs)[: docs.size // 2]
    in_model = np.isin(data.groups[fit], model_docs)
    model_items, threshold_items = fit[in_model], fit[~in_model]
    matrices: dict[tuple[str, str], np.ndarray] = {}
    for recipe in menu:
        if recipe.core is not None:
            split = GroupSplit(split=0, calibration=fit, test=test)
            sets = evaluate_split(
                recipe.core,
                labels,
                split,
                levels=[(alpha, delta)],
                judge_scores=data.judge_scores,
                probabilities=data.probabilities,
                n_labels=k,
                rng=np.random.default_rng(list(key)),
            )
            result[recipe.name] = RecipeSets(
                test_index=test, covered=sets.covered[0], sizes=sets.set_sizes[0], spans=sets.spans[0]
            )
            continue
        assert recipe.features is not None and recipe.score is not None
        cache_key = (recipe.features, recipe.score)
        if cache_key not in matrices:
            if (recipe.features, "lac") not in matrices:
                features = contender.features[recipe.features]
                model = fit_multinomial(features[model_items], labels[model_items], k, l2=contender.l2[recipe.features])
                matrices[(recipe.features, "probs")] = model.probabilities(features)
                matrices[(recipe.features, "prior")] = label_prior(labels[model_items], k)
                matrices[(recipe.features, "lac")] = 1.0 - matrices[(recipe.features, "probs")]
            if recipe.score == "balanced":
                matrices[cache_key] = 1.0 - balanced_probabilities(
                    matrices[(recipe.features, "probs")], matrices[(recipe.features, "prior")]
                )
        scores = matrices[cache_key]
        limits = _learned_limits(
            recipe,
            scores[threshold_items],
            labels[threshold_items],
            contender.bins[threshold_items],
            contender.bins[test],
            alpha=alpha,
            delta=delta,
            n_labels=k,
        )
        membership = scores[test] <= limits + 1e-12
        result[recipe.name] = RecipeSets(
            test_index=test,
            covered=membership[np.arange(test.size), labels[test] - 1],
            sizes=membership.sum(axis=1),
            spans=_spans(membership),
        )
    return result
