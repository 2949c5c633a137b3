"""What scoring remembers on a calibration snapshot answers exactly as a fresh resolution would, and stays bounded."""

from __future__ import annotations

import asyncio
import itertools

import msgspec
import pytest

from artifact.thresholds import ThresholdsArtifact
from calibration.conformal import PROBABILITY_METHODS, prediction_set
from calibration.errors import CalibrationError
from service.artifacts.snapshot import MEMO_LIMIT, CalibrationSnapshot, LruMemo
from service.errors import InvalidRequestError
from service.http.routes.score import scoring_context
from service.scoring.score import score_item
from service.wire.score import ScoreRequest
from tests.service.conftest import STAND_IN, AppHarness


def _fresh_snapshot(snapshot: CalibrationSnapshot) -> CalibrationSnapshot:
    return CalibrationSnapshot.build(snapshot.artifact, path=snapshot.path, loaded_at=snapshot.loaded_at)


def test_remembered_score_sets_equal_the_core(artifact: ThresholdsArtifact):
    snapshot = CalibrationSnapshot.build(artifact, path="memory", loaded_at="now")
    score_only = [entry for entry in artifact.entries if entry.method not in PROBABILITY_METHODS]
    needing = [entry for entry in artifact.entries if entry.method in PROBABILITY_METHODS]
    assert score_only and needing
    probabilities = [0.05, 0.15, 0.5, 0.2, 0.1]
    for _ in range(2):  # the second pass answers from the compiled rules
        for entry, score in itertools.product(score_only, range(1, 6)):
            assert snapshot.prediction_set(entry, score, None) == prediction_set(entry.fitted, judge_score=score)
        for entry in needing:  # a refusal is raised every time, never remembered
            with pytest.raises(CalibrationError):
                snapshot.prediction_set(entry, 3, None)
            assert snapshot.prediction_set(entry, 3, probabilities) == prediction_set(
                entry.fitted, judge_score=3, probabilities=probabilities
            )
    for entry in artifact.entries[:3]:  # one rule per entry of the artifact, compiled once
        assert snapshot.index.rule(entry) is snapshot.index.rule(entry)
        stranger = msgspec.structs.replace(entry)  # an equal entry not in the artifact: answered, never kept
        assert snapshot.index.rule(stranger) is not snapshot.index.rule(stranger)
        assert snapshot.index.rule(stranger) == snapshot.index.rule(entry)


def _requests() -> list[ScoreRequest]:
    bodies = []
    for criterion, score, alpha, method in itertools.product(
        ["relevance", "coherence", "fluency"], [1, 3, 5], [0.1, 0.2, None], [None, "residual", "lac"]
    ):
        body = {"criterion": criterion, "judge": STAND_IN, "judge_score": score}
        if alpha is not None:
            body["alpha"] = alpha
        if method is not None:
            body["method"] = method
        bodies.append(body)
    bodies.append({"criterion": "relevance", "judge": STAND_IN, "judge_logprobs": {"1": -3.0, "2": -0.2}})
    bodies.append({"criterion": "relevance", "judge": STAND_IN, "judge_score": 7})  # outside 1..5: a 422
    return [msgspec.convert(body, ScoreRequest) for body in bodies]


async def _answers(app: AppHarness, snapshot: CalibrationSnapshot, requests: list[ScoreRequest]) -> list[object]:
    context = msgspec.structs.replace(scoring_context(app.services), snapshot=snapshot)
    answers: list[object] = []
    for request in requests:
        try:
            answers.append(await score_item(context, request))
        except InvalidRequestError as error:
            answers.append(("422", str(error)))
    return answers


def test_a_remembering_snapshot_answers_like_a_fresh_one(app: AppHarness):
    requests = _requests()
    snapshot = _fresh_snapshot(app.services.calibration.current)
    warm_first = asyncio.run(_answers(app, snapshot, requests))
    warm_again = asyncio.run(_answers(app, snapshot, requests))  # every plan and entry now comes from the memo
    fresh = [asyncio.run(_answers(app, _fresh_snapshot(snapshot), [request]))[0] for request in requests]
    assert warm_first == warm_again == fresh
    assert any(isinstance(answer, tuple) for answer in fresh)  # failures were among them
    assert snapshot.memo  # and successes were remembered


def test_failures_are_not_remembered_and_the_memo_is_bounded(app: AppHarness):
    snapshot = _fresh_snapshot(app.services.calibration.current)
    # below every calibrated level (0.1, 0.2): refused, and nothing about it remembered
    bad = msgspec.convert({"criterion": "relevance", "judge": STAND_IN, "judge_score": 3, "alpha": 0.03}, ScoreRequest)
    with pytest.raises(InvalidRequestError):
        asyncio.run(_answers_raising(app, snapshot, bad))
    assert not snapshot.memo
    floods = [
        msgspec.convert(
            {"criterion": "relevance", "judge": STAND_IN, "judge_score": 3, "prompt_family": f"f{k}"}, ScoreRequest
        )
        for k in range(MEMO_LIMIT + 50)
    ]
    answers = asyncio.run(_answers(app, snapshot, floods))
    assert len(snapshot.memo) == MEMO_LIMIT
    assert all(answer.calibrated is False and answer.decision == "escalate" for answer in answers)  # type: ignore[attr-defined]


async def _answers_raising(app: AppHarness, snapshot: CalibrationSnapshot, request: ScoreRequest) -> object:
    context = msgspec.structs.replace(scoring_context(app.services), snapshot=snapshot)
    return await score_item(context, request)


def test_after_a_flood_the_memo_keeps_remembering_recent_requests(app: AppHarness):
    snapshot = _fresh_snapshot(app.services.calibration.current)
    flood = [
        msgspec.convert(
            {"criterion": "relevance", "judge": STAND_IN, "judge_score": 3, "prompt_family": f"f{k}"}, ScoreRequest
        )
        for k in range(MEMO_LIMIT + 10)
    ]
    asyncio.run(_answers(app, snapshot, flood))
    before = set(snapshot.memo)
    legit = msgspec.convert({"criterion": "relevance", "judge": STAND_IN, "judge_score": 4, "alpha": 0.2}, ScoreRequest)
    first = asyncio.run(_answers(app, snapshot, [legit]))
    added = set(snapshot.memo) - before
    assert added and len(snapshot.memo) == MEMO_LIMIT  # remembered, and the oldest one-off keys made room
    asyncio.run(_answers(app, snapshot, flood[: MEMO_LIMIT // 2]))  # some recur: the legit keys must survive them
    assert added <= set(snapshot.memo)
    assert asyncio.run(_answers(app, snapshot, [legit])) == first


def test_lru_memo_evicts_the_least_recently_used():
    memo = LruMemo(3)
    for key in ("a", "b", "c"):
        memo.put((key,), key)
    assert memo.get(("a",)) == "a"  # a is now the most recent
    memo.put(("d",), "d")
    assert list(memo) == [("c",), ("a",), ("d",)] and memo.get(("b",)) is None
    memo.put(("c",), "c2")
    memo.put(("e",), "e")
    assert list(memo) == [("d",), ("c",), ("e",)]
