"""The four-judge panel against its members, nested and on the same menu (``python -m research.panels nested``).

Rules of the estimate in :mod:`research.panels.nested`; this module builds the contenders from the recorded
data and writes the result. Rules, stated once:

* **Items.** The four-judge panel (:data:`offline.studies.panels.study.EXPORTED_PANEL`) on its common items per
  criterion (:func:`offline.studies.panels.cells.panel_cells`); every member on the same items and documents, once per
  input kind it supports (:func:`offline.studies.panels.cells.member_kind_data`).
* **Feature sets** of the learned recipes (each standardised by the model, :mod:`research.panels.model`):
  ``expected``: the expected scores (panel: the members', n x 4; member: its own, n x 1);
  ``disagreement`` (panel only): ``expected`` + the members' population std and spread (max - min);
  ``full``: every member's full output: log(max(p, 1e-6)) of its five probabilities where the kind has them,
  else the one-hot of its integer score (panel: 4 x 5 = 20 columns; member: 5).
  ``full_ridge``: ``full`` with a stronger ridge. Ridge ``l2`` = 0.01 for ``expected`` and ``disagreement``,
  0.1 for ``full``, 1.0 for ``full_ridge``.
* **Ratio.** Panel's nested set size / the best member's: the smallest nested set size over members and kinds,
  taken after the fact (favours the members, so the ratio is if anything too high), per criterion and the mean of
  the four ratios. Menu ``core`` repeats the estimate with core methods only on both sides (the service's menu).
* **Bound** (:func:`research.panels.nested.fixed_recipes`): per contender, the smallest recipe of the menu that
  meets the selection rule on the outer test documents, chosen there (after the fact). ``bound_ratio`` = the
  panel's bound / the smallest member bound; ``panel_bound_ratio`` = the panel's bound / the best member's nested
  size (the most the panel could gain from any choice among the menu against members that choose honestly).

Writes ``conformal/panel_nested.json`` and ``conformal/panel_nested.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import msgspec
import numpy as np

from calibration.input_kinds.fit import KindData
from calibration.input_kinds.mean_panel import panel_kind_data
from calibration.input_kinds.selection import MethodEvidence, qualifies
from offline.build.cell_data import JudgeCriterionData
from offline.build.panels import EXPORTED_PANEL, PanelCell, panel_cells
from offline.jsonfile import write_json
from offline.studies.conformal.validity import DEFAULT_DELTA, HEADLINE_ALPHA
from offline.studies.panels.cells import member_kind_data
from research.panels.nested import NestedEstimate, fixed_recipes, nested_estimate
from research.panels.recipes import Contender, menu_for

__all__ = [
    "JSON_FILE",
    "MARKDOWN_FILE",
    "FixedBest",
    "NestedRow",
    "NestedStudy",
    "contenders",
    "markdown",
    "run_nested_study",
    "write_nested_study",
]

JSON_FILE = "conformal/panel_nested.json"
MARKDOWN_FILE = "conformal/panel_nested.md"
L2 = {"expected": 0.01, "disagreement": 0.01, "full": 0.1, "full_ridge": 1.0}
LOG_FLOOR = 1e-6


class FixedBest(msgspec.Struct, frozen=True, kw_only=True):
    """A contender's smallest fixed recipe meeting the rule on the outer test documents (after the fact)."""

    contender: str
    recipe: str | None  # None: no recipe of the menu meets the rule
    set_size: float | None
    coverage: float | None
    min_label_coverage: float | None


class NestedRow(msgspec.Struct, frozen=True, kw_only=True):
    """One criterion: the panel's and every member-kind's nested estimate, and the ratio to the best member."""

    criterion: str
    menu: str  # "full" (core + learned recipes) or "core" (core methods only)
    n_items: int
    n_documents: int
    panel: NestedEstimate
    members: list[NestedEstimate]
    best_member: str
    ratio: float
    best_valid_member: str | None  # the smallest member nested estimate that itself meets the rule
    ratio_to_valid: float | None
    panel_bound: FixedBest
    member_bounds: list[FixedBest]
    bound_ratio: float | None  # panel bound / smallest member bound
    panel_bound_ratio: float | None  # panel bound / best member's nested set size


class NestedStudy(msgspec.Struct, frozen=True, kw_only=True):
    alpha: float
    delta: float | None
    outer_seeds: list[int]
    n_splits: int
    repeats: int
    members: list[str]
    rows: list[NestedRow]
    cal_fraction: float = 0.5


def _full(kind: KindData) -> np.ndarray:
    if kind.probabilities is not None:
        return np.log(np.maximum(kind.probabilities, LOG_FLOOR))
    onehot = np.zeros((kind.labels.size, kind.n_labels))
    onehot[np.arange(kind.labels.size), kind.judge_scores - 1] = 1.0
    return onehot


def _expected(kind: KindData) -> np.ndarray:
    if kind.probabilities is not None:
        return kind.probabilities @ np.arange(1, kind.n_labels + 1, dtype=float)
    return kind.judge_scores.astype(float)


