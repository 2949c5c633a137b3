"""Fits per (cell, input kind) -> artifact entries and defaults; a user's labelled cell -> its kinds.

Pure, shared by ``offline`` (``make calibrate``, ``calibrate --labels``: :mod:`offline.build.export`) and the service's
calibration jobs (:mod:`service.jobs.calibration_jobs.jobs`), so both write the same entries from the same fits
(:func:`calibration.input_kinds.fit.fit_input_kind`). Rules, stated once:

* **Entries.** One per (judge, prompt family, criterion, input kind, method, alpha, guarantee mode) fitted on
  every item, with its held-out figures by document. A fit's mode is ``pac`` when it was fitted at a delta, else
  ``expected``; a key may hold one fit or one per mode (:data:`ModeFits`), each giving its own entries and its own
  default (:func:`fit_modes` fits both). The default method of a (cell, kind) is exported at every level of the grid;
  the other methods at ``OTHER_METHOD_ALPHAS`` only (a request between levels is served at the next smaller one),
  which keeps the artifact small. One default per (cell, kind).
* **Kinds of a labelled cell** (:func:`labelled_kind_data`, the rule of
  ``offline.studies.conformal.validity.kind_data``): ``mean`` only when every row has ``mean_of_samples`` (a
  mean-of-samples judge); else ``score`` (the integer verdict of every row) and ``probabilities`` when every row has
  ``judge_logprobs`` (core inputs by :func:`calibration.input_kinds.verdicts.kind_inputs`).
* **Decision rules of a labelled cell** (:func:`labelled_rules`): one certified rule per input kind over the
  shipped artifact's grid (:func:`calibration.decisions.cell_rules.fit_cell_rules` with ``ARTIFACT_GRID``, seed 0), the
  cell's groups (documents) the unit of the bound: what ``offline`` exports for the shipped cells.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from artifact.labels import LabelledCell
from artifact.thresholds import FORMAT_VERSION, DefaultMethod, ThresholdEntry, ThresholdsArtifact
from calibration.decisions.cell_rules import ARTIFACT_GRID, fit_cell_rules
from calibration.decisions.rule import DecisionRule
from calibration.input_kinds.fit import InputKindFit, KindData, cell_kind_data, fit_input_kind
from calibration.per_label.fit import fit_cell_label_rules
from calibration.per_label.rule import LabelRule

__all__ = [
    "DEFAULT_DELTA",
    "OTHER_METHOD_ALPHAS",
    "FitKey",
    "ModeFits",
    "fit_keys",
    "fit_modes",
    "fit_mode",
    "kind_artifact",
    "kind_entries",
    "labelled_kind_data",
    "labelled_rules",
    "labelled_label_rules",
]

OTHER_METHOD_ALPHAS = frozenset({0.05, 0.1, 0.15, 0.2})
DEFAULT_DELTA = 0.05
FitKey = tuple[str, str, str, str]  # (judge, prompt_family, criterion, input kind)
ModeFits = InputKindFit | tuple[InputKindFit, ...]  # one fit, or one per guarantee mode


def fit_mode(fit: InputKindFit) -> str:
    """The guarantee mode a fit keeps: pac when fitted at a delta, else expected."""
    return "expected" if fit.delta is None else "pac"


def fit_modes(data: KindData, *, delta: float, **options: Any) -> tuple[InputKindFit, InputKindFit]:
    """:func:`calibration.input_kinds.fit.fit_input_kind` in both modes: (pac at ``delta``, expected), the same
    options."""
    return fit_input_kind(data, delta=delta, **options), fit_input_kind(data, delta=None, **options)


def _each(fits: Mapping[FitKey, ModeFits]) -> list[tuple[FitKey, InputKindFit]]:
    return [(key, fit) for key, value in fits.items() for fit in (value if isinstance(value, tuple) else (value,))]


def kind_entries(fits: Mapping[FitKey, ModeFits]) -> tuple[list[ThresholdEntry], list[DefaultMethod]]:
    """Entries and defaults of the fits (module rules)."""
    entries: list[ThresholdEntry] = []
    defaults: list[DefaultMethod] = []
    for (judge, family, criterion, kind), fit in _each(fits):
        figures = {(h.method, round(h.alpha, 9)): h for h in fit.heldout}
        for method, by_alpha in fit.fitted.items():
            for alpha, fitted in by_alpha.items():
                if method != fit.default.method and round(alpha, 9) not in OTHER_METHOD_ALPHAS:
                    continue
                h = figures[(method, round(alpha, 9))]
                entries.append(
                    ThresholdEntry(
                        judge=judge,
                        prompt_family=family,
                        criterion=criterion,
                        method=method,
                        alpha=float(alpha),
                        fitted=fitted,
                        input_kind=kind,
                        heldout_coverage=h.coverage,
                        heldout_coverage_std=h.coverage_std,
                        heldout_coverage_p5=h.coverage_p5,
                        heldout_set_size=h.set_size,
                        n_splits=h.n_splits,
                        min_bin_coverage=h.min_bin_coverage,
                        min_label_coverage=h.min_label_coverage,
                        empty_share=h.empty_share,
                        non_interval_share=h.non_interval_share,
                        accept_share=h.accept_share,
                        review_share=h.review_share,
                        escalate_share=h.escalate_share,
                        accept_accuracy=h.accept_accuracy,
                    )
                )
        defaults.append(
            DefaultMethod(
                judge=judge,
                prompt_family=family,
                criterion=criterion,
                method=fit.default.method,
                reason=fit.default.reason,
                selection_qualified=fit.default.qualified,
                selection_failures=list(fit.default.failed_checks),
                input_kind=kind,
                mode=fit_mode(fit),
            )
        )
    return entries, defaults


def kind_artifact(
    fits: Mapping[FitKey, ModeFits],
    *,
    created_at: str,
    code_version: str,
    data_hash: str,
    source: str,
    decision_rules: Sequence[DecisionRule] = (),
    label_rules: Sequence[LabelRule] = (),
) -> ThresholdsArtifact:
    """An artifact holding exactly these fits, decision rules and per-label rules (label_scale 1..K of the widest
    cell)."""
    entries, defaults = kind_entries(fits)
    scale = max((e.fitted.n_labels for e in entries), default=5)
    return ThresholdsArtifact(
        format_version=FORMAT_VERSION,
        created_at=created_at,
        code_version=code_version,
        data_hash=data_hash,
        label_scale=list(range(1, scale + 1)),
        entries=entries,
        default_methods=defaults,
        source=source,
        decision_rules=list(decision_rules),
        label_rules=list(label_rules),
    )


def labelled_kind_data(cell: LabelledCell) -> list[KindData]:
    """The cell's items as verdicts of every kind it supports (module rules), groups as given."""
    return cell_kind_data(cell.labels, cell.judge_scores, cell.probabilities, cell.means, cell.groups, cell.n_labels)


