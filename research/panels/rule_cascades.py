"""Two-judge cascades whose stage methods are chosen by the validity rule (``python -m research.panels rule-cascades``).

The cascade study (:mod:`research.panels.cascades`) fixes each stage's method (``residual`` on judge 1's score,
``residual_expected`` on the pair's mean); its coherence sets miss the lowest human label. Here each stage's
method is chosen as a served default is: the selection rule over the core methods of the stage's input kind
(:func:`research.panels.nested.choose_recipe`, core menu only), by cross-fitting inside the documents of the
stage's own fit items. Rules, stated once:

* **Items, splits.** The pair's common items per criterion (:func:`offline.studies.panels.cells.panel_cells`);
  ``n_splits`` outer splits by document (seed ``seed``), half the documents calibrate.
* **Routing** as in :mod:`research.panels.cascades`: judge 1's ``residual`` thresholds fitted on half of the
  calibration documents (``default_rng([seed, 7, split])``); an item goes on when its stage-1 set width > ``w``.
* **Stages.** Stage 1: judge 1's richest input kind (probabilities where recorded, else its score) over the fit
  half's items that stop; stage 2: the pair's mean of expected scores (``mean`` kind) over the items routed on.
  Each stage's method is chosen by the rule inside its own items (``repeats`` x 2 folds, cross-fitting seed
  ``1000 * seed + 1 + split``), then fitted on them (PAC at ``delta``). A stage without items answers the full
  scale.
* **Reference.** The pair always asked, its method chosen by the same rule inside all calibration documents.
* **Figures** on the test documents over the splits: calls per item (1 + share routed on), coverage, 5th
  percentile, lowest coverage within a human label and within a score bin (judge 1's score for a cascade, the
  pair's rounded mean for the pair; pooled as the rule pools), set size, and whether those meet the selection
  rule's four conditions.
* **Goal** per (pair, criterion): among widths whose cascade meets the rule with < 1.6 calls, the smallest sets;
  met when they are <= the reference's + 0.05 and the reference meets the rule. The width is picked on the test
  documents (as in :mod:`research.panels.cascades`), so a met goal is optimistic by that one choice.

Writes ``conformal/panel_cascades.json`` and ``conformal/panel_cascades.md``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import msgspec
import numpy as np

from calibration.errors import EmptyCalibrationError
from calibration.input_kinds.fit import KindData
from calibration.input_kinds.heldout import group_splits
from calibration.input_kinds.mean_panel import panel_kind_data
from calibration.input_kinds.selection import qualifies
from offline.build.cell_data import JudgeCriterionData
from offline.build.panels import EXPORTED_PANEL, panel_cells
from offline.jsonfile import write_json
from offline.studies.conformal.validity import DEFAULT_DELTA, HEADLINE_ALPHA
from offline.studies.panels.cells import member_kind_data
from research.panels.cascades import MAX_CALLS, SIZE_MARGIN, routing_split
from research.panels.nested import choose_recipe, evidence_of
from research.panels.recipes import Contender, RecipeSets, evaluate_recipes, menu_for

__all__ = [
    "JSON_FILE",
    "MARKDOWN_FILE",
    "RuleCascadePoint",
    "RuleCascadeStudy",
    "cascade_points",
    "run_rule_cascades",
    "write_rule_cascades",
]

JSON_FILE = "conformal/panel_cascades.json"
MARKDOWN_FILE = "conformal/panel_cascades.md"
WIDTHS = (1, 2, 3, 4)


class RuleCascadePoint(msgspec.Struct, frozen=True, kw_only=True):
    """One (first, second, criterion, width) cascade, or the ``pair`` reference (width None), on unseen documents."""

    first: str
    second: str
    criterion: str
    kind: str  # "cascade" | "pair"
    width: int | None
    calls: float
    coverage: float
    coverage_p5: float
    min_label_coverage: float
    min_bin_coverage: float
    set_size: float
    meets_rule: bool
    stage_methods: list[str]  # most chosen method per stage ("stage1/stage2"), or the pair's


class RuleCascadeStudy(msgspec.Struct, frozen=True, kw_only=True):
    alpha: float
    delta: float | None
    n_splits: int
    seed: int
    repeats: int
    points: list[RuleCascadePoint]
    goal: list[dict[str, object]]


def _core(contender: Contender) -> list:
    return [r for r in menu_for(contender) if r.core is not None]


def _stage(
    contender: Contender,
    items: np.ndarray,
    test: np.ndarray,
    *,
    alpha: float,
    delta: float | None,
    repeats: int,
    seed: int,
    key: list[int],
) -> tuple[np.ndarray, np.ndarray, str]:
    """The test items' (covered, set size) under the method the rule chooses inside ``items``, fitted on them; the
    full scale when the items span fewer than 4 documents or a fold cannot be fitted."""
    k = contender.data.n_labels
    full = (np.ones(test.size, dtype=bool), np.full(test.size, k), "full scale")
    if np.unique(contender.data.groups[items]).size < 4:
        return full
    menu = _core(contender)
    try:
        choice = choose_recipe(contender, menu, items, alpha=alpha, delta=delta, repeats=repeats, seed=seed, key=key)
        chosen = next(r for r in menu if r.name == choice.recipe)
        sets = evaluate_recipes(contender, [chosen], items, test, alpha=alpha, delta=delta, key=[*key, 9])
    except EmptyCalibrationError:
        return full
    return sets[chosen.name].covered, sets[chosen.name].sizes, chosen.name


def cascade_points(
    datasets: Sequence[JudgeCriterionData],
    first: str,
    second: str,
    criterion: str,
    *,
    alpha: float,
    delta: float | None,
    n_splits: int,
    seed: int,
    repeats: int,
) -> list[RuleCascadePoint]:
    """Every width's cascade and the pair reference for one ordered pair (module rules); [] without items."""
    cell = panel_cells(datasets, [first, second], criterion)
    if cell is None or np.unique(cell.groups).size < 8:
        return []
    kinds = dict(member_kind_data(datasets, cell))
    stage1_data: KindData = max(kinds[first], key=lambda k: k.probabilities is not None)
    score1: KindData = next(k for k in kinds[first] if k.kind == "score")
    stage1 = Contender(name=first, data=stage1_data, features={}, l2={})
    pair = Contender(
        name="pair", data=panel_kind_data(cell.expected, cell.labels, cell.groups, cell.n_labels), features={}, l2={}
    )
    router = Contender(name="router", data=score1, features={}, l2={})
    residual = [{r.name: r for r in _core(router)}["residual"]]
    runs: dict[int | None, list[tuple[RecipeSets, float]]] = {}
    methods: dict[int | None, list[str]] = {}
    for split in group_splits(cell.groups, n_splits=n_splits, seed=seed):
        cal, test = split.calibration, split.test
        route_idx, fit_idx = routing_split(cal, cell.groups, seed=seed, split=split.split)
        widths = evaluate_recipes(
            router,
            residual,
            route_idx,
            np.concatenate([fit_idx, test]),
            alpha=alpha,
            delta=delta,
            key=[seed, 5, split.split],
        )["residual"].sizes
        width_fit, width_test = widths[: fit_idx.size], widths[fit_idx.size :]
        cross = 1000 * seed + 1 + split.split
        covered, sizes, pair_method = _stage(
            pair, cal, test, alpha=alpha, delta=delta, repeats=repeats, seed=cross, key=[seed, 3, split.split]
        )
        runs.setdefault(None, []).append((RecipeSets(test_index=test, covered=covered, sizes=sizes, spans=sizes), 2.0))
        methods.setdefault(None, []).append(pair_method)
        for w in WIDTHS:
            go_fit, go_test = width_fit > w, width_test > w
            covered1, sizes1, m1 = _stage(
                stage1,
                fit_idx[~go_fit],
                test,
                alpha=alpha,
                delta=delta,
                repeats=repeats,
                seed=cross,
                key=[seed, 4, split.split, w, 1],
            )
            covered2, sizes2, m2 = _stage(
                pair,
                fit_idx[go_fit],
                test,
                alpha=alpha,
                delta=delta,
                repeats=repeats,
                seed=cross,
                key=[seed, 4, split.split, w, 2],
            )
            covered, sizes = np.where(go_test, covered2, covered1), np.where(go_test, sizes2, sizes1)
            runs.setdefault(w, []).append(
                (RecipeSets(test_index=test, covered=covered, sizes=sizes, spans=sizes), 1.0 + float(go_test.mean()))
            )
            methods.setdefault(w, []).append(f"{m1}/{m2}")
    bins = Contender(name="bins", data=score1, features={}, l2={})  # a cascade's bins: judge 1's score
    points = []
    for width, found in runs.items():
        evidence = evidence_of(
            "cascade", [r for r, _ in found], pair if width is None else bins, alpha=alpha, min_group_items=20
        )
        top = max(sorted(set(methods[width])), key=methods[width].count)
        points.append(
            RuleCascadePoint(
                first=first,
                second=second,
                criterion=criterion,
                kind="pair" if width is None else "cascade",
                width=width,
                calls=float(np.mean([c for _, c in found])),
                coverage=evidence.mean_coverage,
                coverage_p5=evidence.p5_coverage,
                min_label_coverage=evidence.min_label_coverage,
                min_bin_coverage=evidence.min_bin_coverage,
                set_size=evidence.mean_set_size,
                meets_rule=qualifies(evidence),
                stage_methods=[top],
            )
        )
    return points


