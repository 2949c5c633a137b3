"""The JSON Schema of the wire types: msgspec's own (``msgspec.json.schema_components``), with each Struct's rules
between fields that a field's ``Meta`` cannot carry declared on the Struct itself.

A field's rule lives in its type (``Meta`` bounds, lengths and patterns, ``Literal``, tagged unions; an unknown field
is refused where the Struct says ``forbid_unknown_fields``). A rule between fields (an either/or body, ``if a then
b``) is declared beside the fields as the Struct's ``JSON_SCHEMA_RULES`` class variable: a mapping of JSON Schema
keywords (``anyOf``, ``oneOf``, ``allOf``, ``not``) that applies to the Struct's object as a whole. The OpenAPI
document (``service.http.wire_schema``) is this schema, converted: nothing is added to it afterwards. The values of
one deployment (names, scales) are an input of the same generation (``service.http.spec_values``).

The helpers below write the recurring forms of those rules.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Protocol

import msgspec

__all__ = [
    "RULES_ATTRIBUTE",
    "ComponentRefinement",
    "SchemaRules",
    "absent",
    "implies",
    "present",
    "struct_types",
    "wire_schema_components",
]

RULES_ATTRIBUTE = "JSON_SCHEMA_RULES"  # the Struct class variable holding its rules between fields
REF_TEMPLATE = "#/components/schemas/{name}"
SchemaRules = Mapping[str, Any]  # JSON Schema keywords applied to a Struct's object as a whole


class ComponentRefinement(Protocol):
    """A deployment's rules for one component (``service.http.spec_values.Refinement``)."""

    def apply(self, component: dict[str, Any]) -> None: ...


_JSON_TYPES = {"integer", "number", "string", "array", "object", "boolean"}


def present(types: Mapping[str, str]) -> dict[str, Any]:
    """These fields are required and not null (a nullable property's ``null`` does not satisfy a branch)."""
    for kind in types.values():
        assert kind in _JSON_TYPES, kind
    return {"required": list(types), "properties": {name: {"type": kind} for name, kind in types.items()}}


def absent(*names: str) -> dict[str, Any]:
    """These fields are missing or null (the wire types read null as not given)."""
    return {"properties": {name: {"type": "null"} for name in names}}


def implies(condition: Mapping[str, Any], then: Mapping[str, Any]) -> dict[str, Any]:
    """``if condition then then``, written ``anyOf: [{not: condition}, then]`` (read alike by every validator)."""
    return {"anyOf": [{"not": dict(condition)}, dict(then)]}


def _inner(info: msgspec.inspect.Type) -> Iterator[msgspec.inspect.Type]:
    """The types directly inside ``info`` (items, keys, values, union members, a Struct's fields)."""
    for attribute in ("type", "item_type", "key_type", "value_type"):
        inner = getattr(info, attribute, None)
        if isinstance(inner, msgspec.inspect.Type):
            yield inner
    for attribute in ("types", "item_types"):
        yield from getattr(info, attribute, None) or ()
    if isinstance(info, msgspec.inspect.StructType):
        yield from (field.type for field in info.fields)


def struct_types(types: Iterable[Any]) -> dict[str, type]:
    """Every Struct class reachable from ``types``, by its name (the name msgspec gives its component)."""
    found: dict[str, type] = {}
    pending = list(msgspec.inspect.multi_type_info(tuple(types)))
    seen: set[int] = set()
    while pending:
        info = pending.pop()
        if id(info) in seen:
            continue
        seen.add(id(info))
        if isinstance(info, msgspec.inspect.StructType):
            if info.cls.__name__ in found and found[info.cls.__name__] is not info.cls:
                raise ValueError(f"two wire types are named {info.cls.__name__}: a component name must be unique")
            found[info.cls.__name__] = info.cls
        pending.extend(_inner(info))
    return found


def wire_schema_components(
    types: Iterable[Any], refinements: Mapping[str, ComponentRefinement] | None = None
) -> tuple[tuple[dict[str, Any], ...], dict[str, Any]]:
    """msgspec's schemas of ``types`` (references into ``#/components/schemas``) and its components, each Struct's
    component with the Struct's ``JSON_SCHEMA_RULES`` and then the deployment's ``refinements`` of it, by component
    name (``service.http.spec_values``: the names and scales of one service)."""
    types = tuple(types)
    schemas, components = msgspec.json.schema_components(types, ref_template=REF_TEMPLATE)
    for name, cls in struct_types(types).items():
        rules: SchemaRules | None = getattr(cls, RULES_ATTRIBUTE, None)
        if rules is None or name not in components:
            continue
        component = components[name]
        clash = set(rules) & set(component)
        if clash:
            raise ValueError(f"{name}.{RULES_ATTRIBUTE} sets {sorted(clash)}, which msgspec's schema already has")
        component.update(msgspec.json.decode(msgspec.json.encode(rules)))  # a fresh copy of the declared rules
    for name, refinement in (refinements or {}).items():
        if name in components:
            refinement.apply(components[name])
    return schemas, components