def fit_keys(cells: Sequence[LabelledCell]) -> list[tuple[LabelledCell, KindData]]:
    """Every (cell, kind data) of the cells, in cell order."""
    return [(cell, data) for cell in cells for data in labelled_kind_data(cell)]


def labelled_rules(cell: LabelledCell, uniform_seed: int | None = None) -> list[DecisionRule]:
    """The cell's certified decision rules, one per input kind (module rules); ``uniform_seed`` seeds the expected
    rows' uniforms (a calibration job draws one afresh per job and records it in every row; default 0)."""
    return fit_cell_rules(
        judge=cell.judge,
        prompt_family=cell.prompt_family,
        criterion=cell.criterion,
        labels=cell.labels,
        judge_scores=cell.judge_scores,
        probabilities=cell.probabilities,
        means=cell.means,
        groups=cell.groups,
        n_labels=cell.n_labels,
        grid=ARTIFACT_GRID,
        seed=0,
        uniform_seed=uniform_seed,
    )


def labelled_label_rules(cell: LabelledCell) -> list[LabelRule]:
    """The cell's per-label rules, one per input kind (calibration.per_label.fit: no split, no seed)."""
    return fit_cell_label_rules(
        judge=cell.judge,
        prompt_family=cell.prompt_family,
        criterion=cell.criterion,
        labels=cell.labels,
        judge_scores=cell.judge_scores,
        probabilities=cell.probabilities,
        means=cell.means,
        groups=cell.groups,
        n_labels=cell.n_labels,
    )
