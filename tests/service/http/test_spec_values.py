"""Deployment values are an input of the spec's generation, not a patch over it: each value is merged into
msgspec's schema of its property (a bound keeps the tighter of the two) or added as a rule while the components are
generated, and a new calibration generates the document again; the bodies the handlers read themselves are their
operations' (no document is edited after Litestar generates it)."""

from __future__ import annotations

from typing import Any

import pytest
from litestar._openapi.plugin import OpenAPIPlugin

from service.config.jobs import JobSettings
from service.http.app import create_app
from service.http.spec_values import DeploymentValues, Refinement, deployment_refinements, spec_document
from service.http.wire_schema import WireSchemaPlugin
from service.wire.labelled_rows import LabelledRow
from service.wire.schema import wire_schema_components
from service.wire.score import JudgeLogprobs, ScoreRequest

VALUES = DeploymentValues(
    criteria=("coherence", "helpfulness"),
    askable=("coherence",),
    judges=("j1", "j2"),
    configured=("j1",),
    panels=(),
    scales={"coherence": 5, "helpfulness": 3},
    min_alpha=0.05,
)


def _without(schema: Any, keywords: set[str]) -> Any:
    """``schema`` (decoded JSON) without ``keywords``, at every depth."""
    if isinstance(schema, dict):
        return {k: _without(v, keywords) for k, v in schema.items() if k not in keywords}
    if isinstance(schema, list):
        return [_without(item, keywords) for item in schema]
    return schema


def test_a_bound_keeps_the_tighter_and_a_property_can_be_left_out():
    component = {"properties": {"k": {"type": "integer", "maximum": 10}, "t": {"type": "number"}}, "required": ["t"]}
    Refinement(properties={"k": {"maximum": 5}, "t": None}).apply(component)
    assert component == {"properties": {"k": {"type": "integer", "maximum": 5}}, "required": []}
    loose = {"properties": {"k": {"type": "integer", "maximum": 3}}}
    Refinement(properties={"k": {"maximum": 5}}).apply(loose)
    assert loose["properties"]["k"]["maximum"] == 3


def test_a_bound_of_a_nullable_property_goes_into_its_numeric_branch():
    component = {"properties": {"k": {"anyOf": [{"type": "integer", "maximum": 10}, {"type": "null"}]}}}
    Refinement(properties={"k": {"maximum": 5}}).apply(component)
    assert component == {"properties": {"k": {"anyOf": [{"type": "integer", "maximum": 5}, {"type": "null"}]}}}


def test_a_deployment_value_may_not_replace_what_the_type_states():
    component = {"properties": {"name": {"type": "string", "enum": ["a"]}}}
    with pytest.raises(ValueError, match="replace 'enum'"):
        Refinement(properties={"name": {"enum": ["a", "b"]}}).apply(component)


def test_the_values_reach_the_components_they_name_while_they_are_generated():
    _, plain = wire_schema_components((ScoreRequest,))
    _, refined = wire_schema_components((ScoreRequest,), deployment_refinements(VALUES))
    score = refined["ScoreRequest"]
    assert "enum" not in plain["ScoreRequest"]["properties"]["criterion"]
    assert score["properties"]["criterion"]["enum"] == ["coherence", "helpfulness"]
    assert score["properties"]["judge"]["enum"] == ["j1", "j2", None]
    (integer,) = [b for b in score["properties"]["judge_score"]["anyOf"] if b.get("type") == "integer"]
    (number,) = [b for b in score["properties"]["alpha"]["anyOf"] if b.get("type") == "number"]
    assert integer["maximum"] == 5 and number["minimum"] == 0.05
    # the declared rules stay first; the deployment's follow (a smaller scale, a calibration-only criterion, ...)
    declared = ScoreRequest.JSON_SCHEMA_RULES["allOf"]
    assert score["allOf"][: len(declared)] == declared and len(score["allOf"]) > len(declared)
    assert {"maximum": 3} in [
        rule["anyOf"][1]["properties"]["judge_score"]
        for rule in score["allOf"][len(declared) :]
        if "judge_score" in rule["anyOf"][1].get("properties", {})
    ]
    logprobs = refined[JudgeLogprobs.__name__]
    assert sorted(logprobs["properties"], key=int) == ["1", "2", "3", "4", "5"]  # the largest K is 5
    assert plain[JudgeLogprobs.__name__]["properties"].keys() >= {"6", "10"}


def test_a_new_calibration_generates_the_document_again_and_nothing_edits_it(make_settings):
    edge = create_app(make_settings())
    app = edge.inner
    edge.services.calibration.load_initial()
    first = spec_document(app)
    assert first["components"]["schemas"]["ScoreRequest"]["properties"]["criterion"]["enum"]
    generator = app.plugins.get(OpenAPIPlugin)
    assert generator._build_openapi().to_schema() == first  # the generator's output as it is: nothing added after
    plugin = app.plugins.get(WireSchemaPlugin)
    plugin.refinements = deployment_refinements(VALUES)
    again = generator._build_openapi().to_schema()
    assert again["components"]["schemas"]["ScoreRequest"]["properties"]["criterion"]["enum"] == [
        "coherence",
        "helpfulness",
    ]
    assert spec_document(app) is first  # the same snapshot: the document generated for it


def test_the_raw_bodies_are_stated_by_their_operations(make_settings):
    edge = create_app(make_settings(jobs=JobSettings(max_job_items=7)))
    edge.services.calibration.load_initial()
    paths = spec_document(edge.inner)["paths"]
    jobs = paths["/v1/jobs"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert jobs["properties"]["items"]["maxItems"] == 7  # this deployment's MAX_JOB_ITEMS
    assert paths["/v1/calibration/reload"]["post"]["requestBody"]["required"] is False
    row = paths["/v1/calibrations"]["post"]["requestBody"]["content"]["application/json"]["schema"]["items"]
    _, components = wire_schema_components((LabelledRow,))
    expected = _without(components["LabelledRow"], {"description", "default"})  # an OpenAPI null is no keyword
    assert _without(row, {"description"}) == expected
    assert "content" not in paths["/v1/calibrations/{job_id}"]["delete"]["responses"]["204"]
    other = create_app(make_settings())  # another app's handlers are not changed by this one's settings
    other.services.calibration.load_initial()
    other_jobs = spec_document(other.inner)["paths"]["/v1/jobs"]["post"]["requestBody"]["content"]
    assert other_jobs["application/json"]["schema"]["properties"]["items"]["maxItems"] == 1_000_000
