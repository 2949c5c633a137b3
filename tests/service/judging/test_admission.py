"""Admission control: /v1/score/batch answers 429 with Retry-After past MAX_INFLIGHT_ITEMS, never slows down."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from service.config.jobs import JobSettings
from service.config.settings import Settings
from service.errors import OverloadedError
from service.judging.admission import Admission
from service.observability.metrics import LoopCounter
from tests.service.conftest import RECORDED, AppHarness


def test_admission_counts_and_refuses_past_the_bound() -> None:
    refused = LoopCounter("r", "r", ("route",))
    admission = Admission(max_inflight_items=10, max_queued_items=5, retry_after_s=3, refused=refused)
    admission.admit(12)  # alone, a batch above the bound is still admitted
    with pytest.raises(OverloadedError):
        admission.admit(1)
    admission.release(12)
    admission.admit(6)
    admission.admit(4)
    with pytest.raises(OverloadedError) as raised:
        admission.admit(1)
    assert raised.value.headers == {"Retry-After": "3"}
    admission.check_queued(4, 1)
    with pytest.raises(OverloadedError):
        admission.check_queued(4, 2)
    assert refused.counts == {("/v1/score/batch",): 2, ("/v1/jobs",): 1}


def test_batch_past_the_inflight_bound_is_429_with_retry_after(
    start_app: Callable[[Settings], AppHarness], artifact_path: object
) -> None:
    settings = Settings(thresholds_path=artifact_path, jobs=JobSettings(max_inflight_items=10, retry_after_s=4))
    harness = start_app(settings)
    items = [{"criterion": "coherence", "judge": RECORDED, "judge_score": 3}] * 5
    assert harness.client.post("/v1/score/batch", json={"items": items}).status_code == 200
    harness.services.admission.admit(8)  # another batch of 8 items in flight in this process
    refused = harness.client.post("/v1/score/batch", json={"items": items})
    assert refused.status_code == 429 and refused.headers["retry-after"] == "4"
    assert refused.json()["type"].endswith("overloaded") and "MAX_INFLIGHT_ITEMS=10" in refused.json()["detail"]
    harness.services.admission.release(8)
    assert harness.client.post("/v1/score/batch", json={"items": items}).status_code == 200
    assert harness.services.admission.inflight_items == 0
    assert 'cj_admission_refused_total{route="/v1/score/batch"} 1.0' in harness.client.get("/metrics").text
