"""A panel against its members, honestly: each side picks its method from the same menu by the selection rule
inside the calibration documents, and is scored on documents never used for the choice or the fit.

Pure (numbers in, typed results out). The panel study (:mod:`offline.studies.panel_nested`) calls it for the
issue's panel and each member in each input kind. Rules, stated once:

* **Contender** (:class:`Contender`): one side of the comparison on the panel's common items: its core inputs
  (:class:`calibration.kind_fit.KindData`: a panel's ``mean`` verdicts, a member's ``score`` or
  ``probabilities`` verdicts), named feature matrices for the learned recipes, and its score bins (the kind's
  integer score: a panel's rounded mean, a member's score) for the bin condition and Mondrian thresholds.
* **Menu** (:func:`menu_for`): every core method of the contender's kind (:func:`calibration.verdicts.
  methods_for_kind`), then, per feature set the contender has, the learned recipes: a multinomial model of the
  human label (:func:`calibration.panel_model.fit_multinomial`, ridge ``l2`` of the feature set) with score
  ``lac`` (1 - P(y | x)) or ``balanced`` (1 - the class-balanced probability,
  :func:`calibration.panel_candidate.balanced_probabilities`), and thresholds ``marginal`` (one), ``bin`` (one per
  pooled score bin, :func:`calibration.panel_candidate.bin_thresholds`) or ``label`` (one per human label; a label
  whose threshold items give no finite threshold always joins the set). A panel and a member get the same menu
  over their own inputs: anything the panel may use, a member may use on its own output.
* **One evaluation** (:func:`evaluate_recipes`) of every recipe on (fit items, test items): a core method is
  fitted on the fit items as :func:`calibration.heldout.evaluate_split` does (generator ``default_rng(key)``); a
  learned recipe halves the fit items' *documents* (``default_rng([*key, 7]).permutation`` of the sorted
  distinct documents, the first floor(G / 2) for the model), fits the model on one half and the thresholds on the
  other (PAC at ``delta``, or marginal when None), so model, threshold and test documents are disjoint.
* **Choice** (:func:`choose_recipe`) inside a set of documents: ``repeats`` 2-fold splits by document, both
  ways (:func:`calibration.kind_evaluation.cross_fit_splits` with ``seed``); evidence per recipe as in
  :mod:`calibration.kind_fit` (mean and 5th-percentile coverage over the folds, lowest coverage within a human
  label and within a score bin with groups of < ``min_group_items`` x folds pooled with a neighbour, mean set
  size, share of sets with a hole); the rule of :mod:`calibration.selection` (:func:`calibration.selection.
  qualifies`; the smallest qualifying mean set size wins, a recipe with fewer non-interval sets preferred within
  0.05; remaining ties in menu order; none qualifies -> ``residual``).
* **Nested estimate** (:func:`nested_estimate`): for each outer seed s and split i (:func:`calibration.heldout.
  group_splits`, ``cal_fraction`` of the documents to calibration, default half), the recipe is chosen inside the
  calibration documents (cross-fitting seed ``1000 * s + 1 + i``, evaluation keys ``[s, 3, i, repeat, fold]``),
  fitted on all of them (key ``[s, 1, i]``) and evaluated on the test documents. Reported over all outer
  evaluations, with the same pooling: mean and 5th-percentile coverage, lowest coverage within a human label and
  within a score bin, mean set size, whether those figures meet the selection rule, and the recipe chosen in each
  split.
* **Fixed recipes, after the fact** (:func:`fixed_recipes`): every recipe of the menu fitted on each outer split's
  calibration documents (the same keys as the nested estimate's final fit) and evaluated on its test documents,
  with the same figures. The smallest recipe meeting the rule here is chosen *on the test documents*: a bound no
  honest choice from the menu can beat on average, not an estimate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import msgspec
import numpy as np

from calibration.conformal import conformal_quantile
from calibration.heldout import GroupSplit, evaluate_split, group_splits, pooled_group_coverage
from calibration.kind_evaluation import cross_fit_splits
from calibration.kind_fit import KindData
from calibration.panel_candidate import balanced_probabilities, bin_thresholds, finite_rank_items, label_prior
from calibration.panel_model import fit_multinomial
from calibration.selection import MethodEvidence, choose_method, qualifies
from calibration.verdicts import methods_for_kind

__all__ = [
    "FALLBACK",
    "LEARNED_SCORES",
    "LEARNED_THRESHOLDS",
    "Contender",
    "NestedEstimate",
    "Recipe",
    "RecipeChoice",
    "RecipeSets",
    "choose_recipe",
    "evaluate_recipes",
    "evidence_of",
    "menu_for",
    "fixed_recipes",
    "nested_estimate",
    "pick_recipe",
]

FALLBACK = "residual"
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


class RecipeChoice(msgspec.Struct, frozen=True, kw_only=True):
    """The chosen recipe, whether it qualified, and every recipe's evidence in menu order."""

    recipe: str
    qualified: bool
    evidence: list[MethodEvidence]


