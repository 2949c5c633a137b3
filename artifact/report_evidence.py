"""A labelled cell's report card, computed where the labelled data is (``make calibrate`` and calibration jobs).

Every answer counted here is the service's: the set is :func:`calibration.conformal.sets.predict_sets` of a
predictor fitted as the artifact fits it (:func:`calibration.conformal.fit.calibration_scores` and
``fit_from_scores``, documents as the unit), served as its interval hull (:func:`artifact.serving.interval_hull`);
the point and the accept flag are :func:`calibration.decisions.rule.decide` of a rule fitted by
:func:`calibration.decisions.cell_rules.fit_kind_rule` over the shipped grid. The figures come from
:mod:`calibration.report_card`. Rules, stated once:

* **Served kind and method**: what :func:`artifact.serving.choose_entry` serves, at ``alpha``, for a verdict
  carrying every kind the file has, in the planner's guarantee mode (the artifact's default method; without an
  artifact, the kind's first method that fits).
* **Held-out answers**: documents split into ``folds`` folds (:func:`calibration.report_card.evidence.split_documents`);
  each fold is answered by a set predictor and a rule fitted on the other folds' items.
* **Skill**: the judge's integer score (the kind's core score: the score, the most probable label, the rounded mean)
  against the human label, documents resampled (``n_resamples``, ``seed``).
* **Planner** (:mod:`calibration.report_card.planner`): per-label rules fitted on drawn documents and served on
  the file's other documents below the file's size, the file projected to n documents from it on, at the request
  defaults (``tolerance``, ``accept_alpha``; ``planner_mode`` must be ``per_label``, the one guarantee the planner
  projects).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from artifact.input_kinds import DEFAULT_DELTA, labelled_kind_data
from artifact.labels import LabelledCell
from artifact.report_served import decision_rule_on, label_rule_on, per_label_answers, served_sets
from artifact.serving import ServedEntry, choose_entry
from artifact.thresholds import ThresholdIndex, ThresholdsArtifact
from calibration.decisions.cell_rules import ARTIFACT_GRID, DecisionKind, decision_input_kinds
from calibration.decisions.rule import MODES, decide
from calibration.input_kinds.fit import KindData
from calibration.input_kinds.verdicts import methods_for_input_kind
from calibration.report_card.agreement import (
    agreement_within,
    document_tables,
    quadratic_kappa,
    spearman_of_tables,
    table_interval,
)
from calibration.report_card.baseline import human_ceiling, no_information_baseline
from calibration.report_card.card import HeldoutPlan, ModeEvidence, Planner, PlannerPoint, ReportCard, Skill
from calibration.report_card.evidence import HeldoutAnswers, mode_evidence, split_documents
from calibration.report_card.planner import (
    DocumentDraw,
    document_draws,
    documents_for,
    file_projection,
    planner_point,
)
from calibration.unit_bootstrap import UnitInterval

__all__ = [
    "MODE_DELTAS",
    "SHIPPED_REPORT_OPTIONS",
    "ReportOptions",
    "build_report_card",
    "planner_point_at",
    "served_choice",
]

# The conformal delta each guarantee mode's sets are fitted at (artifact.input_kinds.fit_modes: pac at DEFAULT_DELTA,
# expected without one); a mode not listed here has no sets of its own and is left out of the held-out evidence.
MODE_DELTAS: dict[str, float | None] = {"pac": DEFAULT_DELTA, "expected": None}
PER_LABEL = "per_label"  # the default guarantee: sets, points and accepts from calibration.per_label.rule


@dataclass(frozen=True)
class ReportOptions:
    """What a report card is computed at: /v1/score's defaults, the folds, the resampling and the planner."""

    alpha: float = 0.10
    tolerance: int = 2
    accept_alpha: float = 0.10
    planner_mode: str = PER_LABEL  # /v1/score's default guarantee, the one the planner projects
    entry_mode: str = "expected"  # the index whose served kind and method the set-based modes use
    folds: int = 2
    seed: int = 0
    n_resamples: int = 1000
    planner_sizes: tuple[int, ...] = (10, 20, 30, 50, 75, 100, 150, 200)
    planner_draws: int = 16
    target_share: float = 0.5
    interval_level: float = 0.95


SHIPPED_REPORT_OPTIONS = ReportOptions()  # what ``python -m offline report-cards`` computes the shipped cards at