def _goal(points: Sequence[RuleCascadePoint]) -> dict[str, object] | None:
    pair = next((p for p in points if p.kind == "pair"), None)
    if pair is None:
        return None
    good = [p for p in points if p.kind == "cascade" and p.calls < MAX_CALLS and p.meets_rule]
    best = min(good, key=lambda p: (p.set_size, p.calls)) if good else None
    return {
        "first": pair.first,
        "second": pair.second,
        "criterion": pair.criterion,
        "pair_coverage": pair.coverage,
        "pair_min_label": pair.min_label_coverage,
        "pair_meets_rule": pair.meets_rule,
        "pair_set_size": pair.set_size,
        "best_width": None if best is None else best.width,
        "calls": None if best is None else best.calls,
        "coverage": None if best is None else best.coverage,
        "min_label": None if best is None else best.min_label_coverage,
        "set_size": None if best is None else best.set_size,
        "met": best is not None and pair.meets_rule and best.set_size <= pair.set_size + SIZE_MARGIN,
        "judge_2_used": best is not None and best.calls > 1.0,
    }


def run_rule_cascades(
    datasets: Sequence[JudgeCriterionData],
    *,
    alpha: float = HEADLINE_ALPHA,
    delta: float | None = DEFAULT_DELTA,
    n_splits: int = 10,
    seed: int = 0,
    repeats: int = 1,
    judges: Sequence[str] = EXPORTED_PANEL,
    progress: Callable[[Iterable], Iterable] | None = None,
) -> RuleCascadeStudy:
    """Every ordered pair of ``judges`` (the four-judge panel by default) x criterion (module rules)."""
    criteria = sorted({d.criterion for d in datasets if d.judge in judges})
    tasks = [(a, b, c) for a, b in itertools.permutations(sorted(judges), 2) for c in criteria]
    points: list[RuleCascadePoint] = []
    goal = []
    for first, second, criterion in progress(tasks) if progress is not None else tasks:
        found = cascade_points(
            datasets, first, second, criterion, alpha=alpha, delta=delta, n_splits=n_splits, seed=seed, repeats=repeats
        )
        points.extend(found)
        check = _goal(found)
        if check is not None:
            goal.append(check)
    return RuleCascadeStudy(
        alpha=float(alpha), delta=delta, n_splits=n_splits, seed=seed, repeats=repeats, points=points, goal=goal
    )


