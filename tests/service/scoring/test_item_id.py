"""``item_id`` on score items, echoed in results (issue 13, defect 10), and a JSON log line per failed batch item
(defect 7)."""

from __future__ import annotations

from tests.service.conftest import STAND_IN, AppHarness

VERDICT = {"criterion": "relevance", "judge": STAND_IN, "judge_score": 3}


def test_score_echoes_item_id_and_omits_nothing_else(app: AppHarness):
    plain = app.client.post("/v1/score", json=VERDICT).json()
    tagged = app.client.post("/v1/score", json={**VERDICT, "item_id": "doc7/sysB"}).json()
    assert plain["item_id"] is None and tagged["item_id"] == "doc7/sysB"
    assert {k: v for k, v in tagged.items() if k != "item_id"} == {k: v for k, v in plain.items() if k != "item_id"}
    again = app.client.post("/v1/score", json=VERDICT).json()  # the memoised answer was not changed by the copy
    assert again["item_id"] is None


def test_batch_echoes_item_id_on_successes_and_failures(app: AppHarness):
    items = [
        {**VERDICT, "item_id": "a"},
        {**VERDICT, "judge_score": 9, "item_id": "b"},  # invalid: fails alone, keeps its id
        VERDICT,
        {**VERDICT, "item_id": 7},  # item_id is a string: 422 for this item
    ]
    reply = app.client.post("/v1/score/batch", json={"items": items}, headers={"X-Request-ID": "batch-ids"})
    results = reply.json()["results"]
    assert [r.get("item_id") for r in results] == ["a", "b", None, None]
    assert [r["ok"] for r in results] == [True, False, True, False]
    assert results[0]["result"]["item_id"] == "a"
    assert "item_id" in results[3]["error"]["detail"]
    failed = [line for line in app.log_lines() if line["event"] == "batch.item_failed"]
    assert [(line["index"], line["item_id"], line["status"]) for line in failed] == [(1, "b", 422), (3, None, 422)]
    assert all(line["request_id"] == "batch-ids" for line in failed)


def test_the_memoised_answer_never_carries_another_callers_id(app: AppHarness):
    for item_id in ("first", None, "second", None):
        body = VERDICT if item_id is None else {**VERDICT, "item_id": item_id}
        assert app.client.post("/v1/score", json=body).json()["item_id"] == item_id
