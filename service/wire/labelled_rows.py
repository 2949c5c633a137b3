"""The labelled row of ``POST /v1/calibrations``: one (judge, criterion, item) with the human label and the judge's
verdict, as ``artifact.labels`` reads it (unknown fields refused, a field left out or null alike).

The upload is JSON Lines the route reads itself (it is validated whole, line by line, naming line and field), so this
type is the row's wire contract and the spec's schema of a row; ``artifact.labels.parse_labels`` is what decodes it
(tests/service/http/test_schemathesis_spec_rules.py checks that the two agree on every rule the row states).

A row's own rules: at least one verdict (``judge_score``, ``judge_logprobs`` or ``mean_of_samples``), and a row's
``scale_max`` k bounds its values (``human``, ``judge_score``, ``mean_of_samples``, the log-prob keys) by k. Left to
the description and a 422 naming line and field: the rules between rows (distinct ``item_id`` per judge and
criterion, one scale per criterion, enough items and groups per cell), between a row and the query (a row without
``scale_max`` is on the ``scale`` query's 1..K), ``document``/``input`` and ``summary``/``output`` either/or (stated,
the schema's cases outgrew what schemathesis 4.32's generator can canonicalise and it gave up on the operation), and
printable names (``str.isprintable`` needs Unicode categories the generators' regexes lack).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

import msgspec
from msgspec import Meta

from artifact.labels import CRITERION_PATTERN, MAX_LABELS
from service.wire.schema import SchemaRules, present

__all__ = ["EXAMPLE_ROWS", "LABELS_MEDIA_TYPES", "LabelledRow"]

# the media types of an upload: labelled JSON Lines (the first), or a JSON array of rows as application/json
LABELS_MEDIA_TYPES = ("application/x-ndjson", "application/jsonl", "application/json-lines", "application/json")
# The spec's example upload: the smallest one the service accepts (MIN_CELL_ITEMS rows in MIN_CELL_GROUPS groups),
# so a client that sends it (schemathesis does) gets the documented 202 and a job that finishes done.
EXAMPLE_ROWS = [
    {
        "item_id": f"doc{d}/{part}",
        "criterion": "helpfulness",
        "judge": "my-judge",
        "human": human,
        "judge_score": score,
        "scale_max": 7,
        "group": f"doc{d}",
    }
    for d, part, human, score in (
        (1, "a", 5.5, 6),
        (1, "b", 3, 3),
        (2, "a", 6, 7),
        (2, "b", 2, 3),
        (3, "a", 4, 4),
        (3, "b", 7, 6),
        (4, "a", 1, 2),
        (4, "b", 5, 5),
    )
]

_Text = Annotated[str, Meta(min_length=1, extra_json_schema={"pattern": r"\S"})]  # not blank
_Name = Annotated[str, Meta(min_length=1, max_length=200, extra_json_schema={"pattern": r"\S"})]
_Label = Annotated[float, Meta(ge=1, le=MAX_LABELS)]
# the log-prob keys "1".."10" (the largest scale), spelled as the judge's tokens
_Token = Literal["1", "2", "3", "4", "5", "6", "7", "8", "9", "10"]
_VERDICTS = {"judge_score": "integer", "judge_logprobs": "object", "mean_of_samples": "number"}


def _within_scale(k: int) -> dict[str, Any]:
    """A row's values on the scale 1..k (human, judge_score, mean_of_samples, the log-prob keys)."""
    label = {"maximum": k}
    tokens = {"propertyNames": {"enum": [str(n) for n in range(1, k + 1)]}}
    return {"properties": {"human": label, "judge_score": label, "mean_of_samples": label, "judge_logprobs": tokens}}


class LabelledRow(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One labelled row: item_id, criterion, human, judge, judge_score and/or judge_logprobs or mean_of_samples;
    optional scale_max (bounds the row's values; without it the query's scale does), prompt_family, group,
    document/summary or input/output (not both of a pair) (artifact/labels.py)."""

    item_id: _Text
    criterion: Annotated[str, Meta(pattern=CRITERION_PATTERN.pattern)]
    human: _Label
    judge: _Name
    judge_score: Annotated[int, Meta(ge=1, le=MAX_LABELS)] | None = None
    judge_logprobs: Annotated[dict[_Token, Annotated[float, Meta(le=0)]], Meta(min_length=1)] | None = None
    mean_of_samples: _Label | None = None
    scale_max: Annotated[int, Meta(ge=2, le=MAX_LABELS)] | None = None
    prompt_family: _Name | None = None
    group: _Text | None = None
    document: _Text | None = None
    summary: _Text | None = None
    input: _Text | None = None
    output: _Text | None = None

    JSON_SCHEMA_RULES: ClassVar[SchemaRules] = {
        # a verdict given (not null: a null field is one left out)
        "anyOf": [present({name: kind}) for name, kind in _VERDICTS.items()],
        # if the row's scale_max is k then its values lie within 1..k
        "allOf": [
            {
                "anyOf": [
                    {"not": {"required": ["scale_max"], "properties": {"scale_max": {"const": k}}}},
                    _within_scale(k),
                ]
            }
            for k in range(2, MAX_LABELS)
        ],
    }
