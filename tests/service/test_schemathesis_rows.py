"""The labelled row of POST /v1/calibrations in the committed spec states the row's own rules, so schemathesis's
positive-data check does not send rows the service must refuse: a row's ``scale_max`` bounds its values and
log-prob keys, and ``document``/``input`` and ``summary``/``output`` are either/or. Each row the spec refuses is one
``calibration.labels`` refuses, and the spec's own example rows pass both (validated with jsonschema_rs, the
validator schemathesis uses)."""

from __future__ import annotations

import json

import jsonschema_rs
import msgspec
import pytest

from calibration.errors import LabelsError
from calibration.labels import parse_labels
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
        {**BASE, "document": "d", "input": "i"},
        {**BASE, "summary": "s", "output": "o"},
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
