"""Watching skill on the recorded SummEval judges, as served: a cell's per-label rule fitted on 50 documents of one
judge and fed the weakest judge's verdicts (llama-2-7b-chat, the lowest Kendall tau on every criterion, which says
5 for most items) with the true labels alarms in every order within 800 labels (median); the judge's own stream on
the other documents raises no alarm in >= 95% of orders; the study's monitor is exactly the one the service starts
for such an answer, and each label speaks to it as the service reads it. Seeded, 100 orders a row."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from calibration.monitoring import watched_outcome
from calibration.per_label.rule import LabelAsk, answer_per_label
from offline.studies.monitoring.skill import (
    SkillSettings,
    calibration_items,
    served_rule,
    skill_markdown,
    skill_row,
    skill_spec,
    skill_table,
    weakest_judge,
)
from service.monitoring.cells import label_outcome, served_label, watched_spec
from service.wire.score import Guarantee, ScoreResponse

SETTINGS = SkillSettings(streams=100)
WEAK = "llama-2-7b-chat"
SWAPS = [
    ("gpt-4o-mini-2024-07-18", "consistency"),
    ("qwen2.5-72b-instruct", "consistency"),
    ("qwen2.5-72b-instruct", "relevance"),
]


def _cell(recorded_cells, judge: str, criterion: str):
    return next(c for c in recorded_cells if (c.judge, c.criterion) == (judge, criterion))


def test_the_weakest_judge_is_llama_2_7b_on_every_criterion(recorded_cells) -> None:
    cells = list(recorded_cells)
    assert {weakest_judge(cells, c) for c in ("coherence", "consistency", "fluency", "relevance")} == {WEAK}


@pytest.mark.parametrize(("judge", "criterion"), SWAPS)
def test_a_judge_silently_replaced_by_the_weakest_alarms_and_its_own_stream_does_not(
    recorded_cells, judge: str, criterion: str
) -> None:
    calibrated = _cell(recorded_cells, judge, criterion)
    swap = skill_row(calibrated, _cell(recorded_cells, WEAK, criterion), SETTINGS)
    assert swap.skilled and swap.alarm_rate == 1.0 and swap.median_labels <= 800, swap
    assert swap.worst_label_coverage < 0.5  # a label the weak judge no longer tells apart
    own = skill_row(calibrated, None, SETTINGS)
    assert own.alarm_rate <= 0.05, own
    table = skill_markdown([own, swap])
    assert f"| {criterion} | {judge} | {WEAK} | yes |" in table and "(own)" in table


def _served(answer, alpha_asked: float) -> ScoreResponse:
    """The per-label answer as /v1/score gives it (service.scoring.per_label: set_coverage and, for a skilled
    judge, accept_error, each in mode per_label)."""
    guarantees = [Guarantee(kind="set_coverage", alpha=answer.alpha, mode="per_label")]
    if answer.skilled and answer.accept_alpha is not None:
        guarantees.append(Guarantee(kind="accept_error", alpha=answer.accept_alpha, mode="per_label", tolerance=2))
    return ScoreResponse(
        criterion="consistency", judge="j", prompt_family="f", source="caller", judge_score=5, probabilities=None,
        prediction_set=list(answer.prediction_set), set_size=len(answer.prediction_set), alpha=alpha_asked,
        coverage_target=1 - alpha_asked, method="per_label_intervals", calibrated=True, input_kind="score",
        decision="accept" if answer.accepted else "escalate", escalate=not answer.accepted, point=answer.point,
        guarantees=guarantees, rule_failed=False, reason=answer.reason, calibration_id="c", n_cal=100,
        heldout_coverage=None, cached=False, judge_calls=0, raw_reply=None,
    )  # fmt: skip


def test_the_study_watches_what_the_service_watches_and_reads_each_label_as_it_does(recorded_cells) -> None:
    calibrated = _cell(recorded_cells, "qwen2.5-72b-instruct", "consistency")
    rule = served_rule(calibrated, calibration_items(calibrated, SETTINGS))
    ask = LabelAsk(alpha=0.1, tolerance=2, accept_alpha=0.1)
    weak = _cell(recorded_cells, WEAK, "consistency")
    for score in range(1, 6):
        answer = answer_per_label(rule, float(score), ask)
        response = _served(answer, 0.1)
        spec = skill_spec(rule, answer, SETTINGS)
        served = watched_spec(response, n_labels=5, accepts=answer.skilled, max_items=16, delta=0.025, horizon=1000)
        assert served == spec
        labels = weak.labels[weak.judge_scores == score][:60].astype(int)
        covered = np.asarray([y in answer.prediction_set for y in labels])
        accepted = np.full(labels.shape, answer.accepted)
        wrong = accepted & (np.abs(labels - answer.point) >= 2)
        outcomes = [label_outcome(served, served_label(response, float(y), 5)) for y in labels]
        for j, watched in enumerate(spec.guarantees):
            counted, failed = watched_outcome(watched, label=labels, covered=covered, accepted=accepted, wrong=wrong,
                                              per_label=True, accept_served=len(response.guarantees) == 2)  # fmt: skip
            assert counted.tolist() == [o.counted[j] for o in outcomes]
            assert failed.tolist() == [o.failed[j] for o in outcomes]


def test_the_table_pairs_every_skilled_judge_with_the_weakest_and_lists_every_own_stream(recorded_cells) -> None:
    cells = [c for c in recorded_cells if c.criterion == "consistency"]
    rows = skill_table(cells, dataclasses.replace(SETTINGS, streams=20))
    own = [r for r in rows if r.verdicts_of == r.calibrated]
    swaps = [r for r in rows if r.verdicts_of != r.calibrated]
    assert len(own) == len(cells) and all(r.alarm_rate <= 0.05 for r in own)
    assert {r.verdicts_of for r in swaps} == {WEAK} and all(r.skilled for r in swaps)
    assert {"gpt-4o-mini-2024-07-18", "qwen2.5-72b-instruct"} <= {r.calibrated for r in swaps}
