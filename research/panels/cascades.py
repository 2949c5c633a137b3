"""Cascades of two judges on SummEval: ask judge 1; only when its set is wide, ask judge 2 and answer from the pair.

Research (``python -m research.panels cascades``). The service serves cascades routed on the certified
decision instead (a stage that cannot accept passes the item on: ``service.scoring.cascades``, CASCADES_FILE);
this routing on the width of judge 1's set is not served. Rules, stated once:

* **Items, groups.** The items both judges answered for the criterion
  (:func:`offline.studies.panels.cells.panel_cells`); splits by SummEval document, ``n_splits`` seeded splits
  (:func:`calibration.input_kinds.heldout.group_splits`, half the documents calibrate, half test).
* **Routing is fitted apart.** Inside each split the calibration documents are cut in two (seeded:
  ``numpy.random.default_rng([seed, 7, split])``): the *routing* half fits judge 1's ``residual`` thresholds,
  which give every item a stage-1 set width; an item goes to stage 2 when that width exceeds ``w``
  (``w`` = -1: always, 5: never). The routing rule is then a fixed function of judge 1's verdict.
* **Each stage is fitted on the items that reach it** (the *fit* half): stage 1 ``residual`` on judge 1's integer
  score over the items that stop there; stage 2 ``residual_expected`` on the pair's mean of expected scores
  (:mod:`calibration.input_kinds.mean_panel`, the ``mean`` kind) over the items routed on. Both PAC at ``delta``. A
  stage
  with no fit item answers the full scale. Each stage covers >= 1 - alpha among the items that reach it (Mondrian over
  the routing outcome), hence overall.
* **Figures** on the test documents, averaged over splits: coverage, set size, judge calls per item
  (1 + share routed on), the lowest coverage within a human label (pooled over splits). References fitted on the
  whole calibration half: judge 1 alone (``residual``) and the pair always (``residual_expected`` on the mean).
* **Goal check** per (pair, criterion): among widths with < 1.6 calls per item and coverage >= 1 - alpha - 0.01,
  the one with the smallest sets; met when its mean set size is <= the pair's + 0.05 (the pair's efficiency at
  fewer calls; judge 1 alone always "reaches" the pair's coverage with wider sets, so coverage alone is no test).

Writes ``conformal/cascades.json`` (:class:`CascadeStudy`), ``conformal/cascades.md`` and
``conformal/cascades.png``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import msgspec
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from calibration.conformal import fit_conformal, predict_sets
from calibration.input_kinds.heldout import group_splits
from calibration.input_kinds.verdicts import kind_inputs
from offline.build.cell_data import JudgeCriterionData
from offline.build.panels import panel_cells
from offline.jsonfile import write_json
from offline.studies.conformal.validity import DEFAULT_DELTA, HEADLINE_ALPHA

__all__ = ["HEADLINE_PAIR", "CascadePoint", "CascadeStudy", "routing_split", "run_cascade_study", "write_cascade_study"]

JSON_FILE = "conformal/cascades.json"
MARKDOWN_FILE = "conformal/cascades.md"
FIGURE_FILE = "conformal/cascades.png"
HEADLINE_PAIR = ("gpt-4o-mini-2024-07-18", "qwen2.5-72b-instruct")
WIDTHS = (-1, 1, 2, 3, 4, 5)
MAX_CALLS = 1.6
SIZE_MARGIN = 0.05


class CascadePoint(msgspec.Struct, frozen=True, kw_only=True):
    """One (first, second, criterion, routing width) on unseen documents, or a reference (``kind``)."""

    first: str
    second: str
    criterion: str
    kind: str  # "cascade", "first alone", "pair"
    width: int | None
    calls: float
    coverage: float
    coverage_p5: float
    set_size: float
    min_label_coverage: float
    n_items: int


class CascadeStudy(msgspec.Struct, frozen=True, kw_only=True):
    """The cascade study: settings, rules, points, and the goal check per (pair, criterion)."""

    alpha: float
    delta: float | None
    n_splits: int
    seed: int
    rules: dict[str, str]
    points: list[CascadePoint]
    goal: list[dict[str, object]]


RULES = {
    "routing": "judge 1's residual thresholds fitted on half of the calibration documents; go on when the stage-1 "
    "set width > w",
    "stages": "stage 1 residual on judge 1's score over the items that stop, stage 2 residual_expected on the pair's "
    "mean over the items routed on, each fitted on the other calibration half (PAC at delta)",
    "figures": "test documents of each split; calls = 1 + share routed on; min label coverage pooled over splits",
}


def _fit(
    method: str,
    alpha: float,
    labels: np.ndarray,
    scores: np.ndarray,
    probabilities: np.ndarray | None,
    delta: float | None,
) -> object | None:
    if labels.size == 0:
        return None
    return fit_conformal(method, alpha, labels, judge_scores=scores, probabilities=probabilities, delta=delta)


def _sets(fitted: object | None, scores: np.ndarray, probabilities: np.ndarray | None) -> np.ndarray:
    if fitted is None:
        return np.ones((scores.size, 5), dtype=bool)
    return predict_sets(fitted, judge_scores=scores, probabilities=probabilities)  # type: ignore[arg-type]


def _label_floor(covered: np.ndarray, labels: np.ndarray, minimum: int = 20) -> float:
    values = [covered[labels == y].mean() for y in np.unique(labels) if (labels == y).sum() >= minimum]
    return float(min(values)) if values else float("nan")


def routing_split(cal: np.ndarray, groups: np.ndarray, *, seed: int, split: int) -> tuple[np.ndarray, np.ndarray]:
    """(routing items, fit items) of a split's calibration items ``cal``: half of their documents, drawn with
    ``default_rng([seed, 7, split])``, fit the router; the other half's items fit the stages."""
    docs = np.unique(groups[cal])
    routing_docs = np.random.default_rng([seed, 7, split]).permutation(docs)[: docs.size // 2]
    in_routing = np.isin(groups[cal], routing_docs)
    return cal[in_routing], cal[~in_routing]


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
) -> list[CascadePoint]:
    """Every width's cascade and the two references for one ordered pair (module rules); [] without items."""
    cell = panel_cells(datasets, [first, second], criterion)
    source = next((d for d in datasets if d.judge == first and d.criterion == criterion), None)
    if cell is None or source is None or np.unique(cell.groups).size < 4:
        return []
    position = {item: k for k, item in enumerate(source.item_ids)}
    s1 = source.judge_scores[np.array([position[i] for i in cell.item_ids])]
    pair_scores, pair_probs = kind_inputs("mean", cell.n_labels, means=np.clip(cell.expected.mean(axis=1), 1, 5))
    labels = cell.labels
    rows: dict[tuple[str, int | None], list[tuple[np.ndarray, np.ndarray, float, np.ndarray]]] = {}
    for split in group_splits(cell.groups, n_splits=n_splits, seed=seed):
        cal, test = split.calibration, split.test
        route_idx, fit_idx = routing_split(cal, cell.groups, seed=seed, split=split.split)
        router = _fit("residual", alpha, labels[route_idx], s1[route_idx], None, delta)
        width_fit = _sets(router, s1[fit_idx], None).sum(axis=1)
        width_test = _sets(router, s1[test], None).sum(axis=1)
        y = labels[test]
        alone = _sets(_fit("residual", alpha, labels[cal], s1[cal], None, delta), s1[test], None)
        pair = _sets(
            _fit("residual_expected", alpha, labels[cal], pair_scores[cal], pair_probs[cal], delta),
            pair_scores[test],
            pair_probs[test],
        )
        for key, sets, calls in ((("first alone", None), alone, 1.0), (("pair", None), pair, 2.0)):
            rows.setdefault(key, []).append((sets[np.arange(y.size), y - 1], sets.sum(axis=1), calls, y))
        for w in WIDTHS:
            go_fit, go_test = width_fit > w, width_test > w
            stop_fit = fit_idx[~go_fit]
            on_fit = fit_idx[go_fit]
            stage1 = _fit("residual", alpha, labels[stop_fit], s1[stop_fit], None, delta)
            stage2 = _fit("residual_expected", alpha, labels[on_fit], pair_scores[on_fit], pair_probs[on_fit], delta)
            sets = np.where(
                go_test[:, None], _sets(stage2, pair_scores[test], pair_probs[test]), _sets(stage1, s1[test], None)
            )
            rows.setdefault(("cascade", w), []).append(
                (sets[np.arange(y.size), y - 1], sets.sum(axis=1), 1.0 + float(go_test.mean()), y)
            )
    points = []
    for (kind, width), runs in rows.items():
        coverages = np.array([c.mean() for c, _, _, _ in runs])
        points.append(
            CascadePoint(
                first=first,
                second=second,
                criterion=criterion,
                kind=kind,
                width=width,
                calls=float(np.mean([calls for _, _, calls, _ in runs])),
                coverage=float(coverages.mean()),
                coverage_p5=float(np.percentile(coverages, 5)),
                set_size=float(np.mean(np.concatenate([s for _, s, _, _ in runs]))),
                min_label_coverage=_label_floor(
                    np.concatenate([c for c, _, _, _ in runs]),
                    np.concatenate([y for _, _, _, y in runs]),
                    minimum=20 * len(runs),
                ),
                n_items=int(labels.size),
            )
        )
    return points


