"""The judge client builds the SDK's chat-completion request once per judge and copies it for every call (the
SDK's per-call option copying and request building was about half the CPU of a live batch item): what reaches
the provider is what the SDK would send, each body with its own length."""

from __future__ import annotations

import asyncio
import json

from judges.client import JudgeClient
from tests.fakes.judge_server import JudgeServer

DOCUMENT = "Rain closed the harbour road on Monday; ferries ran late and two shops flooded."


def test_the_sdk_builds_the_request_once_and_every_call_is_whole(judge_server: JudgeServer, monkeypatch):
    built = []

    async def main() -> list[int]:
        async with JudgeClient(judge_server.judge_config()) as judge:
            sdk = judge._openai  # noqa: SLF001
            original = sdk._build_request  # noqa: SLF001

            def counting(*args, **kwargs):
                built.append(1)
                return original(*args, **kwargs)

            monkeypatch.setattr(sdk, "_build_request", counting)
            summaries = ["Short.", "A much longer summary of the harbour road closing in the rain. " * 20, "Mid."]
            verdicts = await asyncio.gather(*(judge.score("coherence", DOCUMENT, s) for s in summaries))
            return [v.judge_score for v in verdicts]

    scores = asyncio.run(main())
    assert len(scores) == 3 and len(built) == 1
    assert len(judge_server.requests) == 3
    for request in judge_server.requests:
        assert request.headers["content-type"] == "application/json"
        assert request.headers["authorization"] == "Bearer not-needed"
        assert int(request.headers["content-length"]) == len(json.dumps(request.body, separators=(",", ":")).encode())
        assert request.body["messages"] and request.body["model"] == "stand-in-judge"