def contenders(cell: PanelCell, members: Sequence[tuple[str, Sequence[KindData]]]) -> list[Contender]:
    """The panel (first) and every member in every kind, with the module's feature sets."""
    richest = [max(kinds, key=lambda k: k.probabilities is not None) for _, kinds in members]
    expected = np.asarray(cell.expected, dtype=float)
    disagreement = np.column_stack([expected, expected.std(axis=1), expected.max(axis=1) - expected.min(axis=1)])
    full = np.column_stack([_full(k) for k in richest])
    panel = Contender(
        name="panel",
        data=panel_kind_data(expected, cell.labels, cell.groups, cell.n_labels),
        features={"expected": expected, "disagreement": disagreement, "full": full, "full_ridge": full},
        l2=L2,
    )
    result = [panel]
    for member, kinds in members:
        for kind in kinds:
            result.append(
                Contender(
                    name=f"{member}/{kind.kind}",
                    data=kind,
                    features={"expected": _expected(kind)[:, None], "full": _full(kind), "full_ridge": _full(kind)},
                    l2=L2,
                )
            )
    return result


def run_nested_study(
    datasets: Sequence[JudgeCriterionData],
    *,
    alpha: float = HEADLINE_ALPHA,
    delta: float | None = DEFAULT_DELTA,
    outer_seeds: Sequence[int] = (0, 1, 2),
    n_splits: int = 10,
    repeats: int = 5,
    menus: Sequence[str] = ("full", "core"),
    criteria: Sequence[str] | None = None,
    members: Sequence[str] = EXPORTED_PANEL,
    cal_fraction: float = 0.5,
    progress: Callable[[Iterable], Iterable] | None = None,
) -> NestedStudy:
    """The nested estimate for the panel ``members`` (the four-judge panel by default) and each member, per
    criterion and menu (module rules)."""
    found = sorted({d.criterion for d in datasets if d.judge in members})
    tasks = [(c, m) for c in found if criteria is None or c in criteria for m in menus]
    rows = []
    for criterion, menu_name in progress(tasks) if progress is not None else tasks:
        cell = panel_cells(datasets, members, criterion)
        if cell is None:
            continue
        estimates, bounds = [], []
        for contender in contenders(cell, member_kind_data(datasets, cell)):
            menu = menu_for(contender)
            if menu_name == "core":
                menu = [r for r in menu if r.core is not None]
            estimates.append(
                nested_estimate(
                    contender,
                    alpha=alpha,
                    delta=delta,
                    outer_seeds=outer_seeds,
                    n_splits=n_splits,
                    repeats=repeats,
                    menu=menu,
                    cal_fraction=cal_fraction,
                )
            )
            bounds.append(
                _bound(
                    contender.name,
                    fixed_recipes(
                        contender,
                        alpha=alpha,
                        delta=delta,
                        outer_seeds=outer_seeds,
                        n_splits=n_splits,
                        menu=menu,
                        cal_fraction=cal_fraction,
                    ),
                )
            )
        panel, others = estimates[0], estimates[1:]
        best = min(others, key=lambda e: (e.set_size, e.contender))
        valid = [e for e in others if e.meets_rule]
        best_valid = min(valid, key=lambda e: (e.set_size, e.contender)) if valid else None
        member_bound = min((b.set_size for b in bounds[1:] if b.set_size is not None), default=None)
        panel_bound = bounds[0].set_size
        rows.append(
            NestedRow(
                criterion=criterion,
                menu=menu_name,
                n_items=int(cell.labels.size),
                n_documents=int(np.unique(cell.groups).size),
                panel=panel,
                members=others,
                best_member=best.contender,
                ratio=panel.set_size / best.set_size,
                best_valid_member=best_valid.contender if best_valid else None,
                ratio_to_valid=panel.set_size / best_valid.set_size if best_valid else None,
                panel_bound=bounds[0],
                member_bounds=bounds[1:],
                bound_ratio=None if panel_bound is None or member_bound is None else panel_bound / member_bound,
                panel_bound_ratio=None if panel_bound is None else panel_bound / best.set_size,
            )
        )
    return NestedStudy(
        alpha=float(alpha),
        delta=delta,
        outer_seeds=[int(s) for s in outer_seeds],
        n_splits=n_splits,
        repeats=repeats,
        members=sorted(members),
        rows=rows,
        cal_fraction=cal_fraction,
    )


def _bound(name: str, evidence: Sequence[MethodEvidence]) -> FixedBest:
    meeting = [e for e in evidence if qualifies(e)]
    if not meeting:
        return FixedBest(contender=name, recipe=None, set_size=None, coverage=None, min_label_coverage=None)
    top = min(meeting, key=lambda e: e.mean_set_size)
    return FixedBest(
        contender=name,
        recipe=top.method,
        set_size=top.mean_set_size,
        coverage=top.mean_coverage,
        min_label_coverage=top.min_label_coverage,
    )


