"""The caller's ``judge_logprobs``: a token not sent ranks below every token sent (service.scoring.verdict).

Checked against the rule written out independently here (a brute-force argmax over the tokens sent), and against
the recorded data's fill (ln 1e-5) wherever every value sent is above it.
"""

from __future__ import annotations

import math

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibration.conformal import probabilities_from_logprobs
from service.scoring.panel_members import caller_member
from service.scoring.verdict import MISSING_LOGPROB, filled_logprobs, own_verdict
from service.wire.score import MemberVerdict, ScoreRequest
from tests.service.conftest import STAND_IN, AppHarness

FLOOR = math.log(1e-5)

# log-probs on a 0.05 grid: distinct values stay distinct after exp (no ties made by rounding)
sent_values = st.dictionaries(st.integers(1, 5), st.integers(-1200, 0).map(lambda x: x / 20), min_size=1, max_size=5)


def _request(logprobs: dict[int, float]) -> ScoreRequest:
    body = {"criterion": "coherence", "judge_logprobs": {str(k): v for k, v in logprobs.items()}}
    return msgspec.convert(body, ScoreRequest)


def _sent_argmax(logprobs: dict[int, float]) -> int:
    """The most probable token sent, the lower one on ties (brute force, no fill involved)."""
    top = max(logprobs.values())
    return min(k for k, v in logprobs.items() if v == top)


def test_tokens_below_the_floor_are_not_demoted_by_the_missing_ones(app: AppHarness):
    body = {"criterion": "coherence", "judge": STAND_IN, "judge_logprobs": {"4": -12, "3": -13}}
    reply = app.client.post("/v1/score", json=body)
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert data["judge_score"] == 4
    probabilities = data["probabilities"]
    assert probabilities[3] > probabilities[2] > max(probabilities[0], probabilities[1], probabilities[4])
    # the 4:3 odds sent are kept: e^-12 / e^-13
    assert probabilities[3] / probabilities[2] == pytest.approx(math.e)


def test_a_single_token_sent_at_the_floor_is_the_verdict():
    verdict = own_verdict(_request({4: FLOOR}))
    assert verdict.judge_score == 4
    assert verdict.probabilities is not None and verdict.probabilities[3] > 0.99


def test_the_fill_below_the_floor_is_the_lowest_sent_plus_ln_1e5():
    assert filled_logprobs([None, -12.0, None, -20.0, None]) == [
        -20.0 + FLOOR,
        -12.0,
        -20.0 + FLOOR,
        -20.0,
        -20.0 + FLOOR,
    ]
    assert MISSING_LOGPROB == FLOOR


@settings(max_examples=300, deadline=None)
@given(sent_values)
def test_the_argmax_of_what_was_sent_is_the_verdict(logprobs: dict[int, float]):
    verdict = own_verdict(_request(logprobs))
    assert verdict.judge_score == _sent_argmax(logprobs)
    assert verdict.probabilities is not None
    missing = [verdict.probabilities[k - 1] for k in range(1, 6) if k not in logprobs]
    lowest_sent = min(verdict.probabilities[k - 1] for k in logprobs)
    assert all(p < lowest_sent for p in missing)


@settings(max_examples=300, deadline=None)
@given(sent_values.filter(lambda d: min(d.values()) > FLOOR))
def test_inputs_above_the_floor_read_as_the_recorded_data_convention(logprobs: dict[int, float]):
    # The calibration data filled tokens outside the judge's top-k at ln 1e-5: those answers must not move.
    recorded_fill = [logprobs.get(k, FLOOR) for k in range(1, 6)]
    expected = probabilities_from_logprobs(recorded_fill)
    verdict = own_verdict(_request(logprobs))
    assert verdict.probabilities is not None
    np.testing.assert_array_equal(np.array(verdict.probabilities), expected)


def test_a_panel_members_logprobs_follow_the_same_rule():
    member = msgspec.convert({"judge": "judge-a", "judge_logprobs": {"4": -12, "3": -13}}, MemberVerdict)
    answer = caller_member(member, 5)
    assert answer.probabilities is not None
    assert max(range(5), key=lambda k: answer.probabilities[k]) == 3
    assert answer.expected_score == pytest.approx(
        (3 * math.exp(-13) + 4 * math.exp(-12)) / (math.exp(-13) + math.exp(-12)), abs=1e-3
    )
