"""docs/api.md is the page tools/api_reference.py renders from the committed spec, and that page says what the
spec says: every operation, status and schema field, types and constraints included, with no dead link."""

from __future__ import annotations

import copy
import json
import re

import pytest

from tools.api_reference import DOC, SPEC, main, operations, render_page, schema_anchor, type_text


@pytest.fixture(scope="module")
def spec() -> dict:
    return json.loads(SPEC.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def page(spec: dict) -> str:
    return render_page(spec)


def test_the_committed_page_is_the_rendered_one(page: str):
    assert DOC.read_text(encoding="utf-8") == page, "docs/api.md is out of date: run `make openapi`"
    assert main(["--check"]) == 0


def test_every_operation_and_status_is_on_the_page(spec: dict, page: str):
    listed = operations(spec)
    assert len(listed) == sum(len([m for m in item if m != "parameters"]) for item in spec["paths"].values())
    for _tag, method, path, operation in listed:
        heading = f"#### `{method} {path}`"
        assert heading in page
        section = page.split(heading, 1)[1].split("\n#### ", 1)[0].split("\n## ", 1)[0]
        for status, response in operation["responses"].items():
            assert f"| {status} | {' '.join(response['description'].split())}" in section, (method, path, status)
        for parameter in operation.get("parameters", ()):
            assert f"| `{parameter['name']}` | {parameter['in']} |" in section


def test_every_schema_field_is_a_row_with_its_type_and_requiredness(spec: dict, page: str):
    schemas = spec["components"]["schemas"]
    assert len(schemas) > 20
    for name, schema in schemas.items():
        section = page.split(f"### `{name}`\n", 1)[1].split("\n### ", 1)[0]
        required = set(schema.get("required", ()))
        for field, field_schema in schema.get("properties", {}).items():
            row = next(line for line in section.splitlines() if line.startswith(f"| `{field}` |"))
            cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]]
            assert cells[1] == type_text(field_schema).replace("|", "\\|"), (name, field)
            assert cells[2] == ("yes" if field in required else "no"), (name, field)


def test_bounds_of_a_real_field_are_stated(spec: dict, page: str):
    # the first field of the spec that declares a maximum: its row names the bound
    bounded = [
        (name, field, props["maximum"])
        for name, schema in sorted(spec["components"]["schemas"].items())
        for field, props in sorted(schema.get("properties", {}).items())
        if "maximum" in props
    ]
    assert bounded, "the spec declares no maximum anywhere: pick another constraint to check"
    name, field, maximum = bounded[0]
    section = page.split(f"### `{name}`\n", 1)[1].split("\n### ", 1)[0]
    row = next(line for line in section.splitlines() if line.startswith(f"| `{field}` |"))
    assert f"≤ {maximum}" in row


def test_every_link_on_the_page_reaches_a_heading(page: str):
    anchors = {schema_anchor(match) for match in re.findall(r"^### `([A-Za-z0-9_]+)`$", page, flags=re.M)}
    links = set(re.findall(r"\]\(#([^)]+)\)", page))
    assert links, "the page links no schema"
    assert links <= anchors, f"dead links: {sorted(links - anchors)}"


def test_type_text_reads_references_arrays_unions_enums_and_maps():
    assert type_text({"$ref": "#/components/schemas/ScoreItem"}) == "[ScoreItem](#scoreitem)"
    assert type_text({"type": "array", "items": {"type": "integer"}}) == "array of integer"
    assert type_text({"anyOf": [{"type": "number"}, {"type": "null"}]}) == "number or null"
    assert type_text({"anyOf": [{"type": "string"}, {"type": "string"}]}) == "string"
    assert type_text({"enum": ["accept", "review"]}) == 'one of `"accept"`, `"review"`'
    assert type_text({"type": "object", "additionalProperties": {"type": "number"}}) == "object of number"
    assert type_text({"type": ["string", "null"]}) == "string or null"
    assert type_text({}) == "any"


def test_a_changed_spec_changes_the_page(spec: dict, page: str):
    changed = copy.deepcopy(spec)
    first_path = next(iter(changed["paths"]))
    changed["paths"]["/v1/new-thing"] = {"post": {"summary": "A new operation", "responses": {"204": {}}}}
    changed["paths"][first_path] = {}
    rendered = render_page(changed)
    assert "#### `POST /v1/new-thing`" in rendered and "| 204 |" in rendered
    assert f"`GET {first_path}`" not in rendered
    assert rendered != page