def _goal(points: Sequence[CascadePoint], alpha: float) -> dict[str, object] | None:
    pair = next((p for p in points if p.kind == "pair"), None)
    if pair is None:
        return None
    good = [p for p in points if p.kind == "cascade" and p.calls < MAX_CALLS and p.coverage >= 1 - alpha - 0.01]
    best = min(good, key=lambda p: (p.set_size, p.calls)) if good else None
    return {
        "first": pair.first,
        "second": pair.second,
        "criterion": pair.criterion,
        "pair_coverage": pair.coverage,
        "pair_set_size": pair.set_size,
        "best_width": None if best is None else best.width,
        "calls": None if best is None else best.calls,
        "coverage": None if best is None else best.coverage,
        "set_size": None if best is None else best.set_size,
        "met": best is not None and best.set_size <= pair.set_size + SIZE_MARGIN,
        "judge_2_used": best is not None and best.calls > 1.0,
    }


def run_cascade_study(
    datasets: Sequence[JudgeCriterionData],
    *,
    alpha: float = HEADLINE_ALPHA,
    delta: float | None = DEFAULT_DELTA,
    n_splits: int = 20,
    seed: int = 0,
    pairs: Sequence[tuple[str, str]] | None = None,
    progress: Callable[[Iterable], Iterable] | None = None,
) -> CascadeStudy:
    """Every ordered pair of judges (or ``pairs``) x criterion (module rules)."""
    judges = sorted({d.judge for d in datasets})
    chosen = list(pairs) if pairs is not None else list(itertools.permutations(judges, 2))
    criteria = sorted({d.criterion for d in datasets})
    tasks = [(first, second, criterion) for first, second in chosen for criterion in criteria]
    points: list[CascadePoint] = []
    goal = []
    for first, second, criterion in progress(tasks) if progress is not None else tasks:
        found = cascade_points(
            datasets, first, second, criterion, alpha=alpha, delta=delta, n_splits=n_splits, seed=seed
        )
        points.extend(found)
        check = _goal(found, alpha)
        if check is not None:
            goal.append(check)
    return CascadeStudy(
        alpha=alpha, delta=delta, n_splits=n_splits, seed=seed, rules=dict(RULES), points=points, goal=goal
    )


