"""Observability: per-judge tokens, cost and model mismatches in /metrics, ``judge_calls`` on answers, the
``judge_model_mismatch`` flag, and OpenTelemetry traces exported to a real OTLP/HTTP collector in a thread."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from litestar.testing import TestClient

from judges.config import load_judge_configs
from judges.errors import JudgeConfigError
from service.config.errors import SettingsError
from service.config.settings import Settings
from service.http.app import create_app
from service.judging.model_check import MODEL_MISMATCH_FLAG, is_model_mismatch
from service.observability.tracing import guarantee_name
from service.wire.score import Guarantee
from tests.fakes.judge_server import JudgeServer
from tests.fakes.otlp_collector import OtlpCollector, otlp_attributes
from tests.service.conftest import STAND_IN, AppHarness

LIVE = {"criterion": "coherence", "document": "The council met on Monday.", "summary": "The council met."}


def _metric(text: str, sample: str) -> float:
    """The value of one exposition sample line (``name{labels}``); 0 when absent."""
    for line in text.splitlines():
        if line.startswith(sample + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def _judges_file(tmp_path: Path, server: JudgeServer, **overrides: Any) -> Path:
    path = tmp_path / "judges.json"
    path.write_bytes(msgspec.json.encode([server.judge_config(name=STAND_IN, max_retries=1, **overrides)]))
    return path


@pytest.fixture
def priced_app(
    start_app: Callable[[Settings], AppHarness],
    make_settings: Callable[..., Settings],
    stand_in: JudgeServer,
    tmp_path: Path,
) -> AppHarness:
    """The stand-in judge priced at $2.50 / $10 per million prompt / completion tokens."""
    path = _judges_file(tmp_path, stand_in, price_in_per_mtok=2.5, price_out_per_mtok=10.0)
    return start_app(make_settings(judges_file=path))


def test_tokens_and_cost_are_counted_per_judge_and_judge_calls_on_the_answer(
    priced_app: AppHarness, stand_in: JudgeServer
):
    stand_in.usage = (1000, 10)
    first = priced_app.client.post("/v1/score", json=LIVE).json()
    again = priced_app.client.post("/v1/score", json=LIVE).json()
    own = priced_app.client.post("/v1/score", json={"criterion": "coherence", "judge": STAND_IN, "judge_score": 3})
    assert (first["cached"], first["judge_calls"]) == (False, 1)
    assert (again["cached"], again["judge_calls"]) == (True, 0)  # from the cache: no call paid for
    assert own.json()["judge_calls"] == 0  # the caller's own verdict
    assert first["flags"] == []  # the stand-in answers as the configured model
    text = priced_app.client.get("/metrics").text
    labels = f'{{judge="{STAND_IN}",kind="score"}}'
    assert _metric(text, "cj_judge_input_tokens_total" + labels) == 1000
    assert _metric(text, "cj_judge_output_tokens_total" + labels) == 10
    assert _metric(text, "cj_judge_cost_usd_total" + labels) == pytest.approx((1000 * 2.5 + 10 * 10.0) / 1e6)
    assert _metric(text, f'cj_judge_calls_total{{judge="{STAND_IN}",kind="score",outcome="ok"}}') == 1


def test_a_format_retry_adds_its_tokens_and_no_price_means_no_cost(judge_app: AppHarness, stand_in: JudgeServer):
    stand_in.usage = (300, 7)
    stand_in.inject("no_score")  # the first reply has no score: the client asks once more
    answer = judge_app.client.post("/v1/score", json=LIVE).json()
    assert answer["judge_score"] == 4 and answer["judge_calls"] == 1 and stand_in.call_count == 2
    text = judge_app.client.get("/metrics").text
    labels = f'{{judge="{STAND_IN}",kind="score"}}'
    assert _metric(text, "cj_judge_input_tokens_total" + labels) == 600  # both completions' usage
    assert _metric(text, "cj_judge_output_tokens_total" + labels) == 14
    assert "cj_judge_cost_usd_total{" not in text  # the judge has no prices


def test_batch_items_carry_their_own_judge_calls(judge_app: AppHarness, stand_in: JudgeServer):
    items = [LIVE, LIVE | {"summary": "Another."}, {"criterion": "coherence", "judge": STAND_IN, "judge_score": 2}]
    first = judge_app.client.post("/v1/score/batch", json={"items": items}).json()
    assert [r["result"]["judge_calls"] for r in first["results"]] == [1, 1, 0]
    again = judge_app.client.post("/v1/score/batch", json={"items": items[:1]}).json()
    assert again["results"][0]["result"]["judge_calls"] == 0 and again["results"][0]["result"]["cached"] is True


def test_a_reply_from_another_model_is_flagged_warned_once_and_counted(judge_app: AppHarness, stand_in: JudgeServer):
    stand_in.reply_model = "some-other-model"
    answers = [judge_app.client.post("/v1/score", json=LIVE | {"summary": f"Summary {k}."}).json() for k in range(3)]
    cached = judge_app.client.post("/v1/score", json=LIVE | {"summary": "Summary 0."}).json()
    assert all(MODEL_MISMATCH_FLAG in a["flags"] for a in answers)
    assert cached["cached"] is True and MODEL_MISMATCH_FLAG in cached["flags"]  # the cached reply is the same model's
    warnings = [line for line in judge_app.log_lines() if line["event"] == "judge.model_mismatch"]
    assert len(warnings) == 1  # once per judge and model, not per request
    assert warnings[0]["judge"] == STAND_IN and warnings[0]["reply_model"] == "some-other-model"
    assert warnings[0]["configured_model"] == "stand-in-judge" and warnings[0]["level"] == "warning"
    text = judge_app.client.get("/metrics").text
    assert _metric(text, f'cj_judge_model_mismatch_total{{judge="{STAND_IN}",model="some-other-model"}}') == 3
    body = {
        "criterion": "coherence",
        "document": "D.",
        "candidates": [{"id": f"c{k}", "text": f"T{k}."} for k in range(3)],
        "repetitions": 1,
        "swap": False,
    }
    stand_in.responder = lambda _body: "A"
    compared = judge_app.client.post("/v1/compare", json=body).json()
    assert compared["judge_calls"] == 3 and MODEL_MISMATCH_FLAG in compared["flags"]


def test_a_dated_snapshot_of_the_configured_model_is_no_mismatch(judge_app: AppHarness, stand_in: JudgeServer):
    stand_in.reply_model = "stand-in-judge-2024-07-18"
    answer = judge_app.client.post("/v1/score", json=LIVE).json()
    assert answer["flags"] == [] and answer["judge_calls"] == 1
    assert not [line for line in judge_app.log_lines() if line["event"] == "judge.model_mismatch"]


@pytest.mark.parametrize(
    ("configured", "reported", "mismatch"),
    [
        ("gpt-4o-mini", "gpt-4o-mini", False),
        ("gpt-4o-mini", "GPT-4o-mini-2024-07-18", False),  # the alias answered by its dated snapshot
        ("gpt-4", "gpt-4-0613", False),
        ("claude-3-5-sonnet", "claude-3-5-sonnet@20240620", False),
        ("gpt-4o", "gpt-4o-mini-2024-07-18", True),  # another model that merely starts alike
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini-2024-09-01", True),  # a pinned snapshot answered by another
        ("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-72B-Instruct", True),
        ("gpt-4o-mini", None, False),  # a reply naming no model is not judged
        ("gpt-4o-mini", "", False),
    ],
)
def test_model_mismatch_rule(configured: str, reported: str | None, mismatch: bool):
    assert is_model_mismatch(configured, reported) is mismatch


def test_prices_come_in_pairs(tmp_path: Path):
    path = tmp_path / "judges.json"
    path.write_text(
        json.dumps([{"name": "j", "model": "m", "base_url": "http://127.0.0.1:1/v1", "price_in_per_mtok": 1.0}])
    )
    with pytest.raises(JudgeConfigError, match="price_in_per_mtok and price_out_per_mtok"):
        load_judge_configs(path)


def test_prices_do_not_change_the_cache_key(start_app, make_settings, stand_in: JudgeServer, tmp_path: Path):
    """A price is bookkeeping: repricing a judge must not throw its cached answers away (REDIS-shared keys)."""
    plain = start_app(make_settings(judges_file=_judges_file(tmp_path, stand_in)))
    priced_path = tmp_path / "priced" / "judges.json"
    priced_path.parent.mkdir()
    priced_path.write_bytes(
        msgspec.json.encode(
            [stand_in.judge_config(name=STAND_IN, max_retries=1, price_in_per_mtok=1.0, price_out_per_mtok=2.0)]
        )
    )
    priced = start_app(make_settings(judges_file=priced_path))
    key = {}
    for name, harness in (("plain", plain), ("priced", priced)):
        pool = harness.services.judges
        key[name] = pool._parameters(STAND_IN, "score")
    assert key["plain"] == key["priced"]


# ------------------------------------------------------------------------------------------ OpenTelemetry


def test_a_live_score_exports_a_server_span_a_judge_call_span_and_the_evaluation_event(
    otlp_collector: OtlpCollector, make_settings, stand_in: JudgeServer, tmp_path: Path
):
    stand_in.usage = (120, 3)
    settings = make_settings(
        judges_file=_judges_file(tmp_path, stand_in),
        otel_exporter_otlp_endpoint=otlp_collector.endpoint,
        otel_service_name="cj-under-test",
    )
    app = create_app(settings)
    with TestClient(app) as client:
        reply = client.post("/v1/score", json=LIVE)
        assert reply.status_code == 200, reply.text
    answer = reply.json()  # the lifespan's end flushed the exporter
    assert otlp_collector.paths and set(otlp_collector.paths) == {"/v1/traces"}
    resources = [otlp_attributes(r.resource.attributes) for q in otlp_collector.requests for r in q.resource_spans]
    assert {"service.name": "cj-under-test"}.items() <= resources[0].items()
    spans = otlp_collector.spans()
    server = [s for s in spans if s.kind == s.SPAN_KIND_SERVER]
    calls = [s for s in spans if s.kind == s.SPAN_KIND_CLIENT]
    assert len(server) == 1 and len(calls) == 1, [s.name for s in spans]  # no receive/send spans either
    assert len(spans) == 2
    assert server[0].name == "POST /v1/score"
    assert otlp_attributes(server[0].attributes)["http.route"] == "/v1/score"
    call = calls[0]
    assert call.trace_id == server[0].trace_id and call.parent_span_id == server[0].span_id
    attributes = otlp_attributes(call.attributes)
    assert attributes["cj.judge"] == STAND_IN and attributes["gen_ai.request.model"] == "stand-in-judge"
    assert attributes["gen_ai.response.model"] == "stand-in-judge"
    assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == (120, 3)
    assert attributes["cj.judge_call.outcome"] == "ok" and attributes["cj.judge_call.kind"] == "score"
    events = [e for e in server[0].events if e.name == "gen_ai.evaluation.result"]
    assert len(events) == 1
    event = otlp_attributes(events[0].attributes)
    assert event["gen_ai.evaluation.name"] == "coherence"
    assert event["gen_ai.evaluation.score.value"] == answer["point"]
    assert event["gen_ai.evaluation.score.label"] == answer["decision"]
    assert event["cj.prediction_set"] == answer["prediction_set"]
    assert event["cj.alpha"] == pytest.approx(answer["alpha"]) and event["cj.judge"] == STAND_IN
    # the guarantee and the set as the proposed score-interval attributes (service.observability.otel)
    assert event["gen_ai.evaluation.explanation"] == answer["reason"]
    assert event["cj.guarantee.mode"] == answer["guarantees"][0]["mode"]
    assert event["cj.guarantees"] == [guarantee_name(msgspec.convert(g, Guarantee)) for g in answer["guarantees"]]
    assert any(name.startswith("set_coverage:") for name in event["cj.guarantees"])
    assert answer["calibrated"] and answer["prediction_set"]
    assert event["gen_ai.evaluation.score.ci.lower"] == min(answer["prediction_set"])
    assert event["gen_ai.evaluation.score.ci.upper"] == max(answer["prediction_set"])
    assert event["gen_ai.evaluation.score.ci.level"] == pytest.approx(1 - answer["alpha"])


def test_a_failed_judge_call_span_has_the_error_and_a_refused_request_its_server_span(
    otlp_collector: OtlpCollector, make_settings, stand_in: JudgeServer, tmp_path: Path
):
    stand_in.outage = "error_500"
    settings = make_settings(
        judges_file=_judges_file(tmp_path, stand_in),
        otel_exporter_otlp_endpoint=otlp_collector.endpoint,
        api_keys=("k",),
    )
    with TestClient(create_app(settings)) as client:
        assert client.post("/v1/score", json=LIVE, headers={"Authorization": "Bearer k"}).status_code == 502
        assert client.post("/v1/score", json=LIVE).status_code == 401  # refused at the edge, before routing
    spans = otlp_collector.spans()
    call = next(s for s in spans if s.kind == s.SPAN_KIND_CLIENT)
    assert otlp_attributes(call.attributes)["cj.judge_call.outcome"] == "JudgeCallError"
    assert call.status.code == call.status.STATUS_CODE_ERROR
    server = [s for s in spans if s.kind == s.SPAN_KIND_SERVER]
    assert len(server) == 2
    assert not [e for s in server for e in s.events if e.name == "gen_ai.evaluation.result"]  # no verdict, no event


def test_the_endpoint_without_the_extra_fails_start_up_naming_it(make_settings, monkeypatch: pytest.MonkeyPatch):
    import service.observability

    monkeypatch.delitem(sys.modules, "service.observability.otel", raising=False)  # as if never imported
    monkeypatch.delattr(service.observability, "otel", raising=False)
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # as if not installed: importing it fails
    with pytest.raises(SettingsError, match=r"otel extra.*conformal-judge\[otel\]"):
        create_app(make_settings(otel_exporter_otlp_endpoint="http://127.0.0.1:4318"))


def test_an_endpoint_that_is_no_http_url_is_refused():
    with pytest.raises(SettingsError, match="OTEL_EXPORTER_OTLP_ENDPOINT"):
        Settings.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "127.0.0.1:4318"})


def test_without_the_endpoint_the_service_loads_no_tracing(artifact_path: Path):
    """No exporter, no SDK tracer, not our OpenTelemetry module. (With the packages installed, Litestar and redis-py
    import the OpenTelemetry API for their own optional integrations whatever the service does: not checked.)"""
    code = (
        "import sys\n"
        "from service.config.settings import Settings\n"
        "from service.http.app import create_app\n"
        f"app = create_app(Settings(thresholds_path={str(artifact_path)!r}))\n"
        "loaded = sorted(name for name in sys.modules if name == 'service.observability.otel'\n"
        "                or name.startswith(('opentelemetry.sdk.trace', 'opentelemetry.exporter')))\n"
        "print(loaded, type(app.services.tracing).__name__)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[] Tracing"
