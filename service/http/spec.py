"""OpenAPI details the generator cannot infer from the wire types: optional security without keys, either/or bodies,
and the request rules the service enforces that JSON Schema can state.

* **Security**: with API_KEYS unset the /v1 operations take no key, so the spec says so: ``security: [{},
  {bearerAuth: []}]`` (a key is accepted, none is needed). With API_KEYS set, the key is required
  (``[{bearerAuth: []}]``). ``make openapi`` writes the spec of the default settings (no keys); a deployment
  with keys serves its own at /schema/openapi.json.
* **Either/or bodies**: ``ScoreRequest`` is a live call (``document`` and ``summary``), the caller's own verdict
  (``judge`` with ``judge_score``, ``judge_logprobs``, ``mean_of_samples`` or ``sentence_verdicts``) or a panel
  (``verdicts``, or ``panel`` with ``document`` and ``summary``): ``anyOf`` of those sets, each required and not
  null. ``CompareRequest`` is exactly one of live (``document``, ``candidates``, ``criterion``) or ``preferences``:
  ``oneOf``. A batch item is any JSON value (an invalid one fails alone, in its result).
* **Rules between fields** (``allOf`` of implications written ``anyOf: [{not: if}, then]``): sentence_verdicts
  need criterion faithfulness and factuality_method sentences and exclude the other verdict fields
  (service.scoring.score); a panel request excludes every single-judge field and faithfulness, and ``verdicts``
  excludes ``panel`` (service.scoring.panels); a member verdict carries a score, log-probs or a mean, and its judge has
  no "+" and is no ``panel:`` name; log-probs hold at
  least one token; a ``{first, second, verdict}`` preference has no ``tie: true``; texts are not blank; compare's
  candidates are unique items (their ids must be: the part JSON Schema can state); ``confidence`` (score and
  compare) needs ``guarantee: "pac"``.
* **Zero bounds** (``gt=0``, ``le=0``) the generator drops are restored from msgspec's schema of the wire types.
* **Artifact names** (``ReloadRequest.name``, the ``name`` query of POST /v1/calibrations):
service.artifacts.activated's
  check_name (1-64 letters, digits, ``_ - .`` starting with a letter or digit, no ``..``, not ending in ``.json``,
  not the reserved ``primary`` in any case); the query's empty ``name`` means the default name.
* **Deployment values** (names and scales that depend on the loaded calibration, JUDGES_FILE, RUBRICS_FILE and
  PANELS_FILE) are ``service.http.spec_values``'s.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import msgspec
from litestar.openapi.spec import OpenAPI, OpenAPIType, Reference, Schema

from service.artifacts.activated import NAME_PATTERN
from service.artifacts.registry import RESERVED_NAMES
from service.config.settings import Settings

__all__ = ["absent", "implies", "present", "refine_spec", "restore_zero_bounds", "score_branches"]

_OWN_VERDICT_FIELDS = {
    "judge_score": "integer",
    "judge_logprobs": "object",
    "mean_of_samples": "number",
    "sentence_verdicts": "array",
}
_SINGLE_JUDGE_FIELDS = (
    "judge",
    "judge_score",
    "judge_logprobs",
    "mean_of_samples",
    "sentence_verdicts",
    "prompt_family",
)
_NOT_BLANK = r"\S"  # the service's rule: a text must contain some non-whitespace character (str.strip)
# Closed objects of request bodies (the decoder refuses unknown fields in every one of them).
_CLOSED = ("JudgeLogprobs", "Candidate", "Preference", "SentenceVerdictItem", "MemberVerdict")


def present(types: dict[str, str]) -> Schema:
    """These fields are required and not null (a nullable property's ``null`` does not satisfy a branch)."""
    return Schema(
        required=list(types), properties={name: Schema(type=OpenAPIType(kind)) for name, kind in types.items()}
    )


def absent(*names: str) -> Schema:
    """These fields are missing or null (the wire types read null as not given)."""
    return Schema(properties={name: Schema(type=OpenAPIType.NULL) for name in names})


def implies(condition: Schema, then: Schema) -> Schema:
    """``if condition then then``, written ``anyOf: [{not: condition}, then]`` (JSON Schema draft 4 style)."""
    return Schema(any_of=[Schema(schema_not=condition), then])


def score_branches(score: Schema, *, judge_required: bool) -> list[Schema]:
    """ScoreRequest's ``anyOf``: live texts, the caller's verdict (with ``judge`` unless a default judge exists),
    a panel."""
    assert score.properties is not None
    judge = {"judge": "string"} if judge_required else {}
    own = [present({**judge, name: kind}) for name, kind in _OWN_VERDICT_FIELDS.items() if name in score.properties]
    panel = []
    if "verdicts" in score.properties and "panel" in score.properties:
        panel = [
            present({"verdicts": "array"}),
            present({"panel": "string", "document": "string", "summary": "string"}),
        ]
    return [present({"document": "string", "summary": "string"}), *own, *panel]


_BOUNDS = {
    "minimum": "minimum",
    "maximum": "maximum",
    "exclusiveMinimum": "exclusive_minimum",
    "exclusiveMaximum": "exclusive_maximum",
}


def restore_zero_bounds(schemas: dict[str, Any], request_types: Iterable[type]) -> None:
    """Litestar's generator drops bounds equal to zero (``gt=0``, ``le=0``): copy them from msgspec's own schema of
    the wire types (``msgspec.json.schema_components``), so that no bound the decoder enforces is missing."""
    _, components = msgspec.json.schema_components(tuple(request_types))
    for name, component in components.items():
        target = schemas.get(name)
        if target is None or not target.properties:
            continue
        for field_name, declared in component.get("properties", {}).items():
            prop = target.properties.get(field_name)
            if not isinstance(prop, Schema):
                continue
            for member in (declared, *declared.get("anyOf", ())):
                for key, attribute in _BOUNDS.items():
                    if member.get(key) == 0 and getattr(prop, attribute) is None:
                        setattr(prop, attribute, 0.0)


def _pac_confidence() -> Schema:
    """``confidence`` applies to the pac guarantee only (service.scoring.resolve.request_mode,
    service.comparing.pair_decisions.check_guarantee): a confidence needs ``guarantee: "pac"``."""
    return implies(
        present({"confidence": "number"}),
        Schema(required=["guarantee"], properties={"guarantee": Schema(const="pac")}),
    )


def _score_rules(score: Schema) -> None:
    assert score.properties is not None
    score.any_of = score_branches(score, judge_required=True)
    panel = "verdicts" in score.properties and "panel" in score.properties
    rules = [
        implies(  # service.scoring.verdict.own_sentence_verdict
            present({"sentence_verdicts": "array"}),
            Schema(
                all_of=[absent("judge_score", "judge_logprobs", "mean_of_samples")],
                required=["factuality_method"],
                properties={"criterion": Schema(const="faithfulness"), "factuality_method": Schema(const="sentences")},
            ),
        ),
    ]
    if panel:
        rules += [  # service.scoring.panels._check_shape
            Schema(schema_not=present({"verdicts": "array", "panel": "string"})),
            implies(
                Schema(any_of=[present({"verdicts": "array"}), present({"panel": "string"})]),
                Schema(
                    all_of=[absent(*_SINGLE_JUDGE_FIELDS)],
                    properties={"criterion": Schema(schema_not=Schema(const="faithfulness"))},
                ),
            ),
        ]
    if "confidence" in score.properties:
        rules.append(_pac_confidence())
    score.all_of = rules
    for name in ("document", "summary"):
        if name in score.properties:
            score.properties[name].pattern = _NOT_BLANK  # type: ignore[union-attr]


def _compare_rules(schemas: dict[str, Any]) -> None:
    compare = schemas.get("CompareRequest")
    if compare is not None and compare.properties and "preferences" in compare.properties:
        live = present({"document": "string", "candidates": "array", "criterion": "string"})  # the judge is asked
        preferences = present({"preferences": "array"})  # criterion optional: echoed
        compare.one_of = [
            Schema(
                all_of=[live],
                schema_not=Schema(required=["preferences"], properties={"preferences": Schema(type=OpenAPIType.ARRAY)}),
            ),
            Schema(
                all_of=[preferences],
                schema_not=Schema(
                    any_of=[
                        Schema(required=["document"], properties={"document": Schema(type=OpenAPIType.STRING)}),
                        Schema(required=["candidates"], properties={"candidates": Schema(type=OpenAPIType.ARRAY)}),
                    ]
                ),
            ),
        ]
        if "document" in compare.properties:
            compare.properties["document"].pattern = _NOT_BLANK
        if "candidates" in compare.properties:
            # service.comparing.compare: candidate ids are unique. JSON Schema cannot say "unique by id"; uniqueItems
            # states
            # the part it can (two equal candidates share their id), the rest is the documented 422.
            compare.properties["candidates"].unique_items = True
        if "confidence" in compare.properties:
            compare.all_of = [*(compare.all_of or []), _pac_confidence()]
    candidate = schemas.get("Candidate")
    if candidate is not None and candidate.properties and "text" in candidate.properties:
        candidate.properties["text"].pattern = _NOT_BLANK
    preference = schemas.get("Preference")
    if preference is not None and preference.properties and "verdict" in preference.properties:
        shown = ("first", "second", "verdict")
        preference.one_of = [  # {winner, loser[, tie]} or {first, second, verdict} (no tie: true), never a mix
            Schema(
                all_of=[present({"winner": "string", "loser": "string"})],
                schema_not=Schema(any_of=[present({name: "string"}) for name in shown]),
            ),
            Schema(
                all_of=[present({"first": "string", "second": "string", "verdict": "string"})],
                schema_not=Schema(
                    any_of=[
                        *(present({name: "string"}) for name in ("winner", "loser")),
                        Schema(required=["tie"], properties={"tie": Schema(enum=[True])}),
                    ]
                ),
            ),
        ]


def _verdict_parts(schemas: dict[str, Any]) -> None:
    member = schemas.get("MemberVerdict")
    if member is not None and member.properties:
        judge = member.properties["judge"]  # calibration.kinds.mean_panel.panel_name: no "+", not itself a panel
        judge.pattern, judge.schema_not = r"^[^+]*$", Schema(pattern="^panel:")
        member.any_of = [  # service.scoring.panel_members.caller_member: a member carries something to read
            present({name: kind}) for name, kind in _OWN_VERDICT_FIELDS.items() if name in member.properties
        ]
    logprobs = schemas.get("JudgeLogprobs")
    if logprobs is not None and logprobs.properties:
        # "holds no token" is a 422: at least one token with a number (deployment values may drop tokens above K)
        logprobs.any_of = [present({token: "number"}) for token in logprobs.properties]


def _either_or(schemas: dict[str, Any]) -> None:
    for name in _CLOSED:
        if name in schemas:
            schemas[name].additional_properties = False
    score = schemas.get("ScoreRequest")
    if score is not None and score.properties:
        _score_rules(score)
    _compare_rules(schemas)
    _verdict_parts(schemas)
    batch = schemas.get("ScoreBatchRequest")
    if batch is not None and batch.properties and "items" in batch.properties:
        # Any JSON value is accepted as an item: one that is not a valid ScoreRequest fails alone, in its result
        # (a 200 for the batch), so declaring items as ScoreRequest would promise a rejection that never comes.
        batch.properties["items"].items = Schema(
            description="a /v1/score body (schema ScoreRequest); anything else fails alone, in its result"
        )
    feedback = schemas.get("FeedbackRequest")
    if feedback is not None and feedback.properties and "items" in feedback.properties:
        feedback.properties["items"].items = Schema(  # likewise: a refused item is refused alone
            description="the verdict as sent to /v1/score (criterion, judge, prompt_family, judge_score and/or "
            "judge_logprobs, alpha, method, tolerance, accept_alpha, guarantee, confidence) plus human (the label), "
            "item_id (required; the same id again is a duplicate), group (the document; default the item) and "
            "done (true closes the document); anything else is refused alone, with its problem"
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


def _job_items(spec: OpenAPI, settings: Settings) -> None:
    """POST /v1/jobs as JSON: 1..MAX_JOB_ITEMS items (service.jobs.intake)."""
    item = (spec.paths or {}).get("/v1/jobs")
    body = item.post.request_body if item is not None and item.post is not None else None
    media = body.content.get("application/json") if body is not None and not isinstance(body, Reference) else None
    if media is not None and isinstance(media.schema, Schema) and media.schema.properties:
        media.schema.properties["items"].max_items = settings.jobs.max_job_items  # type: ignore[union-attr]


def _any_case(word: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else re.escape(c) for c in word)


def _artifact_names(spec: OpenAPI) -> None:
    """service.artifacts.activated.check_name's rules on the two artifact names a caller gives (module rules)."""
    reserved = "|".join(f"^{_any_case(name)}$" for name in sorted(RESERVED_NAMES))
    refused = Schema(type=OpenAPIType.STRING, pattern=rf"\.\.|\.{_any_case('json')}$|{reserved}")
    schemas = (spec.components.schemas if spec.components else None) or {}
    reload = schemas.get("ReloadRequest")
    if reload is not None and reload.properties and "name" in reload.properties:
        reload.properties["name"].schema_not = refused  # type: ignore[union-attr]
    item = (spec.paths or {}).get("/v1/calibrations")
    for parameter in (item.post.parameters or []) if item is not None and item.post is not None else []:
        if not isinstance(parameter, Reference) and parameter.name == "name" and isinstance(parameter.schema, Schema):
            # empty: the default name cal-<id> (the handler reads "" as not given)
            parameter.schema.pattern = f"^({NAME_PATTERN.pattern.strip('^$')})?$"
            parameter.schema.schema_not = refused


def refine_spec(spec: OpenAPI, settings: Settings) -> None:
    """Apply the module's rules to ``spec`` in place."""
    _either_or((spec.components.schemas if spec.components else None) or {})
    _artifact_names(spec)
    _security(spec, settings)
    _job_items(spec, settings)
