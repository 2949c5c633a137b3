"""Render the API reference, docs/api.md, from the committed OpenAPI document (``make openapi`` runs it).

    python tools/api_reference.py           # rewrite docs/api.md from openapi/openapi.json
    python tools/api_reference.py --check   # exit 1 (and say so) when the committed page differs

One section per operation, grouped by the spec's tags in the order they first appear: its summary, the
parameters, the request body's schema and examples, and every response status with its meaning and schema. Then
one section per component schema: each field's type, whether it is required, its default and its constraints.
Nothing is written by hand: the page is a pure function of the spec (keys read in sorted order where the spec's
own order carries no meaning), so a changed route or field changes the page in the same commit.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "openapi" / "openapi.json"
DOC = ROOT / "docs" / "api.md"
METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
CONSTRAINTS = (
    ("minimum", "≥ {}"),
    ("exclusiveMinimum", "> {}"),
    ("maximum", "≤ {}"),
    ("exclusiveMaximum", "< {}"),
    ("minLength", "length ≥ {}"),
    ("maxLength", "length ≤ {}"),
    ("minItems", "items ≥ {}"),
    ("maxItems", "items ≤ {}"),
    ("pattern", "pattern `{}`"),
)

__all__ = ["DOC", "SPEC", "operations", "render_page", "schema_anchor", "type_text"]

Schema = Mapping[str, Any]


def schema_anchor(name: str) -> str:
    """The page anchor of a component schema's section (its heading is ``### `Name` ``)."""
    return name.lower()


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _literal(value: Any) -> str:
    """A JSON value as a code span."""
    return f"`{json.dumps(value, ensure_ascii=False)}`"


