"""The OpenAPI schemas of the wire types, generated from the types: a Litestar schema plugin that takes every msgspec
Struct's schema from ``service.wire.schema.wire_schema_components`` (msgspec's JSON Schema with each Struct's rules
between fields) and converts it to Litestar's schema objects, keyword for keyword.

Litestar's own Struct plugin rebuilds a schema field by field and loses what it cannot map (bounds equal to zero, a
Struct's closed object, rules between fields); this one writes what msgspec states, so a request the schema allows is
one the decoder accepts, and nothing is patched into the document afterwards.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any

import msgspec
from litestar._openapi.schema_generation import SchemaCreator
from litestar.openapi.spec import Discriminator, OpenAPIFormat, OpenAPIType, Reference, Schema
from litestar.plugins import OpenAPISchemaPlugin
from litestar.typing import FieldDefinition

from service.wire.schema import REF_TEMPLATE, ComponentRefinement, struct_types, wire_schema_components

__all__ = ["WireSchemaPlugin", "to_openapi_schema"]

_REF_PREFIX = REF_TEMPLATE.partition("{")[0]
_SUBSCHEMA = {"items", "not", "if", "then", "else", "contains", "propertyNames", "additionalProperties"}
_SUBSCHEMA_LISTS = {"allOf", "anyOf", "oneOf", "prefixItems"}
_SUBSCHEMA_MAPS = {"properties", "patternProperties", "dependentSchemas"}
_PLAIN = {
    "const", "enum", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength",
    "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxProperties", "minProperties", "required",
    "dependentRequired", "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
}  # fmt: skip
_ALIASES = Schema.field_aliases()  # JSON keyword -> Schema attribute, for the keywords given an alias
_ATTRIBUTES = frozenset(field.name for field in dataclasses.fields(Schema))


def _attribute(keyword: str) -> str:
    """The ``Schema`` attribute of a JSON Schema keyword (an alias, else the keyword in snake case)."""
    attribute = _ALIASES.get(keyword) or re.sub(r"(?<!^)([A-Z])", r"_\1", keyword).lower()
    if attribute not in _ATTRIBUTES:
        raise ValueError(f"the JSON Schema keyword {keyword!r} has no OpenAPI schema attribute")
    return attribute


def to_openapi_schema(schema: Mapping[str, Any] | bool, reference: Callable[[str], Reference]) -> Schema | Reference:
    """``schema`` (a JSON Schema of the 2020-12 vocabulary OpenAPI 3.1 uses) as Litestar's ``Schema``; a ``$ref`` to a
    component becomes ``reference(name)``. An unknown keyword is an error: nothing is dropped silently."""
    if isinstance(schema, bool):  # true: anything; false: nothing
        return Schema() if schema else Schema(schema_not=Schema())
    if "$ref" in schema:
        if set(schema) != {"$ref"}:
            return Schema(all_of=[reference(schema["$ref"].removeprefix(_REF_PREFIX)), _without_ref(schema, reference)])
        return reference(schema["$ref"].removeprefix(_REF_PREFIX))
    result = Schema()
    for keyword, value in schema.items():
        setattr(result, _attribute(keyword), _value(keyword, value, reference))
    return result


def _value(keyword: str, value: Any, reference: Callable[[str], Reference]) -> Any:
    """A keyword's value as the ``Schema`` attribute holds it."""
    if keyword == "additionalProperties" and isinstance(value, bool):
        return value
    if keyword in _SUBSCHEMA:
        return to_openapi_schema(value, reference)
    if keyword in _SUBSCHEMA_LISTS:
        return [to_openapi_schema(item, reference) for item in value]
    if keyword in _SUBSCHEMA_MAPS:
        return {name: to_openapi_schema(item, reference) for name, item in value.items()}
    if keyword == "type":
        return [OpenAPIType(t) for t in value] if isinstance(value, list) else OpenAPIType(value)
    if keyword == "format":
        return OpenAPIFormat(value)
    if keyword == "discriminator":
        return Discriminator(property_name=value["propertyName"], mapping=value.get("mapping"))
    if keyword in _PLAIN:
        return value
    raise ValueError(f"the JSON Schema keyword {keyword!r} has no OpenAPI schema attribute here")


def _no_reference(name: str) -> Reference:
    raise ValueError(f"a parameter's schema refers to the component {name}")


def _without_ref(schema: Mapping[str, Any], reference: Callable[[str], Reference]) -> Schema | Reference:
    return to_openapi_schema({k: v for k, v in schema.items() if k != "$ref"}, reference)


def _metas(field_definition: FieldDefinition) -> tuple[msgspec.Meta, ...]:
    return tuple(meta for meta in field_definition.metadata if isinstance(meta, msgspec.Meta))


class WireSchemaPlugin(OpenAPISchemaPlugin):
    """Every msgspec Struct as its msgspec schema (``service.wire.schema``), one component per Struct; a parameter of a
    wire type with ``Meta`` (a query's constraints) as msgspec's schema of that type. ``refinements``: the
    deployment's values by component (``service.http.spec_values``), an input of each generation (one plugin per
    app; set before the app's document is generated)."""

    def __init__(self, refinements: Mapping[str, ComponentRefinement] | None = None) -> None:
        self.refinements: Mapping[str, ComponentRefinement] = refinements or {}

    def is_plugin_supported_field(self, field_definition: FieldDefinition) -> bool:
        if field_definition.is_union:
            return False
        return field_definition.is_subclass_of(msgspec.Struct) or bool(_metas(field_definition))

    def to_openapi_schema(self, field_definition: FieldDefinition, schema_creator: SchemaCreator) -> Schema:
        if not field_definition.is_subclass_of(msgspec.Struct):
            # Annotated[(T, *metas)] is Annotated[T, meta, ...]: the parameter's type with its constraints
            annotated: Any = Annotated[(field_definition.annotation, *_metas(field_definition))]
            converted = to_openapi_schema(msgspec.json.schema(annotated), _no_reference)
            assert isinstance(converted, Schema)
            return converted
        cls = field_definition.annotation
        schema = schema_creator.schema_registry.get_schema_for_field_definition(field_definition)
        _, components = wire_schema_components((cls,), self.refinements)
        classes = struct_types((cls,))

        def reference(name: str) -> Reference:
            # through the creator, so that Litestar registers the component and keeps the reference's name in step
            found = schema_creator.for_field_definition(FieldDefinition.from_annotation(classes[name]))
            assert isinstance(found, Reference), name
            return found

        converted = to_openapi_schema(components[cls.__name__], reference)
        assert isinstance(converted, Schema)
        for attribute, value in vars(converted).items():
            if value is not None:
                setattr(schema, attribute, value)
        return schema
