"""What a served cell watches, and the per-document unit of its per-label guarantees (seeds fixed; about a second):

* the spec: whole-cell guarantees per item, per-label ones per document, weights positive and summing to 1 (half
  each), no accept error when no accept level is served, no per-label guarantee under a marginal mode;
* a label's outcome: the same item by item and elementwise;
* the document unit: one document at a time equals the vectorised path; on null streams at the boundary of the
  per-document promise (a document's share of failures has mean alpha, documents of 0 to 4 counted items, items of
  a document failing together, and small documents failing more often, so the item-weighted rate is below alpha),
  false alarms stay <= delta + Monte-Carlo slack; a share of 0.3 alarms;
* a small cell: a judge swapped for one that always says 5 alarms on a label it no longer tells apart, the judge
  itself keeps quiet;
* a guarantee stored before the unit existed decodes per item, and a per-document path needs the counted items."""

from __future__ import annotations

import math

import msgspec
import numpy as np
import pytest

from calibration.monitoring import (
    CellSpec,
    GuaranteeSpec,
    cell_alarm_index,
    detector_path,
    excess_path,
    single_level_tally,
    start_detector,
    update_detector,
    watched_cell_spec,
    watched_outcome,
)
from calibration.monitoring.detector import e_value

ALPHA = 0.1
DELTA = 0.05
STREAMS = 2000
HORIZON = 100
MC_SLACK = 3 * math.sqrt(DELTA * (1 - DELTA) / STREAMS)


def _spec(**changes: object) -> CellSpec:
    settings: dict[str, object] = dict(alpha=0.1, accept_alpha=0.1, tolerance=2, per_label=True, n_labels=5,
                                       max_items=16, delta=0.025, horizon=1000)  # fmt: skip
    settings.update(changes)
    return watched_cell_spec(**settings)  # type: ignore[arg-type]


def test_the_spec_watches_labels_per_document_and_splits_the_budget_in_halves() -> None:
    spec = _spec()
    assert spec.weights is not None and abs(sum(spec.weights) - 1.0) < 1e-12 and min(spec.weights) > 0
    whole = [g for g in spec.guarantees if g.human_label is None]
    per = [g for g in spec.guarantees if g.human_label is not None]
    assert [g.guarantee for g in whole] == ["coverage", "accept_error"] and {g.unit for g in whole} == {"item"}
    assert len(per) == 10 and {g.unit for g in per} == {"document"}
    assert abs(sum(spec.weights[:2]) - 0.5) < 1e-12
    no_accept = _spec(accept_alpha=None)
    assert {g.guarantee for g in no_accept.guarantees} == {"coverage"} and len(no_accept.guarantees) == 6
    marginal = _spec(per_label=False)
    assert [g.human_label for g in marginal.guarantees] == [None, None] and marginal.weights == [0.5, 0.5]


def test_an_outcome_is_the_same_item_by_item_and_elementwise() -> None:
    rng = np.random.default_rng(3)
    labels = rng.integers(1, 6, size=200)
    covered, accepted = rng.random(200) < 0.8, rng.random(200) < 0.5
    wrong = accepted & (rng.random(200) < 0.3)
    for watched in _spec().guarantees:
        counted, failed = watched_outcome(watched, label=labels, covered=covered, accepted=accepted, wrong=wrong,
                                          per_label=True, accept_served=True)  # fmt: skip
        one = [
            watched_outcome(
                watched,
                label=int(y),
                covered=bool(c),
                accepted=bool(a),
                wrong=bool(w),
                per_label=True,
                accept_served=True,
            )  # fmt: skip
            for y, c, a, w in zip(labels, covered, accepted, wrong, strict=True)
        ]
        assert counted.tolist() == [bool(c) for c, _ in one] and failed.tolist() == [bool(f) for _, f in one]
        assert not np.any(failed & ~counted)
    label_two = next(g for g in _spec().guarantees if g.human_label == 2 and g.guarantee == "coverage")
    counted, _ = watched_outcome(label_two, label=labels, covered=covered, accepted=accepted, wrong=wrong,
                                 per_label=False, accept_served=True)  # fmt: skip
    assert not np.any(counted)  # a marginal answer's label speaks to no per-label guarantee


