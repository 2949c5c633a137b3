"""End to end through a real judge: the service (uvicorn in a thread, real HTTP) with ``JUDGES_FILE`` pointing at
the local llama.cpp server (conftest.py), and its answers checked against what the model really replied.

Few calls (about 25, a second or so each): one live score, the log-probs of one real reply, a compare of three
candidates in both orders, a batch of two, a job of two run by a worker process, a deadline the model cannot meet,
and the deepeval and Inspect adapters on one case each. The replies are greedy (temperature 0), so a run repeats.
"""

from __future__ import annotations

import asyncio
import gc
import json
import math
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from judges.client import JudgeClient
from judges.errors import JudgeCallError
from judges.parsing.distribution import score_distribution
from judges.parsing.reply import parse_score
from service.config.jobs import JobSettings
from service.config.settings import Settings
from tests.redis_url import REDIS_TEST_URL
from tests.service.jobs.conftest import delete_queue_keys
from tests.service.live_judge.conftest import JUDGE, ROOT, LocalJudge
from tests.service.servers import serve_in_thread

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")  # before deepeval is first imported (the adapter test)

DOCUMENT = (
    "The city council voted on Monday to close the old bridge over the river for repairs. Work starts in May and "
    "will last six weeks. Buses will take a detour through the market square while the bridge is shut."
)
SUMMARY = "The council will close the old bridge for six weeks of repairs from May; buses take a detour."
PROBLEM_TYPES = ("judge-call-failed", "judge-reply-unreadable")


def problem_type(problem: dict[str, Any]) -> str:
    """The slug of a problem's ``type`` (``.../judge-call-failed`` -> ``judge-call-failed``)."""
    return str(problem["type"]).rsplit("/", 1)[-1].rsplit(":", 1)[-1]


class Service:
    """The running service: its URL and JSON posts to it."""

    def __init__(self, url: str) -> None:
        self.url = url

    def post(self, path: str, body: Any, **kwargs: Any) -> httpx.Response:
        return httpx.post(f"{self.url}{path}", json=body, timeout=300, **kwargs)