def type_text(schema: Schema) -> str:
    """A schema's type in words, component references as links (``array of [ScoreItem](#scoreitem)``)."""
    if "$ref" in schema:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        return f"[{name}](#{schema_anchor(name)})"
    for combiner, joint in (("oneOf", " or "), ("anyOf", " or "), ("allOf", " and ")):
        if combiner in schema:
            parts = [type_text(part) for part in schema[combiner]]
            return joint.join(dict.fromkeys(parts))  # the first of equal parts, in order
    if "const" in schema:
        return _literal(schema["const"])
    if "enum" in schema:
        return "one of " + ", ".join(_literal(value) for value in schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(type_text({**schema, "type": one}) for one in kind)
    if kind == "array":
        return "array of " + type_text(schema.get("items", {}))
    if kind == "object" and "additionalProperties" in schema and not schema.get("properties"):
        extra = schema["additionalProperties"]
        return "object of " + (type_text(extra) if isinstance(extra, Mapping) else "any")
    text = str(kind) if kind else "any"
    if "format" in schema:
        text += f" ({schema['format']})"
    return text


def _constraints(schema: Schema) -> str:
    """The field's bounds and patterns, with those of its array items or of its non-null branch."""
    found = [template.format(schema[key]) for key, template in CONSTRAINTS if key in schema]
    for branch in schema.get("anyOf", schema.get("oneOf", ())):
        found += [template.format(branch[key]) for key, template in CONSTRAINTS if key in branch]
    return "; ".join(found)


def _schema_section(name: str, schema: Schema) -> Iterator[str]:
    """One component schema: its description and a table of its fields (or its type when it has none)."""
    yield f"### `{name}`"
    yield ""
    if schema.get("description"):
        yield _cell(schema["description"])
        yield ""
    properties: Mapping[str, Schema] = schema.get("properties", {})
    if not properties:
        yield f"Type: {type_text(schema)}."
        yield ""
        return
    required = set(schema.get("required", ()))
    yield "| field | type | required | default | constraints | description |"
    yield "|---|---|---|---|---|---|"
    for field in sorted(properties):
        spec = properties[field]
        default = _literal(spec["default"]) if "default" in spec else ""
        yield (
            f"| `{field}` | {_cell(type_text(spec))} | {'yes' if field in required else 'no'} | {_cell(default)} "
            f"| {_cell(_constraints(spec))} | {_cell(spec.get('description', ''))} |"
        )
    yield ""


def operations(spec: Schema) -> list[tuple[str, str, str, Schema]]:
    """(tag, METHOD, path, operation) of every operation, grouped by tag in the order tags first appear, paths
    in the spec's order within a tag."""
    found = [
        (operation.get("tags", ["other"])[0], method.upper(), path, operation)
        for path, item in spec["paths"].items()
        for method in METHODS
        if (operation := item.get(method)) is not None
    ]
    order = list(dict.fromkeys(tag for tag, *_ in found))
    return sorted(found, key=lambda row: order.index(row[0]))


def _body_schema(content: Mapping[str, Schema]) -> Iterator[tuple[str, Schema]]:
    """(media type, schema) of a request or response body, an ``allOf`` of one reference read as that reference."""
    for media_type in sorted(content):
        schema = content[media_type].get("schema", {})
        if list(schema.get("allOf", ())) and len(schema["allOf"]) == 1:
            schema = {**schema["allOf"][0], **{k: v for k, v in schema.items() if k != "allOf"}}
        yield media_type, schema


def _operation_section(method: str, path: str, operation: Schema) -> Iterator[str]:
    """One operation: summary, security, parameters, request body (with its examples) and responses."""
    yield f"#### `{method} {path}`"
    yield ""
    if operation.get("summary"):
        yield _cell(operation["summary"]) + "."
        yield ""
    if operation.get("description"):
        yield operation["description"].strip()
        yield ""
    security = operation.get("security")
    if security is not None:
        schemes = sorted({name for requirement in security for name in requirement})
        note = "none" if not schemes else ", ".join(f"`{name}`" for name in schemes)
        if {} in security and schemes:
            note += " (when keys are configured)"
        yield f"Authentication: {note}."
        yield ""
    parameters: Sequence[Schema] = operation.get("parameters", ())
    if parameters:
        yield "| parameter | in | type | required | description |"
        yield "|---|---|---|---|---|"
        for parameter in parameters:
            yield (
                f"| `{parameter['name']}` | {parameter['in']} | {_cell(type_text(parameter.get('schema', {})))} "
                f"| {'yes' if parameter.get('required') else 'no'} | {_cell(parameter.get('description', ''))} |"
            )
        yield ""
    body = operation.get("requestBody")
    if body is not None:
        for media_type, schema in _body_schema(body.get("content", {})):
            required = "required" if body.get("required") else "optional"
            yield f"Request body ({required}, `{media_type}`): {type_text(schema)}."
            yield ""
            for number, example in enumerate(schema.get("examples", ()), start=1):
                yield f"Example {number}:"
                yield ""
                yield "```json"
                yield json.dumps(example, indent=2, ensure_ascii=False, sort_keys=True)
                yield "```"
                yield ""
    yield "| status | meaning | body |"
    yield "|---|---|---|"
    responses: Mapping[str, Schema] = operation.get("responses", {})
    for status in sorted(responses):
        response = responses[status]
        bodies = [f"`{media}` {type_text(schema)}" for media, schema in _body_schema(response.get("content", {}))]
        yield f"| {status} | {_cell(response.get('description', ''))} | {_cell(', '.join(bodies))} |"
    yield ""


def render_page(spec: Schema) -> str:
    """The whole of docs/api.md for ``spec`` (a pure function of it)."""
    info = spec.get("info", {})
    lines = [
        "# API reference",
        "",
        "<!-- generated by `make openapi` (tools/api_reference.py) from openapi/openapi.json: do not edit -->",
        "",
        f"{_cell(info.get('title', ''))}, version `{info.get('version', '')}`. Generated from the committed OpenAPI",
        "document, `openapi/openapi.json` (served live at `GET /schema/openapi.json`; a browsable page at",
        "`GET /schema/redoc`). Errors are RFC 9457 `application/problem+json` bodies ([Problem](#problem)). The",
        "[user guide](user-guide.md) explains the endpoints with worked requests.",
        "",
        "## Operations",
        "",
    ]
    current_tag = None
    for tag, method, path, operation in operations(spec):
        if tag != current_tag:
            lines += [f"### {tag}", ""]
            current_tag = tag
        lines += list(_operation_section(method, path, operation))
    lines += ["## Schemas", ""]
    schemas: Mapping[str, Schema] = spec.get("components", {}).get("schemas", {})
    for name in sorted(schemas):
        lines += list(_schema_section(name, schemas[name]))
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Write docs/api.md from openapi/openapi.json, or with ``--check`` report whether the committed page is current."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/api.md is not the rendered page")
    arguments = parser.parse_args(argv)
    page = render_page(json.loads(SPEC.read_text(encoding="utf-8")))
    if arguments.check:
        if DOC.read_text(encoding="utf-8") != page:
            print(f"{DOC.relative_to(ROOT)} is out of date: run `make openapi`", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(page, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
