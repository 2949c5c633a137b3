"""The client's feedback and monitor methods against the real service: the typed answers equal the JSON the service
sends, refusals arrive per item, a resend counts as duplicates, and the async client answers what the sync one
does."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from conformal_judge_client import ApiError, AsyncClient, Client, FeedbackResult, MonitorState

from tests.client.conftest import Service
from tests.service.conftest import RECORDED

pytestmark = pytest.mark.redis


def label(i: int, point: int) -> dict[str, Any]:
    """A harmless label (the served point itself) of the recorded judge's cell, one document per two items."""
    return {
        "criterion": "coherence",
        "judge": RECORDED,
        "judge_score": 3,
        "human": point,
        "item_id": f"client-fb-{i}",
        "group": f"client-doc-{i // 2}",
        "done": i % 2 == 1,
    }


def test_feedback_and_monitor(service: Service) -> None:
    with Client(service.url, api_key=service.api_key) as client:
        point = client.score({"criterion": "coherence", "judge": RECORDED, "judge_score": 3}).point
        items = [label(i, point) for i in range(4)] + [{**label(9, point), "human": 99}]
        result = client.feedback(items)
        assert isinstance(result, FeedbackResult)
        assert (result.accepted, result.duplicates, result.refused, result.documents_closed) == (4, 0, 1, 2)
        assert result.refusals[0].index == 4 and result.refusals[0].error.status == 422
        again = client.feedback(items[:2])
        assert (again.accepted, again.duplicates) == (0, 2)
        state = client.monitor()
        assert isinstance(state, MonitorState) and state.alarms == ()
        raw = httpx.get(
            service.url + "/v1/monitor", headers={"Authorization": f"Bearer {service.api_key}"}, timeout=60
        ).json()
        assert state.raw == raw
        cell = next(c for c in state.cells if c.judge == RECORDED)
        assert (cell.labels, cell.groups, cell.status, cell.in_alarm) == (4, 2, "ok", False)
        raw_cell = next(c for c in raw["cells"] if c["monitor_id"] == cell.monitor_id)
        assert cell.threshold == raw_cell["threshold"] > 0
        assert [(p.documents, p.labels, p.e_value) for p in cell.e_process] == [
            (p["documents"], p["labels"], p["e_value"]) for p in raw_cell["e_process"]
        ]
        assert [p.documents for p in cell.e_process] == [1, 2] and cell.e_process[-1].labels == 4  # two documents
        with pytest.raises(ApiError) as refused:
            client.reset_monitor(cell.monitor_id)
        assert refused.value.status == 403  # a tenant key may not reset

    async def run_async() -> MonitorState:
        async with AsyncClient(service.url, api_key=service.api_key) as client:
            assert (await client.feedback(items[:1])).duplicates == 1
            return await client.monitor()

    assert asyncio.run(run_async()).raw == state.raw
    with Client(service.url, api_key=service.admin_key) as admin:
        with pytest.raises(ApiError) as not_chosen:  # a tenant's labels: only with the admin's for_every_tenant
            admin.recalibrate_monitor(cell.monitor_id)
        assert not_chosen.value.status == 409 and "for_every_tenant" in str(not_chosen.value)
        with pytest.raises(ApiError) as chosen:  # chosen: past the tenant rule, to the rows' own (4 labels are few)
            admin.recalibrate_monitor(cell.monitor_id, for_every_tenant=True)
        assert chosen.value.status == 422 and "for_every_tenant" not in str(chosen.value), chosen.value
        reset = admin.reset_monitor(cell.monitor_id, reason="client test")
        assert reset == {"monitor_id": cell.monitor_id, "reset": True, "had_alarm": False}
