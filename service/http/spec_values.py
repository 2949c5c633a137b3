"""Deployment values in the OpenAPI spec: the names and scales a request may use on *this* service.

Which criteria, judges and panels a request may name, the scale 1..K of a verdict and the smallest level
``alpha`` depend on the loaded calibration (every artifact), JUDGES_FILE, RUBRICS_FILE and PANELS_FILE. The
service refuses other values (422 with the allowed ones), so the spec lists them, and a schema-valid request is
one the service answers:

* ``criterion``: the built-in criteria, the rubrics' and the calibration's (``enum``); one only the calibration
  covers needs the caller's own verdict (no live call can ask about it).
* ``judge``: the calibration's judges and the configured ones; without a configured (default) judge the caller's
  verdict names its judge; with judges configured, a calibration-only judge needs the caller's own verdict. A
  (judge, criterion) calibrated under several prompt families needs ``prompt_family``.
* ``panel``: the configured panels (none configured: only null); ``cascade`` likewise (CASCADES_FILE).
* ``judge_score``, ``mean_of_samples`` (also in ``verdicts``) at most the largest K, log-prob tokens "1".."K";
  a criterion with a smaller K says so (``if criterion in [...] then maximum k``).
* ``alpha`` at least the smallest calibrated level.
* ``tolerance`` at most K - 1 and ``pass_threshold`` at most K (service.scoring.cell_decision.asked), per criterion
  as above.

The served document (/schema/openapi.json) is re-derived whenever the calibration snapshot changes (reload,
activate, delete), so it follows the service; ``make openapi`` writes the one of the default settings (the
shipped calibration, no judges, rubrics, panels or keys), which is what ``make serve`` serves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from litestar import Litestar, Request
from litestar.openapi.plugins import JsonRenderPlugin
from litestar.openapi.spec import OpenAPI, OpenAPIType, Reference, Schema

from calibration.conformal import METHODS
from service.artifacts.snapshot import CalibrationSnapshot
from service.http.services import Services
from service.http.wire_schema import to_openapi_schema
from service.wire import schema as json_schema
from service.wire.common import CRITERIA
from service.wire.score import OWN_VERDICT_FIELDS, score_branches

__all__ = ["LiveSpecJson", "SpecValues", "apply_spec_values", "spec_document", "spec_values"]

DEFAULT_SCALE = 5  # service.artifacts.snapshot.CalibrationSnapshot.n_labels_for: an uncalibrated criterion's K
_DEPLOYMENT = "deployment value (service.http.spec_values)"  # marks the rules this module owns, to replace them
_OWN_FIELDS = OWN_VERDICT_FIELDS


def _schema(schema: dict[str, Any]) -> Schema:
    """A JSON Schema written with ``service.wire.schema``'s helpers (no reference in it) as Litestar's schema."""

    def no_reference(name: str) -> Reference:
        raise ValueError(f"a deployment rule refers to the component {name}")

    converted = to_openapi_schema(schema, no_reference)
    assert isinstance(converted, Schema)
    return converted


def present(types: dict[str, str]) -> Schema:
    return _schema(json_schema.present(types))


def implies(condition: Schema, then: Schema) -> Schema:
    return Schema(any_of=[Schema(schema_not=condition), then])


@dataclass(frozen=True, kw_only=True)
class SpecValues:
    """The names and scales a request may use on one service (see the module docstring)."""

    criteria: tuple[str, ...]
    askable: tuple[str, ...]  # criteria a judge can be asked about (built-in and rubrics)
    judges: tuple[str, ...]
    configured: tuple[str, ...]
    panels: tuple[str, ...]
    cascades: tuple[str, ...] = ()
    scales: dict[str, int] = field(default_factory=dict)  # K per criterion
    min_alpha: float | None = None
    max_confidence: float | None = None  # the largest pac confidence of the score thresholds
    max_pairwise_confidence: float | None = None  # of the pairwise decisions (1 - their delta)
    several_families: tuple[tuple[str, str], ...] = ()  # (judge, criterion) needing prompt_family


def spec_values(services: Services) -> SpecValues:
    """The values of ``services``' current calibration and configuration."""
    judges = services.judges
    snapshot: CalibrationSnapshot | None = services.calibration.current
    rubrics = judges.rubrics
    askable = sorted(set(CRITERIA) | set(rubrics))
    calibrated = set(snapshot.criterion_labels) if snapshot is not None else set()
    criteria = sorted(set(askable) | calibrated)
    scales = {
        criterion: (snapshot.criterion_labels.get(criterion) if snapshot is not None else None)
        or (rubrics[criterion].scale_max if criterion in rubrics else DEFAULT_SCALE)
        for criterion in criteria
    }
    known = set(snapshot.judge_names) if snapshot is not None else set()
    pairwise = services.calibration.pairwise
    several: list[tuple[str, str]] = []
    if snapshot is not None:
        families: dict[tuple[str, str], set[str]] = {}
        for judge, family, criterion in snapshot.cell_methods:
            families.setdefault((judge, criterion), set()).add(family)
        configured = set(judges.names())
        several = sorted(key for key, found in families.items() if len(found) > 1 and key[0] not in configured)
    return SpecValues(
        criteria=tuple(criteria),
        askable=tuple(askable),
        judges=tuple(sorted(known | set(judges.names()))),
        configured=tuple(sorted(judges.names())),
        panels=tuple(sorted(judges.panels)),
        cascades=tuple(sorted(judges.cascades)),
        scales=scales,
        min_alpha=snapshot.all_levels[0] if snapshot is not None and snapshot.all_levels else None,
        max_confidence=snapshot.pac_confidences[-1] if snapshot is not None and snapshot.pac_confidences else None,
        max_pairwise_confidence=None if pairwise is None else 1 - pairwise.artifact.delta,
        several_families=tuple(several),
    )


