"""The Inspect scorer against the running service (tests/client/integrations/conftest.py), with the real inspect_ai
package: a whole ``inspect_ai.eval`` run (the mock model answers the scripted completions) scores each sample with
the service's verdict for the completion, and a failed judge call is a sample error or an unscored sample, never a
pass."""

from __future__ import annotations

import gc
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conformal_judge_client.integrations.inspect import conformal_judge
from conformal_judge_client.integrations.verdicts import ScoreSpec, ServiceConnection
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalLog
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import CORRECT, INCORRECT
from inspect_ai.solver import generate

from tests.client.integrations.conftest import JUDGE, JudgedService
from tests.fakes.judge_server import ScriptedReply, peaked_logprobs

# Two warnings of the tool, not of ours (the suite turns warnings into errors): inspect_ai's model retries call
# tenacity's wait_exponential_jitter(initial=...), which the installed tenacity deprecates, and the sample-event
# stream of inspect_ai's hooks (inspect_ai/hooks/_hooks.py) is left for the garbage collector to close.
pytestmark = [
    pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:Unclosed <MemoryObjectReceiveStream:ResourceWarning"),
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <function MemoryObjectReceiveStream:pytest.PytestUnraisableExceptionWarning"
    ),
]

ARTICLE = "The library will close for two weeks in August while the roof is repaired, the city said on Friday."


@pytest.fixture(autouse=True)
def _collect_inspects_streams() -> Iterator[None]:
    """Collect the streams inspect_ai leaves open while this module's warning filters apply, not in a later test."""
    yield
    gc.collect()


def run(
    service: JudgedService, completions: list[str], log_dir: Path, *, api_key: str | None = None, **options: Any
) -> EvalLog:
    """One Inspect eval: a sample per completion (input: the article), the mock model answering them in order."""
    connection = ServiceConnection(service.url, api_key=api_key or service.api_key, timeout=30)
    task = Task(
        dataset=[Sample(input=ARTICLE, target="", id=f"s{i}") for i in range(len(completions))],
        solver=generate(),
        scorer=conformal_judge(connection, ScoreSpec(criterion="coherence", judge=JUDGE), **options),
    )
    outputs = [ModelOutput.from_content("mockllm/model", text) for text in completions]
    for output in outputs:  # given usage, the mock model does not count tokens (tiktoken would download its table)
        output.usage = ModelUsage(input_tokens=20, output_tokens=10, total_tokens=30)
    model = get_model("mockllm/model", custom_outputs=outputs)
    [log] = eval(task, model=model, log_dir=str(log_dir), log_format="json", display="none", max_samples=1)
    return log


def judged_by_text(body: dict[str, Any]) -> ScriptedReply:
    """The stand-in's answer: 3 (accepted) for a text marked GOOD, else 5 (escalated)."""
    prompt = "\n".join(str(message.get("content")) for message in body["messages"])
    score = 3 if "GOOD" in prompt else 5
    return ScriptedReply(str(score), peaked_logprobs(score, sharpness=3.0))


def test_an_eval_scores_each_sample_with_the_services_verdict(service: JudgedService, tmp_path: Path) -> None:
    service.judge.responder = judged_by_text
    log = run(service, ["GOOD: the library closes in August.", "The roof is new."], tmp_path)
    assert log.status == "success" and log.samples is not None
    scores = {sample.id: sample.scores["conformal_judge"] for sample in log.samples}
    good, other = scores["s0"], scores["s1"]
    assert (good.value, good.answer) == (CORRECT, "3") and (other.value, other.answer) == (INCORRECT, "4")
    assert good.metadata is not None and other.metadata is not None
    assert (good.metadata["decision"], other.metadata["decision"]) == ("accept", "escalate")
    assert good.metadata["confidence"] == 0.9 and good.metadata["item_id"] == "s0"
    direct = httpx.post(
        f"{service.url}/v1/score",
        json={"criterion": "coherence", "judge": JUDGE, "document": ARTICLE, "summary": "The roof is new."},
        headers={"Authorization": f"Bearer {service.api_key}"},
        timeout=30,
    ).json()
    assert other.metadata["prediction_set"] == direct["prediction_set"] and 5 in direct["prediction_set"]
    assert other.explanation is not None and direct["reason"] in other.explanation
    assert good.explanation is not None and good.explanation.startswith("coherence: point 3, 90% prediction set")
    [metrics] = [score.metrics for score in log.results.scores if score.name == "conformal_judge"]
    assert metrics["accuracy"].value == 0.5  # one of the two samples accepted
    prompts = [request.prompt_text for request in service.judge.requests]
    assert any("GOOD: the library closes in August." in p and "roof is repaired" in p for p in prompts)


def test_min_point_turns_an_accepted_low_point_into_incorrect(service: JudgedService, tmp_path: Path) -> None:
    log = run(service, ["The library shuts for repairs in August."], tmp_path, min_point=4)
    assert log.samples is not None
    score = log.samples[0].scores["conformal_judge"]
    assert score.metadata is not None and score.metadata["decision"] == "accept"
    assert (score.value, score.answer) == (INCORRECT, "3")


def test_a_failed_judge_call_errors_the_sample(service: JudgedService, tmp_path: Path) -> None:
    service.judge.outage = "error_500"
    log = run(service, ["The judge fails on this one."], tmp_path)
    assert log.status == "error" and log.error is not None
    assert "502" in log.error.message and "judge call failed" in log.error.message.lower()


def test_unscored_mode_records_the_failure_outside_the_metrics(service: JudgedService, tmp_path: Path) -> None:
    service.judge.outage = "error_500"
    log = run(service, ["The judge fails on this one too."], tmp_path, on_error="unscored")
    assert log.status == "success" and log.samples is not None
    score = log.samples[0].scores["conformal_judge"]
    assert isinstance(score.value, float) and math.isnan(score.value) and score.reason == "scoring_failed"
    assert score.metadata is not None and score.metadata["error"]["status"] == 502
    assert score.explanation is not None and "judge call failed" in score.explanation.lower()


def test_a_bad_key_is_an_error_and_never_reaches_the_judge(service: JudgedService, tmp_path: Path) -> None:
    log = run(service, ["Anything."], tmp_path, api_key="not-a-key")
    assert log.status == "error" and log.error is not None and "401" in log.error.message
    assert service.judge.call_count == 0
    with pytest.raises(ValueError, match="on_error"):
        conformal_judge(ServiceConnection(service.url), ScoreSpec("coherence"), on_error="ignore")  # type: ignore[arg-type]


def test_the_api_key_is_not_written_to_the_eval_log(service: JudgedService, tmp_path: Path) -> None:
    run(service, ["The library closes in August."], tmp_path)
    written = b"".join(path.read_bytes() for path in tmp_path.rglob("*") if path.is_file())
    assert written and service.api_key.encode() not in written