def _per_document_null(rng: np.random.Generator, share: float) -> tuple[np.ndarray, np.ndarray]:
    """Documents of 0..4 counted items failing all together; a document of one item fails with probability
    ``2 share``, larger ones with ``share * 2/3`` (so the documents with items have a mean share of exactly
    ``share``: 1/4 of them hold one item), and the item-weighted rate is below ``share``."""
    counted = rng.integers(0, 5, size=(STREAMS, HORIZON))
    p = np.where(counted == 1, 2 * share, share * 2 / 3)
    failures = np.where(rng.random(counted.shape) < p, counted, 0)
    return failures, counted


def test_the_document_unit_keeps_false_alarms_at_delta_on_null_streams_and_alarms_on_a_harm() -> None:
    spec = GuaranteeSpec(guarantee="coverage", level=ALPHA, human_label=2, max_items=16, unit="document")
    cell = CellSpec(guarantees=[spec], delta=DELTA, horizon=HORIZON)
    rng = np.random.default_rng(20261207)
    failures, counted = _per_document_null(rng, ALPHA)
    null = float(np.mean(cell_alarm_index(cell, detector_path(spec, failures, counted)) >= 0))
    assert null <= DELTA + MC_SLACK, null
    harm_failures, harm_counted = _per_document_null(rng, 0.3)
    path = detector_path(spec, harm_failures[:200], harm_counted[:200])
    assert np.mean(cell_alarm_index(cell, path) >= 0) >= 0.9
    # one document at a time, as a monitor updates, gives the same statistic as the vectorised path
    state = start_detector(spec)
    for f, c in zip(harm_failures[0, :40], harm_counted[0, :40], strict=True):
        state = update_detector(spec, state, single_level_tally(labels=int(c), counted=int(c), failures=int(f),
                                                                level=ALPHA))  # fmt: skip
    expected = excess_path(spec, harm_failures[0, :40] / ALPHA - harm_counted[0, :40], counted=harm_counted[0, :40])
    assert math.isclose(e_value(spec, state), float(expected[-1]), rel_tol=1e-9)


def test_a_judge_swapped_for_a_constant_one_alarms_and_the_judge_itself_keeps_quiet() -> None:
    """Labels 1..5 with a judge that says its label give or take one; the set for a score s is {s-1, s, s+1}; the
    constant judge says 5 (set {4, 5}, accepted, point 5)."""
    spec = _spec()
    rng = np.random.default_rng(11)
    streams, documents, size = 200, 60, 12

    def alarms(constant: bool) -> np.ndarray:
        labels = rng.choice(5, size=(streams, documents, size), p=[0.05, 0.1, 0.15, 0.3, 0.4]) + 1
        noise = rng.choice([-1, 0, 1], labels.shape, p=[0.03, 0.94, 0.03])
        score = np.full(labels.shape, 5) if constant else np.clip(labels + noise, 1, 5)
        covered = np.abs(labels - score) <= 1
        accepted = score == 5
        wrong = accepted & (np.abs(labels - 5) >= 2)
        path = np.zeros((streams, documents))
        for j, watched in enumerate(spec.guarantees):
            counted, failed = watched_outcome(watched, label=labels, covered=covered, accepted=accepted, wrong=wrong,
                                              per_label=True, accept_served=True)  # fmt: skip
            excess = (failed / watched.level - counted).sum(axis=2)
            path += spec.weight(j) * excess_path(watched, excess, counted=counted.sum(axis=2))
        return cell_alarm_index(spec, path)

    assert np.mean(alarms(constant=False) >= 0) <= 0.05
    swapped = alarms(constant=True)
    assert np.all(swapped >= 0) and np.median(swapped + 1) * size <= 400


def test_a_spec_stored_before_the_unit_existed_decodes_per_item() -> None:
    stored = b'{"guarantee":"coverage","level":0.1,"human_label":2,"max_items":16,"grid_size":10,"bet_fraction":0.9}'
    spec = msgspec.json.decode(stored, type=GuaranteeSpec)
    assert spec.unit == "item"
    with pytest.raises(ValueError, match="counted items"):
        excess_path(msgspec.structs.replace(spec, unit="document"), np.zeros(3))
