"""Langfuse human scores as feedback (``integrations.langfuse_feedback``) against the real service: verdict scores as
``write_verdict`` writes them (their metadata from ``verdict_metadata``) pair with the human score of the same
trace; the items reach the monitor of the cell and level that served them, one document per trace; log-prob
verdicts, unlabelled verdicts and stray labels are counted and left out."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from conformal_judge_client import Client
from conformal_judge_client.integrations.langfuse_feedback import feedback_items, send_feedback
from conformal_judge_client.integrations.verdicts import verdict_metadata

from tests.client.conftest import Service
from tests.service.conftest import RECORDED

pytestmark = pytest.mark.redis
BODY = {"criterion": "coherence", "judge": RECORDED, "judge_score": 4, "alpha": 0.2}


def test_langfuse_scores_become_feedback(service: Service) -> None:
    with Client(service.url, api_key=service.api_key) as cj:
        served = cj.score({**BODY, "item_id": "lf-a"})
        logprobs = cj.score({**BODY, "judge_score": None, "judge_logprobs": {"4": -0.1, "3": -2.5}, "item_id": "lf-p"})
        scores = [
            {"name": "conformal-judge/coherence", "traceId": "t1", "observationId": "o1",
             "metadata": verdict_metadata(served), "value": served.point},
            SimpleNamespace(name="human-coherence", trace_id="t1", observation_id="o1", value=served.point,
                            metadata=None),
            {"name": "conformal-judge/coherence", "traceId": "t1", "observationId": "o2",
             "metadata": {**verdict_metadata(served), "item_id": "lf-b"}, "value": served.point},
            {"name": "human-coherence", "traceId": "t1", "observationId": "o2", "value": served.point},
            {"name": "conformal-judge/coherence", "traceId": "t2", "metadata": verdict_metadata(logprobs), "value": 4},
            {"name": "human-coherence", "traceId": "t2", "value": 4},
            {"name": "conformal-judge/coherence", "traceId": "t3", "metadata": {**verdict_metadata(served),
             "item_id": "lf-c"}, "value": 4},
            {"name": "human-coherence", "traceId": "t9", "value": 2},
        ]  # fmt: skip
        built = feedback_items(scores, human_score="human-coherence")
        assert (built.unlabelled_verdicts, built.unmatched_labels, built.other_kinds) == (1, 2, 1)
        assert [(i["item_id"], i["group"], i.get("done", False)) for i in built.items] == [
            ("lf-a", "t1", False),
            ("lf-b", "t1", True),
        ]
        first = built.items[0]
        assert first["alpha"] == served.alpha and first["prompt_family"] == served.raw["prompt_family"]
        _, results = send_feedback(cj, scores, human_score="human-coherence")
        assert [(r.accepted, r.refused, r.documents_closed) for r in results] == [(2, 0, 1)]
        cells = [c for c in cj.monitor().cells if c.judge == RECORDED and c.raw["guarantees"][0]["level"] == 0.2]
        assert len(cells) == 1 and (cells[0].labels, cells[0].groups) == (2, 1)
    with Client(service.url, api_key=service.admin_key) as admin:
        admin.reset_monitor(cells[0].monitor_id, reason="test cleanup")