def _top(chosen: Sequence[str]) -> str:
    counts = {name: chosen.count(name) for name in sorted(set(chosen))}
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{name} x{n}" for name, n in ranked[:3])


def markdown(study: NestedStudy) -> str:
    """Per menu: each criterion's panel and best member, the conditions, the ratio, and the mean ratio."""
    target = 1 - study.alpha
    lines = [
        f"# The four-judge panel against its members, nested (alpha = {study.alpha}, PAC delta = {study.delta}, "
        f"outer seeds {study.outer_seeds} x {study.n_splits} splits by document ({study.cal_fraction:.0%} of "
        f"the documents calibrate), choice by {study.repeats} x 2 folds inside the calibration documents)",
        "",
    ]
    for menu in dict.fromkeys(r.menu for r in study.rows):
        rows = [r for r in study.rows if r.menu == menu]
        lines += [
            f"## Menu: {menu}",
            "",
            "| criterion | panel size | coverage | 5th pct | min label | min bin | meets rule | "
            "panel's choices | best member | its size | its coverage | its min label | ratio |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            best = next(m for m in r.members if m.contender == r.best_member)
            p = r.panel
            lines.append(
                f"| {r.criterion} | {p.set_size:.2f} | {p.coverage:.3f} | {p.coverage_p5:.3f} | "
                f"{p.min_label_coverage:.3f} | {p.min_bin_coverage:.3f} | {'yes' if p.meets_rule else 'no'} | "
                f"{_top(p.chosen)} | {r.best_member} | {best.set_size:.2f} | {best.coverage:.3f} | "
                f"{best.min_label_coverage:.3f} | {r.ratio:.3f} |"
            )
        mean = float(np.mean([r.ratio for r in rows]))
        met = all(r.panel.coverage >= target - 0.01 and r.panel.min_label_coverage >= target - 0.05 for r in rows)
        valid = [r.ratio_to_valid for r in rows if r.ratio_to_valid is not None]
        lines += [
            "",
            "Against the best member whose own nested figures meet the rule: "
            + ", ".join(f"{r.criterion} {_num(r.ratio_to_valid, 3)} ({r.best_valid_member})" for r in rows)
            + (f"; mean {np.mean(valid):.3f}." if len(valid) == len(rows) else "."),
        ]
        lines += [
            "",
            f"Mean ratio: **{mean:.3f}** (target <= 0.85); panel coverage >= {target - 0.01:.2f} and "
            f">= {target - 0.05:.2f} within every human label on every criterion: **{'yes' if met else 'no'}**.",
            "",
            "After the fact (each recipe fixed, the smallest meeting the rule chosen on the test documents: "
            "a bound, not an estimate):",
            "",
            "| criterion | panel bound | its recipe | best member bound | "
            "bound ratio | panel bound / best member nested |",
            "|---|---|---|---|---|---|",
        ]
        for r in rows:
            mb = [b for b in r.member_bounds if b.set_size is not None]
            top = min(mb, key=lambda b: b.set_size or 0.0) if mb else None
            lines.append(
                f"| {r.criterion} | {_num(r.panel_bound.set_size)} | {r.panel_bound.recipe} | "
                f"{_num(top.set_size) if top else 'none'} ({top.contender if top else ''}, "
                f"{top.recipe if top else ''}) | {_num(r.bound_ratio, 3)} | {_num(r.panel_bound_ratio, 3)} |"
            )
        bound_ratios = [r.bound_ratio for r in rows if r.bound_ratio is not None]
        panel_bound_ratios = [r.panel_bound_ratio for r in rows if r.panel_bound_ratio is not None]
        if len(bound_ratios) == len(rows) and len(panel_bound_ratios) == len(rows):
            lines += [
                "",
                f"Mean bound ratio {np.mean(bound_ratios):.3f}; mean panel bound / best member nested "
                f"{np.mean(panel_bound_ratios):.3f}.",
            ]
        lines += [
            "",
            "Every member and kind:",
            "",
            "| criterion | contender | size | coverage | min label | meets rule | choices |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            for m in r.members:
                lines.append(
                    f"| {r.criterion} | {m.contender} | {m.set_size:.2f} | {m.coverage:.3f} | "
                    f"{m.min_label_coverage:.3f} | {'yes' if m.meets_rule else 'no'} | {_top(m.chosen)} |"
                )
        lines.append("")
    return "\n".join(lines) + "\n"


def _num(value: float | None, digits: int = 2) -> str:
    return "none" if value is None else f"{value:.{digits}f}"


def write_nested_study(study: NestedStudy, out: Path) -> tuple[Path, Path]:
    """Write ``conformal/panel_nested.json`` and ``conformal/panel_nested.md`` under ``out``."""
    json_path, md_path = out / JSON_FILE, out / MARKDOWN_FILE
    write_json(study, json_path)
    md_path.write_text(markdown(study))
    return json_path, md_path
