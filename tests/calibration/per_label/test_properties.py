"""Invariants of every shipped per-label rule: over scores 1-5 (and expected scores in between) and the level grid,
the set is a non-empty interval, an accepted point lies in its set, the point and the set's ends never decrease as
the feature rises; and the intervals agree with a brute-force computation of the document-level rule."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from artifact.thresholds import load_artifact
from calibration.per_label.intervals import fit_label_intervals, label_set
from calibration.per_label.rule import LabelAsk, answer_per_label, validate_label_rule
from calibration.per_label.support import evidence_groups, is_supported

SHIPPED = load_artifact(Path(__file__).resolve().parents[3] / "artifact" / "thresholds.json")
LEVELS = ((0.05, 0.05), (0.10, 0.10), (0.20, 0.10), (0.10, 0.20))  # (alpha, accept_alpha)
FEATURES = [1 + 0.125 * k for k in range(33)]  # 1.0 .. 5.0


def test_the_shipped_artifact_has_a_rule_per_recorded_cell_and_kind() -> None:
    assert len(SHIPPED.label_rules) == len(SHIPPED.decision_rules) == 32
    for rule in SHIPPED.label_rules:
        validate_label_rule(rule)


@pytest.mark.parametrize("rule", SHIPPED.label_rules, ids=lambda r: f"{r.judge}-{r.criterion}-{r.input_kind}")
def test_answers_are_coherent(rule) -> None:
    for (alpha, accept_alpha), tolerance in itertools.product(LEVELS, (1, 2)):
        for threshold in (None, 3, 4):
            ask = LabelAsk(alpha=alpha, tolerance=tolerance, accept_alpha=accept_alpha, pass_threshold=threshold)
            answers = [answer_per_label(rule, f, ask) for f in FEATURES]
            previous_point, previous_ends = 0, (0, 0)
            for answer in answers:
                labels = answer.prediction_set
                assert labels and labels == tuple(range(labels[0], labels[-1] + 1))
                assert answer.point in labels
                assert answer.point >= previous_point
                assert labels[0] >= previous_ends[0] and labels[-1] >= previous_ends[1]
                previous_point, previous_ends = answer.point, (labels[0], labels[-1])
                if answer.accepted:
                    assert rule.skill.skilled


def _brute_upper(values: np.ndarray, documents: np.ndarray, alpha: float) -> float:
    """Smallest candidate b with (sum_d share of d's items > b + 1) <= alpha (D + 1); inf if none."""
    docs = np.unique(documents)
    for b in sorted(set(values.tolist())):
        loss = sum(float((values[documents == d] > b + 1e-12).mean()) for d in docs)
        if loss + 1 <= alpha * (docs.size + 1) + 1e-9:
            return b
    return math.inf


def test_intervals_agree_with_brute_force_before_widening() -> None:
    rng = np.random.default_rng(11)
    documents = np.repeat(np.arange(40), 5)
    labels = rng.integers(1, 6, size=documents.size)
    features = np.clip(labels + rng.normal(0, 0.8, size=labels.size), 1, 5)
    groups = evidence_groups(labels, documents, 5)
    supported = [is_supported(labels, documents, g) for g in groups]
    row = fit_label_intervals(features, labels, documents, groups, [0.2], supported=supported)[0]
    raw_upper_1 = _brute_upper(features[labels == 1], documents[labels == 1], 0.2)
    raw_lower_5 = -_brute_upper(-features[labels == 5], documents[labels == 5], 0.2)
    # label 1's upper end is at least its own bound (widening only widens), label 5's lower end at most its own
    assert row.upper[0] is not None and row.upper[0] >= raw_upper_1 - 1e-12
    assert row.lower[4] is not None and row.lower[4] <= raw_lower_5 + 1e-12
    for feature in features:
        low, high = label_set(row, float(feature))
        assert 1 <= low <= high <= 5


def test_evidence_groups_pool_a_rare_label_toward_the_centre() -> None:
    documents = np.repeat(np.arange(30), 4)
    labels = np.array([3] * 60 + [2] * 40 + [1] * 5 + [5] * 15)
    groups = evidence_groups(labels, documents, 5)
    assert groups[0] == (1, 2)  # 5 items of label 1: pooled with 2
    assert groups[2] == (3,)
    assert groups[3][0] <= 4 <= groups[3][-1] and len(groups[3]) > 1  # no label 4 at all: pooled
