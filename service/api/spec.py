"""OpenAPI details the generator cannot infer from the wire types: optional security without keys, either/or bodies.

* **Security**: with API_KEYS unset the /v1 operations take no key, so the spec says so: ``security: [{},
  {bearerAuth: []}]`` (a key is accepted, none is needed). With API_KEYS set, the key is required
  (``[{bearerAuth: []}]``). ``make openapi`` writes the spec of the default settings (no keys); a deployment
  with keys serves its own at /schema/openapi.json.
* **Either/or bodies**: ``ScoreRequest`` is either a live call (``document`` and ``summary``) or the caller's own
  verdict (``judge`` with ``judge_score``, ``judge_logprobs``, ``mean_of_samples`` or ``sentence_verdicts``):
  ``anyOf`` of those sets, each required and not null. ``CompareRequest`` is exactly one of live (``document``
  and ``candidates``) or ``preferences``: ``oneOf``. A batch item is any JSON value (an invalid one fails alone,
  in its result).
"""

from __future__ import annotations

from typing import Any

from litestar.openapi.spec import OpenAPI, OpenAPIType, Schema

from service.settings import Settings

__all__ = ["refine_spec"]

_OWN_VERDICT_FIELDS = {"judge_score": "integer", "judge_logprobs": "object", "mean_of_samples": "number",
                       "sentence_verdicts": "array"}


def _present(types: dict[str, str]) -> Schema:
    """These fields are required and not null (a nullable property's ``null`` does not satisfy a branch)."""
    return Schema(
        required=list(types), properties={name: Schema(type=OpenAPIType(kind)) for name, kind in types.items()}
    )


def _either_or(schemas: dict[str, Any]) -> None:
    score = schemas.get("ScoreRequest")
    if score is not None and score.properties:
        own = [
            _present({"judge": "string", name: kind})
            for name, kind in _OWN_VERDICT_FIELDS.items()
            if name in score.properties
        ]
        score.any_of = [_present({"document": "string", "summary": "string"}), *own]
    compare = schemas.get("CompareRequest")
    if compare is not None and compare.properties and "preferences" in compare.properties:
        live = _present({"document": "string", "candidates": "array"})
        preferences = _present({"preferences": "array"})
        compare.one_of = [
            Schema(all_of=[live], schema_not=Schema(required=["preferences"], properties={"preferences": Schema(
                type=OpenAPIType.ARRAY)})),
            Schema(all_of=[preferences], schema_not=Schema(any_of=[
                Schema(required=["document"], properties={"document": Schema(type=OpenAPIType.STRING)}),
                Schema(required=["candidates"], properties={"candidates": Schema(type=OpenAPIType.ARRAY)}),
            ])),
        ]
    preference = schemas.get("Preference")
    if preference is not None and preference.properties and "verdict" in preference.properties:
        shown = ("first", "second", "verdict")
        preference.one_of = [  # {winner, loser[, tie]} or {first, second, verdict}, never a mix
            Schema(
                all_of=[_present({"winner": "string", "loser": "string"})],
                schema_not=Schema(any_of=[_present({name: "string"}) for name in shown]),
            ),
            Schema(
                all_of=[_present({"first": "string", "second": "string", "verdict": "string"})],
                schema_not=Schema(any_of=[_present({name: "string"}) for name in ("winner", "loser")]),
            ),
        ]
    batch = schemas.get("ScoreBatchRequest")
    if batch is not None and batch.properties and "items" in batch.properties:
        # Any JSON value is accepted as an item: one that is not a valid ScoreRequest fails alone, in its result
        # (a 200 for the batch), so declaring items as ScoreRequest would promise a rejection that never comes.
        batch.properties["items"].items = Schema(
            description="a /v1/score body (schema ScoreRequest); anything else fails alone, in its result"
        )


def _security(spec: OpenAPI, settings: Settings) -> None:
    requirement: list[dict[str, list[str]]] = [{"bearerAuth": []}]
    if not settings.api_keys:
        requirement = [{}, *requirement]
    for path, item in (spec.paths or {}).items():
        if not path.startswith("/v1/"):
            continue
        for method in ("get", "put", "post", "delete", "patch"):
            operation = getattr(item, method, None)
            if operation is not None and operation.security is not None:
                operation.security = requirement


def refine_spec(spec: OpenAPI, settings: Settings) -> None:
    """Apply the module's rules to ``spec`` in place."""
    _either_or((spec.components.schemas if spec.components else None) or {})
    _security(spec, settings)
