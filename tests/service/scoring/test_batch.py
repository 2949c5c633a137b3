"""POST /v1/score/batch: per-item outcomes in input order; one bad item or failed call never sinks the rest."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable

import service.http.routes.score as score_api
from artifact.thresholds import ThresholdIndex
from calibration.conformal import prediction_set
from service.config.settings import Settings
from service.http.routes.score import batch_width
from tests.fakes.judge_server import JudgeServer, ScriptedReply, peaked_logprobs
from tests.service.conftest import STAND_IN, AppHarness


def _responder(body: dict) -> ScriptedReply | str:
    text = "\n".join(str(message["content"]) for message in body["messages"])
    if "FAIL-CALL" in text:
        raise RuntimeError("scripted outage")  # the stand-in answers HTTP 500
    if "NO-SCORE" in text:
        return "I cannot say."
    score = int(text.split("QUALITY-", 1)[1][0]) if "QUALITY-" in text else 3
    return ScriptedReply(str(score), peaked_logprobs(score))


def test_bad_item_and_failed_calls_keep_the_others_in_order(judge_app: AppHarness, stand_in: JudgeServer, artifact):
    stand_in.responder = _responder
    items = [
        {"criterion": "relevance", "document": "Doc.", "summary": f"Summary QUALITY-{k}."} for k in (1, 2, 3, 4, 5)
    ]
    items.insert(1, {"criterion": "relevance", "alpha": 7})  # invalid: alpha outside (0, 1)
    items.insert(3, {"criterion": "relevance", "document": "Doc.", "summary": "FAIL-CALL"})
    items.insert(5, {"criterion": "relevance", "document": "Doc.", "summary": "NO-SCORE"})
    items.append("not an object")
    items.append({"criterion": "relevance", "judge": STAND_IN, "judge_score": 2})  # the caller's verdict
    reply = judge_app.client.post("/v1/score/batch", json={"items": items})
    assert reply.status_code == 200, reply.text
    data = reply.json()
    results = data["results"]
    assert [r["index"] for r in results] == list(range(len(items)))
    assert (data["n_ok"], data["n_failed"]) == (6, 4)
    index = ThresholdIndex(artifact)
    fitted = index.lookup(STAND_IN, "paper", "relevance", "residual", 0.1).fitted
    scores = iter((1, 2, 3, 4, 5))
    for position, result in enumerate(results):
        if position == 1:
            assert not result["ok"] and result["error"]["status"] == 422
            assert result["error"]["type"].endswith("validation-error") and "alpha" in result["error"]["detail"]
        elif position == 3:
            assert not result["ok"] and result["error"]["status"] == 502
            assert result["error"]["type"].endswith("judge-call-failed")
        elif position == 5:
            assert not result["ok"] and result["error"]["status"] == 502
            assert result["error"]["raw_reply"] == "I cannot say."
        elif position == 8:
            assert not result["ok"] and result["error"]["status"] == 422
        elif position == 9:
            assert result["ok"] and result["result"]["source"] == "caller"
        else:
            score = next(scores)
            assert result["ok"], result
            assert "error" not in result
            assert result["result"]["judge_score"] == score
            assert result["result"]["prediction_set"] == list(prediction_set(fitted, judge_score=score))
    assert all("result" not in r for r in results if not r["ok"])


def test_judge_calls_run_concurrently_but_bounded(
    start_app: Callable[[Settings], AppHarness], make_settings, stand_in: JudgeServer, tmp_path
):
    import msgspec

    path = tmp_path / "bounded.json"
    path.write_bytes(msgspec.json.encode([stand_in.judge_config(name=STAND_IN, max_concurrency=3)]))
    harness = start_app(make_settings(judges_file=path))
    stand_in.latency_s = 0.05
    items = [{"criterion": "relevance", "document": "Doc.", "summary": f"Summary {k}."} for k in range(12)]
    data = harness.client.post("/v1/score/batch", json={"items": items}).json()
    assert data["n_ok"] == 12
    assert stand_in.call_count == 12
    assert 1 < stand_in.max_in_flight <= 3


def test_identical_items_in_flight_call_the_judge_once(judge_app: AppHarness, stand_in: JudgeServer):
    stand_in.latency_s = 0.1
    items = [{"criterion": "relevance", "document": "Doc.", "summary": "The same."}] * 6
    data = judge_app.client.post("/v1/score/batch", json={"items": items}).json()
    assert data["n_ok"] == 6 and stand_in.call_count == 1
    assert all(r["result"]["judge_score"] == 4 for r in data["results"])


def test_batch_limits(start_app: Callable[[Settings], AppHarness], make_settings):
    harness = start_app(make_settings(max_batch_items=3))
    item = {"criterion": "relevance", "judge": STAND_IN, "judge_score": 2}
    reply = harness.client.post("/v1/score/batch", json={"items": [item] * 4})
    assert reply.status_code == 422 and "MAX_BATCH_ITEMS=3" in reply.json()["detail"]
    over = harness.client.post("/v1/score/batch", json={"items": [item] * 1001})
    assert over.status_code == 422
    assert harness.client.post("/v1/score/batch", json={"items": [item] * 3}).json()["n_ok"] == 3


def test_empty_batch_is_an_empty_answer(app: AppHarness):
    assert app.client.post("/v1/score/batch", json={"items": []}).json() == {"results": [], "n_ok": 0, "n_failed": 0}


def test_batch_without_judges_fails_live_items_only(app: AppHarness):
    items = [
        {"criterion": "relevance", "document": "Doc.", "summary": "Sum."},
        {"criterion": "relevance", "judge": STAND_IN, "judge_score": 5},
    ]
    results = app.client.post("/v1/score/batch", json={"items": items}).json()["results"]
    assert results[0]["error"]["status"] == 422 and "JUDGES_FILE" in results[0]["error"]["detail"]
    assert results[1]["ok"]


def test_at_most_the_batch_window_of_items_is_scored_at_once(judge_app: AppHarness, monkeypatch):
    width = batch_width(judge_app.services)
    judges = judge_app.services.judges
    assert width == max(64, 2 * sum(judges.config(name).max_concurrency for name in judges.names()))
    real = score_api.score_item
    in_flight, most = 0, 0

    async def counting(context, item):
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        try:
            await asyncio.sleep(0.002)
            return await real(context, item)
        finally:
            in_flight -= 1

    monkeypatch.setattr(score_api, "score_item", counting)
    items = [{"criterion": "relevance", "judge": STAND_IN, "judge_score": 1 + k % 5} for k in range(3 * width + 7)]
    reply = judge_app.client.post("/v1/score/batch", json={"items": items})
    assert reply.status_code == 200
    results = reply.json()["results"]
    assert [r["index"] for r in results] == list(range(len(items))) and all(r["ok"] for r in results)
    assert [r["result"]["judge_score"] for r in results] == [item["judge_score"] for item in items]
    assert most == width  # the window filled, and never overflowed


def test_the_start_up_heap_is_frozen_while_the_app_runs(start_app: Callable[[Settings], AppHarness], make_settings):
    gc.unfreeze()
    harness = start_app(make_settings())
    assert gc.get_freeze_count() > 10_000  # modules, artifact and clients are out of the collector's way
    harness.client.__exit__(None, None, None)
    assert gc.get_freeze_count() == 0