def _own() -> Schema:
    return Schema(any_of=[present({"judge": "string", name: kind}) for name, kind in _OWN_FIELDS.items()])


def _bound(schema: Any, maximum: int) -> None:
    """Set ``maximum`` on the integer branch of a (possibly nullable) integer schema."""
    for branch in getattr(schema, "any_of", None) or getattr(schema, "one_of", None) or [schema]:
        if getattr(branch, "type", None) == OpenAPIType.INTEGER:
            branch.maximum = maximum


def _names(schema: Any, names: tuple[str, ...], nullable: bool) -> None:
    schema.enum = [*names, None] if nullable else list(names)


def _scale_rules(values: SpecValues, largest: int) -> list[Schema]:
    """Per smaller K: ``if criterion in [...] then`` scores, means and tokens stay within 1..K."""
    rules = []
    for k in sorted(set(values.scales.values()) - {largest}):
        criteria = [name for name, scale in values.scales.items() if scale == k]
        bounded = Schema(maximum=k)
        tokens: dict[str, Schema | Reference] = {
            str(token): Schema(type=OpenAPIType.NULL) for token in range(k + 1, largest + 1)
        }
        member = Schema(
            properties={"judge_score": bounded, "mean_of_samples": bounded, "judge_logprobs": Schema(properties=tokens)}
        )
        rules.append(
            implies(
                Schema(required=["criterion"], properties={"criterion": Schema(enum=criteria)}),
                Schema(
                    properties={
                        "judge_score": bounded,
                        "mean_of_samples": bounded,
                        "judge_logprobs": Schema(properties=tokens),
                        "verdicts": Schema(items=member),
                        "tolerance": Schema(maximum=k - 1),
                        "pass_threshold": bounded,
                    }
                ),
            )
        )
    return rules


