"""The OpenAPI schemas come from the wire types: msgspec's schema converted keyword for keyword, the Structs' rules
between fields on their components, nothing dropped."""

from __future__ import annotations

import json
from typing import Annotated, ClassVar

import msgspec
import pytest
from litestar.openapi.spec import Reference, Schema
from msgspec import Meta

from service.http.wire_schema import to_openapi_schema
from service.openapi_export import DEFAULT_PATH
from service.wire.schema import SchemaRules, present, wire_schema_components
from service.wire.score import ScoreRequest


class _Ruled(msgspec.Struct, forbid_unknown_fields=True):
    low: Annotated[float, Meta(gt=0, lt=1)] = 0.5
    high: Annotated[int, Meta(ge=0, le=0)] = 0
    JSON_SCHEMA_RULES: ClassVar[SchemaRules] = {"anyOf": [present({"low": "number"})]}


class _Clashing(msgspec.Struct):
    x: int = 0
    JSON_SCHEMA_RULES: ClassVar[SchemaRules] = {"properties": {}}


def _no_reference(name: str) -> Reference:
    raise AssertionError(name)


def test_a_structs_rules_and_zero_bounds_reach_its_openapi_component():
    _, components = wire_schema_components((_Ruled,))
    component = components["_Ruled"]
    assert component["anyOf"] == [{"required": ["low"], "properties": {"low": {"type": "number"}}}]
    converted = to_openapi_schema(component, _no_reference)
    assert isinstance(converted, Schema)
    as_json = converted.to_schema()
    assert as_json["additionalProperties"] is False  # forbid_unknown_fields
    assert as_json["properties"]["low"]["exclusiveMinimum"] == 0
    assert as_json["properties"]["low"]["exclusiveMaximum"] == 1
    assert as_json["properties"]["high"]["maximum"] == 0 and as_json["properties"]["high"]["minimum"] == 0
    assert as_json["anyOf"] == component["anyOf"]


def test_rules_may_not_overwrite_what_msgspec_states():
    with pytest.raises(ValueError, match="already has"):
        wire_schema_components((_Clashing,))


def test_an_unknown_keyword_is_an_error_not_dropped():
    with pytest.raises(ValueError, match="noSuchKeyword"):
        to_openapi_schema({"type": "string", "noSuchKeyword": 1}, _no_reference)


def test_a_reference_with_siblings_keeps_both():
    converted = to_openapi_schema(
        {"$ref": "#/components/schemas/X", "description": "d"}, lambda name: Reference(ref=name)
    )
    assert isinstance(converted, Schema) and converted.all_of is not None
    assert converted.all_of[0] == Reference(ref="X") and converted.all_of[1] == Schema(description="d")


def test_the_committed_spec_carries_score_requests_rules_as_declared():
    spec = json.loads(DEFAULT_PATH.read_text())
    committed = spec["components"]["schemas"]["ScoreRequest"]
    declared = ScoreRequest.JSON_SCHEMA_RULES
    # the deployment values (service.http.spec_values, an input of the generation) add their rules after these
    assert committed["allOf"][: len(declared["allOf"])] == declared["allOf"]
    assert len(committed["anyOf"]) == len(declared["anyOf"])
