"""The populations the study streams: the calibrated judge's own verdicts, or verdicts changed the way production
changes them, always with the true human labels of SummEval.

* ``none``: the calibration's own population (the cell's recorded verdicts, unchanged);
* ``harsher`` / ``lenient``: a silent model update, every verdict one label lower / higher (clipped to 1..K; with
  log-probs, the probability of label k moves to k - 1 / k + 1, the end label keeping what falls off the scale);
* ``swap``: another recorded judge's verdicts on the same items served under the calibrated judge's name;
* ``new_input``: SummEval's extractive systems (M0, M1, M2, M5), streamed against a calibration fitted on the
  abstractive systems only (:mod:`offline.studies.monitoring.abstractive`); ``abstractive`` is that calibration's
  own population (its no-shift control).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from offline.build.cell_data import JudgeCriterionData

__all__ = ["EXTRACTIVE_SYSTEMS", "KINDS", "by_systems", "shifted", "swapped"]

EXTRACTIVE_SYSTEMS = frozenset({"M0", "M1", "M2", "M5"})
KINDS: tuple[str, ...] = ("none", "harsher", "lenient", "swap", "abstractive", "new_input")


def _take(data: JudgeCriterionData, keep: np.ndarray) -> JudgeCriterionData:
    index = np.flatnonzero(keep)
    return dataclasses.replace(
        data,
        item_ids=tuple(data.item_ids[i] for i in index),
        labels=data.labels[index],
        judge_scores=data.judge_scores[index],
        probabilities=None if data.probabilities is None else data.probabilities[index],
        means=None if data.means is None else data.means[index],
        groups=None if data.groups is None else tuple(data.groups[i] for i in index),
        n_answered=int(index.size),
        n_excluded=0,
    )


def shifted(data: JudgeCriterionData, by: int) -> JudgeCriterionData:
    """Every verdict moved by ``by`` labels (module rules)."""
    scores = np.clip(data.judge_scores + by, 1, data.n_labels)
    probabilities = None
    if data.probabilities is not None:
        p = np.asarray(data.probabilities, dtype=float)
        moved = np.zeros_like(p)
        k = data.n_labels
        for label in range(k):
            moved[:, min(max(label + by, 0), k - 1)] += p[:, label]
        probabilities = moved
    return dataclasses.replace(data, judge_scores=scores, probabilities=probabilities)


def swapped(calibrated: JudgeCriterionData, other: JudgeCriterionData) -> JudgeCriterionData:
    """``other``'s verdicts on the items both judged, under ``calibrated``'s name (labels are the items' own)."""
    keep = np.isin(np.asarray(other.item_ids), np.asarray(calibrated.item_ids))
    taken = _take(other, keep)
    return dataclasses.replace(
        taken, judge=calibrated.judge, prompt_family=calibrated.prompt_family, criterion=calibrated.criterion
    )


def by_systems(data: JudgeCriterionData, *, extractive: bool) -> JudgeCriterionData:
    """The items of the extractive systems (``extractive``) or of the abstractive ones."""
    systems = np.asarray([item_id.split("/", 1)[1] for item_id in data.item_ids])
    return _take(data, np.isin(systems, list(EXTRACTIVE_SYSTEMS)) == extractive)
