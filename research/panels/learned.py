"""A learned panel combination (a multinomial model on the members' expected scores) screened against the mean
verdict: the method's figures on the outer splits by document, not served.
"""

from __future__ import annotations

import msgspec
import numpy as np

from calibration.conformal import fit_conformal, predict_sets
from calibration.input_kinds.heldout import group_splits, pooled_group_coverage
from offline.build.panels import PanelCell
from research.panels.model import fit_multinomial

__all__ = [
    "LEARNED_METHODS",
    "LearnedRow",
    "learned_rows",
]

LEARNED_METHODS: tuple[tuple[str, str], ...] = (
    ("multinomial_lac", "lac"),
    ("multinomial_label_conditional", "label_conditional"),
)


class LearnedRow(msgspec.Struct, frozen=True, kw_only=True):
    """The learned multinomial model (research.panels.model) of one (panel, criterion) under a fixed method."""

    members: list[str]
    panel: str
    criterion: str
    alpha: float
    method: str
    coverage: float
    coverage_p5: float
    min_label_coverage: float
    set_size: float
    best_member_set_size: float
    ratio_to_best_member: float


def learned_rows(
    cell: PanelCell, *, alpha: float, delta: float | None, n_splits: int, seed: int, best_member_set_size: float
) -> list[LearnedRow]:
    """The multinomial model on the outer splits by document: in each, the calibration documents are halved
    (``default_rng([seed, 9, split])``), the model is fitted on one half and the method's thresholds (PAC at
    ``delta``) on the other; figures on the test documents. A fixed method, not chosen by the selection rule."""
    runs: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {name: [] for name, _ in LEARNED_METHODS}
    for split in group_splits(cell.groups, n_splits=n_splits, seed=seed):
        cal, test = split.calibration, split.test
        docs = np.unique(cell.groups[cal])
        model_docs = set(np.random.default_rng([seed, 9, split.split]).permutation(docs)[: docs.size // 2])
        in_model = np.array([g in model_docs for g in cell.groups[cal]])
        model = fit_multinomial(cell.expected[cal[in_model]], cell.labels[cal[in_model]], cell.n_labels)
        probs = model.probabilities(cell.expected)
        scores = np.argmax(probs, axis=1) + 1
        threshold = cal[~in_model]
        for name, method in LEARNED_METHODS:
            fitted = fit_conformal(
                method,
                alpha,
                cell.labels[threshold],
                judge_scores=scores[threshold],
                probabilities=probs[threshold],
                n_labels=cell.n_labels,
                delta=delta,
                rng=np.random.default_rng([seed, 9, split.split]),
            )
            sets = predict_sets(fitted, judge_scores=scores[test], probabilities=probs[test])
            y = cell.labels[test]
            runs[name].append((sets[np.arange(y.size), y - 1], sets.sum(axis=1), y))
    rows = []
    for name, found in runs.items():
        coverages = np.array([c.mean() for c, _, _ in found])
        covered = np.concatenate([c for c, _, _ in found])
        labels = np.concatenate([y for _, _, y in found])
        pooled = pooled_group_coverage(covered, labels, min_items=20 * len(found))
        size = float(np.concatenate([s for _, s, _ in found]).mean())
        rows.append(
            LearnedRow(
                members=list(cell.members),
                panel=cell.name,
                criterion=cell.criterion,
                alpha=float(alpha),
                method=name,
                coverage=float(coverages.mean()),
                coverage_p5=float(np.percentile(coverages, 5)),
                min_label_coverage=min(c for _, _, c in pooled),
                set_size=size,
                best_member_set_size=best_member_set_size,
                ratio_to_best_member=size / best_member_set_size,
            )
        )
    return rows