def markdown(study: RuleCascadeStudy) -> str:
    """Every pair's curve and the goal check."""
    fmt = lambda v, d=3: "n/a" if v is None else f"{v:.{d}f}"  # noqa: E731
    met = sum(bool(g["met"]) for g in study.goal)
    used = sum(bool(g["met"]) and bool(g["judge_2_used"]) for g in study.goal)
    lines = [
        f"# Cascades with stage methods chosen by the validity rule (alpha = {study.alpha}, PAC delta = "
        f"{study.delta}, {study.n_splits} splits by document, seed {study.seed}, choice by {study.repeats} x 2 "
        "folds inside each stage's items)",
        "",
        f"Goal (cascade meets the rule with < {MAX_CALLS} calls and sets <= the pair's + {SIZE_MARGIN}, the pair "
        f"meeting the rule): met in {met} of {len(study.goal)} (pair, criterion); judge 2 asked in {used} of "
        "them.",
        "",
        "| first | second | criterion | pair size (coverage, min label, rule) | best width | calls | coverage | "
        "min label | size | met |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for g in study.goal:
        lines.append(
            f"| {g['first']} | {g['second']} | {g['criterion']} | {g['pair_set_size']:.2f} "
            f"({g['pair_coverage']:.3f}, {g['pair_min_label']:.3f}, "
            f"{'yes' if g['pair_meets_rule'] else 'no'}) | {g['best_width']} | {fmt(g['calls'], 2)} | "
            f"{fmt(g['coverage'])} | {fmt(g['min_label'])} | {fmt(g['set_size'], 2)} | "
            f"{'yes' if g['met'] else 'no'} |"
        )
    lines += [
        "",
        "## Every point",
        "",
        "| first | second | criterion | width | calls | coverage | 5th pct | "
        "min label | min bin | size | rule | stage methods |",
        "|---" * 12 + "|",
    ]
    for p in study.points:
        lines.append(
            f"| {p.first} | {p.second} | {p.criterion} | {'pair' if p.width is None else p.width} | "
            f"{p.calls:.2f} | {p.coverage:.3f} | {p.coverage_p5:.3f} | {p.min_label_coverage:.3f} | "
            f"{p.min_bin_coverage:.3f} | {p.set_size:.2f} | {'yes' if p.meets_rule else 'no'} | "
            f"{', '.join(p.stage_methods)} |"
        )
    return "\n".join(lines) + "\n"


def write_rule_cascades(study: RuleCascadeStudy, out: Path) -> tuple[Path, Path]:
    """Write ``conformal/panel_cascades.json`` and ``conformal/panel_cascades.md`` under ``out``."""
    json_path, md_path = out / JSON_FILE, out / MARKDOWN_FILE
    write_json(study, json_path)
    md_path.write_text(markdown(study))
    return json_path, md_path
