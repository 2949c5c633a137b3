"""A panel against its members, honestly: each side picks its method from the same menu by the selection rule
inside the calibration documents, and is scored on documents never used for the choice or the fit.

Pure (numbers in, typed results out). The panel study (:mod:`research.panels.nested_study`) calls it for the
four-judge panel and each member in each input kind. Rules, stated once:

* **Contender, menu and one evaluation**: :mod:`research.panels.recipes`.
* **Choice** (:func:`choose_recipe`) inside a set of documents: ``repeats`` 2-fold splits by document, both
  ways (:func:`calibration.input_kinds.evaluation.cross_fit_splits` with ``seed``); evidence per recipe as in
  :mod:`calibration.input_kinds.fit` (mean and 5th-percentile coverage over the folds, lowest coverage within a human
  label and within a score bin with groups of < ``min_group_items`` x folds pooled with a neighbour, mean set
  size, share of sets with a hole); the rule of :mod:`calibration.input_kinds.selection`
  (:func:`calibration.input_kinds.selection.
  qualifies`; the smallest qualifying mean set size wins, a recipe with fewer non-interval sets preferred within
  0.05; remaining ties in menu order; none qualifies -> ``residual``).
* **Nested estimate** (:func:`nested_estimate`): for each outer seed s and split i
  (:func:`calibration.input_kinds.heldout.
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

from collections.abc import Sequence

import msgspec
import numpy as np

from calibration.input_kinds.evaluation import cross_fit_splits
from calibration.input_kinds.heldout import group_splits, pooled_group_coverage
from calibration.input_kinds.selection import MethodEvidence, choose_method, qualifies
from research.panels.recipes import Contender, Recipe, RecipeSets, evaluate_recipes, menu_for

__all__ = [
    "FALLBACK",
    "NestedEstimate",
    "RecipeChoice",
    "choose_recipe",
    "evidence_of",
    "fixed_recipes",
    "nested_estimate",
    "pick_recipe",
]

FALLBACK = "residual"


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
    """The rule of :mod:`calibration.input_kinds.selection` over evidence in menu order (ties go to the earlier
    recipe; the
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