class NestedEstimate(msgspec.Struct, frozen=True, kw_only=True):
    """The recipe as chosen and fitted, on unseen documents (module rules)."""

    contender: str
    alpha: float
    delta: float | None
    outer_seeds: list[int]
    n_splits: int
    n_evaluations: int
    coverage: float
    coverage_p5: float
    min_label_coverage: float
    min_bin_coverage: float
    set_size: float
    meets_rule: bool  # these held-out figures meet the selection rule's four conditions
    chosen: list[str]  # one per outer evaluation, seed-major
    split_coverage: list[float]
    split_set_size: list[float]


def menu_for(contender: Contender) -> list[Recipe]:
    """The module's menu for one contender: its kind's core methods, then the learned recipes per feature set."""
    usable = methods_for_kind(contender.data.kind)
    if contender.data.probabilities is None:
        usable = tuple(m for m in usable if m in methods_for_kind("score"))
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


def evidence_of(
    name: str, runs: Sequence[RecipeSets], contender: Contender, *, alpha: float, min_group_items: int
) -> MethodEvidence:
    """The selection rule's evidence from several evaluations of one recipe (module rules)."""
    covered = np.concatenate([r.covered for r in runs])
    sizes = np.concatenate([r.sizes for r in runs])
    spans = np.concatenate([r.spans for r in runs])
    index = np.concatenate([r.test_index for r in runs])
    coverages = np.array([r.covered.mean() for r in runs])
    minimum = min_group_items * len(runs)
    by_label = pooled_group_coverage(covered, contender.data.labels[index], min_items=minimum)
    by_bin = pooled_group_coverage(covered, contender.bins[index], min_items=minimum)
    return MethodEvidence(
        method=name,
        alpha=float(alpha),
        n_evaluations=len(runs),
        mean_coverage=float(coverages.mean()),
        p5_coverage=float(np.percentile(coverages, 5)),
        min_label_coverage=min(c for _, _, c in by_label),
        min_bin_coverage=min(c for _, _, c in by_bin),
        mean_set_size=float(sizes.mean()),
        non_interval_share=float((spans > sizes).mean()),
        full_scale_share=float((sizes == contender.data.n_labels).mean()),
        empty_share=float((sizes == 0).mean()),
    )


def pick_recipe(evidence: Sequence[MethodEvidence]) -> tuple[str, bool]:
    """The rule of :mod:`calibration.selection` over evidence in menu order (ties go to the earlier recipe; the
    evidence must hold the fallback): (recipe, whether it qualified)."""
    choice = choose_method(evidence, fallback=FALLBACK, order=[e.method for e in evidence])
    return choice.method, choice.qualified


