"""The rules between fields of ``POST /v1/estimates`` and ``POST /v1/rankings`` bodies as JSON Schema, declared on
their wire types (``service.wire.estimates``; the checks themselves: ``service.estimating.estimate_request``).

The body's forms exclude each other (each leaves out the others' fields), so ``anyOf`` states exactly ``oneOf``;
``anyOf`` because schemathesis' generator cannot prove the difference form disjoint and gives up on a ``oneOf``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["estimate_request_rules", "labelled_item_rules", "ranking_battles_rules"]

_NULL = {"type": "null"}
# any JSON value but null, stated positively (the generators handle it better than a not)
_NOT_NULL = {"type": ["array", "object", "string", "number", "boolean"]}
_WIN_VALUE = {"enum": [0, 0.5, 1]}
_BASE_METRICS = ("mean", "pass_rate", "win_rate")


def _given(*fields: str, **schemas: dict[str, Any]) -> dict[str, Any]:
    """Each of ``fields`` present and not null (with ``schemas`` for some of them)."""
    # a keyword such as required or items says nothing of a null: the not-null part is always stated
    properties = {field: {"allOf": [_NOT_NULL, schemas[field]]} if field in schemas else _NOT_NULL for field in fields}
    return {"required": list(fields), "properties": properties}


def _absent(*fields: str) -> dict[str, Any]:
    """Each of ``fields`` left out (or null, which the service reads as left out)."""
    return dict.fromkeys(fields, _NULL)


def _values(value: dict[str, Any], *, with_unlabelled: bool = True) -> dict[str, Any]:
    """Every labelled item's human (and judge) value, and every unlabelled verdict, of schema ``value``."""
    item = {"properties": {"human": value, "judge": {"anyOf": [_NULL, value]}}}
    properties: dict[str, Any] = {"labelled": {"items": item}}
    if with_unlabelled:
        properties["unlabelled"] = {"anyOf": [_NULL, {"items": {"properties": {"judge": value}}}]}
    return {"properties": properties}


def _metric_rules(metric_field: str, values_at: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """A system's rules between its metric, threshold and values (``metric_field`` names the metric: ``metric``, or
    ``of`` for a difference, where a left-out ``of`` is the mean; ``values_at``: the fields holding the values, none
    for the body itself). On the default scale 1..5 the values and the threshold lie on it; with a scale given in the
    body these are rules between fields, which JSON Schema cannot state (one branch per scale made the spec too large
    for the generators): they stay in the description and the 422."""
    is_pass_rate = {"required": [metric_field], "properties": {metric_field: {"const": "pass_rate"}}}
    is_win_rate = {"required": [metric_field], "properties": {metric_field: {"const": "win_rate"}}}
    default_scale = {"not": {"anyOf": [{"required": ["scale_min"]}, {"required": ["scale_max"]}]}}

    def placed(values: dict[str, Any]) -> dict[str, Any]:
        return {"properties": dict.fromkeys(values_at, values)} if values_at else values

    on_scale = {
        "properties": {"threshold": {"anyOf": [_NULL, {"exclusiveMinimum": 1, "maximum": 5}]}},
        "allOf": [placed(_values({"minimum": 1, "maximum": 5}))],
    }
    return [
        {"if": is_pass_rate, "then": _given("threshold"), "else": {"properties": _absent("threshold")}},
        {"if": is_win_rate, "then": placed(_values(_WIN_VALUE))},
        {"if": {"allOf": [default_scale, {"not": is_win_rate}]}, "then": on_scale},
    ]


def _forms() -> list[dict[str, Any]]:
    """The body's forms, exactly one per request: one system with its values, one system read from a job, a
    difference, a batch."""
    samples = ("labelled", "unlabelled", "a", "b", "systems", "job")
    job_options = _absent("judge_value", "criterion")
    explicit = {"items": {"properties": {"judge": _NOT_NULL, "id": _NULL}, "required": ["judge"]}}
    by_id = {"items": {"properties": {"id": _NOT_NULL, "judge": _NULL}, "required": ["id"]}}
    single = {
        "title": "one system, its values given",
        "allOf": [
            _given(
                "metric",
                "labelled",
                "unlabelled",
                metric={"enum": ["mean", "pass_rate", "win_rate"]},
                labelled=explicit,
            ),
            {"properties": {**_absent("a", "b", "systems", "job", "of"), **job_options}},
            *_metric_rules("metric"),
        ],
    }
    from_job = {
        "title": "one system read from a job",
        "allOf": [
            _given("metric", "job", "labelled", metric={"enum": ["mean", "pass_rate"]}, labelled=by_id),
            {"properties": _absent("unlabelled", "a", "b", "systems", "of")},
            *_metric_rules("metric"),
        ],
    }
    side = {
        "anyOf": [
            {"allOf": [_given("unlabelled", "labelled", labelled=explicit), {"properties": _absent("job")}]},
            {"allOf": [_given("job", "labelled", labelled=by_id), {"properties": _absent("unlabelled")}]},
        ]
    }
    has_job = {"anyOf": [_given("job"), _given("a", a=_given("job")), _given("b", b=_given("job"))]}
    difference = {
        "title": "a difference of two systems (a - b)",
        "allOf": [
            _given("metric", "a", "b", metric={"const": "difference"}, a=side, b=side),
            {"properties": _absent("labelled", "unlabelled", "systems", "job")},
            {"anyOf": [{"properties": job_options}, has_job]},
            *_metric_rules("of", ("a", "b")),
        ],
    }
    some_system_has_job = {"properties": {"systems": {"not": {"additionalProperties": {"not": has_job}}}}}
    # a batch system's own refusals (its metric, values, options) are its answer in a 200, not the request's: only
    # the top-level rules are stated here
    batch = {
        "title": "a batch of systems",
        "allOf": [
            _given("systems"),
            {"properties": _absent(*(field for field in samples if field != "systems"))},
            {"anyOf": [{"properties": job_options}, some_system_has_job]},
        ],
    }
    return [single, from_job, difference, batch]


def _scale_order(low: tuple[int, int, int], high_default: int) -> dict[str, Any]:
    """scale_min < scale_max, a left-out bound being its default: JSON Schema cannot compare two fields, but the
    bounds are small integers, so one branch per scale_min states it (``low``: scale_min's minimum, maximum and
    default; ``high_default``: scale_max's default)."""
    lowest_min, lowest_max, low_default = low
    branches = []
    for lowest in range(lowest_min, lowest_max + 1):
        required = [
            name
            for name, needed in (("scale_min", lowest != low_default), ("scale_max", high_default <= lowest))
            if needed
        ]
        properties = {"scale_min": {"const": lowest}, "scale_max": {"minimum": lowest + 1}}
        branches.append({"required": required, "properties": properties} if required else {"properties": properties})
    return {"anyOf": branches}


def estimate_request_rules(low: tuple[int, int, int], high_default: int) -> dict[str, Any]:
    """EstimateRequest's rules: exactly one form, and scale_min below scale_max."""
    return {"anyOf": _forms(), "allOf": [_scale_order(low, high_default)]}


def labelled_item_rules() -> dict[str, Any]:
    """Without a job an item carries the judge's verdict, with one the item's id."""
    return {"anyOf": [{"required": ["judge"]}, {"required": ["id"]}]}


def ranking_battles_rules() -> dict[str, Any]:
    """At least one labelled and one unlabelled battle."""
    labelled = {"required": ["human"], "properties": {"human": _NOT_NULL}}
    return {"allOf": [{"contains": labelled}, {"contains": {"properties": {"human": _NULL}}}]}