def apply_spec_values(spec: OpenAPI, values: SpecValues) -> None:
    """Write ``values`` into ``spec`` in place (replacing earlier ones: it may run again after a reload)."""
    schemas: dict[str, Any] = (spec.components.schemas if spec.components else None) or {}
    score = schemas.get("ScoreRequest")
    if score is None or not score.properties:
        return
    props = score.properties
    score.any_of = [_schema(branch) for branch in score_branches(judge_required=not values.configured)]
    _names(props["criterion"], values.criteria, nullable=False)
    _names(props["judge"], values.judges, nullable=True)
    _names(props["method"], tuple(METHODS), nullable=True)
    if "panel" in props:
        _names(props["panel"], values.panels, nullable=True)
    if "cascade" in props:
        _names(props["cascade"], values.cascades, nullable=True)
    if values.min_alpha is not None:
        props["alpha"].minimum = values.min_alpha
    # a pac confidence above the calibrated one is a 422 (service.scoring.resolve, service.comparing.pair_decisions)
    if values.max_confidence is not None and "confidence" in props:
        props["confidence"].maximum = values.max_confidence
    compare_props = (schemas["CompareRequest"].properties if "CompareRequest" in schemas else None) or {}
    if values.max_pairwise_confidence is not None and "confidence" in compare_props:
        compare_props["confidence"].maximum = values.max_pairwise_confidence
    largest = max(values.scales.values(), default=DEFAULT_SCALE)
    _bound_scales(schemas, largest)
    rules = _deployment_rules(values, largest)
    for rule in rules:
        rule.description = _DEPLOYMENT
    score.all_of = [rule for rule in score.all_of or [] if getattr(rule, "description", None) != _DEPLOYMENT] + rules


def _bound_scales(schemas: dict[str, Any], largest: int) -> None:
    """Bound scores, means, tolerance, pass threshold and log-prob tokens by the largest scale K (in place)."""
    props = schemas["ScoreRequest"].properties
    for name in ("judge_score", "mean_of_samples"):
        props[name].maximum = largest
    if "tolerance" in props:  # an error is |human - point| >= tolerance: at most K - 1 can happen
        props["tolerance"].maximum = largest - 1
    if "pass_threshold" in props:  # a nullable integer: its schema is oneOf[integer, null]
        _bound(props["pass_threshold"], largest)
    member = schemas.get("MemberVerdict")
    if member is not None and member.properties:
        for name in ("judge_score", "mean_of_samples"):
            member.properties[name].maximum = largest
    logprobs = schemas.get("JudgeLogprobs")
    if logprobs is not None and logprobs.properties:
        logprobs.properties = {token: schema for token, schema in logprobs.properties.items() if int(token) <= largest}
        logprobs.any_of = [present({token: "number"}) for token in logprobs.properties]


def _deployment_rules(values: SpecValues, largest: int) -> list[Schema]:
    """The ``if ... then`` rules of this deployment: smaller scales, a named judge, calibration-only criteria and
    judges, and the judge-criterion pairs that need a prompt family."""
    rules = _scale_rules(values, largest)
    if not values.configured:  # no default judge: the caller's verdict names its judge (service.scoring.resolve)
        rules.append(
            implies(
                Schema(any_of=[present({name: kind}) for name, kind in _OWN_FIELDS.items()]),
                present({"judge": "string"}),
            )
        )
    calibration_only = sorted(set(values.criteria) - set(values.askable))
    if calibration_only:  # no live call can ask about these
        rules.append(
            implies(Schema(required=["criterion"], properties={"criterion": Schema(enum=calibration_only)}), _own())
        )
    uncallable = sorted(set(values.judges) - set(values.configured))
    if values.configured and uncallable:  # without any judge a live call is the documented 503 whatever it names
        rules.append(implies(Schema(required=["judge"], properties={"judge": Schema(enum=uncallable)}), _own()))
    for judge, criterion in values.several_families:
        rules.append(
            implies(
                Schema(
                    required=["judge", "criterion"],
                    properties={"judge": Schema(const=judge), "criterion": Schema(const=criterion)},
                ),
                present({"prompt_family": "string"}),
            )
        )
    return rules


def spec_document(app: Litestar) -> dict[str, Any]:
    """The app's OpenAPI document with the deployment values of its current calibration (re-derived on change)."""
    services: Services = app.state.services
    snapshot = services.calibration.current
    cache = services.spec_cache
    if cache.get("snapshot") is not snapshot or "document" not in cache:
        apply_spec_values(app.openapi_schema, spec_values(services))
        cache["snapshot"] = snapshot
        cache["document"] = app.openapi_schema.to_schema()
    document = cache["document"]
    assert isinstance(document, dict)  # the to_schema() stored above
    return document


class LiveSpecJson(JsonRenderPlugin):
    """/schema and /schema/openapi.json: the JSON document, with the current deployment values."""

    def render(self, request: Request, openapi_schema: dict[str, Any]) -> bytes:
        return self.render_json(request, spec_document(request.app))
