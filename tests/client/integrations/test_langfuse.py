"""The Langfuse score writer against the running service (tests/client/integrations/conftest.py), with the real
Langfuse SDK sending to a stand-in of Langfuse's public API (tests/fakes/langfuse_server.py): what arrives is the
service's verdict as a score (value, data type, comment, metadata, target), and a failed judge call raises and
writes nothing."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from conformal_judge_client import ApiError, Client
from conformal_judge_client.integrations.langfuse import score_and_write, write_verdict
from conformal_judge_client.integrations.verdicts import explain
from langfuse import Langfuse
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from tests.client.integrations.conftest import JUDGE, JudgedService
from tests.fakes.langfuse_server import LangfuseServer

ARTICLE = "The museum reopened on Sunday after a two-year renovation that added a new wing for modern art."
TRACE = "0123456789abcdef0123456789abcdef"


@pytest.fixture(scope="module")
def langfuse_api() -> Iterator[LangfuseServer]:
    with LangfuseServer() as server:
        yield server


@pytest.fixture
def public_key() -> str:
    """A key of the test's own: the SDK keeps one client per public key."""
    return f"pk-lf-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def langfuse(langfuse_api: LangfuseServer, public_key: str) -> Iterator[Langfuse]:
    """A real Langfuse client pointed at the stand-in, with a tracer provider of its own (left alone, the SDK would
    install its provider as the process's global one for every later test)."""
    langfuse_api.requests.clear()
    langfuse_api.reject_status = None
    provider = TracerProvider()
    made = Langfuse(
        public_key=public_key, secret_key="sk-lf-test", base_url=langfuse_api.base_url, tracer_provider=provider
    )
    yield made
    made.shutdown()
    provider.shutdown()


@pytest.fixture
def client(service: JudgedService) -> Iterator[Client]:
    with Client(service.url, api_key=service.api_key, timeout=30) as made:
        yield made


def body(summary: str) -> dict[str, Any]:
    return {"criterion": "coherence", "judge": JUDGE, "document": ARTICLE, "summary": summary}


def test_a_verdict_is_written_as_a_numeric_score_with_comment_and_metadata(
    client: Client, langfuse: Langfuse, langfuse_api: LangfuseServer, public_key: str
) -> None:
    result = client.score(body("The museum reopened with a new wing."))
    score_id = write_verdict(langfuse, result, trace_id=TRACE, observation_id="0123456789abcdef")
    langfuse.flush()
    [sent] = langfuse_api.scores()
    assert (sent["id"], sent["traceId"], sent["observationId"]) == (score_id, TRACE, "0123456789abcdef")
    assert (sent["name"], sent["value"], sent["dataType"]) == ("conformal-judge/coherence", 3.0, "NUMERIC")
    assert sent["comment"] == explain(result) and "decision accept" in sent["comment"]
    metadata = sent["metadata"]
    assert metadata["decision"] == "accept" and metadata["point"] == 3
    assert metadata["prediction_set"] == list(result.prediction_set) == result.raw["prediction_set"]
    assert metadata["confidence"] == 0.9 and metadata["guarantees"] == result.raw["guarantees"]
    [call] = [call for call in langfuse_api.requests if call.path == "/api/public/scores"]
    credentials = base64.b64decode(call.headers["authorization"].removeprefix("Basic ")).decode()
    assert credentials == f"{public_key}:sk-lf-test"


def test_the_decision_and_the_accept_flag_as_categorical_and_boolean_scores(
    service: JudgedService, client: Client, langfuse: Langfuse, langfuse_api: LangfuseServer
) -> None:
    service.judge_replies(5)
    result = client.score(body("A museum somewhere did something."))
    assert result.decision == "escalate"
    write_verdict(langfuse, result, session_id="session-7", as_="decision", name="verdict")
    write_verdict(langfuse, result, dataset_run_id="run-3", as_="accepted")
    langfuse.flush()
    decision, accepted = sorted(langfuse_api.scores(), key=lambda score: score["dataType"] != "CATEGORICAL")
    assert (decision["name"], decision["value"], decision["dataType"]) == ("verdict", "escalate", "CATEGORICAL")
    assert decision["sessionId"] == "session-7" and "traceId" not in decision
    assert (accepted["value"], accepted["dataType"], accepted["datasetRunId"]) == (0.0, "BOOLEAN", "run-3")
    assert accepted["metadata"]["prediction_set"] == result.raw["prediction_set"] and 5 in result.prediction_set


def test_score_and_write_scores_with_the_service_then_writes(
    service: JudgedService, client: Client, langfuse: Langfuse, langfuse_api: LangfuseServer
) -> None:
    result, score_id = score_and_write(client, langfuse, body("Renovated museum reopens."), trace_id=TRACE)
    langfuse.flush()
    [sent] = langfuse_api.scores()
    assert sent["id"] == score_id and sent["value"] == float(result.point) == 3.0
    assert "Renovated museum reopens." in service.judge.requests[0].prompt_text


def test_a_failed_judge_call_raises_and_writes_nothing(
    service: JudgedService, client: Client, langfuse: Langfuse, langfuse_api: LangfuseServer
) -> None:
    service.judge.outage = "error_500"
    with pytest.raises(ApiError) as raised:
        score_and_write(client, langfuse, body("The judge fails here."), trace_id=TRACE)
    assert raised.value.status == 502 and "judge call failed" in raised.value.title.lower()
    langfuse.flush()
    assert langfuse_api.scores() == []


def test_the_processs_tracer_provider_is_left_alone(langfuse_api: LangfuseServer, public_key: str) -> None:
    before = trace.get_tracer_provider()
    own = TracerProvider()
    made = Langfuse(public_key=public_key, secret_key="sk", base_url=langfuse_api.base_url, tracer_provider=own)
    made.shutdown()
    own.shutdown()
    assert trace.get_tracer_provider() is before


def test_a_score_without_a_target_or_with_a_bad_kind_is_refused(client: Client, langfuse: Langfuse) -> None:
    result = client.score(body("The museum has a new wing."))
    with pytest.raises(ValueError, match="trace_id"):
        write_verdict(langfuse, result)
    with pytest.raises(ValueError, match="observation_id"):
        write_verdict(langfuse, result, session_id="s", observation_id="0123456789abcdef")
    with pytest.raises(ValueError, match="as_"):
        write_verdict(langfuse, result, trace_id=TRACE, as_="score")  # type: ignore[arg-type]
