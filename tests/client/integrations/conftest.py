"""The real service for the eval-tool adapters: uvicorn in a thread, API keys on, serving the certified-decision
test artifact of tests/service/scoring/test_decisions.py, whose judge ``cert-judge`` is the HTTP judge stand-in of
``tests/fakes`` (an OpenAI-compatible server on 127.0.0.1). No Redis: the adapters score one test case at a time
with ``POST /v1/score``.

The artifact holds each row in both guarantee modes, and per-label rules for coherence (the adapters send the
service's default guarantee, per label: the coherence cell's per-label rules answer as its certified rows do).
The stand-in answers with log-probs, so the service serves the ``probabilities`` rule of ``cert-judge / paper /
coherence``: a reply peaked at 3 (``judge_replies(3)``) has an expected score in the middle bin, which the rule
accepts at tolerance 2 and alpha 0.1 (point 3); a reply peaked at 5 falls in the top bin, which escalates
(point 4). The ``service`` fixture resets the stand-in before every test.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import msgspec
import pytest

from artifact.thresholds import save_artifact
from service.config.settings import Settings
from tests.fakes.judge_server import JudgeServer, ScriptedReply, peaked_logprobs
from tests.service.scoring.test_decisions import JUDGE, build_decision_artifact
from tests.service.servers import serve_in_thread

__all__ = ["API_KEY", "JUDGE", "JudgedService"]

API_KEY = "integration-tests-key"
# deepeval reads this when it is first imported (the test modules import it after this conftest): no telemetry.
os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")


@dataclass(frozen=True)
class JudgedService:
    """The running service (base URL, API key) and the judge stand-in it calls."""

    url: str
    api_key: str
    judge: JudgeServer

    def judge_replies(self, score: int) -> None:
        """Every judge call from now on answers ``score`` with log-probs sharply peaked there."""
        self.judge.responder = lambda body: ScriptedReply(str(score), peaked_logprobs(score, sharpness=3.0))


@pytest.fixture(scope="module")
def judged_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JudgedService]:
    """The API with auth on and the judge ``cert-judge`` pointing at a stand-in server, for the whole module."""
    folder = tmp_path_factory.mktemp("integrations-service")
    thresholds = folder / "thresholds.json"
    save_artifact(build_decision_artifact(with_expected=True), thresholds)
    with JudgeServer() as stand_in:
        judges = folder / "judges.json"
        judges.write_bytes(msgspec.json.encode([stand_in.judge_config(name=JUDGE, max_retries=0)]))
        settings = Settings(thresholds_path=thresholds, api_keys=(API_KEY,), judges_file=judges, log_level="WARNING")
        with serve_in_thread(settings) as served:
            yield JudgedService(served.url, API_KEY, stand_in)


@pytest.fixture
def service(judged_service: JudgedService) -> JudgedService:
    """The running service with its judge stand-in reset: score 3, no faults pending, no outage."""
    judged_service.judge.reset()
    judged_service.judge.outage = None
    judged_service.judge_replies(3)
    return judged_service
