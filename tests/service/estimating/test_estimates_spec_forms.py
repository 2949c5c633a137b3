"""The spec states the forms of ``POST /v1/estimates`` (one ``anyOf`` branch per form, the branches disjoint) and
that a ranking has labelled and unlabelled battles: bodies the schema admits are answered, bodies that mix forms
or leave a partner out are refused by the schema as by the service (the committed spec, checked with jsonschema)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from service.openapi_export import DEFAULT_PATH
from tests.service.conftest import AppHarness

SPEC = json.loads(DEFAULT_PATH.read_text(encoding="utf-8"))
LABELLED = [{"human": 4, "judge": 4}, {"human": 3, "judge": 3}, {"human": 5, "judge": 4}]
UNLABELLED = [{"judge": 4}, {"judge": 5}, {"judge": 3}]
SIDE = {"labelled": LABELLED, "unlabelled": UNLABELLED}
JOB = "3f2a9c41d7b84e0f9a6c5d2e1b0f7a63"


def _resolved(name: str) -> dict[str, Any]:
    schemas = SPEC["components"]["schemas"]

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return resolve(schemas[node["$ref"].rsplit("/", 1)[-1]])
            return {key: resolve(value) for key, value in node.items() if key != "examples"}
        if isinstance(node, list):
            return [resolve(value) for value in node]
        return node

    resolved: dict[str, Any] = resolve(schemas[name])
    return resolved


ESTIMATE = jsonschema.Draft202012Validator(_resolved("EstimateRequest"))
RANKING = jsonschema.Draft202012Validator(_resolved("RankingRequest"))

VALID = [
    {"metric": "mean", "labelled": LABELLED, "unlabelled": UNLABELLED},
    {"metric": "pass_rate", "threshold": 4, "labelled": LABELLED, "unlabelled": UNLABELLED},
    {"metric": "win_rate", "labelled": [{"human": 1, "judge": 0.5}] * 2, "unlabelled": [{"judge": 0}] * 2},
    {"metric": "difference", "a": SIDE, "b": SIDE},
    {"metric": "difference", "of": "pass_rate", "threshold": 3, "a": SIDE, "b": SIDE},
    {"metric": "mean", "systems": {"x": SIDE, "y": {"metric": "pass_rate", "threshold": 4, **SIDE}}},
    {"metric": "mean", "scale_min": 0, "scale_max": 10, "labelled": [{"human": 9, "judge": 8}] * 2,
     "unlabelled": [{"judge": 7}] * 2},
]  # fmt: skip
INVALID = [
    {"metric": "mean", "labelled": LABELLED, "unlabelled": UNLABELLED, "a": SIDE, "b": SIDE},  # two forms
    {"metric": "mean", "labelled": LABELLED},  # a partner left out
    {"metric": "mean", "labelled": None, "unlabelled": UNLABELLED},  # null is left out
    {"metric": "difference", "a": None, "b": SIDE},
    {"metric": "mean", "a": SIDE, "b": SIDE},  # a and b without metric difference
    {"metric": "pass_rate", "labelled": LABELLED, "unlabelled": UNLABELLED},  # no threshold
    {"metric": "mean", "threshold": 3, "labelled": LABELLED, "unlabelled": UNLABELLED},  # a threshold it takes not
    {"metric": "mean", "labelled": [{"human": 7, "judge": 4}] * 2, "unlabelled": UNLABELLED},  # off 1..5
    {"metric": "win_rate", "labelled": LABELLED, "unlabelled": UNLABELLED},  # not 0 / 0.5 / 1
    {"metric": "mean", "judge_value": "label", "labelled": LABELLED, "unlabelled": UNLABELLED},  # no job
    {"metric": "mean", "of": "mean", "labelled": LABELLED, "unlabelled": UNLABELLED},
    {},
]


@pytest.mark.parametrize("body", VALID)
def test_bodies_the_schema_admits_are_answered(app: AppHarness, body: dict[str, Any]) -> None:
    assert ESTIMATE.is_valid(body), [error.message for error in ESTIMATE.iter_errors(body)]
    assert app.client.post("/v1/estimates", json=body).status_code == 200


@pytest.mark.parametrize("body", INVALID)
def test_bodies_the_schema_refuses_are_refused(app: AppHarness, body: dict[str, Any]) -> None:
    assert not ESTIMATE.is_valid(body)
    assert app.client.post("/v1/estimates", json=body).status_code == 422


def test_a_job_body_is_a_form_of_its_own() -> None:
    body = {"metric": "mean", "job": JOB, "labelled": [{"id": "i1", "human": 4}, {"id": "i2", "human": 3}]}
    assert ESTIMATE.is_valid(body)
    assert not ESTIMATE.is_valid({**body, "labelled": LABELLED})  # a job's items carry ids, not verdicts
    assert not ESTIMATE.is_valid({**body, "unlabelled": UNLABELLED})


def test_a_ranking_needs_labelled_and_unlabelled_battles_in_the_schema() -> None:
    labelled = {"model_a": "m1", "model_b": "m2", "judge": "a", "human": "a"}
    unlabelled = {"model_a": "m1", "model_b": "m2", "judge": "b"}
    assert RANKING.is_valid({"battles": [labelled, unlabelled]})
    assert not RANKING.is_valid({"battles": [unlabelled, unlabelled]})
    assert not RANKING.is_valid({"battles": [labelled, labelled]})
    assert RANKING.is_valid({"battles": [labelled, {**unlabelled, "human": None}]})  # null: not labelled


def test_the_spec_states_scale_min_below_scale_max_as_the_service_does(app: AppHarness) -> None:
    """Every (scale_min, scale_max) within the wire bounds, each given or left out (then 1 and 5): the spec admits
    exactly the pairs the service answers (schemathesis once generated scale_min 7 alone, under the default
    scale_max 5, and it was refused: a schema-valid request rejected)."""
    for low in (None, *range(0, 10)):
        for high in (None, *range(1, 11)):
            scale = {key: value for key, value in (("scale_min", low), ("scale_max", high)) if value is not None}
            lowest = 1 if low is None else low
            ordered = lowest < (5 if high is None else high)
            body = {
                "metric": "mean",
                "labelled": [{"human": lowest, "judge": lowest}] * 3,
                "unlabelled": [{"judge": lowest}] * 3,
                **scale,
            }
            assert ESTIMATE.is_valid(body) == ordered, scale
            assert (app.client.post("/v1/estimates", json=body).status_code == 200) == ordered, scale
