"""The committed spec states the single-value rules schemathesis's positive-data check (ST202) found refused:
the labelled row of POST /v1/calibrations (a row's ``scale_max`` bounds its values and log-prob keys) and the
artifact names of reload and of the calibration upload (``..``, ``.json``, the reserved ``primary``). Each value
the spec refuses is one the service refuses, and each one it accepts the service accepts (validated with
jsonschema_rs, the validator schemathesis uses). The row's document/input either/or stays in its description
(service.http.routes.calibrations explains why)."""

from __future__ import annotations

import json

import jsonschema_rs
import msgspec
import pytest

from artifact.labels import parse_labels
from calibration.errors import LabelsError
from service.artifacts.activated import check_name
from service.openapi_export import DEFAULT_PATH

BASE = {"item_id": "a", "criterion": "helpfulness", "human": 3, "judge": "j", "judge_score": 3}


def _row_validator() -> jsonschema_rs.Validator:
    spec = json.loads(DEFAULT_PATH.read_text())
    body = spec["paths"]["/v1/calibrations"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    return jsonschema_rs.validator_for(body["items"])


@pytest.mark.parametrize(
    "row",
    [
        {**BASE, "scale_max": 5, "judge_score": 7},
        {**BASE, "scale_max": 5, "human": 6.5},
        {**BASE, "scale_max": 4, "mean_of_samples": 4.5},
        {**BASE, "scale_max": 5, "judge_logprobs": {"6": -0.1}},
        {**BASE, "judge_logprobs": {"12": -0.1}},
        {**BASE, "judge_logprobs": {"01": -0.1}},
    ],
)
def test_a_row_the_service_refuses_on_its_own_is_invalid_in_the_spec(row: dict[str, object]):
    with pytest.raises(LabelsError):
        parse_labels(msgspec.json.encode(row), source="body", default_scale=10)
    assert not _row_validator().is_valid(row)


@pytest.mark.parametrize(
    "row",
    [
        {**BASE, "scale_max": 5, "judge_score": 5, "human": 4.5, "judge_logprobs": {"5": -0.1, "1": -3.0}},
        {**BASE, "scale_max": 10, "judge_logprobs": {"10": -0.2}},
        {**BASE, "document": "d", "output": "o"},
    ],
)
def test_a_row_the_service_accepts_is_valid_in_the_spec(row: dict[str, object]):
    parse_labels(msgspec.json.encode(row), source="body", default_scale=10)
    assert _row_validator().is_valid(row)


def test_the_spec_example_rows_are_valid_rows():
    spec = json.loads(DEFAULT_PATH.read_text())
    media = spec["paths"]["/v1/calibrations"]["post"]["requestBody"]["content"]["application/json"]
    validator = _row_validator()
    assert all(validator.is_valid(row) for row in media["example"])


def _name_validators() -> list[jsonschema_rs.Validator]:
    spec = json.loads(DEFAULT_PATH.read_text())
    reload = spec["components"]["schemas"]["ReloadRequest"]["properties"]["name"]
    (query,) = [p for p in spec["paths"]["/v1/calibrations"]["post"]["parameters"] if p["name"] == "name"]
    return [jsonschema_rs.validator_for(reload), jsonschema_rs.validator_for(query["schema"])]


@pytest.mark.parametrize("name", ["x.json", "a..b", "X.JSON", "primary", "Primary", "pRIMARY", "-x", "a b", "x" * 65])
def test_an_artifact_name_the_service_refuses_is_invalid_in_the_spec(name: str):
    with pytest.raises(ValueError):
        check_name(name)
    assert not any(validator.is_valid(name) for validator in _name_validators())


@pytest.mark.parametrize("name", ["my-judge.v2", "primary2", "json", "a.jsonl", "x" * 64])
def test_an_artifact_name_the_service_accepts_is_valid_in_the_spec(name: str):
    assert check_name(name) == name
    assert all(validator.is_valid(name) for validator in _name_validators())


def test_the_upload_s_empty_name_means_the_default_name_and_is_valid():
    assert _name_validators()[1].is_valid("")


def test_compare_candidates_are_unique_items_in_the_spec():
    """service.comparing.compare refuses repeated candidate ids; two equal candidates repeat theirs, and the spec
    says so."""
    spec = json.loads(DEFAULT_PATH.read_text())
    candidates = spec["components"]["schemas"]["CompareRequest"]["properties"]["candidates"]
    validator = jsonschema_rs.validator_for({**candidates, "components": spec["components"]})
    same = [{"id": "0", "text": "0"}] * 3
    assert not validator.is_valid(same)
    assert validator.is_valid([{"id": str(n), "text": "0"} for n in range(3)])
