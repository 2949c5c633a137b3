"""The client against the real service (uvicorn, Redis, a worker process): every answer the client types equals
the JSON the service sends for the same request, errors arrive as ``ApiError``, jobs and calibrations run to
their end, and the async client answers what the sync one does."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import numpy as np
import pytest
from conformal_judge_client import (
    ApiError,
    AsyncClient,
    BatchResult,
    Client,
    CompareResult,
    Guarantee,
    PollPolicy,
    Problem,
    ScoreResult,
)

from tests.client.conftest import Service
from tests.service.conftest import STAND_IN

pytestmark = pytest.mark.redis

FAST_POLL = PollPolicy(initial_s=0.1, factor=1.5, max_s=1.0, page_size=3)
CYCLE = {
    "criterion": "coherence",
    "preferences": [{"winner": "a", "loser": "b"}, {"winner": "b", "loser": "c"}, {"winner": "c", "loser": "a"}],
}


def item(i: int) -> dict[str, Any]:
    """The i-th caller-verdict item (criteria, scores and levels vary with i)."""
    body: dict[str, Any] = {
        "criterion": "relevance" if i % 2 else "coherence",
        "judge": STAND_IN,
        "judge_score": 1 + i % 5,
        "item_id": f"doc-{i}",
    }
    if i % 3 == 0:
        body["alpha"] = 0.2
    return body


def raw_post(service: Service, path: str, body: Any) -> httpx.Response:
    """The same request sent with plain httpx: what the service answers without the client."""
    return httpx.post(service.url + path, json=body, headers={"Authorization": f"Bearer {service.api_key}"}, timeout=60)


@pytest.fixture
def client(service: Service) -> Client:
    with Client(service.url, api_key=service.api_key, poll=FAST_POLL) as made:
        yield made


def test_health_and_readiness(client: Client) -> None:
    assert client.health().status == "ok"
    ready = client.readiness()
    assert ready.ready and ready.status == "ready"
    assert ready.checks and all(check.name for check in ready.checks)
    assert ready.raw["status"] == "ready"


def raw_get(service: Service, path: str) -> httpx.Response:
    """A GET sent with plain httpx."""
    return httpx.get(service.url + path, headers={"Authorization": f"Bearer {service.api_key}"}, timeout=60)


def test_judges_in_short_by_default_and_in_full_on_request(client: Client, service: Service) -> None:
    short, full = client.judges(), client.judges(view="full")
    assert short == raw_get(service, "/v1/judges").json() and short["view"] == "summary"
    assert full == raw_get(service, "/v1/judges?view=full").json() and "calibrations" in full["judges"][0]
    assert [j["name"] for j in short["judges"]] == [j["name"] for j in full["judges"]]
    with pytest.raises(ApiError) as caught:
        client.judges(view="bogus")
    assert caught.value.status == 422

    async def both() -> tuple[dict[str, Any], dict[str, Any]]:
        async with AsyncClient(service.url, api_key=service.api_key) as aclient:
            return await aclient.judges(), await aclient.judges(view="full")

    assert asyncio.run(both()) == (short, full)


def test_score_with_a_supplied_verdict_is_the_service_answer_typed(client: Client, service: Service) -> None:
    body = {"criterion": "relevance", "judge": STAND_IN, "judge_score": 4, "item_id": "x1"}
    result = client.score(body)
    raw = raw_post(service, "/v1/score", body).json()
    assert isinstance(result, ScoreResult)
    assert result.raw == raw
    assert result.point == raw["point"] and list(result.prediction_set) == raw["prediction_set"]
    assert result.decision == raw["decision"] and result.decision in ("accept", "escalate", "second_opinion")
    assert result.rule_failed is raw["rule_failed"] and result.reason == raw["reason"] and result.reason
    assert result.set_size == len(result.prediction_set) and result.item_id == "x1" and result.source == "caller"
    assert result.guarantees and all(isinstance(g, Guarantee) for g in result.guarantees)
    assert [g.kind for g in result.guarantees] == [g["kind"] for g in raw["guarantees"]]
    assert result["coverage_target"] == result.coverage_target == pytest.approx(0.9)


def test_batch_keeps_order_and_fails_bad_items_alone(client: Client, service: Service) -> None:
    items = [item(i) for i in range(5)]
    items[2] = {"criterion": "relevance", "judge": STAND_IN, "judge_score": 9, "item_id": "bad"}
    batch = client.score_batch(items)
    assert isinstance(batch, BatchResult)
    assert batch.raw == raw_post(service, "/v1/score/batch", {"items": items}).json()
    assert (batch.n_ok, batch.n_failed) == (4, 1)
    assert [r.index for r in batch.results] == [0, 1, 2, 3, 4]
    assert [r.item_id for r in batch.results] == ["doc-0", "doc-1", "bad", "doc-3", "doc-4"]
    failed = batch.results[2]
    assert not failed.ok and failed.result is None
    assert isinstance(failed.error, Problem) and failed.error.status == 422 and failed.error.detail
    for entry, body in zip(batch.results, items, strict=True):
        if entry.ok:
            assert entry.result is not None and entry.error is None
            assert entry.result.raw == client.score(body).raw  # a batch item is what /v1/score answers


def test_compare_with_supplied_preferences(client: Client, service: Service) -> None:
    compared = client.compare(CYCLE)
    assert isinstance(compared, CompareResult)
    assert compared.raw == raw_post(service, "/v1/compare", CYCLE).json()
    assert set(compared.candidates) == {"a", "b", "c"} and compared.source == "caller"
    assert compared.n_cycles == 1 and compared.cycles and set(compared.cycles[0]) == {"a", "b", "c"}
    assert compared.violation_rate > 0
    assert set(compared.rankings) >= {"bradley_terry", "schulze", "win_rate"}
    assert all(sorted(order) == ["a", "b", "c"] for order in compared.rankings.values())
    pair = next(p for p in compared.pairs if {p.a, p.b} == {"a", "b"})
    assert pair.wins_a + pair.wins_b + pair.ties == pair.n == 1
    assert (pair.wins_a if pair.a == "a" else pair.wins_b) == 1 and pair.decision in ("accept", "abstain")


def test_problem_json_becomes_a_typed_error(client: Client) -> None:
    with pytest.raises(ApiError) as caught:
        client.score({"criterion": "no-such-criterion", "judge": STAND_IN, "judge_score": 3})
    error = caught.value
    assert error.status == 422 and error.type and error.title and error.detail
    assert error.raw["status"] == 422 and "coherence" in error.allowed
    with pytest.raises(ApiError) as caught:
        client.job_status("no-such-job")
    assert caught.value.status == 404 and caught.value.detail


def test_api_key_is_sent_as_bearer(service: Service) -> None:
    body = {"criterion": "relevance", "judge": STAND_IN, "judge_score": 4}
    for key in (None, "wrong-key"):
        with Client(service.url, api_key=key) as anonymous:
            with pytest.raises(ApiError) as caught:
                anonymous.score(body)
            assert caught.value.status == 401 and "key" in caught.value.detail
            assert anonymous.health().status == "ok"  # public path
    with Client(service.url, api_key=service.api_key) as keyed:
        assert keyed.score(body).judge_score == 4


def test_a_job_runs_to_its_end_on_a_real_worker(client: Client) -> None:
    items = [item(i) for i in range(10)]
    items[6] = {"criterion": "relevance", "judge": STAND_IN, "judge_score": 9, "item_id": "bad"}
    outcome = client.run_job(items, timeout_s=180)
    assert outcome.status.status == "failed" and outcome.status.finished  # one item failed: docs/jobs.md
    assert (outcome.status.n_items, outcome.status.n_done, outcome.status.n_failed) == (10, 10, 1)
    assert [line.index for line in outcome.results] == list(range(10))  # read in pages of 3 from the cursor
    assert [line.item_id for line in outcome.results] == [b["item_id"] for b in items]
    batch = client.score_batch(items)
    for line, expected in zip(outcome.results, batch.results, strict=True):
        assert line.ok is expected.ok
        if line.ok:
            assert line.result is not None and expected.result is not None
            assert line.result.prediction_set == expected.result.prediction_set
            assert line.result.decision == expected.result.decision
        else:
            assert line.error is not None and line.error.status == 422


def test_a_job_resubmitted_with_its_idempotency_key_is_the_same_job(client: Client) -> None:
    items = [item(i) for i in range(3)]
    first = client.submit_job(items, idempotency_key="client-test-replay")
    again = client.submit_job(items, idempotency_key="client-test-replay")
    assert again.job_id == first.job_id and again.replayed and not first.replayed
    assert client.follow_job(first.job_id, timeout_s=180).status.n_done == 3
    with pytest.raises(ApiError) as caught:
        client.submit_job(items[:1], idempotency_key="client-test-replay")
    assert caught.value.status == 409


def calibration_rows(n: int = 200) -> list[dict[str, Any]]:
    """Labelled rows of a judge the artifact lacks ("sampler" on "tone"), seeded."""
    rng = np.random.default_rng(4)
    rows = []
    for i in range(n):
        human = int(rng.integers(1, 6))
        rows.append(
            {
                "item_id": f"i{i}",
                "criterion": "tone",
                "judge": "sampler",
                "human": human,
                "mean_of_samples": round(float(np.clip(human + rng.normal(0, 0.6), 1, 5)), 3),
                "group": f"d{i // 5}",
            }
        )
    return rows


def test_calibration_upload_activate_score_and_delete(service: Service) -> None:
    with Client(service.url, api_key=service.api_key) as user:
        with pytest.raises(ApiError) as caught:
            user.submit_calibration(calibration_rows())
        assert caught.value.status == 403  # uploads need the admin key
    with Client(service.url, api_key=service.admin_key, poll=FAST_POLL) as admin:
        job = admin.submit_calibration(calibration_rows(), name="client-tone")
        assert job.n_rows == 200 and job.artifact_name == "client-tone"
        done = admin.wait_for_calibration(job.id, timeout_s=240)
        assert done.status == "done", done.error
        assert [cell["input_kind"] for cell in done.cells] == ["mean"]
        activation = admin.activate_calibration(job.id)
        assert activation.artifact == "client-tone" and activation.cells_added == 1
        scored = admin.score({"criterion": "tone", "judge": "sampler", "mean_of_samples": 3.4})
        assert scored.calibrated and scored.input_kind == "mean"
        assert admin.delete_calibration(job.id) is None
        with pytest.raises(ApiError) as caught:
            admin.calibration_job(job.id)
        assert caught.value.status == 404


def test_the_async_client_answers_what_the_sync_client_does(client: Client, service: Service) -> None:
    items = [item(i) for i in range(4)]

    async def main() -> tuple[Any, ...]:
        async with AsyncClient(service.url, api_key=service.api_key, poll=FAST_POLL) as aclient:
            score, batch, compared, health = await asyncio.gather(
                aclient.score(items[1]), aclient.score_batch(items), aclient.compare(CYCLE), aclient.health()
            )
            outcome = await aclient.run_job(items, timeout_s=180)
            with pytest.raises(ApiError) as caught:
                await aclient.score({"criterion": "relevance", "judge": STAND_IN, "judge_score": 0})
            return score, batch, compared, health, outcome, caught.value

    score, batch, compared, health, outcome, error = asyncio.run(main())
    assert score == client.score(items[1]) and score.raw == client.score(items[1]).raw
    assert batch.raw == client.score_batch(items).raw
    assert compared.raw == client.compare(CYCLE).raw
    assert health.status == "ok"
    assert outcome.status.status == "succeeded"
    assert [line.raw for line in outcome.results] == [line.raw for line in client.score_batch(items).results]
    assert error.status == 422