def served_choice(cell: LabelledCell, artifact: ThresholdsArtifact | None, options: ReportOptions) -> tuple[str, str]:
    """(input kind, method) per the module rules."""
    kinds = [data.kind for data in labelled_kind_data(cell)]
    if artifact is not None:
        index = ThresholdIndex(artifact, options.entry_mode)
        try:
            served = choose_entry(index, cell.key, kinds, options.alpha)
        except ValueError:
            served = None
        if isinstance(served, ServedEntry):
            return served.kind, served.method
    kind = kinds[-1] if cell.probabilities is not None and cell.means is None else kinds[0]
    return kind, methods_for_input_kind(kind)[0]


def _kinds(cell: LabelledCell, kind: str) -> tuple[KindData, DecisionKind]:
    data = next(d for d in labelled_kind_data(cell) if d.kind == kind)
    decision = next(
        d
        for d in decision_input_kinds(
            cell.labels, cell.judge_scores, cell.probabilities, cell.means, cell.groups, cell.n_labels
        )
        if d.kind == kind
    )
    return data, decision


def _heldout(cell: LabelledCell, kind: str, method: str, options: ReportOptions) -> list[HeldoutAnswers]:
    data, decision = _kinds(cell, kind)
    folds = split_documents(cell.groups, options.folds, options.seed)
    modes = [PER_LABEL] + [mode for mode in MODES if mode in MODE_DELTAS]
    levels = tuple(ARTIFACT_GRID.alphas)
    columns: dict[str, dict[str, list[Any]]] = {m: {k: [] for k in ("i", "low", "high", "point", "acc")} for m in modes}
    for number, test in enumerate(folds):
        train = np.setdiff1d(np.arange(cell.labels.size), test)
        rule = decision_rule_on(cell, decision, train, options.seed)
        for mode in modes:
            features = decision.data.features[test]
            if mode == PER_LABEL:
                low, high, points, accepted = per_label_answers(
                    label_rule_on(cell, decision, train),
                    features,
                    alpha=options.alpha,
                    tolerance=options.tolerance,
                    levels=levels,
                )
            else:
                lows, highs = served_sets(data, method, options.alpha, MODE_DELTAS[mode], train, test,
                                           options.seed + number)  # fmt: skip
                low, high = lows.tolist(), highs.tolist()
                answers = [
                    [decide(rule, float(v), tolerance=options.tolerance, accept_alpha=a, mode=mode) for a in levels]
                    for v in features
                ]
                points = [[d.point for d in row] for row in answers]
                accepted = [[d.accepted for d in row] for row in answers]
            for name, values in (("i", test.tolist()), ("low", low), ("high", high), ("point", points),
                                 ("acc", accepted)):  # fmt: skip
                columns[mode][name].extend(values)
    result = []
    for mode in modes:
        order = np.argsort(columns[mode]["i"], kind="stable")
        pick = [columns[mode]["i"][j] for j in order]
        result.append(
            HeldoutAnswers(
                mode=mode,
                alpha=options.alpha,
                labels=[int(cell.labels[i]) for i in pick],
                groups=[str(cell.groups[i]) for i in pick],
                set_low=[int(columns[mode]["low"][j]) for j in order],
                set_high=[int(columns[mode]["high"][j]) for j in order],
                points=[columns[mode]["point"][j] for j in order],
                accept_alphas=list(levels),
                accepted=[columns[mode]["acc"][j] for j in order],
            )
        )
    return result


def _planner_answers(
    cell: LabelledCell, decision: DecisionKind, draw: DocumentDraw, options: ReportOptions
) -> tuple[float, float]:
    """(accept share, mean set size) of the served items of one draw, under the per-label rule fitted on its items
    (each fitted document counted ``draw.document_weight`` times) at the options' defaults."""
    fitted = np.asarray(draw.fitted)
    rule = label_rule_on(cell, decision, fitted, np.asarray(draw.fitted_groups), draw.document_weight)
    low, high, _, accepted = per_label_answers(
        rule,
        decision.data.features[np.asarray(draw.served)],
        alpha=options.alpha,
        tolerance=options.tolerance,
        levels=(options.accept_alpha,),
    )
    sizes = np.asarray(high) - np.asarray(low) + 1
    return float(np.mean([row[0] for row in accepted])), float(np.mean(sizes))