@pytest.fixture(scope="module")
def service(
    local_judge: LocalJudge, local_judge_thresholds: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    """The API serving the judge's own calibration, its judge the local server (the example config)."""
    judges = local_judge.judges_file(tmp_path_factory.mktemp("live-service"))
    settings = Settings(thresholds_path=local_judge_thresholds, judges_file=judges, log_level="WARNING")
    with serve_in_thread(settings) as served:
        yield Service(served.url)


def test_a_live_score_is_read_from_the_reply_and_calibrated_in_one_call(service: Service) -> None:
    body = {"criterion": "coherence", "judge": JUDGE, "document": DOCUMENT, "summary": SUMMARY}
    reply = service.post("/v1/score", body)
    assert reply.status_code == 200, reply.text
    answer = reply.json()
    assert answer["source"] == "judge" and answer["judge_calls"] == 1 and answer["calibrated"] is True
    assert answer["prompt_family"] == "paper" and answer["raw_reply"].strip()
    assert answer["judge_score"] == parse_score(answer["raw_reply"]).score  # the service read the model's own reply
    assert answer["prediction_set"] and set(answer["prediction_set"]) <= {1, 2, 3, 4, 5}
    assert answer["set_size"] == len(answer["prediction_set"])
    assert answer["decision"] in ("accept", "review", "escalate")
    again = service.post("/v1/score", body).json()  # the same call is answered from the judge-answer cache
    assert again["judge_calls"] == 0 and again["prediction_set"] == answer["prediction_set"]


def test_log_probs_are_read_from_the_real_top_logprobs(local_judge: LocalJudge) -> None:
    """The distribution the client reads from a real reply equals the one computed here from the raw top-20, by
    the documented rule: token texts stripped (" 4" and "4" are label 4, their probabilities add), number words
    ("Three") are not labels, labels missing from the top-k get probability 0 and no log-prob."""
    # A short rating request whose greedy reply opens with a digit, so the score token's top-20 is read (the
    # paper prompt's reply to this document is prose without a digit, whose rule is checked below as well).
    messages = [{"role": "user", "content": f"Rate the coherence of this summary from 1 to 5. Article: {DOCUMENT} "
                                            f"Summary: {SUMMARY} Answer with one digit."}]  # fmt: skip

    async def ask() -> Any:
        async with JudgeClient(local_judge.config()) as judge:
            return await judge.complete(messages, max_tokens=8, logprobs=True)

    completion = asyncio.run(ask())
    assert completion.tokens, "the server sent no log-probs"
    assert "".join(t.token for t in completion.tokens) == completion.text  # the offsets map onto the tokens
    for token in completion.tokens:
        assert 10 <= len(token.top_logprobs) <= 20 and all(v <= 1e-6 for v in token.top_logprobs.values())
    parsed = parse_score(completion.text)
    probabilities, logprobs = score_distribution(completion.tokens, completion.text, parsed.position)
    labels = {"1", "2", "3", "4", "5"}
    if parsed.score is not None:
        index = next(i for i, t in enumerate(completion.tokens) if t.token.strip() == str(parsed.score))
    else:  # no score read: the rule's fallback, the first token whose text is a label
        index = next((i for i, t in enumerate(completion.tokens) if t.token.strip() in labels), -1)
        probabilities, logprobs = score_distribution(completion.tokens, completion.text, None)
    print(f"local judge reply {completion.text!r}, score token index {index}")
    if index < 0:
        assert probabilities is None and logprobs is None  # no label token: no distribution, never a guess
        return
    chosen = completion.tokens[index]
    top = {**chosen.top_logprobs}
    top.setdefault(chosen.token, chosen.logprob)
    mass = {k: sum(math.exp(v) for t, v in top.items() if t.strip() == str(k)) for k in range(1, 6)}
    assert probabilities is not None and logprobs is not None
    assert probabilities == pytest.approx([mass[k] / sum(mass.values()) for k in range(1, 6)], rel=1e-9)
    for k in range(1, 6):
        assert (logprobs[str(k)] is None) == (mass[k] == 0.0)
    words = [t for t in top if t.strip().lower() in ("one", "two", "three", "four", "five")]
    spaced = [t for t in top if t != t.strip() and t.strip() in labels]
    # What this reply held, for the record of what a real endpoint sends (asserted above whatever it held).
    print(f"number words {words}; spaced digits {spaced}; missing labels {[k for k in mass if mass[k] == 0.0]}")


def test_a_live_compare_asks_both_orders(service: Service) -> None:
    candidates = [
        {"id": "a", "text": SUMMARY},
        {"id": "b", "text": "Buses were seen in the market square on Monday."},
        {"id": "c", "text": "The bridge is old."},
    ]
    body = {"criterion": "relevance", "judge": JUDGE, "document": DOCUMENT, "candidates": candidates,
            "repetitions": 1, "swap": True}  # fmt: skip
    reply = service.post("/v1/compare", body)
    assert reply.status_code in (200, 502), reply.text
    answer = reply.json()
    if reply.status_code == 502:  # every verdict unreadable: the documented problem, never a made-up ranking
        assert problem_type(answer) in PROBLEM_TYPES
        return
    assert answer["judge_calls"] + answer["cached_calls"] == 6  # 3 pairs x 2 orders
    assert answer["n_verdicts"] + len(answer["failed_calls"]) == 6 and sorted(answer["candidates"]) == ["a", "b", "c"]
    print(
        f"local judge compare: {answer['n_verdicts']} verdicts, position consistency {answer['position_consistency']}"
    )


def test_a_batch_scores_live_items_beside_a_callers_verdict(service: Service) -> None:
    items = [
        {"item_id": "live-1", "criterion": "relevance", "judge": JUDGE, "document": DOCUMENT, "summary": SUMMARY},
        {"item_id": "live-2", "criterion": "coherence", "judge": JUDGE, "document": DOCUMENT,
         "summary": "Bridge closed. Buses. May."},
        {"item_id": "caller", "criterion": "coherence", "judge": JUDGE, "judge_score": 4},
    ]  # fmt: skip
    reply = service.post("/v1/score/batch", {"items": items})
    assert reply.status_code == 200, reply.text
    answer = reply.json()
    assert [r["item_id"] for r in answer["results"]] == ["live-1", "live-2", "caller"]
    assert answer["n_ok"] + answer["n_failed"] == 3 and answer["results"][2]["ok"] is True
    for result in answer["results"][:2]:
        if result["ok"]:
            assert result["result"]["source"] == "judge" and result["result"]["calibrated"] is True
        else:
            assert problem_type(result["error"]) in PROBLEM_TYPES


def test_a_deadline_shorter_than_the_model_fails_the_item_with_the_documented_error(
    local_judge: LocalJudge, local_judge_thresholds: Path, tmp_path: Path
) -> None:
    judges = local_judge.judges_file(tmp_path, timeout_s=0.05, max_retries=0)
    settings = Settings(thresholds_path=local_judge_thresholds, judges_file=judges, log_level="WARNING")
    body = {"criterion": "coherence", "judge": JUDGE, "document": DOCUMENT + " (deadline)", "summary": SUMMARY}
    with serve_in_thread(settings) as served:
        reply = httpx.post(f"{served.url}/v1/score", json=body, timeout=60)
    assert reply.status_code == 502, reply.text
    problem = reply.json()
    assert problem_type(problem) == "judge-call-failed" and "timed out" in problem["detail"]

    async def direct() -> None:
        async with JudgeClient(local_judge.config(timeout_s=0.05, max_retries=0)) as judge:
            await judge.score("coherence", DOCUMENT + " (deadline, direct)", SUMMARY)

    with pytest.raises(JudgeCallError, match="timed out"):
        asyncio.run(direct())


@pytest.mark.redis
def test_a_job_is_scored_by_a_worker_process_through_the_judge(
    local_judge: LocalJudge, local_judge_thresholds: Path, tmp_path: Path
) -> None:
    queue = f"test-live-{uuid.uuid4().hex[:12]}"
    judges = local_judge.judges_file(tmp_path)
    settings = Settings(
        thresholds_path=local_judge_thresholds,
        redis_url=REDIS_TEST_URL,
        jobs=JobSettings(queue=queue, heartbeat_s=2, sweep_s=1),
        log_level="WARNING",
    )
    lines = [
        {
            "item_id": f"j{i}",
            "criterion": criterion,
            "judge": JUDGE,
            "document": f"{DOCUMENT} (job)",
            "summary": SUMMARY,
        }
        for i, criterion in enumerate(("coherence", "relevance"), start=1)
    ]
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("JOB", "WORKER", "JUDGES"))}
    environ.update(THRESHOLDS_PATH=str(local_judge_thresholds), REDIS_URL=REDIS_TEST_URL, JOB_QUEUE=queue,
                   JUDGES_FILE=str(judges), JOB_HEARTBEAT_S="2", JOB_SWEEP_S="1", LOG_FLUSH_MS="0")  # fmt: skip
    worker = None
    try:
        with serve_in_thread(settings) as served:
            created = httpx.post(
                f"{served.url}/v1/jobs",
                content=b"".join(json.dumps(line).encode() + b"\n" for line in lines),
                headers={"content-type": "application/x-ndjson"},
                timeout=30,
            )
            assert created.status_code == 202, created.text
            job = created.json()["job_id"]
            with (tmp_path / "worker.log").open("wb") as log:
                worker = subprocess.Popen([sys.executable, "-m", "service.worker"], cwd=ROOT, env=environ,
                                          stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
            deadline = time.monotonic() + 180
            status: dict[str, Any] = {}
            while time.monotonic() < deadline:
                status = httpx.get(f"{served.url}/v1/jobs/{job}", timeout=30).json()
                if status["status"] not in ("queued", "running"):
                    break
                time.sleep(0.5)
            assert status.get("status") in ("succeeded", "failed"), (status, (tmp_path / "worker.log").read_text())
            results = httpx.get(f"{served.url}/v1/jobs/{job}/results", timeout=30)
            rows = [json.loads(line) for line in results.content.splitlines()]
    finally:
        if worker is not None:
            worker.kill()
            worker.wait(timeout=10)
        delete_queue_keys(REDIS_TEST_URL, queue)
    assert [row["item_id"] for row in rows] == ["j1", "j2"]
    assert status["n_failed"] == sum(not row["ok"] for row in rows)
    for row in rows:
        if row["ok"]:
            assert row["result"]["source"] == "judge" and row["result"]["calibrated"] is True
        else:
            assert problem_type(row["error"]) in PROBLEM_TYPES


# Warnings of the tools, not of ours (as in tests/client/integrations/test_inspect.py): inspect_ai's retries use a
# deprecated tenacity parameter, and its hooks' sample-event stream is left for the garbage collector to close.
@pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning")
@pytest.mark.filterwarnings("ignore:Unclosed <MemoryObjectReceiveStream:ResourceWarning")
@pytest.mark.filterwarnings(
    "ignore:Exception ignored in. <function MemoryObjectReceiveStream:pytest.PytestUnraisableExceptionWarning"
)
def test_the_deepeval_metric_and_the_inspect_scorer_carry_the_live_verdict(service: Service, tmp_path: Path) -> None:
    from conformal_judge_client.integrations.deepeval import ConformalJudgeMetric
    from conformal_judge_client.integrations.inspect import conformal_judge
    from conformal_judge_client.integrations.verdicts import ScoreSpec, ServiceConnection
    from deepeval.test_case import LLMTestCase
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.solver import generate

    spec = ScoreSpec(criterion="coherence", judge=JUDGE)
    connection = ServiceConnection(service.url, timeout=120)
    direct = service.post("/v1/score", {"criterion": "coherence", "judge": JUDGE, "document": DOCUMENT,
                                        "summary": SUMMARY}).json()  # fmt: skip
    loop = asyncio.new_event_loop()  # deepeval runs on the thread's current loop
    asyncio.set_event_loop(loop)
    try:
        metric = ConformalJudgeMetric(connection, spec)
        metric.measure(LLMTestCase(input=DOCUMENT, actual_output=SUMMARY, name="live-case"))
    finally:
        asyncio.set_event_loop(None)
        loop.close()
    assert metric.error is None and metric.verdict is not None
    assert list(metric.verdict.prediction_set) == direct["prediction_set"] and metric.score == float(direct["point"])
    output = ModelOutput.from_content("mockllm/model", SUMMARY)
    output.usage = ModelUsage(input_tokens=20, output_tokens=10, total_tokens=30)
    task = Task(dataset=[Sample(input=DOCUMENT, target="", id="s0")], solver=generate(),
                scorer=conformal_judge(connection, spec))  # fmt: skip
    [log] = eval(task, model=get_model("mockllm/model", custom_outputs=[output]), log_dir=str(tmp_path),
                 log_format="json", display="none")  # fmt: skip
    assert log.status == "success" and log.samples is not None, log.error
    score = log.samples[0].scores["conformal_judge"]
    assert score.metadata is not None and score.metadata["prediction_set"] == direct["prediction_set"]
    assert score.answer == str(direct["point"])
    del log, task
    gc.collect()  # inspect_ai's streams are closed here, under this test's warning filters
