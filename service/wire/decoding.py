"""JSON into wire types, strictly, as every endpoint and every job item reads it.

* strict: a string where a number belongs is a ``msgspec.ValidationError`` (422), never coerced;
* a number with a zero fraction is that integer: ``"judge_score": 4.0`` is 4, as JSON (and JSON Schema's
  ``integer``) reads it; ``4.5`` where an integer belongs stays an error.

No web framework: the HTTP package (``service.http.body``) and the job worker (``service.jobs.runner``) both use it.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["as_wire_type", "decode_wire_json"]


def _integral_floats_as_ints(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _integral_floats_as_ints(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_integral_floats_as_ints(item) for item in value]
    return value


def _float_for_int(error: msgspec.ValidationError) -> bool:
    return str(error).startswith("Expected `int") and "got `float`" in str(error)


def as_wire_type(raw: Any, type_: Any) -> Any:
    """``raw`` (decoded JSON) converted strictly to ``type_``, an integral float read as its integer."""
    try:
        return msgspec.convert(raw, type_, strict=True)
    except msgspec.ValidationError as error:
        if not _float_for_int(error):
            raise
    return msgspec.convert(_integral_floats_as_ints(raw), type_, strict=True)


def decode_wire_json(decoder: msgspec.json.Decoder[Any], body: bytes) -> Any:
    """``decoder.decode(body)``; when only an integral float stood where an integer belongs, the same body with
    that float read as its integer (the fast path is the typed decoder alone)."""
    try:
        return decoder.decode(body)
    except msgspec.ValidationError as error:
        if not _float_for_int(error):
            raise
    return msgspec.convert(_integral_floats_as_ints(msgspec.json.decode(body)), decoder.type, strict=True)
