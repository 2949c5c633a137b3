"""POST /v1/score: sets equal the calibration core's, the decision rule, resolution rules, the live judge."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from artifact.thresholds import ThresholdIndex, ThresholdsArtifact
from calibration.conformal import METHODS, PROBABILITY_METHODS, prediction_set, probabilities_from_logprobs
from calibration.input_kinds.verdicts import verdict_inputs
from service.config.settings import Settings
from service.scoring.policy import interval_hull
from tests.fakes.judge_server import JudgeServer, ScriptedReply, peaked_logprobs
from tests.service.conftest import RECORDED, STAND_IN, AppHarness

LOGPROBS = {"1": -4.0, "2": -1.3, "3": -0.4, "4": -2.2, "5": -6.0}


def _probabilities(logprobs: dict[str, float]) -> list[float]:
    return [float(p) for p in probabilities_from_logprobs([logprobs[str(k)] for k in range(1, 6)])]


@pytest.mark.parametrize("alpha", [0.1, 0.2])
@pytest.mark.parametrize("judge_score", [1, 2, 3, 4, 5])
def test_residual_sets_equal_the_core(app: AppHarness, artifact: ThresholdsArtifact, alpha: float, judge_score: int):
    body = {"criterion": "relevance", "judge": STAND_IN, "judge_score": judge_score, "alpha": alpha}
    reply = app.client.post("/v1/score", json=body)
    assert reply.status_code == 200, reply.text
    data = reply.json()
    entry = ThresholdIndex(artifact).lookup(STAND_IN, "paper", "relevance", "residual", alpha)
    expected = prediction_set(entry.fitted, judge_score=judge_score)
    assert data["prediction_set"] == list(expected)
    assert data["set_size"] == len(expected)
    assert data["method"] == "residual" and data["calibrated"] is True
    assert data["coverage_target"] == pytest.approx(1 - alpha)
    assert data["n_cal"] == entry.fitted.n_cal
    assert expected == interval_hull(expected)  # residual sets are intervals: served as the core gives them
    # the shipped-style artifact of conftest has no decision rules: escalate, the point is the judge's own score,
    # and only the set's guarantee is stated
    assert (data["decision"], data["escalate"], data["rule_failed"]) == ("escalate", True, False)
    assert data["point"] == judge_score
    assert data["guarantees"] == [{"kind": "set_coverage", "alpha": alpha, "mode": "expected"}]
    # nor per-label rules: the default guarantee serves the expected set and says why it cannot decide
    assert data["reason"].startswith("this cell has no per-label calibration")
    assert "no certified decision rule" in data["reason"]
    assert data["source"] == "caller" and data["cached"] is False and data["raw_reply"] is None


@pytest.mark.parametrize("method", METHODS)
def test_every_method_equals_the_core(app: AppHarness, artifact: ThresholdsArtifact, method: str):
    index = ThresholdIndex(artifact)
    probabilities = _probabilities(LOGPROBS)
    for judge_score in (1, 3, 5):
        body = {
            "criterion": "coherence",
            "judge": STAND_IN,
            "judge_score": judge_score,
            "judge_logprobs": LOGPROBS,
            "method": method,
            "alpha": 0.2,
        }
        data = app.client.post("/v1/score", json=body).json()
        (entry,) = [
            e
            for e in index.entries()
            if e.criterion == "coherence" and e.judge == STAND_IN and e.method == method and e.alpha == 0.2
        ]
        # The entry's own input kind decides what the core sees (calibration.input_kinds.verdicts).
        score, probs = verdict_inputs(entry.kind, 5, judge_score=judge_score, probabilities=probabilities)
        expected = prediction_set(entry.fitted, judge_score=score, probabilities=probs)
        assert data["prediction_set"] == list(expected), (method, judge_score)
        assert data["input_kind"] == entry.kind
        assert data["probabilities"] == pytest.approx(probabilities)


def test_logprobs_alone_give_the_argmax_score_and_the_default_method(app: AppHarness, artifact: ThresholdsArtifact):
    data = app.client.post(
        "/v1/score", json={"criterion": "coherence", "judge": STAND_IN, "judge_logprobs": LOGPROBS}
    ).json()
    assert data["judge_score"] == 3
    assert data["method"] == "lac"  # the artifact's default for the cell
    fitted = ThresholdIndex(artifact).lookup(STAND_IN, "paper", "coherence", "lac", 0.1).fitted
    assert data["prediction_set"] == list(prediction_set(fitted, probabilities=_probabilities(LOGPROBS)))


def test_missing_logprob_tokens_count_as_the_recorded_floor(app: AppHarness):
    partial = {"2": -0.2, "3": -1.8}
    data = app.client.post(
        "/v1/score", json={"criterion": "coherence", "judge": STAND_IN, "judge_logprobs": partial}
    ).json()
    full = {"1": math.log(1e-5), "2": -0.2, "3": -1.8, "4": math.log(1e-5), "5": math.log(1e-5)}
    assert data["probabilities"] == pytest.approx(_probabilities(full))
    assert data["judge_score"] == 2


def test_score_alone_is_served_by_thresholds_fitted_on_scores_alone(app: AppHarness, artifact: ThresholdsArtifact):
    # The cell's default (lac) was fitted on probabilities; a score-only verdict gets the score kind's first
    # method instead, never a threshold fitted on another kind of input.
    data = app.client.post("/v1/score", json={"criterion": "coherence", "judge": STAND_IN, "judge_score": 2}).json()
    assert (data["method"], data["input_kind"], data["calibrated"]) == ("residual", "score", True)
    fitted = ThresholdIndex(artifact).lookup(STAND_IN, "paper", "coherence", "residual", 0.1, "score").fitted
    assert data["prediction_set"] == list(prediction_set(fitted, judge_score=2))


def test_named_probability_method_without_probabilities_escalates_saying_what_to_send(app: AppHarness):
    # schema-valid (the spec cannot name each cell's methods per input kind), so answered: uncalibrated, escalate
    reply = app.client.post(
        "/v1/score", json={"criterion": "coherence", "judge": STAND_IN, "judge_score": 2, "method": "aps"}
    )
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert (data["calibrated"], data["decision"], data["prediction_set"]) == (False, "escalate", [1, 2, 3, 4, 5])
    assert "log-probs" in data["reason"] and "score verdicts" in data["reason"]


def test_a_kind_the_cell_was_never_fitted_on_is_uncalibrated(app: AppHarness):
    body = {"criterion": "coherence", "judge": STAND_IN, "mean_of_samples": 3.4}
    data = app.client.post("/v1/score", json=body).json()
    assert (data["calibrated"], data["decision"], data["input_kind"]) == (False, "escalate", None)
    assert "fitted on score, probabilities verdicts" in data["reason"] and "carries mean" in data["reason"]


def test_level_between_calibrated_ones_uses_the_next_smaller_and_says_so(app: AppHarness):
    body = {"criterion": "coherence", "judge": STAND_IN, "judge_score": 3, "alpha": 0.17}
    data = app.client.post("/v1/score", json=body).json()
    assert data["alpha"] == 0.1 and data["coverage_target"] == 0.9
    assert "next smaller one (0.1)" in data["reason"]


def test_pac_entries_report_their_confidence(tmp_path, start_app):
    from artifact.thresholds import FORMAT_VERSION, ThresholdEntry, ThresholdsArtifact, save_artifact
    from calibration.conformal import fit_conformal

    labels = np.array([1, 2, 3, 4, 5] * 40)
    fitted = fit_conformal("residual", 0.1, labels, judge_scores=labels, delta=0.05)
    entry = ThresholdEntry(
        judge="pac-judge",
        prompt_family="paper",
        criterion="coherence",
        method="residual",
        alpha=0.1,
        fitted=fitted,
        input_kind="score",
    )
    artifact = ThresholdsArtifact(
        format_version=FORMAT_VERSION,
        created_at="t",
        code_version="v",
        data_hash="h",
        label_scale=[1, 2, 3, 4, 5],
        entries=[entry],
    )
    path = tmp_path / "pac.json"
    save_artifact(artifact, path)
    harness = start_app(Settings(thresholds_path=path))
    data = harness.client.post(
        "/v1/score", json={"criterion": "coherence", "judge": "pac-judge", "judge_score": 3, "guarantee": "pac"}
    ).json()
    assert data["coverage_target"] == 0.9 and data["calibrated"] is True
    assert data["guarantees"] == [{"kind": "set_coverage", "alpha": 0.1, "mode": "pac", "confidence": 0.95}]
    # the artifact holds pac entries only: the default (expected) guarantee has no entry to serve and says so
    expected = harness.client.post(
        "/v1/score", json={"criterion": "coherence", "judge": "pac-judge", "judge_score": 3}
    ).json()
    assert expected["calibrated"] is False and "expected-mode calibration" in expected["reason"]
    assert "confidence" not in data  # the top-level field is gone: the guarantee says what it is the confidence of


def test_uncalibrated_criterion_escalates_with_the_full_scale(app: AppHarness):
    data = app.client.post("/v1/score", json={"criterion": "consistency", "judge": STAND_IN, "judge_score": 4}).json()
    assert data["calibrated"] is False
    assert data["prediction_set"] == [1, 2, 3, 4, 5] and data["set_size"] == 5
    assert data["decision"] == "escalate" and data["escalate"] is True
    assert "not calibrated" in data["reason"] and "consistency" in data["reason"]
    # nothing is certified: no guarantee is claimed, the point is the judge's own score, no rule failed
    assert (data["guarantees"], data["point"], data["rule_failed"]) == ([], 4, False)


def test_uncalibrated_prompt_family_escalates(app: AppHarness):
    body = {"criterion": "coherence", "judge": STAND_IN, "judge_score": 4, "prompt_family": "geval"}
    data = app.client.post("/v1/score", json=body).json()
    assert (data["calibrated"], data["decision"], data["prompt_family"]) == (False, "escalate", "geval")


def test_calibrated_full_set_escalates(app: AppHarness):
    data = app.client.post("/v1/score", json={"criterion": "fluency", "judge": STAND_IN, "judge_score": 3}).json()
    assert data["calibrated"] is True and data["set_size"] == 5 and data["decision"] == "escalate"


def test_a_small_set_alone_is_not_accepted(app: AppHarness, artifact: ThresholdsArtifact):
    # judge score 1 with a residual threshold of 1 gives {1, 2}: size 2 was "accept" under the set-size rule; a
    # small set carries no guarantee on the point, so without a certified rule the verdict escalates
    data = app.client.post("/v1/score", json={"criterion": "relevance", "judge": STAND_IN, "judge_score": 1}).json()
    assert data["set_size"] <= 2 and data["calibrated"] is True
    assert (data["decision"], data["escalate"], data["rule_failed"]) == ("escalate", True, False)
    assert "no certified decision rule" in data["reason"]


def test_calibration_only_judge_takes_its_single_prompt_family(app: AppHarness):
    data = app.client.post("/v1/score", json={"criterion": "coherence", "judge": RECORDED, "judge_score": 2}).json()
    assert data["prompt_family"] == "geval" and data["calibrated"] is True


@pytest.mark.parametrize(
    ("body", "allowed"),
    [
        ({"alpha": 0.05}, ["0.1", "0.2"]),
        ({"method": "magic"}, sorted(METHODS)),
        ({"judge": "nobody"}, [RECORDED, STAND_IN]),
    ],
)
def test_unknown_alpha_method_judge_are_422_with_allowed_values(app: AppHarness, body: dict, allowed: list[str]):
    reply = app.client.post("/v1/score", json={"criterion": "coherence", "judge": STAND_IN, "judge_score": 3, **body})
    assert reply.status_code == 422
    assert reply.headers["content-type"].startswith("application/problem+json")
    problem = reply.json()
    assert sorted(problem["allowed"]) == sorted(allowed)
    for value in allowed[:2]:
        assert value in problem["detail"]


def test_method_not_calibrated_for_the_cell_escalates_naming_the_calibrated_ones(app: AppHarness):
    body = {"criterion": "relevance", "judge": STAND_IN, "judge_score": 3, "method": "lac"}
    reply = app.client.post("/v1/score", json=body)
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert (data["calibrated"], data["decision"]) == (False, "escalate")
    assert "; calibrated: residual, mondrian_residual" in data["reason"]


def test_caller_verdict_needs_a_judge_name(app: AppHarness):
    reply = app.client.post("/v1/score", json={"criterion": "coherence", "judge_score": 3})
    assert reply.status_code == 422
    assert "judge is required" in reply.json()["detail"]


def test_no_judge_configured_is_a_422_with_help_not_a_retryable_503(app: AppHarness):
    """A body without a verdict on a service without judges: the request cannot be served here, now or later."""
    reply = app.client.post("/v1/score", json={"criterion": "coherence", "document": "A text.", "summary": "A."})
    assert reply.status_code == 422 and "retry-after" not in reply.headers
    assert reply.headers["content-type"].startswith("application/problem+json")
    problem = reply.json()
    assert problem["status"] == 422
    assert problem["type"].endswith("judge-not-configured")
    assert "JUDGES_FILE" in problem["detail"] and "api_key_env" in problem["detail"]
    assert "judges.example.json" in problem["detail"]


def test_no_calibration_loaded_is_503(start_app: Callable[[Settings], AppHarness], tmp_path):
    harness = start_app(Settings(thresholds_path=tmp_path / "missing.json"))
    reply = harness.client.post("/v1/score", json={"criterion": "coherence", "judge": STAND_IN, "judge_score": 3})
    assert reply.status_code == 503
    assert "missing.json" in reply.json()["detail"]


# --------------------------------------------------------------------------------------- live judge


def test_live_judge_verdict_and_set_equal_the_core(judge_app: AppHarness, stand_in: JudgeServer, artifact):
    stand_in.responder = lambda body: ScriptedReply("2", peaked_logprobs(2))
    body = {"criterion": "coherence", "document": "The article text.", "summary": "A summary."}
    reply = judge_app.client.post("/v1/score", json=body)
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert data["judge"] == STAND_IN and data["source"] == "judge" and data["raw_reply"] == "2"
    assert data["judge_score"] == 2 and data["cached"] is False
    expected_probabilities = _probabilities(peaked_logprobs(2))
    assert data["probabilities"] == pytest.approx(expected_probabilities, abs=1e-9)
    fitted = ThresholdIndex(artifact).lookup(STAND_IN, "paper", "coherence", "lac", 0.1).fitted
    assert data["prediction_set"] == list(prediction_set(fitted, judge_score=2, probabilities=data["probabilities"]))
    (request,) = stand_in.requests
    assert request.wants_logprobs and "The article text." in request.prompt_text


def test_identical_call_is_answered_from_the_cache(judge_app: AppHarness, stand_in: JudgeServer):
    body = {"criterion": "relevance", "document": "Doc.", "summary": "Sum."}
    first = judge_app.client.post("/v1/score", json=body).json()
    second = judge_app.client.post("/v1/score", json={**body, "alpha": 0.2}).json()
    assert (first["cached"], second["cached"]) == (False, True)
    assert stand_in.call_count == 1
    assert first["judge_score"] == second["judge_score"] == 4
    other = judge_app.client.post("/v1/score", json={**body, "summary": "Other."}).json()
    assert other["cached"] is False and stand_in.call_count == 2
    metrics = judge_app.client.get("/metrics").text
    assert 'cj_cache_requests_total{result="hit"} 1.0' in metrics
    assert 'cj_judge_calls_total{judge="stand-in",kind="score",outcome="ok"} 2.0' in metrics


def test_unreadable_reply_is_502_with_the_raw_reply_shortened(judge_app: AppHarness, stand_in: JudgeServer):
    stand_in.responder = lambda body: "I would rather not say. " * 40
    reply = judge_app.client.post("/v1/score", json={"criterion": "coherence", "document": "D.", "summary": "S."})
    assert reply.status_code == 502
    problem = reply.json()
    assert problem["type"].endswith("judge-reply-unreadable")
    assert problem["raw_reply"].startswith("I would rather not say.")
    assert len(problem["raw_reply"]) < 400 and "more characters" in problem["raw_reply"]


def test_failed_call_is_502_and_not_cached(judge_app: AppHarness, stand_in: JudgeServer):
    stand_in.inject("error_500", times=2)  # the client retries once (max_retries=1)
    body = {"criterion": "coherence", "document": "D.", "summary": "S."}
    reply = judge_app.client.post("/v1/score", json=body)
    assert reply.status_code == 502
    assert reply.json()["type"].endswith("judge-call-failed")
    again = judge_app.client.post("/v1/score", json=body)
    assert again.status_code == 200 and again.json()["cached"] is False


def test_live_call_needs_document_and_summary(judge_app: AppHarness):
    reply = judge_app.client.post("/v1/score", json={"criterion": "coherence", "summary": "S."})
    assert reply.status_code == 422 and "document and summary" in reply.json()["detail"]


def test_unconfigured_judge_for_a_live_call_is_422(judge_app: AppHarness):
    body = {"criterion": "coherence", "judge": RECORDED, "document": "D.", "summary": "S."}
    reply = judge_app.client.post("/v1/score", json=body)
    assert reply.status_code == 422 and reply.json()["allowed"] == [STAND_IN]


def test_caller_verdict_for_a_configured_judge_makes_no_call(judge_app: AppHarness, stand_in: JudgeServer):
    reply = judge_app.client.post("/v1/score", json={"criterion": "relevance", "judge_score": 2})
    assert reply.status_code == 200 and reply.json()["judge"] == STAND_IN
    assert stand_in.call_count == 0


def test_judge_answer_consumes_no_probabilities_when_the_method_needs_none(judge_app: AppHarness, artifact):
    data = judge_app.client.post(
        "/v1/score", json={"criterion": "relevance", "document": "D.", "summary": "S.", "method": "mondrian_residual"}
    ).json()
    fitted = ThresholdIndex(artifact).lookup(STAND_IN, "paper", "relevance", "mondrian_residual", 0.1).fitted
    assert data["prediction_set"] == list(prediction_set(fitted, judge_score=4))
    assert "mondrian_residual" not in PROBABILITY_METHODS


# ------------------------------------------------------------------------------------------- faithfulness


def _factuality_responder(body: dict) -> ScriptedReply | str:
    text = "\n".join(str(message["content"]) for message in body["messages"])
    if "Rate how faithful" in text:
        return ScriptedReply("3", peaked_logprobs(3))
    if "Pairs (" in text:
        return (
            "1. Answer: Paris | Question: Where did the meeting take place?\n"
            "2. Answer: Tuesday | Question: On which day did the meeting take place?"
        )
    if "Where did the meeting" in text:
        return "Paris"
    return "unanswerable"


FAITHFULNESS = {
    "criterion": "faithfulness",
    "document": "Leaders met in Paris. The date of the meeting was not given.",
    "summary": "The meeting took place in Paris on Tuesday.",
}


def test_faithfulness_direct_uses_its_own_prompt_family(judge_app: AppHarness, stand_in: JudgeServer, artifact):
    stand_in.responder = _factuality_responder
    data = judge_app.client.post("/v1/score", json=FAITHFULNESS).json()
    assert data["factuality_method"] == "direct" and data["prompt_family"] == "factuality_direct"
    assert data["judge_score"] == 3 and data["calibrated"] is True and data["evidence"] is None
    fitted = ThresholdIndex(artifact).lookup(STAND_IN, "factuality_direct", "faithfulness", "residual", 0.1).fitted
    assert data["prediction_set"] == list(prediction_set(fitted, judge_score=3))


def test_faithfulness_qa_returns_evidence_and_the_mapped_verdict(
    judge_app: AppHarness, stand_in: JudgeServer, artifact
):
    stand_in.responder = _factuality_responder
    reply = judge_app.client.post("/v1/score", json={**FAITHFULNESS, "factuality_method": "qa", "n_questions": 2})
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert data["factuality_method"] == "qa" and data["prompt_family"] == "factuality_qa"
    assert data["qa_score"] == pytest.approx(0.5)
    assert data["judge_score"] == 3  # 1 + round_half_up(4 * 0.5)
    evidence = {item["question"]: item for item in data["evidence"]}
    assert evidence["Where did the meeting take place?"]["article_answer"] == "Paris"
    assert evidence["Where did the meeting take place?"]["similarity"] == pytest.approx(1.0)
    assert evidence["On which day did the meeting take place?"]["article_answer"] is None
    fitted = ThresholdIndex(artifact).lookup(STAND_IN, "factuality_qa", "faithfulness", "residual", 0.1).fitted
    assert data["prediction_set"] == list(prediction_set(fitted, judge_score=3))
    calls = stand_in.call_count
    again = judge_app.client.post("/v1/score", json={**FAITHFULNESS, "factuality_method": "qa", "n_questions": 2})
    assert again.json()["cached"] is True and stand_in.call_count == calls


def test_faithfulness_with_the_callers_verdict_needs_no_judge(app: AppHarness):
    body = {"criterion": "faithfulness", "judge": STAND_IN, "judge_score": 2, "prompt_family": "factuality_direct"}
    data = app.client.post("/v1/score", json=body).json()
    assert data["calibrated"] is True and data["factuality_method"] is None


def test_blank_text_is_422_not_500(judge_app: AppHarness):
    reply = judge_app.client.post("/v1/score", json={**FAITHFULNESS, "summary": "   "})
    assert reply.status_code == 422 and "blank" in reply.json()["detail"]


# ------------------------------------------------------------------------------------- real recorded data


def _recorded_coherence(data_dir) -> tuple[list[int], list[int], list[dict[str, float]]]:
    """Human targets (expert mean rounded half up), GPT-4o-mini scores and log-probs for coherence."""
    import json

    targets = {}
    for line in (data_dir / "summeval" / "items.jsonl").read_text().splitlines():
        row = json.loads(line)
        targets[row["item_id"]] = math.floor(row["expert_mean"]["coherence"] + 0.5)
    labels, scores, logprobs = [], [], []
    for line in (data_dir / "judges" / "summeval" / "gpt-4o-mini-2024-07-18.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["criterion"] == "coherence" and row["score"] is not None and row["logprobs"] is not None:
            labels.append(targets[row["item_id"]])
            scores.append(row["score"])
            logprobs.append(row["logprobs"])
    return labels, scores, logprobs


def test_real_verdicts_through_the_batch_equal_the_core(
    data_dir, start_app: Callable[[Settings], AppHarness], tmp_path
):
    """Fit on half of GPT-4o-mini's recorded coherence verdicts; the API's sets on the other half equal
    ``predict_sets`` of the core for the same fitted predictors (lac with log-probs, residual with scores)."""
    import numpy as np

    from artifact.thresholds import FORMAT_VERSION, ThresholdEntry, ThresholdsArtifact, save_artifact
    from calibration.conformal import fit_conformal, predict_sets

    labels, scores, logprobs = _recorded_coherence(data_dir)
    matrix = np.array([[row[str(k)] for k in range(1, 6)] for row in logprobs])
    probabilities = probabilities_from_logprobs(matrix)
    half = len(labels) // 2
    judge = "gpt-4o-mini-2024-07-18"
    fitted = {
        "lac": fit_conformal("lac", 0.1, labels[:half], probabilities=probabilities[:half]),
        "residual": fit_conformal("residual", 0.1, labels[:half], judge_scores=scores[:half]),
    }
    artifact = ThresholdsArtifact(
        format_version=FORMAT_VERSION,
        created_at="2026-01-01T00:00:00+00:00",
        code_version="test",
        data_hash="summeval-gpt-4o-mini-coherence-first-half",
        label_scale=[1, 2, 3, 4, 5],
        entries=[
            ThresholdEntry(judge=judge, prompt_family="geval", criterion="coherence", method=m, alpha=0.1, fitted=f)
            for m, f in fitted.items()
        ],
    )
    path = tmp_path / "real.json"
    save_artifact(artifact, path)
    harness = start_app(Settings(thresholds_path=path))
    test_scores, test_logprobs = scores[half:], logprobs[half:]
    for method in ("lac", "residual"):
        items = [
            {"criterion": "coherence", "judge": judge, "judge_score": s, "judge_logprobs": lp, "method": method}
            if method == "lac"
            else {"criterion": "coherence", "judge": judge, "judge_score": s, "method": method}
            for s, lp in zip(test_scores[:1000], test_logprobs[:1000], strict=True)
        ]
        results = harness.client.post("/v1/score/batch", json={"items": items}).json()["results"]
        expected = predict_sets(
            fitted[method],
            judge_scores=np.array(test_scores[:1000]) if method == "residual" else None,
            probabilities=probabilities[half:][:1000] if method == "lac" else None,
        )
        got = [r["result"]["prediction_set"] for r in results]
        assert got == [[k + 1 for k in range(5) if row[k]] for row in expected], method


def test_live_judge_without_any_calibration_escalates(
    start_app: Callable[[Settings], AppHarness], make_settings, stand_in: JudgeServer, tmp_path
):
    import msgspec

    path = tmp_path / "two.json"
    configs = [stand_in.judge_config(name=STAND_IN), stand_in.judge_config(name="fresh-judge")]
    path.write_bytes(msgspec.json.encode(configs))
    harness = start_app(make_settings(judges_file=path))
    body = {"criterion": "coherence", "judge": "fresh-judge", "document": "Doc.", "summary": "Sum."}
    data = harness.client.post("/v1/score", json=body).json()
    assert data["judge"] == "fresh-judge" and data["judge_score"] == 4 and data["raw_reply"] == "4"
    assert data["calibrated"] is False and data["prediction_set"] == [1, 2, 3, 4, 5]
    assert data["decision"] == "escalate" and "fresh-judge" in data["reason"]
    judges = harness.client.get("/v1/judges").json()["judges"]
    fresh = next(j for j in judges if j["name"] == "fresh-judge")
    assert fresh["configured"] is True and fresh["criteria"] == []


def test_live_call_with_another_prompt_family_is_422(judge_app: AppHarness, stand_in: JudgeServer):
    body = {"criterion": "coherence", "document": "D.", "summary": "S.", "prompt_family": "geval"}
    reply = judge_app.client.post("/v1/score", json=body)
    assert reply.status_code == 422 and reply.json()["allowed"] == ["paper"]
    assert stand_in.call_count == 0
    faithful = {**body, "criterion": "faithfulness", "prompt_family": "paper"}
    assert judge_app.client.post("/v1/score", json=faithful).json()["allowed"] == ["factuality_direct"]


def test_an_uncalibrated_method_is_refused_before_calling_the_judge(judge_app: AppHarness, stand_in: JudgeServer):
    body = {"criterion": "relevance", "document": "D.", "summary": "S.", "method": "lac"}
    assert judge_app.client.post("/v1/score", json=body).status_code == 422
    assert stand_in.call_count == 0


def test_callers_faithfulness_verdict_defaults_to_the_factuality_family(judge_app: AppHarness):
    direct = judge_app.client.post("/v1/score", json={"criterion": "faithfulness", "judge_score": 2}).json()
    assert direct["prompt_family"] == "factuality_direct" and direct["calibrated"] is True
    body = {"criterion": "faithfulness", "judge_score": 2, "factuality_method": "qa"}
    assert judge_app.client.post("/v1/score", json=body).json()["prompt_family"] == "factuality_qa"