def choose_recipe(
    contender: Contender,
    menu: Sequence[Recipe],
    items: np.ndarray,
    *,
    alpha: float,
    delta: float | None,
    repeats: int,
    seed: int,
    key: Sequence[int],
    min_group_items: int = 20,
) -> RecipeChoice:
    """The selection rule over ``menu`` by cross-fitting inside ``items``' documents (module rules)."""
    runs: dict[str, list[RecipeSets]] = {r.name: [] for r in menu}
    for split in cross_fit_splits(contender.data.groups[items], repeats=repeats, seed=seed):
        found = evaluate_recipes(
            contender,
            menu,
            items[split.calibration],
            items[split.test],
            alpha=alpha,
            delta=delta,
            key=[*key, split.split // 2, split.split % 2],
        )
        for name, sets in found.items():
            runs[name].append(sets)
    evidence = [
        evidence_of(r.name, runs[r.name], contender, alpha=alpha, min_group_items=min_group_items) for r in menu
    ]
    recipe, qualified = pick_recipe(evidence)
    return RecipeChoice(recipe=recipe, qualified=qualified, evidence=evidence)


def nested_estimate(
    contender: Contender,
    *,
    alpha: float,
    delta: float | None,
    outer_seeds: Sequence[int],
    n_splits: int,
    repeats: int = 2,
    menu: Sequence[Recipe] | None = None,
    min_group_items: int = 20,
    cal_fraction: float = 0.5,
) -> NestedEstimate:
    """The recipe as chosen (inside the calibration documents) and fitted, on unseen documents (module rules)."""
    recipes = list(menu) if menu is not None else menu_for(contender)
    if FALLBACK not in {r.name for r in recipes}:
        raise ValueError(f"the menu must hold the fallback {FALLBACK!r}")
    by_name = {r.name: r for r in recipes}
    runs: list[RecipeSets] = []
    chosen: list[str] = []
    for seed in outer_seeds:
        for split in group_splits(contender.data.groups, n_splits=n_splits, seed=seed, cal_fraction=cal_fraction):
            choice = choose_recipe(
                contender,
                recipes,
                split.calibration,
                alpha=alpha,
                delta=delta,
                repeats=repeats,
                seed=1000 * seed + 1 + split.split,
                key=[seed, 3, split.split],
                min_group_items=min_group_items,
            )
            found = evaluate_recipes(
                contender,
                [by_name[choice.recipe]],
                split.calibration,
                split.test,
                alpha=alpha,
                delta=delta,
                key=[seed, 1, split.split],
            )
            runs.append(found[choice.recipe])
            chosen.append(choice.recipe)
    figures = evidence_of("served", runs, contender, alpha=alpha, min_group_items=min_group_items)
    return NestedEstimate(
        contender=contender.name,
        alpha=float(alpha),
        delta=delta,
        outer_seeds=[int(s) for s in outer_seeds],
        n_splits=n_splits,
        n_evaluations=len(runs),
        coverage=figures.mean_coverage,
        coverage_p5=figures.p5_coverage,
        min_label_coverage=figures.min_label_coverage,
        min_bin_coverage=figures.min_bin_coverage,
        set_size=figures.mean_set_size,
        meets_rule=qualifies(figures),
        chosen=chosen,
        split_coverage=[float(r.covered.mean()) for r in runs],
        split_set_size=[float(r.sizes.mean()) for r in runs],
    )


def fixed_recipes(
    contender: Contender,
    *,
    alpha: float,
    delta: float | None,
    outer_seeds: Sequence[int],
    n_splits: int,
    menu: Sequence[Recipe] | None = None,
    min_group_items: int = 20,
    cal_fraction: float = 0.5,
) -> list[MethodEvidence]:
    """Every recipe's held-out figures over the outer splits, each recipe fixed (module rules), in menu order."""
    recipes = list(menu) if menu is not None else menu_for(contender)
    runs: dict[str, list[RecipeSets]] = {r.name: [] for r in recipes}
    for seed in outer_seeds:
        for split in group_splits(contender.data.groups, n_splits=n_splits, seed=seed, cal_fraction=cal_fraction):
            found = evaluate_recipes(
                contender, recipes, split.calibration, split.test, alpha=alpha, delta=delta, key=[seed, 1, split.split]
            )
            for name, sets in found.items():
                runs[name].append(sets)
    return [evidence_of(r.name, runs[r.name], contender, alpha=alpha, min_group_items=min_group_items) for r in recipes]
