"""The deepeval metric against the running service (tests/client/integrations/conftest.py), with the real deepeval
package: the metric's score, success and reason are the service's verdict for the test case's text, deepeval's own
``evaluate`` and ``assert_test`` run it, and a failed judge call or a bad request is an error, never a pass."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import deepeval
import httpx
import pytest
from conformal_judge_client import ApiError
from conformal_judge_client.integrations.deepeval import ConformalJudgeMetric
from conformal_judge_client.integrations.verdicts import ScoreSpec, ServiceConnection
from deepeval.evaluate.configs import AsyncConfig, DisplayConfig, ErrorConfig
from deepeval.test_case import LLMTestCase

from tests.client.integrations.conftest import JUDGE, JudgedService
from tests.fakes.judge_server import ScriptedReply, peaked_logprobs

ARTICLE = "The council approved the new park budget on Monday after a long debate about the cost of upkeep."


@pytest.fixture(scope="module", autouse=True)
def _event_loop_for_deepeval() -> Iterator[None]:
    """deepeval runs its async metrics on the thread's current event loop, creating one it never closes when
    there is none: give it one for the module and close it afterwards."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield
    asyncio.set_event_loop(None)
    loop.close()


@pytest.fixture(autouse=True)
def _scratch_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """deepeval writes its run cache under ``.deepeval`` in the working directory: keep it out of the checkout."""
    monkeypatch.chdir(tmp_path)


def metric(service: JudgedService, **spec: Any) -> ConformalJudgeMetric:
    connection = ServiceConnection(service.url, api_key=service.api_key, timeout=30)
    return ConformalJudgeMetric(connection, ScoreSpec(criterion="coherence", judge=JUDGE, **spec))


def service_answer(service: JudgedService, summary: str) -> dict[str, Any]:
    """The service's JSON for the same request, sent with plain httpx."""
    body = {"criterion": "coherence", "judge": JUDGE, "document": ARTICLE, "summary": summary}
    reply = httpx.post(
        f"{service.url}/v1/score", json=body, headers={"Authorization": f"Bearer {service.api_key}"}, timeout=30
    )
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_an_accepted_verdict_is_a_success_with_the_calibrated_point(service: JudgedService) -> None:
    scored = metric(service)
    case = LLMTestCase(input=ARTICLE, actual_output="The council approved the park budget.", name="case-accept")
    assert scored.measure(case) == 3.0
    assert (scored.score, scored.success, scored.error) == (3.0, True, None)
    raw = service_answer(service, "The council approved the park budget.")
    assert scored.verdict is not None and scored.verdict.decision == raw["decision"] == "accept"
    assert scored.score_breakdown["prediction_set"] == raw["prediction_set"]
    assert scored.score_breakdown["decision"] == "accept" and scored.score_breakdown["confidence"] == 0.9
    assert scored.reason.startswith(f"coherence: point 3, 90% prediction set {{{raw['prediction_set'][0]}")
    assert "decision accept" in scored.reason and raw["reason"] in scored.reason
    prompt = service.judge.requests[0].prompt_text
    assert "The council approved the park budget." in prompt and "cost of upkeep" in prompt  # the case was judged
    assert service.judge.call_count == 1 and scored.verdict.item_id == "case-accept"


def test_the_pac_mode_is_asked_for_and_named_in_the_verdict(service: JudgedService) -> None:
    default = metric(service)
    pac = metric(service, guarantee="pac")
    case = LLMTestCase(input=ARTICLE, actual_output="The council approved the park budget.", name="case-pac")
    default.measure(case)
    pac.measure(case)
    assert default.verdict is not None and pac.verdict is not None
    assert {g.mode for g in default.verdict.guarantees} == {"per_label"}
    assert all(g.confidence is None for g in default.verdict.guarantees)
    assert {g.mode for g in pac.verdict.guarantees} == {"pac"}
    assert all(g.confidence == 0.95 for g in pac.verdict.guarantees)
    assert default.verdict.decision == pac.verdict.decision == "accept"  # the middle bin, certified in both modes


def test_an_escalated_verdict_is_not_a_success(service: JudgedService) -> None:
    service.judge_replies(5)
    scored = metric(service)
    case = LLMTestCase(input=ARTICLE, actual_output="A budget for a park was approved on Monday by the council.")
    assert scored.measure(case) == 4.0
    assert scored.verdict is not None and scored.verdict.decision == "escalate"
    assert scored.success is False and scored.is_successful() is False
    assert 5 in scored.score_breakdown["prediction_set"] and "decision escalate" in scored.reason


