"""Both guarantee modes through /v1/score on the shipped artifact: the default is expected, ``guarantee: "pac"``
serves the pac entries and rows, ``confidence`` belongs to pac only, every guarantee names its mode, and an
accepted point always lies in the served set."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import jsonschema_rs
import msgspec
import pytest
from litestar.testing import TestClient

from artifact.thresholds import load_artifact
from service.config.settings import Settings
from service.http.app import create_app
from service.openapi_export import DEFAULT_PATH
from tests.service.conftest import AppHarness

SHIPPED = Path(__file__).resolve().parents[3] / "artifact" / "thresholds.json"
JUDGE, FAMILY = "gpt-3.5-turbo-0301", "rts"


@pytest.fixture(scope="module")
def shipped() -> Iterator[AppHarness]:
    """One app on the shipped artifact for the whole module (each start costs about 0.7 s of CPU, and 31 tests
    used to start their own): no test changes its state, every one only posts score, compare or summary requests
    that read the loaded artifact, so sharing it changes no answer."""
    logs = io.StringIO()
    app = create_app(Settings(thresholds_path=SHIPPED), log_stream=logs)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield AppHarness(app, client, logs)


def _score(app: AppHarness, **body: object) -> tuple[int, dict]:
    base = {"criterion": "coherence", "judge": JUDGE, "prompt_family": FAMILY, "judge_score": 4}
    response = app.client.post("/v1/score", json={**base, **body})
    return response.status_code, response.json()


def test_the_shipped_artifact_holds_both_modes_for_every_cell() -> None:
    artifact = load_artifact(SHIPPED)
    modes: dict[tuple[str, str, str, str], set[str]] = {}
    for entry in artifact.entries:
        modes.setdefault((entry.judge, entry.prompt_family, entry.criterion, entry.kind), set()).add(entry.mode)
    assert modes and all(found == {"expected", "pac"} for found in modes.values())
    for rule in artifact.decision_rules:
        assert {c.mode for c in rule.certifications} == {"expected", "pac"}
        assert all(c.delta is None for c in rule.certifications if c.mode == "expected")


def test_the_default_is_per_label_and_names_its_mode_without_confidence(shipped: AppHarness) -> None:
    status, body = _score(shipped)
    assert status == 200, body
    assert body["guarantees"] and all(g["mode"] == "per_label" for g in body["guarantees"])
    assert all("confidence" not in g and "bound" not in g for g in body["guarantees"])
    assert body["method"] == "per_label_intervals"
    status, expected = _score(shipped, guarantee="expected")
    assert status == 200 and all(g["mode"] == "expected" for g in expected["guarantees"])


def test_pac_names_its_confidence_and_never_gives_a_smaller_set(shipped: AppHarness) -> None:
    for score in range(1, 6):
        _, expected = _score(shipped, judge_score=score)
        status, pac = _score(shipped, judge_score=score, guarantee="pac")
        assert status == 200, pac
        assert all(g["mode"] == "pac" and g["confidence"] == pytest.approx(0.95) for g in pac["guarantees"])
        assert set(expected["prediction_set"]) <= set(pac["prediction_set"]) or len(expected["prediction_set"]) <= len(
            pac["prediction_set"]
        )


def test_an_accepted_point_lies_in_the_served_set_in_both_modes(shipped: AppHarness) -> None:
    accepted = 0
    for mode in ("expected", "pac"):
        for score in range(1, 6):
            for criterion in ("coherence", "consistency", "fluency", "relevance"):
                status, body = _score(shipped, judge_score=score, guarantee=mode, criterion=criterion)
                assert status == 200, body
                if body["decision"] == "accept":
                    accepted += 1
                    assert body["point"] in body["prediction_set"]
                    assert any(g["kind"] == "accept_error" and g["mode"] == mode for g in body["guarantees"])
    assert accepted > 0  # the expected mode accepts some shipped verdicts at the defaults


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"confidence": 0.9}, "confidence"),  # confidence with the (default) expected guarantee
        ({"guarantee": "pac", "confidence": 0.99}, "confidence"),  # above the calibrated 0.95
        ({"guarantee": "bayes"}, "guarantee"),
        ({"guarantee": "pac", "confidence": 1.5}, "confidence"),
        ({"guarantee": None}, "guarantee"),
    ],
)
def test_bad_mode_fields_are_a_problem_naming_the_field(shipped: AppHarness, body: dict, field: str) -> None:
    status, problem = _score(shipped, **body)
    assert status in (400, 422), problem
    assert field in msgspec.json.encode(problem).decode()


def test_a_lower_confidence_is_served_at_the_calibrated_one(shipped: AppHarness) -> None:
    status, body = _score(shipped, guarantee="pac", confidence=0.8)
    assert status == 200, body
    assert all(g["confidence"] == pytest.approx(0.95) for g in body["guarantees"])


def test_batch_items_carry_their_own_mode(shipped: AppHarness) -> None:
    base = {"criterion": "coherence", "judge": JUDGE, "prompt_family": FAMILY, "judge_score": 4}
    response = shipped.client.post(
        "/v1/score/batch", json={"items": [base, {**base, "guarantee": "pac"}, {**base, "confidence": 0.9}]}
    )
    assert response.status_code == 200, response.text
    first, second, third = response.json()["results"]
    assert {g["mode"] for g in first["result"]["guarantees"]} == {"per_label"}
    assert {g["mode"] for g in second["result"]["guarantees"]} == {"pac"}
    assert third["ok"] is False and "confidence" in third["error"]["detail"]


def test_the_calibration_summary_lists_both_modes_per_cell(shipped: AppHarness) -> None:
    response = shipped.client.get("/v1/calibration", params={"view": "summary"})
    assert response.status_code == 200, response.text
    lines = response.json()["cells"]
    by_cell: dict[tuple[str, str, str, str], set[str]] = {}
    for line in lines:
        by_cell.setdefault((line["judge"], line["prompt_family"], line["criterion"], line["input_kind"]), set()).add(
            line["mode"]
        )
    # every cell has both marginal modes; the recorded SummEval judges' cells have their per-label rule too
    assert by_cell and all(modes - {"per_label"} == {"expected", "pac"} for modes in by_cell.values())
    assert sum("per_label" in modes for modes in by_cell.values()) == 32
    assert all(line["skilled"] is not None for line in lines if line["mode"] == "per_label")
    expected_share = [line["accept_share"] or 0 for line in lines if line["mode"] == "expected"]
    pac_share = [line["accept_share"] or 0 for line in lines if line["mode"] == "pac"]
    assert sum(expected_share) > sum(pac_share)


def _spec_validator(schema_name: str) -> jsonschema_rs.Validator:
    """A validator of one request schema of the committed spec (the shipped calibration's deployment values)."""
    spec = json.loads(DEFAULT_PATH.read_text())
    return jsonschema_rs.validator_for(
        {"$ref": f"#/components/schemas/{schema_name}", "components": spec["components"]}
    )


MODE_BODIES = [  # (fields added to a valid body, whether the service accepts it)
    ({}, True),
    ({"guarantee": "pac"}, True),
    ({"guarantee": "pac", "confidence": 0.9}, True),
    ({"guarantee": "pac", "confidence": 0.95}, True),
    ({"confidence": 0.9}, False),  # the default guarantee is per_label: no confidence
    ({"guarantee": "expected", "confidence": 0.9}, False),
    ({"guarantee": "pac", "confidence": 0.96}, False),  # above the calibrated 0.95
    ({"guarantee": "pac", "confidence": 0.0}, False),
    ({"accept_alpha": 0.0}, False),  # a zero bound the spec generator used to drop
    ({"guarantee": "sometimes"}, False),
]


@pytest.mark.parametrize(("extra", "accepted"), MODE_BODIES)
def test_the_spec_states_the_mode_rules_the_score_route_enforces(
    shipped: AppHarness, extra: dict, accepted: bool
) -> None:
    body = {"criterion": "coherence", "judge": JUDGE, "prompt_family": FAMILY, "judge_score": 4, **extra}
    status, answer = _score(shipped, **extra)
    assert (status == 200) is accepted and status in (200, 422), answer
    assert _spec_validator("ScoreRequest").is_valid(body) is accepted


# the shipped pairwise decisions are certified at confidence 0.9 (delta 0.1)
COMPARE_BODIES = [*MODE_BODIES[:3], ({"guarantee": "pac", "confidence": 0.95}, False), *MODE_BODIES[4:]]


@pytest.mark.parametrize(("extra", "accepted"), COMPARE_BODIES)
def test_the_spec_states_the_mode_rules_the_compare_route_enforces(
    shipped: AppHarness, extra: dict, accepted: bool
) -> None:
    body = {"preferences": [{"winner": "a", "loser": "b"}, {"winner": "b", "loser": "c"}], **extra}
    response = shipped.client.post("/v1/compare", json=body)
    assert (response.status_code == 200) is accepted and response.status_code in (200, 422), response.text
    assert _spec_validator("CompareRequest").is_valid(body) is accepted