def markdown(study: CascadeStudy) -> str:
    """The trade-off curve of the headline pair per criterion, then the goal check of every pair."""
    lines = [
        f"# Cascades of two judges (alpha = {study.alpha}, PAC delta = {study.delta}, {study.n_splits} splits "
        f"by document, seed {study.seed})",
        "",
        *[f"- **{k}**: {v}" for k, v in study.rules.items()],
        "",
        f"## {HEADLINE_PAIR[0]} then {HEADLINE_PAIR[1]}: calls vs set size vs coverage",
        "",
        "| criterion | route on when width > | calls / item | coverage | 5th pct | min label cov | set size |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in study.points:
        if (p.first, p.second) == HEADLINE_PAIR:
            what = p.kind if p.kind != "cascade" else ("always" if p.width == -1 else str(p.width))
            lines.append(
                f"| {p.criterion} | {what} | {p.calls:.2f} | {p.coverage:.3f} | {p.coverage_p5:.3f} | "
                f"{p.min_label_coverage:.2f} | {p.set_size:.2f} |"
            )
    met = sum(bool(g["met"]) for g in study.goal)
    used = sum(bool(g["met"]) and bool(g["judge_2_used"]) for g in study.goal)
    lines += [
        "",
        f"## Goal: coverage >= 1 - alpha - 0.01 and the pair's set size (+ {SIZE_MARGIN}) with < {MAX_CALLS} "
        f"calls per item — met in {met} of {len(study.goal)} (pair, criterion); in {used} of them the "
        "cascade asks judge 2 at all (in the others judge 1 alone already beats the pair)",
        "",
        "| first | second | criterion | pair coverage / size | best width | calls | coverage | size | met |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for g in study.goal:
        fmt = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731
        lines.append(
            f"| {g['first']} | {g['second']} | {g['criterion']} | {g['pair_coverage']:.3f} / "
            f"{g['pair_set_size']:.2f} | {g['best_width']} | {fmt(g['calls'])} | {fmt(g['coverage'])} | "
            f"{fmt(g['set_size'])} | {'yes' if g['met'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def figure(study: CascadeStudy) -> Figure:
    """Mean set size against judge calls per item for the headline pair, one line per criterion."""
    fig = Figure(figsize=(6, 4))
    axes = fig.add_subplot(1, 1, 1)
    pairs = [(p.first, p.second) for p in study.points]
    shown = HEADLINE_PAIR if HEADLINE_PAIR in pairs else (pairs[0] if pairs else HEADLINE_PAIR)
    for criterion in sorted({p.criterion for p in study.points}):
        curve = sorted(
            (p.calls, p.set_size)
            for p in study.points
            if (p.first, p.second) == shown and p.criterion == criterion and p.kind == "cascade"
        )
        if curve:
            axes.plot(*zip(*curve, strict=True), marker="o", label=criterion)
    axes.set_xlabel("judge calls per item")
    axes.set_ylabel("mean set size")
    axes.set_title(f"{shown[0]} -> {shown[1]}, alpha = {study.alpha}")
    if axes.get_lines():
        axes.legend()
    return fig


def write_cascade_study(study: CascadeStudy, out: Path) -> tuple[Path, Path, Path]:
    """Write ``conformal/cascades.json``, ``conformal/cascades.md`` and the figure under ``out``."""
    json_path, md_path, png_path = out / JSON_FILE, out / MARKDOWN_FILE, out / FIGURE_FILE
    write_json(study, json_path)
    md_path.write_text(markdown(study))
    fig = figure(study)
    FigureCanvasAgg(fig)
    fig.savefig(png_path, dpi=120)
    return json_path, md_path, png_path