def planner_point_at(cell: LabelledCell, kind: str, n_documents: int, options: ReportOptions) -> PlannerPoint:
    """The planner's point at ``n_documents`` (:mod:`calibration.report_card.planner`: measured below the file's
    size, projected from it on) in the ``per_label`` guarantee at the options' defaults."""
    if options.planner_mode != PER_LABEL:
        raise ValueError(f"the planner measures and projects the {PER_LABEL} guarantee, not {options.planner_mode}")
    _, decision = _kinds(cell, kind)
    draws = document_draws(cell.groups, n_documents, options.planner_draws, options.seed)
    answers = [_planner_answers(cell, decision, draw, options) for draw in draws]
    projected = draws[0].projected
    centre = _planner_answers(cell, decision, file_projection(cell.groups, n_documents), options) if projected else None
    shares, sizes = [a[0] for a in answers], [a[1] for a in answers]
    return planner_point(n_documents, projected, shares, sizes, centre=centre, n_labels=cell.n_labels)


def _planner(cell: LabelledCell, kind: str, options: ReportOptions) -> Planner | None:
    if len(set(cell.groups)) < 2:
        return None
    points = [planner_point_at(cell, kind, n, options) for n in sorted(set(options.planner_sizes))]
    return Planner(
        mode=options.planner_mode,
        tolerance=options.tolerance,
        accept_alpha=options.accept_alpha,
        alpha=options.alpha,
        points=points,
        target_share=options.target_share,
        documents_for_target=documents_for(points, options.target_share),
        seed=options.seed,
    )


def _optional(tables: np.ndarray, figure, options: ReportOptions) -> UnitInterval | None:  # type: ignore[no-untyped-def]
    try:
        return table_interval(
            tables, figure, alpha=1 - options.interval_level, n_resamples=options.n_resamples, seed=options.seed
        )
    except Exception:  # noqa: BLE001 - undefined on these items (one label alone on a side)
        return None


def build_report_card(
    cell: LabelledCell,
    artifact: ThresholdsArtifact | None,
    options: ReportOptions = SHIPPED_REPORT_OPTIONS,
    *,
    annotations: np.ndarray | None = None,
) -> ReportCard:
    """The cell's report card (module rules); ``annotations`` (items, annotators; 0 = missing), in the cell's item
    order, gives the human-human ceiling."""
    kind, method = served_choice(cell, artifact, options)
    data, _ = _kinds(cell, kind)
    tables = document_tables(data.judge_scores, cell.labels, cell.groups, cell.n_labels)
    alpha = 1 - options.interval_level
    interval = {"alpha": alpha, "n_resamples": options.n_resamples, "seed": options.seed}
    skill = Skill(
        weighted_kappa=_optional(tables, quadratic_kappa, options),
        spearman=_optional(tables, spearman_of_tables, options),
        exact_agreement=table_interval(tables, agreement_within(1), **interval),  # type: ignore[arg-type]
        within_tolerance=table_interval(tables, agreement_within(options.tolerance), **interval),  # type: ignore[arg-type]
        tolerance=options.tolerance,
    )
    baseline = no_information_baseline(cell.labels, cell.n_labels, options.tolerance)
    ceiling = (
        None
        if annotations is None
        else human_ceiling(
            annotations,
            cell.groups,
            cell.n_labels,
            options.tolerance,
            alpha=alpha,
            n_resamples=options.n_resamples,
            seed=options.seed,
        )
    )
    modes: list[ModeEvidence] = [
        mode_evidence(answers, n_labels=cell.n_labels, tolerance=options.tolerance, accept_alpha=options.accept_alpha)
        for answers in _heldout(cell, kind, method, options)
    ]
    kappa = skill.weighted_kappa
    return ReportCard(
        judge=cell.judge,
        prompt_family=cell.prompt_family,
        criterion=cell.criterion,
        input_kind=kind,
        method=method,
        n_labels=cell.n_labels,
        n_items=int(cell.labels.size),
        n_documents=len(set(cell.groups)),
        interval_level=options.interval_level,
        skill=skill,
        baseline=baseline,
        ceiling=ceiling,
        confusion=tables.sum(axis=0).astype(int).tolist(),
        heldout=HeldoutPlan(folds=options.folds, seed=options.seed, n_documents=len(set(cell.groups))),
        modes=modes,
        planner=_planner(cell, kind, options),
        beats_baseline=kappa is not None and kappa.low > 0,
        agrees_more_than_baseline=skill.within_tolerance.estimate > baseline.within_tolerance,
    )
