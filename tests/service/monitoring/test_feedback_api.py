"""POST /v1/feedback and GET /v1/monitor end to end, over HTTP with a real Redis: labels recorded, duplicates
dropped, refusals per item, documents closed by ``done``, an alarm raised by a harsh stream that then escalates
/v1/score and /v1/score/batch answers, survives a restart (a new app on the same Redis) and is cleared by an admin
reset or a new calibration of the cell."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from service.config.settings import Settings
from tests.service.conftest import AppHarness
from tests.service.monitoring.conftest import feedback_item

pytestmark = pytest.mark.redis

ADMIN = "admin-key-5e0f"
SCORE = {"criterion": "relevance", "judge": "stand-in", "prompt_family": "paper", "judge_score": 3}


def served_set(client: Any) -> list[int]:
    answer = client.post("/v1/score", json=SCORE)
    assert answer.status_code == 200, answer.text
    return answer.json()["prediction_set"]


def outside(labels: list[int]) -> int:
    """A label on 1..5 outside the served set (the harsh stream's label)."""
    return next(label for label in (1, 5, 2, 4) if label not in labels)


def test_feedback_counts_duplicates_refusals_and_documents(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    client = start_app(jobs_settings({"monitor_max_items": 3})).client
    items = [
        feedback_item("a1", 3, group="doc-a"),
        feedback_item("a2", 3, group="doc-a"),
        feedback_item("a1", 3, group="doc-a"),  # the same id again: a duplicate, not a second label
        feedback_item("a3", 3.5, group="doc-a", done=True),  # closes doc-a
        feedback_item("a4", 3, group="doc-a"),  # after its document closed: refused
        feedback_item("b1", 9, group="doc-b"),  # outside the scale 1..5
        {"criterion": "relevance", "judge": "stand-in", "human": 3, "item_id": "c1"},  # no verdict
        {"criterion": "relevance", "judge_score": 3, "human": 3},  # no item_id
        feedback_item("d1", 2),  # no group: its own document, closed at once
    ]
    answer = client.post("/v1/feedback", json={"items": items})
    assert answer.status_code == 200, answer.text
    assert "cj_decisions_total{" not in client.get("/metrics").text  # recomputing is not serving
    body = answer.json()
    assert (body["accepted"], body["duplicates"], body["refused"], body["documents_closed"]) == (4, 1, 4, 2)
    refused = {r["index"]: r for r in body["refusals"]}
    assert sorted(refused) == [4, 5, 6, 7]
    assert refused[4]["error"]["status"] == 409 and "closed" in refused[4]["error"]["detail"]
    assert refused[5]["error"]["status"] == 422 and "scale" in refused[5]["error"]["detail"]
    assert refused[6]["error"]["status"] == 422 and "judge_score" in refused[6]["error"]["detail"]
    assert refused[7]["error"]["status"] == 422 and refused[7]["item_id"] is None
    assert refused[4]["error"]["instance"] == "/v1/feedback#/items/4"

    again = client.post("/v1/feedback", json={"items": [feedback_item("a2", 3, group="doc-a")]}).json()
    assert (again["accepted"], again["duplicates"]) == (0, 1)  # across requests too
    corrected = client.post("/v1/feedback", json={"items": [feedback_item("a2", 5, group="doc-a")]}).json()
    assert (corrected["accepted"], corrected["duplicates"], corrected["refused"]) == (0, 0, 1)  # never dropped
    problem = corrected["refusals"][0]["error"]
    assert problem["status"] == 409 and "labelled 3 earlier" in problem["detail"] and "corrected" in problem["detail"]

    four = [feedback_item(f"e{i}", 3, group="doc-e") for i in range(4)]  # one more than MONITOR_MAX_ITEMS
    over = client.post("/v1/feedback", json={"items": four}).json()
    assert over["accepted"] == 3 and over["refusals"][0]["index"] == 3
    assert "MONITOR_MAX_ITEMS" in over["refusals"][0]["error"]["detail"]

    cells = client.get("/v1/monitor").json()["cells"]
    assert len(cells) == 1
    cell = cells[0]
    assert (cell["judge"], cell["prompt_family"], cell["criterion"], cell["input_kind"]) == (
        "stand-in",
        "paper",
        "relevance",
        "score",
    )
    assert cell["status"] == "ok" and cell["alarm"] is None and cell["active"] is True
    assert (cell["labels"], cell["groups"], cell["open_groups"]) == (4, 2, 1)  # doc-e is still open
    assert [g["guarantee"] for g in cell["guarantees"]] == ["coverage"]  # no decision rule: nothing accepted
    coverage = cell["guarantees"][0]
    assert coverage["counted"] == 4 and coverage["human_label"] is None
    assert coverage["low"] is None and coverage["high"] is None  # 4 labels: the interval says nothing yet, not shown


def _raise_alarm(client: Any, headers: dict[str, str] | None = None, prefix: str = "h") -> dict[str, Any]:
    label = outside(served_set(client) if headers is None else _set(client, headers))
    items = [feedback_item(f"{prefix}{i}", label) for i in range(12)]  # every label outside the served set
    answer = client.post("/v1/feedback", json={"items": items}, headers=headers)
    assert answer.status_code == 200, answer.text
    return answer.json()


def _set(client: Any, headers: dict[str, str]) -> list[int]:
    return client.post("/v1/score", json=SCORE, headers=headers).json()["prediction_set"]


def test_a_harsh_stream_raises_an_alarm_that_escalates_answers_and_survives_a_restart(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    settings = jobs_settings({"monitor_max_items": 1, "admin_api_key": ADMIN})
    harness = start_app(settings)
    client = harness.client
    before = client.post("/v1/score", json=SCORE).json()
    assert before["rule_failed"] is False

    body = _raise_alarm(client)
    assert body["alarms_raised"] == 1
    cell = client.get("/v1/monitor").json()["cells"][0]
    assert cell["status"] == "alarm"
    alarm = cell["alarm"]
    assert alarm["guarantee"] == "coverage" and alarm["level"] == pytest.approx(0.1)
    # without API_KEYS every caller is one tenant: its one monitor per cell holds all of MONITOR_DELTA
    assert cell["delta"] == pytest.approx(0.05) and cell["horizon"] == 1000
    assert alarm["e_value"] >= cell["threshold"] == pytest.approx(1000 / 0.05)
    assert alarm["explanation"].startswith("set coverage: ") and "fell outside the served set" in alarm["explanation"]
    assert 1 <= alarm["label"] <= 12
    events = [line for line in harness.log_lines() if line.get("event") == "monitor.alarm"]
    assert len(events) == 1 and events[0]["guarantee"] == "coverage" and events[0]["monitor_id"] == cell["monitor_id"]
    metrics = client.get("/metrics").text
    assert "cj_monitor_alarms 1.0" in metrics and "cj_monitor_labels_recorded_total" in metrics
    assert cell["calibration_id"] not in metrics and cell["monitor_id"] not in metrics  # bounded, names no cell

    after = client.post("/v1/score", json=SCORE).json()
    assert after["decision"] == "escalate" and after["rule_failed"] is True
    assert cell["monitor_id"] in after["reason"] and "set coverage" in after["reason"]
    assert "fell outside the served set" in after["reason"]  # the alarm explained in words
    assert after["prediction_set"] == before["prediction_set"]  # the set is still returned
    batch = client.post("/v1/score/batch", json={"items": [SCORE, {**SCORE, "criterion": "coherence"}]}).json()
    assert batch["results"][0]["result"]["rule_failed"] is True
    assert batch["results"][1]["result"]["rule_failed"] is False  # another cell: untouched

    restarted = start_app(settings).client  # a new app (a restart, or another replica) on the same Redis
    assert restarted.post("/v1/score", json=SCORE).json()["rule_failed"] is True
    assert restarted.get("/v1/monitor").json()["cells"][0]["status"] == "alarm"

    body = {"monitor_id": cell["monitor_id"]}
    assert restarted.post("/v1/monitor/reset", json=body).status_code == 401  # only the admin resets
    wrong = restarted.post("/v1/monitor/reset", json=body, headers={"authorization": "Bearer not-the-admin"})
    assert wrong.status_code == 403
    reset = restarted.post(
        "/v1/monitor/reset",
        json={"monitor_id": cell["monitor_id"], "reason": "new prompt rolled back"},
        headers={"authorization": f"Bearer {ADMIN}"},
    )
    assert reset.status_code == 200, reset.text
    assert reset.json() == {"monitor_id": cell["monitor_id"], "reset": True, "had_alarm": True}
    assert restarted.post("/v1/score", json=SCORE).json()["rule_failed"] is False
    assert restarted.get("/v1/monitor").json()["cells"] == []
    unknown = restarted.post(
        "/v1/monitor/reset", json={"monitor_id": "0" * 32}, headers={"authorization": f"Bearer {ADMIN}"}
    )
    assert unknown.status_code == 404


def test_a_harmless_stream_raises_no_alarm(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    client = start_app(jobs_settings({"monitor_max_items": 1})).client
    point = client.post("/v1/score", json=SCORE).json()["point"]
    items = [feedback_item(f"ok{i}", point) for i in range(40)]  # every label inside the served set
    assert client.post("/v1/feedback", json={"items": items}).json()["alarms_raised"] == 0
    assert client.get("/v1/monitor").json()["cells"][0]["status"] == "ok"
    assert client.post("/v1/score", json=SCORE).json()["rule_failed"] is False


def test_a_declared_size_closes_a_document_and_open_documents_are_warned_about(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    client = start_app(jobs_settings()).client
    first = client.post("/v1/feedback", json={"items": [feedback_item("s1", 3, group="doc-s", group_size=2)]}).json()
    assert first["documents_closed"] == 0 and first["open_documents"] == 1
    assert "still open" in first["warnings"][0] and "group_size" in first["warnings"][0]
    second = client.post("/v1/feedback", json={"items": [feedback_item("s2", 3, group="doc-s", group_size=2)]}).json()
    assert (second["documents_closed"], second["open_documents"], second["warnings"]) == (1, 0, [])
    too_big = client.post("/v1/feedback", json={"items": [feedback_item("s3", 3, group="doc-t", group_size=99)]})
    refusal = too_big.json()["refusals"][0]["error"]
    assert refusal["status"] == 422 and "MONITOR_MAX_ITEMS" in refusal["detail"]


def test_a_resent_last_label_with_done_closes_its_document(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    client = start_app(jobs_settings()).client
    first = [feedback_item("r1", 3, group="doc-r"), feedback_item("r2", 3, group="doc-r")]
    assert client.post("/v1/feedback", json={"items": first}).json()["documents_closed"] == 0
    resent = client.post("/v1/feedback", json={"items": [feedback_item("r2", 3, group="doc-r", done=True)]}).json()
    assert (resent["accepted"], resent["duplicates"], resent["documents_closed"]) == (0, 1, 1)
    cell = client.get("/v1/monitor").json()["cells"][0]
    assert (cell["labels"], cell["groups"], cell["open_groups"]) == (2, 1, 0)
