"""Both guarantee modes measured as a new user meets them: rules fitted on half of the documents by the service's
own path, the other half served through the artifact they make.

``python -m offline guarantees [--data-dir D] [--out reports] [--splits 20] [--seed 0] [--calibration-documents
50]``. Rules, stated once:

* **Splits.** Split s permutes the sorted SummEval documents with ``default_rng(seed + s)``; the first
  ``calibration_documents`` calibrate, the rest are served (at 50: the halves of
  :func:`offline.validation.halves.split_documents`, 50 / 50 documents; at 80: 80 / 20).
* **Fit, as served.** On the calibration half, the artifact is built as ``make artifact`` builds it: the fits in
  both modes (:func:`offline.build.input_kinds.fit_input_kinds` by :func:`offline.build.modes.both_modes`, PAC at
  delta 0.05
  and expected, with ``inner_splits`` held-out splits for the method choice), the decision rules of
  :func:`calibration.decisions.cell_rules.fit_cell_rules` over the shipped grid with seed ``seed + s`` (the row uniforms
  of the expected rows differ between splits, as they do between users), and
  :func:`offline.build.export.build_artifact`.
* **Serve.** Every test item of a cell is served as a verdict of one input kind alone (``score``, or ``probabilities``
  for a log-prob judge): the entry :func:`artifact.serving.choose_entry` picks from the mode's index
  (:class:`artifact.thresholds.ThresholdIndex`), its set as the interval hull, and the decision of the cell's rule
  of that kind at (tolerance, accept_alpha, mode), exactly :func:`calibration.decisions.rule.decide` (vectorised
  here; a test checks it item by item); an empty set at alpha 0.10 escalates, as in the service.
* **Figures per split**, per (mode, cell, kind): coverage and mean set size at each alpha; accept share (items
  accepted / items) and error among accepted (|human - point| >= tolerance; 0 when nothing is accepted, the
  promise's convention), both item-weighted and document-weighted (each document's share weighed equally, the
  promise's unit). Reported: means over the splits and the share of splits that accept nothing.

:mod:`offline.studies.guarantees.report` writes ``guarantees/guarantees_<N>docs.json`` and ``.md`` (N the
calibration documents).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import msgspec
import numpy as np

from artifact.serving import ServedEntry, choose_entry
from artifact.thresholds import GUARANTEE_MODES, ThresholdIndex, ThresholdsArtifact
from calibration.conformal import predict_sets
from calibration.decisions.cell_rules import ARTIFACT_GRID, fit_cell_rules
from calibration.decisions.rule import DecisionRule, certification_at, feature_of
from calibration.input_kinds.verdicts import kind_inputs
from offline.build.cell_data import JudgeCriterionData
from offline.build.export import build_artifact
from offline.build.input_kinds import fit_input_kinds
from offline.build.modes import DEFAULT_DELTA, both_modes
from offline.validation.halves import subset

__all__ = [
    "GuaranteeRow",
    "GuaranteesStudy",
    "LabelFigures",
    "SetRow",
    "run_guarantees_study",
    "served_decisions",
    "split_calibration",
]

SET_ALPHAS: tuple[float, ...] = (0.05, 0.10, 0.20)
DECISION_ALPHAS: tuple[float, ...] = (0.05, 0.10, 0.20)
TOLERANCES: tuple[int, ...] = (1, 2)
EMPTY_SET_ALPHA = 0.10  # the request's default alpha: an empty set there escalates
HEADLINE = (2, 0.10)  # (tolerance, accept_alpha) of the per-label figures; sets at EMPTY_SET_ALPHA


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


class LabelFigures(msgspec.Struct, frozen=True, kw_only=True):
    """One (mode, input kind, human label), pooled over cells and splits: set coverage at EMPTY_SET_ALPHA and the
    accept decisions at HEADLINE."""

    mode: str
    kind: str
    label: int
    n_items: int
    coverage: float
    accept_share: float
    error_among_accepted: float | None  # None: nothing accepted


class GuaranteesStudy(msgspec.Struct, frozen=True, kw_only=True):
    """The whole study: settings, rules and rows."""

    seed: int
    n_splits: int
    calibration_documents: int  # documents each split calibrates on
    served_documents: int  # the others, served
    inner_splits: int
    delta: float
    rules: dict[str, str]
    sets: list[SetRow]
    decisions: list[GuaranteeRow]
    per_label: list[LabelFigures]


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
    """(accepted, point) per item: :func:`calibration.decisions.rule.decide` for every item, vectorised."""
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


def split_calibration(
    datasets: Sequence[JudgeCriterionData], seed: int, calibration_documents: int
) -> tuple[set[str], set[str]]:
    """(calibration, served) documents: the sorted documents permuted with ``default_rng(seed)``, the first
    ``calibration_documents`` calibrate (module rules)."""
    documents = sorted({g for data in datasets for g in (data.groups or ())})
    if not 2 <= calibration_documents < len(documents):
        raise ValueError(f"calibration_documents must be in 2..{len(documents) - 1}, got {calibration_documents}")
    order = np.random.default_rng(seed).permutation(len(documents))
    return (
        {documents[i] for i in order[:calibration_documents]},
        {documents[i] for i in order[calibration_documents:]},
    )


def _fit_half(
    fit_data: list[JudgeCriterionData], *, seed: int, rule_seed: int, inner_splits: int
) -> ThresholdsArtifact:
    fits = both_modes(
        lambda delta: fit_input_kinds(fit_data, n_splits=inner_splits, seed=seed, delta=delta), DEFAULT_DELTA
    )
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
        data_hash="guarantees",
        code_version="guarantees",
        created_at="guarantees",
        fits=fits,
        decision_rules=rules,
    )


def run_guarantees_study(
    datasets: Sequence[JudgeCriterionData],
    *,
    n_splits: int = 20,
    seed: int = 0,
    inner_splits: int = 4,
    calibration_documents: int = 50,
    progress: Callable[[Iterable], Iterable] | None = None,
) -> GuaranteesStudy:
    """Fit on ``calibration_documents`` documents, serve the others, ``n_splits`` times, both modes (module
    rules)."""
    sets: dict[tuple, list[tuple[float, float]]] = {}
    decisions: dict[tuple, list[tuple[float, float, float]]] = {}
    by_label: dict[tuple[str, str, int], np.ndarray] = {}  # (mode, kind, label) -> items, covered, accepted, errors
    splits = range(n_splits)
    for split in progress(splits) if progress is not None else splits:
        fit_docs, test_docs = split_calibration(datasets, seed + split, calibration_documents)
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
                    covered = np.zeros(data.labels.size, bool) if at_default is None else at_default[0]
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
                            if (tolerance, accept_alpha) == HEADLINE:
                                _tally_labels(by_label, mode, kind, data.labels, covered, accepted, errors)
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
        calibration_documents=calibration_documents,
        served_documents=len({g for data in datasets for g in (data.groups or ())}) - calibration_documents,
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
        per_label=[
            LabelFigures(
                mode=mode,
                kind=kind,
                label=label,
                n_items=int(counts[0]),
                coverage=float(counts[1] / counts[0]),
                accept_share=float(counts[2] / counts[0]),
                error_among_accepted=float(counts[3] / counts[2]) if counts[2] else None,
            )
            for (mode, kind, label), counts in sorted(by_label.items())
        ],
    )


def _tally_labels(
    by_label: dict[tuple[str, str, int], np.ndarray],
    mode: str,
    kind: str,
    labels: np.ndarray,
    covered: np.ndarray,
    accepted: np.ndarray,
    errors: np.ndarray,
) -> None:
    """Add one cell's items to the per-label counts: items, covered at EMPTY_SET_ALPHA, accepted, accepted errors."""
    for label in np.unique(labels):
        mine = labels == label
        counts = np.array(
            [mine.sum(), (covered & mine).sum(), (accepted & mine).sum(), (accepted & errors & mine).sum()]
        )
        key = (mode, kind, int(label))
        by_label[key] = by_label.get(key, np.zeros(4, dtype=np.int64)) + counts
