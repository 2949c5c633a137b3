"""What the served answers were worth on held-out documents: per human label, set sizes and the operating curve.

Input: one row per held-out item, as the service answered it (the set from the served set rule, the point and the
accepted flag from the served decision function, which the caller ran; nothing is decided here). Rules:

* **Set coverage**: the human label lies in the served set (an interval ``[low, high]``; an empty set is
  ``low > high`` and covers nothing); set size ``high - low + 1`` (0 when empty).
* **Wrongly accepted**: accepted and ``|human - point| >= tolerance`` (the decision's error rule). Per human label
  as a share of the label's items; the operating curve gives it as the error among accepted items.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import numpy as np

from calibration.errors import CalibrationError, EmptyCalibrationError
from calibration.report_card.card import LabelEvidence, ModeEvidence, OperatingPoint

__all__ = ["HeldoutAnswers", "mode_evidence", "split_documents"]


class HeldoutAnswers(msgspec.Struct, frozen=True, kw_only=True):
    """One guarantee mode's answers on held-out items: ``points[i][a]`` and ``accepted[i][a]`` at
    ``accept_alphas[a]`` (a per-label point moves with the decision's level; a decision rule's does not)."""

    mode: str
    alpha: float
    labels: list[int]
    groups: list[str]
    set_low: list[int]
    set_high: list[int]
    points: list[list[int]]
    accept_alphas: list[float]
    accepted: list[list[bool]]


def _share(part: np.ndarray, whole: np.ndarray) -> float | None:
    return float(part.sum() / whole.sum()) if whole.sum() > 0 else None


def mode_evidence(answers: HeldoutAnswers, *, n_labels: int, tolerance: int, accept_alpha: float) -> ModeEvidence:
    """The mode's figures (module rules); ``accept_alpha`` must be one of ``answers.accept_alphas``."""
    labels = np.asarray(answers.labels, dtype=np.int64)
    if labels.size == 0:
        raise EmptyCalibrationError("no held-out items")
    low, high = np.asarray(answers.set_low), np.asarray(answers.set_high)
    shape = (labels.size, len(answers.accept_alphas))
    points = np.asarray(answers.points, dtype=np.int64).reshape(shape)
    accepted = np.asarray(answers.accepted, dtype=bool).reshape(shape)
    if not (low.size == high.size == labels.size == len(answers.groups)):
        raise CalibrationError("every held-out item needs a label, a group, a set and a point")
    column = next((i for i, a in enumerate(answers.accept_alphas) if abs(a - accept_alpha) < 1e-9), None)
    if column is None:
        raise CalibrationError(f"accept_alpha {accept_alpha} is not one of {answers.accept_alphas}")
    covered = (low <= labels) & (labels <= high)
    sizes = np.where(high >= low, high - low + 1, 0)
    wrong = np.abs(labels[:, None] - points) >= tolerance  # (items, levels)
    groups = np.asarray(answers.groups, dtype=object)
    chosen, chosen_wrong = accepted[:, column], wrong[:, column]
    per_label = []
    for label in range(1, n_labels + 1):
        mine = labels == label
        per_label.append(
            LabelEvidence(
                label=label,
                n_items=int(mine.sum()),
                n_documents=len(set(groups[mine].tolist())),
                set_coverage=_share(covered & mine, mine),
                accept_share=_share(chosen & mine, mine),
                wrongly_accepted_share=_share(chosen & chosen_wrong & mine, mine),
            )
        )
    curve = []
    for index, level in enumerate(answers.accept_alphas):
        taken = accepted[:, index]
        curve.append(
            OperatingPoint(
                accept_alpha=level,
                accept_share=float(taken.mean()),
                error_among_accepted=_share(taken & wrong[:, index], taken),
                n_accepted=int(taken.sum()),
            )
        )
    return ModeEvidence(
        mode=answers.mode,
        alpha=answers.alpha,
        accept_alpha=accept_alpha,
        coverage=float(covered.mean()),
        mean_set_size=float(sizes.mean()),
        set_size_counts=[int(c) for c in np.bincount(sizes, minlength=n_labels + 1)[: n_labels + 1]],
        accept_share=float(chosen.mean()),
        wrongly_accepted_share=float((chosen & chosen_wrong).mean()),
        per_label=per_label,
        operating_curve=curve,
    )


def split_documents(groups: Sequence[object], folds: int, seed: int) -> list[np.ndarray]:
    """Item indices of each fold: the distinct documents shuffled by ``default_rng(seed)`` and dealt round-robin."""
    names = np.asarray([str(g) for g in groups], dtype=object)
    documents = np.array(sorted(set(names.tolist())), dtype=object)
    if documents.size < folds:
        raise EmptyCalibrationError(f"{documents.size} document(s) cannot make {folds} folds")
    shuffled = documents[np.random.default_rng(seed).permutation(documents.size)]
    return [np.flatnonzero(np.isin(names, shuffled[f::folds])) for f in range(folds)]
