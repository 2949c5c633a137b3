"""GET /v1/monitor shows each monitor's e-process over time, over HTTP with a real Redis: 100 healthy one-label
documents and then a harsh stream give evenly spaced points (every 2 documents once 64 would be exceeded) ending
at the monitor's current labels and e-value, the alarm's point among what the monitor recorded."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from service.config.settings import Settings
from tests.service.conftest import AppHarness
from tests.service.monitoring.conftest import feedback_item
from tests.service.monitoring.test_feedback_api import outside, served_set

pytestmark = pytest.mark.redis


def test_the_monitor_shows_its_e_process_bounded_and_ending_at_its_current_value(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    client = start_app(jobs_settings({"monitor_max_items": 1})).client
    inside = served_set(client)[0]
    healthy = [feedback_item(f"ok{i}", inside) for i in range(60)]  # no group: each item is its own document
    assert client.post("/v1/feedback", json={"items": healthy}).json()["documents_closed"] == 60
    (cell,) = client.get("/v1/monitor").json()["cells"]
    assert cell["e_process_step"] == 1 and [p["documents"] for p in cell["e_process"]] == list(range(1, 61))
    assert all(p["labels"] == p["documents"] for p in cell["e_process"])

    more = [feedback_item(f"ok{i}", inside) for i in range(60, 100)]
    client.post("/v1/feedback", json={"items": more})
    (cell,) = client.get("/v1/monitor").json()["cells"]
    # 100 documents: 100 // 1 = 100 > 63 kept points, so the step doubles to 2 (50 points, 100 the latest)
    assert cell["e_process_step"] == 2 and [p["documents"] for p in cell["e_process"]] == list(range(2, 101, 2))
    last = cell["e_process"][-1]
    assert last["labels"] == cell["labels"] == 100 and math.isclose(last["e_value"], cell["e_value"], rel_tol=1e-9)
    assert cell["status"] == "ok" and all(p["e_value"] < cell["threshold"] for p in cell["e_process"])

    label = outside(served_set(client))
    harsh = [feedback_item(f"bad{i}", label) for i in range(40)]
    assert client.post("/v1/feedback", json={"items": harsh}).json()["alarms_raised"] == 1
    (cell,) = client.get("/v1/monitor").json()["cells"]
    points, alarm = cell["e_process"], cell["alarm"]
    assert len(points) <= 64 and points[-1]["documents"] == cell["groups"] == 140
    assert 100 < alarm["document"] <= 140 and alarm["e_value"] >= cell["threshold"]
    before = [p for p in points if p["documents"] < alarm["document"]]
    assert before and all(p["e_value"] < cell["threshold"] for p in before)  # the first crossing is the alarm's
    kept = {p["documents"]: p for p in points}
    if alarm["document"] in kept:
        assert math.isclose(kept[alarm["document"]]["e_value"], alarm["e_value"], rel_tol=1e-9)
