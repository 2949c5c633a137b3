"""What a monitor watches, without Redis: under a label-conditional guarantee a judge replaced by one that always says
5 alarms on the human label it no longer tells apart, explained in words, while the same stream served under a
marginal guarantee (which promises no per-label rate) keeps quiet; the spec's weights split the budget in halves;
a rule that accepts nothing leaves accept error unwatched. Seeded."""

from __future__ import annotations

import numpy as np

from calibration.monitoring import CellSpec, explain_alarm, start_cell
from service.monitoring.batch import Batch, Labelled
from service.monitoring.cells import served_label, watched_spec
from service.wire.score import Guarantee, ScoreResponse


def _answer(mode: str) -> ScoreResponse:
    """The answer a cell serves for a verdict of 5: set {4, 5}, point 5, accepted."""
    return ScoreResponse(
        criterion="relevance", judge="j", prompt_family="f", source="caller", judge_score=5, probabilities=None,
        prediction_set=[4, 5], set_size=2, alpha=0.1, coverage_target=0.9, method="label_conditional",
        calibrated=True, input_kind="score", decision="accept", escalate=False, point=5,
        guarantees=[
            Guarantee(kind="set_coverage", alpha=0.1, mode=mode),  # type: ignore[arg-type]
            Guarantee(kind="accept_error", alpha=0.1, mode=mode, tolerance=2),  # type: ignore[arg-type]
        ],
        rule_failed=False, reason="served", calibration_id="c", n_cal=100, heldout_coverage=None, cached=False,
        judge_calls=0, raw_reply=None,
    )  # fmt: skip


def _stream(mode: str, documents: int = 150) -> tuple[CellSpec, Batch]:
    answer = _answer(mode)
    spec = watched_spec(answer, n_labels=5, accepts=True, max_items=8, delta=0.025, horizon=1000)
    batch = Batch(spec=spec, state=start_cell(spec), seen=set(), closed=set(), documents={}, n_open=0,
                  max_open=1000, bytes_left=10**9, max_bytes=10**9)  # fmt: skip
    rng = np.random.default_rng(41)
    for d in range(documents):
        # human labels: mostly 4 and 5, label 2 for 8% of the items (every one outside the set for a 5)
        labels = rng.choice([2, 4, 5], size=8, p=[0.08, 0.46, 0.46])
        for i, label in enumerate(labels):
            item = Labelled(index=i, item_id=f"d{d}/{i}", group=f"d{d}", done=i == 7,
                            served=served_label(answer, float(label), 5))  # fmt: skip
            batch.add(item)
    return spec, batch


def test_a_constant_judge_alarms_on_the_label_it_cannot_tell_apart_under_a_per_label_guarantee() -> None:
    spec, batch = _stream("per_label")
    assert len(spec.guarantees) == 2 + 2 * 5  # whole cell, then coverage and accept error per human label
    assert spec.weights is not None and abs(sum(spec.weights[:2]) - 0.5) < 1e-12
    alarm = batch.state.alarm
    assert alarm is not None and alarm.human_label == 2 and alarm.document <= 100
    assert alarm.failures == alarm.counted  # every item labelled 2 missed (or was accepted wrong)
    words = explain_alarm(alarm)
    assert "human label 2" in words and f"{alarm.failures} of {alarm.counted} items labelled 2 (100%)" in words


def test_the_same_stream_under_a_marginal_guarantee_watches_no_label_and_keeps_quiet() -> None:
    spec, batch = _stream("expected")
    assert [g.human_label for g in spec.guarantees] == [None, None]  # no per-label promise, none watched
    assert batch.state.alarm is None  # 8% missed, 8% accepted wrong: within the marginal levels of 10%


def test_a_rule_that_accepts_nothing_leaves_accept_error_unwatched() -> None:
    spec = watched_spec(_answer("per_label"), n_labels=5, accepts=False, max_items=8, delta=0.05, horizon=10)
    assert {g.guarantee for g in spec.guarantees} == {"coverage"} and len(spec.guarantees) == 1 + 5