def test_a_threshold_above_the_accepted_point_fails_the_case(service: JudgedService) -> None:
    connection = ServiceConnection(service.url, api_key=service.api_key)
    strict = ConformalJudgeMetric(connection, ScoreSpec("coherence", judge=JUDGE), threshold=4)
    strict.measure(LLMTestCase(input=ARTICLE, actual_output="Park budget approved after a debate."))
    assert strict.verdict is not None and (strict.verdict.decision, strict.score) == ("accept", 3.0)
    assert strict.success is False  # accepted, but the point 3 is below the threshold 4
    assert metric(service).threshold == 1 and metric(service, pass_threshold=4).threshold == 4


def test_a_pass_threshold_is_sent_and_the_services_gate_decides(service: JudgedService) -> None:
    gated = metric(service, pass_threshold=3)
    case = LLMTestCase(input=ARTICLE, actual_output="Park budget approved after debate.")
    assert gated.request_body(case)["pass_threshold"] == 3
    gated.measure(case)
    # the probabilities rule has no quality gate: the service cannot certify a pass, so the case is not a success
    assert gated.verdict is not None and gated.verdict.decision == "escalate"
    assert (gated.score, gated.success) == (3.0, False)
    assert "pass_threshold 3" in gated.reason


def test_deepeval_evaluate_reports_each_case_with_the_services_verdict(service: JudgedService) -> None:
    def by_text(body: dict[str, Any]) -> ScriptedReply:
        text = "\n".join(str(message.get("content")) for message in body["messages"])
        score = 3 if "GOOD-SUMMARY" in text else 5
        return ScriptedReply(str(score), peaked_logprobs(score, sharpness=3.0))

    service.judge.responder = by_text
    cases = [
        LLMTestCase(input=ARTICLE, actual_output="GOOD-SUMMARY: the council approved the budget.", name="good"),
        LLMTestCase(input=ARTICLE, actual_output="Other: the council met on Monday.", name="other"),
    ]
    result = deepeval.evaluate(
        cases,
        [metric(service)],
        async_config=AsyncConfig(run_async=True),
        display_config=DisplayConfig(show_indicator=False, print_results=False),
    )
    by_name = {test.name: test for test in result.test_results}
    assert set(by_name) == {"good", "other"}
    good, other = by_name["good"].metrics_data[0], by_name["other"].metrics_data[0]
    assert (good.score, good.success, good.error) == (3.0, True, None)
    assert (other.score, other.success, other.error) == (4.0, False, None)
    assert by_name["good"].success is True and by_name["other"].success is False
    assert "decision accept" in good.reason and "decision escalate" in other.reason
    assert service.judge.call_count == 2


def test_assert_test_fails_an_escalated_case(service: JudgedService) -> None:
    service.judge_replies(5)
    case = LLMTestCase(input=ARTICLE, actual_output="Something about a park, maybe.")
    with pytest.raises(AssertionError, match="Conformal Judge"):
        deepeval.assert_test(case, [metric(service)], run_async=False)


def test_a_failed_judge_call_raises_and_is_recorded_never_a_pass(service: JudgedService) -> None:
    service.judge.outage = "error_500"
    scored = metric(service)
    case = LLMTestCase(input=ARTICLE, actual_output="The judge will fail on this one.")
    with pytest.raises(ApiError) as raised:
        scored.measure(case)
    assert raised.value.status == 502 and raised.value.type.endswith("judge-call-failed")
    assert scored.success is False and scored.score is None and scored.is_successful() is False
    assert scored.error is not None and "502" in scored.error
    result = deepeval.evaluate(
        [case],
        [metric(service)],
        async_config=AsyncConfig(run_async=True),
        display_config=DisplayConfig(show_indicator=False, print_results=False),
        error_config=ErrorConfig(ignore_errors=True),
    )
    data = result.test_results[0].metrics_data[0]
    assert data.success is False and data.score is None and "judge call failed" in data.error.lower()


def test_a_rejected_request_raises_the_services_problem(service: JudgedService) -> None:
    unknown = ConformalJudgeMetric(
        ServiceConnection(service.url, api_key=service.api_key), ScoreSpec(criterion="tone", judge=JUDGE)
    )
    with pytest.raises(ApiError) as raised:
        unknown.measure(LLMTestCase(input=ARTICLE, actual_output="Fine."))
    assert raised.value.status == 422 and "coherence" in raised.value.allowed
    wrong_key = ConformalJudgeMetric(ServiceConnection(service.url, api_key="not-a-key"), ScoreSpec("coherence"))
    with pytest.raises(ApiError) as refused:
        wrong_key.measure(LLMTestCase(input=ARTICLE, actual_output="Fine."))
    assert refused.value.status == 401 and wrong_key.success is False
    with pytest.raises(ValueError, match="actual_output"):
        metric(service).measure(LLMTestCase(input=ARTICLE))
    assert service.judge.call_count == 0
