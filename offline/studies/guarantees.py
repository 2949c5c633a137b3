"""Both guarantee modes measured as a new user meets them: rules fitted on half of the documents by the service's
own path, the other half served through the artifact they make.

``python -m offline guarantees [--data-dir D] [--out reports] [--splits 20] [--seed 0]``. Rules, stated once:

* **Splits.** Split s cuts the SummEval documents in two halves with :func:`offline.halves.split_documents` at
  seed ``seed + s``; the first half calibrates, the second is served (50 / 50 documents).
* **Fit, as served.** On the calibration half, the artifact is built as ``make calibrate`` builds it: the validity
  fits in both modes (:func:`offline.studies.validity.run_validity_study`, PAC at delta 0.05 and expected, with
  ``inner_splits`` held-out splits for the method choice), the decision rules of
  :func:`calibration.cell_rules.fit_cell_rules` over the shipped grid with seed ``seed + s`` (the row uniforms of
  the expected rows differ between splits, as they do between users), and :func:`offline.export.build_artifact`.
* **Serve.** Every test item of a cell is served as a verdict of one input kind alone (``score``, or ``probabilities``
  for a log-prob judge): the entry :func:`artifact.serving.choose_entry` picks from the mode's index
  (:class:`artifact.thresholds.ThresholdIndex`), its set as the interval hull, and the decision of the cell's rule
  of that kind at (tolerance, accept_alpha, mode), exactly :func:`calibration.decision_rule.decide` (vectorised
  here; a test checks it item by item); an empty set at alpha 0.10 escalates, as in the service.
* **Figures per split**, per (mode, cell, kind): coverage and mean set size at each alpha; accept share (items
  accepted / items) and error among accepted (|human - point| >= tolerance; 0 when nothing is accepted, the
  promise's convention), both item-weighted and document-weighted (each document's share weighed equally, the
  promise's unit). Reported: means over the splits and the share of splits that accept nothing.

Writes ``guarantees/guarantees.json`` and ``guarantees/guarantees.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import msgspec
import numpy as np

from artifact.serving import ServedEntry, choose_entry
from artifact.thresholds import GUARANTEE_MODES, ThresholdIndex, ThresholdsArtifact
from calibration.cell_rules import ARTIFACT_GRID, fit_cell_rules
from calibration.conformal import predict_sets
from calibration.decision_rule import DecisionRule, certification_at, feature_of
from calibration.verdicts import kind_inputs
from offline.export import build_artifact
from offline.halves import split_documents, subset
from offline.jsonfile import write_json
from offline.studies.cell_data import JudgeCriterionData
from offline.studies.validity import DEFAULT_DELTA, run_validity_study

__all__ = ["GuaranteeRow", "GuaranteesStudy", "SetRow", "run_guarantees_study", "served_decisions", "write_guarantees"]

SET_ALPHAS: tuple[float, ...] = (0.05, 0.10, 0.20)
DECISION_ALPHAS: tuple[float, ...] = (0.05, 0.10, 0.20)
TOLERANCES: tuple[int, ...] = (1, 2)
EMPTY_SET_ALPHA = 0.10  # the request's default alpha: an empty set there escalates


class SetRow(msgspec.Struct, frozen=True, kw_only=True):
    """Sets of one (mode, cell, kind, alpha) over the splits."""

    mode: str
    judge: str
    criterion: str
    kind: str
    alpha: float
    coverage: list[float]
    set_size: list[float]
    mean_coverage: float
    mean_set_size: float


class GuaranteeRow(msgspec.Struct, frozen=True, kw_only=True):
    """Decisions of one (mode, cell, kind, tolerance, accept_alpha) over the splits."""

    mode: str
    judge: str
    criterion: str
    kind: str
    tolerance: int
    accept_alpha: float
    accept_share: list[float]
    error_among_accepted: list[float]  # item-weighted; 0 when nothing was accepted
    document_error: list[float]  # document-weighted (the promise's unit); 0 when nothing was accepted
    mean_accept_share: float
    mean_error: float
    mean_document_error: float
    none_accepted_share: float


class GuaranteesStudy(msgspec.Struct, frozen=True, kw_only=True):
    """The whole study: settings, rules and rows."""

    seed: int
    n_splits: int
    inner_splits: int
    delta: float
    rules: dict[str, str]
    sets: list[SetRow]
    decisions: list[GuaranteeRow]


def _kinds(data: JudgeCriterionData) -> list[str]:
    return ["score"] + (["probabilities"] if data.probabilities is not None else [])


def _served_sets(
    index: ThresholdIndex, data: JudgeCriterionData, kind: str, alpha: float
) -> tuple[np.ndarray, np.ndarray] | None:
    """(covered, size) per item of the interval-hull sets served to verdicts of ``kind`` alone; None uncalibrated."""
    served = choose_entry(index, (data.judge, data.prompt_family, data.criterion), [kind], alpha)
    if not isinstance(served, ServedEntry):
        return None
    scores, probabilities = kind_inputs(
        kind, data.n_labels, judge_scores=data.judge_scores, probabilities=data.probabilities, means=data.means
    )
    member = predict_sets(served.entry.fitted, judge_scores=scores, probabilities=probabilities)
    any_member = member.any(axis=1)
    low = np.where(any_member, np.argmax(member, axis=1) + 1, 0)
    high = np.where(any_member, member.shape[1] - np.argmax(member[:, ::-1], axis=1), -1)
    covered = (data.labels >= low) & (data.labels <= high)
    sizes = np.where(any_member, high - low + 1, 0)
    return covered, sizes


def served_decisions(
    rule: DecisionRule, data: JudgeCriterionData, kind: str, *, tolerance: int, accept_alpha: float, mode: str
) -> tuple[np.ndarray, np.ndarray]:
    """(accepted, point) per item: :func:`calibration.decision_rule.decide` for every item, vectorised."""
    row = certification_at(rule, tolerance, accept_alpha, mode)
    features = np.array(
        [
            feature_of(
                rule.feature,
                score=int(data.judge_scores[i]),
                probabilities=None if kind == "score" or data.probabilities is None else list(data.probabilities[i]),
                mean=None,
            )
            for i in range(data.labels.size)
        ]
    )
    bins = np.searchsorted(np.asarray(rule.bin_edges), features, side="right")
    points = np.asarray(rule.points)[bins]
    if row is None or row.rule_failed:
        return np.zeros(bins.size, dtype=bool), points
    return np.isin(bins, row.accepted_bins), points


def _document_rate(groups: np.ndarray, accepted: np.ndarray, errors: np.ndarray) -> float:
    """Document-weighted error among accepted: sum_d errors_d / m_d over sum_d accepted_d / m_d (0 if none)."""
    codes, index = np.unique(groups, return_inverse=True)
    sizes = np.bincount(index, minlength=codes.size)
    weight = 1.0 / sizes[index]
    taken = float(np.sum(weight * accepted))
    return float(np.sum(weight * (accepted & errors)) / taken) if taken > 0 else 0.0


def _fit_half(
    fit_data: list[JudgeCriterionData], *, seed: int, rule_seed: int, inner_splits: int
) -> ThresholdsArtifact:
    _, pac = run_validity_study(fit_data, n_splits=inner_splits, seed=seed, delta=DEFAULT_DELTA)
    _, expected = run_validity_study(fit_data, n_splits=inner_splits, seed=seed, delta=None)
    rules = [
        rule
        for data in fit_data
        for rule in fit_cell_rules(
            judge=data.judge,
            prompt_family=data.prompt_family,
            criterion=data.criterion,
            labels=data.labels,
            judge_scores=data.judge_scores,
            probabilities=data.probabilities,
            means=data.means,
            groups=list(data.groups or ()),
            n_labels=data.n_labels,
            grid=ARTIFACT_GRID,
            seed=rule_seed,
        )
    ]
    return build_artifact(
        fit_data,
        None,
        seed=seed,
        data_hash="guarantees",
        code_version="guarantees",
        created_at="guarantees",
        fits={key: (fit, expected[key]) for key, fit in pac.items()},
        decision_rules=rules,
    )


def run_guarantees_study(
    datasets: Sequence[JudgeCriterionData],
    *,
    n_splits: int = 20,
    seed: int = 0,
    inner_splits: int = 4,
    progress: Callable[[Iterable], Iterable] | None = None,
) -> GuaranteesStudy:
    """Fit on one half, serve the other, ``n_splits`` times, both modes (module rules)."""
    sets: dict[tuple, list[tuple[float, float]]] = {}
    decisions: dict[tuple, list[tuple[float, float, float]]] = {}
    splits = range(n_splits)
    for split in progress(splits) if progress is not None else splits:
        fit_docs, test_docs = split_documents(datasets, seed + split)
        fit_data = [d for d in (subset(x, fit_docs) for x in datasets) if d is not None]
        test_data = [d for d in (subset(x, test_docs) for x in datasets) if d is not None]
        artifact = _fit_half(fit_data, seed=seed, rule_seed=seed + split, inner_splits=inner_splits)
        rules = {(r.judge, r.prompt_family, r.criterion, r.input_kind): r for r in artifact.decision_rules}
        for mode in GUARANTEE_MODES:
            index = ThresholdIndex(artifact, mode)
            for data in test_data:
                groups = np.asarray(data.groups)
                for kind in _kinds(data):
                    cell = (mode, data.judge, data.criterion, kind)
                    for alpha in SET_ALPHAS:
                        served = _served_sets(index, data, kind, alpha)
                        if served is not None:
                            sets.setdefault((*cell, alpha), []).append(
                                (float(served[0].mean()), float(served[1].mean()))
                            )
                    at_default = _served_sets(index, data, kind, EMPTY_SET_ALPHA)
                    nonempty = np.ones(data.labels.size, bool) if at_default is None else at_default[1] > 0
                    rule = rules.get((data.judge, data.prompt_family, data.criterion, kind))
                    if rule is None:
                        continue
                    for tolerance in TOLERANCES:
                        for accept_alpha in DECISION_ALPHAS:
                            accepted, points = served_decisions(
                                rule, data, kind, tolerance=tolerance, accept_alpha=accept_alpha, mode=mode
                            )
                            accepted &= nonempty
                            errors = np.abs(data.labels - points) >= tolerance
                            n = int(accepted.sum())
                            decisions.setdefault((*cell, tolerance, accept_alpha), []).append(
                                (
                                    n / data.labels.size,
                                    float(errors[accepted].mean()) if n else 0.0,
                                    _document_rate(groups, accepted, errors),
                                )
                            )
    return GuaranteesStudy(
        seed=seed,
        n_splits=n_splits,
        inner_splits=inner_splits,
        delta=DEFAULT_DELTA,
        rules={"study": __doc__.split("Rules, stated once:")[1].split("Writes")[0].strip() if __doc__ else ""},
        sets=[
            SetRow(
                mode=key[0],
                judge=key[1],
                criterion=key[2],
                kind=key[3],
                alpha=key[4],
                coverage=[c for c, _ in values],
                set_size=[s for _, s in values],
                mean_coverage=float(np.mean([c for c, _ in values])),
                mean_set_size=float(np.mean([s for _, s in values])),
            )
            for key, values in sets.items()
        ],
        decisions=[
            GuaranteeRow(
                mode=key[0],
                judge=key[1],
                criterion=key[2],
                kind=key[3],
                tolerance=key[4],
                accept_alpha=key[5],
                accept_share=[a for a, _, _ in values],
                error_among_accepted=[e for _, e, _ in values],
                document_error=[d for _, _, d in values],
                mean_accept_share=float(np.mean([a for a, _, _ in values])),
                mean_error=float(np.mean([e for _, e, _ in values])),
                mean_document_error=float(np.mean([d for _, _, d in values])),
                none_accepted_share=float(np.mean([a == 0 for a, _, _ in values])),
            )
            for key, values in decisions.items()
        ],
    )


def _summary_line(rows: Sequence[GuaranteeRow], what: str) -> str:
    if not rows:
        return f"| {what} | n/a | n/a | n/a |"
    share = float(np.mean([r.mean_accept_share for r in rows]))
    worst = max(rows, key=lambda r: r.mean_error)
    worst_doc = max(r.mean_document_error for r in rows)
    return (
        f"| {what} | {share:.3f} | {worst.mean_error:.3f} ({worst.judge} {worst.criterion} {worst.kind}) | "
        f"{worst_doc:.3f} |"
    )


def markdown(study: GuaranteesStudy) -> str:
    """The headline tables, then every row."""
    lines = [
        "# Guarantees on documents the rules never saw: expected and pac modes",
        "",
        f"{study.n_splits} splits by document (50 calibrate, 50 served), seed {study.seed}; rules fitted on the "
        f"calibration half by the service's own path (method choice with {study.inner_splits} inner splits), the "
        "other half served through the artifact they make. Rules: " + study.rules.get("study", "").replace("\n", " "),
        "",
    ]
    for tolerance in TOLERANCES:
        for alpha in DECISION_ALPHAS:
            lines += [
                f"## Accept decisions at tolerance {tolerance}, accept_alpha {alpha:g}",
                "",
                "| mode, cells | mean accept share | worst cell's mean error among accepted (items) | worst cell's "
                "mean error (documents) |",
                "|---|---|---|---|",
            ]
            for mode in GUARANTEE_MODES:
                rows = [
                    r
                    for r in study.decisions
                    if r.mode == mode and r.tolerance == tolerance and abs(r.accept_alpha - alpha) < 1e-9
                ]
                lines.append(_summary_line([r for r in rows if r.kind == "probabilities"], f"{mode}, log-prob cells"))
                lines.append(_summary_line(rows, f"{mode}, all cells"))
            lines.append("")
    lines += [
        "## Sets",
        "",
        "| mode | alpha | mean set size, log-prob cells | lowest mean coverage (cell) |",
        "|---|---|---|---|",
    ]
    for mode in GUARANTEE_MODES:
        for alpha in SET_ALPHAS:
            set_rows = [r for r in study.sets if r.mode == mode and abs(r.alpha - alpha) < 1e-9]
            if not set_rows:
                continue
            logprob = [r.mean_set_size for r in set_rows if r.kind == "probabilities"]
            low = min(set_rows, key=lambda r: r.mean_coverage)
            size = f"{float(np.mean(logprob)):.2f}" if logprob else "n/a"
            lines.append(
                f"| {mode} | {alpha:g} | {size} | {low.mean_coverage:.3f} ({low.judge} {low.criterion} {low.kind}) |"
            )
    lines += [
        "",
        "## Every decision row",
        "",
        "| mode | judge | criterion | kind | tolerance | accept_alpha | accept share | error among accepted | "
        "document-weighted error | share of splits accepting nothing |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(study.decisions, key=lambda r: (r.mode, r.tolerance, r.accept_alpha, r.judge, r.criterion, r.kind)):
        lines.append(
            f"| {r.mode} | {r.judge} | {r.criterion} | {r.kind} | {r.tolerance} | {r.accept_alpha:g} | "
            f"{r.mean_accept_share:.3f} | {r.mean_error:.3f} | {r.mean_document_error:.3f} | "
            f"{r.none_accepted_share:.2f} |"
        )
    return "\n".join(lines) + "\n"


def write_guarantees(study: GuaranteesStudy, out: Path) -> tuple[Path, Path]:
    """Write ``guarantees/guarantees.json`` and ``.md`` under ``out``."""
    folder = Path(out) / "guarantees"
    folder.mkdir(parents=True, exist_ok=True)
    json_path = write_json(study, folder / "guarantees.json")
    md_path = folder / "guarantees.md"
    md_path.write_text(markdown(study), encoding="utf-8")
    return json_path, md_path
